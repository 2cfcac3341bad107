"""Load: MCP servers and CLI loops mixing reads and writes against one store for a while.

Half of ``--procs`` are real MCP servers (``python -m ctxkeeper serve``, stdio JSON-RPC), each
driven by one client thread with a mix of ``get_context``, ``query_entries``, ``record_entry``
and ``update_entry`` (the agent editing its own proposed entries); the other half are CLI loops,
each running one ``python -m ctxkeeper`` process after another (``add``, ``list``, ``search``,
``show``). Every call's latency is measured from the client's side (a CLI call includes the
process start). At the end the run is checked: no call failed, every acknowledged write is in
the store and in the journal (a record under its id, an update with its value, the last one
acknowledged being what the entry holds), ``ctxkeeper doctor`` finds the journal chain valid
and the entries equal to its fold, and the team snapshot equals a full export.

Usage: python3 bench/load.py [--seconds 60] [--procs 8] [--project-dir DIR] [--json]
Exit status 0 when every check passed, 1 otherwise. tests/test_load.py runs it for 10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import IO

    from ctxkeeper.core._types import JSONObject, JSONValue

ENV = dict(os.environ, PYTHONPATH=ROOT)
WORDS = [
    "amber",
    "birch",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lagoon",
    "meadow",
    "nectar",
    "orchid",
    "pebble",
    "quartz",
    "raven",
    "saffron",
    "timber",
    "umber",
    "violet",
    "willow",
    "yarrow",
    "zephyr",
]
#: Each worker's first calls, so a short run covers every operation; then the mix decides.
MCP_FIRST = ("record_entry", "update_entry", "get_context", "query_entries")
CLI_FIRST = ("add", "list", "search", "show")
MCP_MIX = (("get_context", 30), ("query_entries", 20), ("record_entry", 25), ("update_entry", 25))
CLI_MIX = (("add", 30), ("list", 30), ("search", 20), ("show", 20))


def _phrase(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, 3))


def _pick(rng: random.Random, mix: Sequence[tuple[str, int]]) -> str:
    return rng.choices([name for name, _ in mix], [weight for _, weight in mix])[0]


@dataclass
class Outcome:
    """What one worker did: latencies per operation, failures, acknowledged writes."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    records: dict[str, str] = field(default_factory=dict)
    """Acknowledged records: id -> rule."""
    updates: dict[str, list[str]] = field(default_factory=dict)
    """Acknowledged updates: id -> reasons, in the order they were acknowledged."""

    def timed(self, name: str, seconds: float) -> None:
        self.latencies.setdefault(name, []).append(seconds)


class McpClient(_common.StdioServer):
    """One real ``ctxkeeper serve`` process, driven over stdio with the legacy handshake."""

    def __init__(self, project: str, log: IO[bytes]) -> None:
        argv = [sys.executable, "-m", "ctxkeeper", "serve", "--project-dir", project]
        super().__init__(argv, ENV, ROOT, stderr=log)
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "load", "version": "1"},
            },
        )
        self.notify("notifications/initialized")

    def call(self, name: str, arguments: JSONObject) -> JSONObject:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{name}: {json.dumps(result.get('content'))[:500]}")
        structured = result.get("structuredContent")
        assert isinstance(structured, dict)
        return structured


def mcp_worker(number: int, project: str, deadline: float, out: Outcome, log: IO[bytes]) -> None:
    rng = random.Random(number)
    try:
        client = McpClient(project, log)
    except (OSError, RuntimeError) as exc:
        out.errors.append(f"mcp {number}: start: {exc}")
        return
    own: list[str] = []
    count = 0
    while time.monotonic() < deadline:
        op = MCP_FIRST[count] if count < len(MCP_FIRST) else _pick(rng, MCP_MIX)
        if op == "update_entry" and not own:
            op = "record_entry"
        count += 1
        token = f"mcp {number} call {count} {_phrase(rng)}"
        args: JSONObject
        if op == "get_context":
            args = {"query": f"{rng.choice(WORDS)} {rng.choice(WORDS)} billing rule"}
        elif op == "query_entries":
            args = {"text": [rng.choice(WORDS)]}
        elif op == "record_entry":
            args = {
                "kind": "constraint",
                "rule": f"Rule from {token} stays in force",
                "reason": f"Load incident {token} showed what breaks when it is ignored.",
                "hardness": rng.choice(["hard", "soft"]),
                "scope": [f"src/{rng.choice(WORDS)}/"],
            }
        else:
            args = {
                "id": rng.choice(own),
                "updates": {"reason": f"Updated by {token}: the incident showed it breaks."},
                "reason": "a sharper account of the incident",
            }
        started = time.perf_counter()
        try:
            result = client.call(op, args)
        except (OSError, RuntimeError, ValueError) as exc:
            out.errors.append(f"mcp {number} {op}: {exc}")
            continue
        out.timed(f"mcp {op}", time.perf_counter() - started)
        if op == "record_entry":
            own.append(str(result["id"]))
            out.records[str(result["id"])] = str(args["rule"])
        elif op == "update_entry":
            updates = args["updates"]
            assert isinstance(updates, dict)
            if result.get("pending"):
                out.errors.append(f"mcp {number}: update of its own proposal is pending")
            out.updates.setdefault(str(args["id"]), []).append(str(updates["reason"]))
    code = client.close(timeout=30)
    if code != 0:
        out.errors.append(f"mcp {number}: the server exited {code}")


def cli_worker(number: int, project: str, deadline: float, out: Outcome) -> None:
    rng = random.Random(1000 + number)
    seen: list[str] = []
    count = 0
    while time.monotonic() < deadline:
        op = CLI_FIRST[count] if count < len(CLI_FIRST) else _pick(rng, CLI_MIX)
        if op == "show" and not seen:
            op = "list"
        count += 1
        token = f"cli {number} run {count} {_phrase(rng)}"
        rule = f"Rule from {token} stays in force"
        verb: list[str]
        if op == "add":
            verb = ["add", "constraint", "--rule", rule, "--hardness", "hard"]
            verb += ["--reason", f"Load incident {token} showed what breaks when it is ignored."]
        elif op == "list":
            verb = ["list"]
        elif op == "search":
            verb = ["search", f"{rng.choice(WORDS)} rule in force"]
        else:
            verb = ["show", rng.choice(seen)]
        command = [sys.executable, "-m", "ctxkeeper", "--json", "--project-dir", project, *verb]
        started = time.perf_counter()
        done = subprocess.run(
            command, capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=120, check=False
        )
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            out.errors.append(f"cli {number} {op}: exit {done.returncode}: {done.stderr.strip()}")
            continue
        out.timed(f"cli {op}", elapsed)
        data = json.loads(done.stdout)
        if op == "add":
            out.records[str(data["id"])] = rule
        if op == "list":
            seen = [str(row["id"]) for row in data["results"]][-50:]


def check(project: str, outcomes: Sequence[Outcome]) -> list[str]:
    """Every acknowledged write is there; the journal, the entries and the snapshot agree."""
    from ctxkeeper.core import journal
    from ctxkeeper.core.store import Store
    from ctxkeeper.team import snapshot, teamlog
    from ctxkeeper.team.snapshotformat import render

    problems: list[str] = []
    store = Store.open(project)
    entries = store.load().entries
    records = store.read_journal()
    recorded = {str(r["id"]) for r in records if r.get("op") == "record"}
    reasons: dict[str, set[str]] = {}
    for r in records:
        after = r.get("after")
        if r.get("op") == "update" and isinstance(after, dict):
            reasons.setdefault(str(r["id"]), set()).add(str(after.get("reason")))
    for out in outcomes:
        for entry_id, rule in out.records.items():
            if entry_id not in recorded:
                problems.append(f"lost write: the journal has no record of {entry_id}")
            if entries.get(entry_id, {}).get("rule") != rule:
                problems.append(f"lost write: {entry_id} is missing or holds another rule")
        for entry_id, values in out.updates.items():
            missing = [v for v in values if v not in reasons.get(entry_id, set())]
            if missing:
                problems.append(f"lost update: {len(missing)} of {entry_id} not in the journal")
            if entries.get(entry_id, {}).get("reason") != values[-1]:
                problems.append(f"lost update: {entry_id} does not hold its last update")
    if journal.verify_chain(records):
        problems.append(f"journal chain: {journal.verify_chain(records)[0]}")
    doctor = subprocess.run(
        [sys.executable, "-m", "ctxkeeper", "--json", "--project-dir", project, "doctor"],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    report = json.loads(doctor.stdout) if doctor.stdout.strip() else {}
    if doctor.returncode != 0 or not report.get("ok"):
        problems.append(f"doctor: {report.get('problems') or doctor.stderr.strip()}")
    with open(snapshot.default_path(store.dir), "rb") as handle:
        written = handle.read()
    state = store.load()
    if written != render(state.entries.values(), teamlog.team_events(store.read_journal())):
        problems.append("the team snapshot differs from a full export")
    return problems


def percentile(values: Sequence[float], q: int) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def run(seconds: float, procs: int, project: str) -> JSONObject:
    init = subprocess.run(
        [sys.executable, "-m", "ctxkeeper", "init", "--project-dir", project],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
        check=False,
    )
    if init.returncode != 0:
        raise SystemExit(f"ctxkeeper init failed: {init.stderr}")
    mcp_count = max(procs // 2, 1)
    cli_count = max(procs - mcp_count, 1) if procs > 1 else 0
    outcomes = [Outcome() for _ in range(mcp_count + cli_count)]
    with contextlib.ExitStack() as stack:
        logs: list[IO[bytes]] = [
            stack.enter_context(tempfile.TemporaryFile()) for _ in range(mcp_count)
        ]
        wall = _drive(project, seconds, mcp_count, cli_count, outcomes, logs)
        server_logs = []
        for log in logs:
            log.seek(0)
            server_logs.append(log.read().decode(errors="replace"))
    errors = [error for out in outcomes for error in out.errors]
    problems = check(project, outcomes)
    return _result(wall, mcp_count, cli_count, outcomes, errors, problems, server_logs)


def _drive(
    project: str,
    seconds: float,
    mcp_count: int,
    cli_count: int,
    outcomes: list[Outcome],
    logs: list[IO[bytes]],
) -> float:
    """Run the workers until the deadline; return the wall time."""
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(target=mcp_worker, args=(n, project, deadline, outcomes[n], logs[n]))
        for n in range(mcp_count)
    ]
    threads += [
        threading.Thread(target=cli_worker, args=(n, project, deadline, outcomes[mcp_count + n]))
        for n in range(cli_count)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - started


def _result(
    wall: float,
    mcp_count: int,
    cli_count: int,
    outcomes: list[Outcome],
    errors: list[str],
    problems: list[str],
    server_logs: list[str],
) -> JSONObject:
    by_op: dict[str, list[float]] = {}
    for out in outcomes:
        for name, values in out.latencies.items():
            by_op.setdefault(name, []).extend(values)
    latency: JSONObject = {
        name: {
            "count": len(values),
            "p50_ms": round(percentile(values, 50) * 1000, 1),
            "p99_ms": round(percentile(values, 99) * 1000, 1),
            "max_ms": round(max(values) * 1000, 1),
        }
        for name, values in sorted(by_op.items())
    }
    return {
        "seconds": round(wall, 1),
        "mcp_servers": mcp_count,
        "cli_loops": cli_count,
        "calls": sum(len(v) for v in by_op.values()),
        "writes_acknowledged": sum(
            len(o.records) + sum(map(len, o.updates.values())) for o in outcomes
        ),
        "latency": latency,
        "errors": _strings(errors),
        "problems": _strings(problems),
        "server_stderr": _strings(text for text in server_logs if text.strip()),
        "ok": not errors and not problems,
    }


def _strings(items: Iterable[str]) -> list[JSONValue]:
    return list(items)


def render_text(result: JSONObject) -> str:
    lines = [
        (
            f"{result['mcp_servers']} MCP servers + {result['cli_loops']} CLI loops, "
            f"{result['seconds']} s, {result['calls']} calls, "
            f"{result['writes_acknowledged']} acknowledged writes"
        ),
        f"{'operation':<20} {'count':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}",
    ]
    latency = result["latency"]
    assert isinstance(latency, dict)
    for name, row in latency.items():
        assert isinstance(row, dict)
        lines.append(
            f"{name:<20} {row['count']:>6} {row['p50_ms']:>8} {row['p99_ms']:>8} {row['max_ms']:>8}"
        )
    for key in ("errors", "problems"):
        items = result[key]
        assert isinstance(items, list)
        lines += [f"{key[:-1]}: {item}" for item in items[:20]]
    lines.append("ok: no error, no lost write, chain valid" if result["ok"] else "FAILED")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--project-dir", help="an empty directory (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if args.project_dir:
        result = run(args.seconds, args.procs, args.project_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="ctxkeeper-load-") as project:
            result = run(args.seconds, args.procs, project)
    print(json.dumps(result, indent=2) if args.json else render_text(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
