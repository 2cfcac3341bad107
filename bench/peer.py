"""Benchmark: ctxkeeper beside Context Keeper 0.19 on the same entries, every ratio in one run.

Run ``python bench/peer.py [--sizes 100,1000,10000] [--runs 21] [--writes 21]``; the
100,000-entry row is ``--sizes 100000`` (it takes a while: both stores are built first).

Both systems run on the same interpreter from equally clean venvs (see ``bench/_common.py``;
the peer is installed from PyPI into ``.cache/``, never vendored). The peer starts the way its
users start it, by its installed ``context-keeper`` console script (``python server.py`` would
compile the module on every start; the script imports it from its cached bytecode). For each
size the same varied entries are written into a ctxkeeper store (through the real write path)
and into the peer's store files; then, interleaved round by round so machine load falls on both
alike:

- warm server: ``get_context`` (a query) and ``record_entry`` over MCP stdio, one long-running
  server each, after one warm-up call of each; median and p95 in ms, and peak RSS (VmHWM) twice:
  after the timed reads (the server has made its one warm-up write) and after the timed writes
  (``--writes``; issue 24 asks for 60);
- one-shot CLI: ``ctxkeeper search`` beside the peer's ``context-keeper get_context``, whole
  process, twice over: with nothing changed since the last search (after one warm-up run, which
  leaves our on-disk text index), and as the first search after each server has recorded one
  more entry (untimed) while the servers stay up;
- start-up: spawn to the ``initialize`` reply and to the ``tools/list`` reply, beside
  ``python3 -c pass`` (the base interpreter) and ``python3 -c pass`` in a clean venv.

Ratios are ours / peer (below 1.00x: ctxkeeper is faster or smaller), each the median of the
per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ctxkeeper.core._types import JSONObject

QUERIES = [
    "can I retry the charge call in the checkout worker?",
    "how do we deploy a new build of the payments service?",
    "which column type for money amounts?",
    "what is our Postgres backup retention policy?",
    "GPU quota for the training cluster",
    "nightly reload of the orders tables",
    "how are secrets rotated for the mobile backend?",
]
INITIALIZE: JSONObject = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


class Server(_common.StdioServer):
    """One MCP server over stdio, timed per tool call."""

    def tool(self, name: str, arguments: JSONObject) -> tuple[float, JSONObject]:
        started = time.perf_counter()
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        elapsed = time.perf_counter() - started
        if result.get("isError"):
            raise SystemExit(f"{name} failed: {json.dumps(result)[:400]}")
        return elapsed, result

    def peak_rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")


def ours_server(python: str, project: str) -> list[str]:
    return [python, "-m", "ctxkeeper.mcp.server", "--project-dir", project]


def peer_server(python: str) -> list[str]:
    """The peer's installed console script (``context-keeper = server:main``), beside ``python``."""
    return [os.path.join(os.path.dirname(python), "context-keeper")]


def peer_arguments(kind: str, fields: JSONObject) -> JSONObject:
    """The peer's record_entry arguments for the same entry."""
    entry = _common.peer_entry(0, kind, fields, "")
    wanted = {
        "decision": ("summary", "problem", "why_chosen", "tags"),
        "constraint": ("rule", "reason", "scope", "hardness", "tags"),
        "pipeline": ("name", "purpose", "steps", "tags"),
    }[kind]
    return {"kind": kind, **{key: entry[key] for key in wanted}}


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _ratio(ours: list[float], peer: list[float]) -> float:
    return statistics.median(o / p for o, p in zip(ours, peer, strict=True))


def _whole(argv: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - started


def measure(size: int, runs: int, writes: int, workdir: str) -> dict[str, float]:
    ours_py, peer_py = _common.ours_venv(), _common.peer_venv()
    varied = _common.Varied()
    cli_runs = max(3, runs // 3)
    items = [varied.fields(n) for n in range(size + writes + 1 + cli_runs)]
    ours_dir = os.path.join(workdir, f"ours-{size}")
    peer_dir = os.path.join(workdir, f"peer-{size}")
    os.makedirs(ours_dir)
    os.makedirs(peer_dir)
    _common.build_ours(ours_dir, items[:size])
    _common.build_peer(peer_dir, items[:size])
    ours_env = _common.clean_env(HOME=ours_dir)
    peer_env = _common.clean_env(HOME=peer_dir, CONTEXT_KEEPER_PROJECT=peer_dir)
    ours = Server(ours_server(ours_py, ours_dir), ours_env, ours_dir)
    peer = Server(peer_server(peer_py), peer_env, peer_dir)
    row: dict[str, float] = {"size": size}
    try:
        for server in (ours, peer):
            server.request("initialize", INITIALIZE)
            server.notify("notifications/initialized")
            server.tool("get_context", {"query": QUERIES[0]})
        # First writes: our server builds its similarity index, both write their files once.
        kind, fields = items[size]
        ours.tool("record_entry", {"kind": kind, **fields})
        peer.tool("record_entry", peer_arguments(kind, fields))
        reads: dict[str, list[float]] = {"ours": [], "peer": []}
        for n in range(runs):
            query = QUERIES[n % len(QUERIES)]
            reads["ours"].append(ours.tool("get_context", {"query": query})[0])
            reads["peer"].append(peer.tool("get_context", {"query": query})[0])
        row["rss_read_ours"], row["rss_read_peer"] = ours.peak_rss_mb(), peer.peak_rss_mb()
        wrote: dict[str, list[float]] = {"ours": [], "peer": []}
        for n in range(writes):
            kind, fields = items[size + 1 + n]
            wrote["ours"].append(ours.tool("record_entry", {"kind": kind, **fields})[0])
            wrote["peer"].append(peer.tool("record_entry", peer_arguments(kind, fields))[0])
        # A read after the writes: the warm server must not have lost its footing.
        ours.tool("get_context", {"query": QUERIES[1]})
        peer.tool("get_context", {"query": QUERIES[1]})
        row["rss_ours"], row["rss_peer"] = ours.peak_rss_mb(), peer.peak_rss_mb()
        # One-shot CLI: a fresh process per question.
        ours_cli = [ours_py, "-m", "ctxkeeper", "search", QUERIES[0], "--project-dir", ours_dir]
        peer_cli = [*peer_server(peer_py), "get_context", json.dumps({"query": QUERIES[0]})]
        _whole([*ours_cli, "--json"], ours_env, ours_dir)  # warm-up: leaves the on-disk index
        _whole(peer_cli, peer_env, peer_dir)
        cli: dict[str, list[float]] = {"ours": [], "peer": []}
        for _ in range(cli_runs):
            cli["ours"].append(_whole([*ours_cli, "--json"], ours_env, ours_dir))
            cli["peer"].append(_whole(peer_cli, peer_env, peer_dir))
        # The first search of a fresh process after a write by the (still running) server.
        fresh: dict[str, list[float]] = {"ours": [], "peer": []}
        for n in range(cli_runs):
            kind, fields = items[size + 1 + writes + n]
            ours.tool("record_entry", {"kind": kind, **fields})
            peer.tool("record_entry", peer_arguments(kind, fields))
            fresh["ours"].append(_whole([*ours_cli, "--json"], ours_env, ours_dir))
            fresh["peer"].append(_whole(peer_cli, peer_env, peer_dir))
    finally:
        ours.close()
        peer.close()
    for name, samples in (("read", reads), ("write", wrote), ("cli", cli), ("fresh", fresh)):
        for who in ("ours", "peer"):
            row[f"{name}_{who}"] = statistics.median(samples[who]) * 1000
            row[f"{name}_{who}_p95"] = _p95(samples[who]) * 1000
        row[f"{name}_ratio"] = _ratio(samples["ours"], samples["peer"])
    row["rss_read_ratio"] = row["rss_read_ours"] / row["rss_read_peer"]
    row["rss_ratio"] = row["rss_ours"] / row["rss_peer"]
    return row


def _spawn_to(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Seconds from spawn to the initialize reply, and to the tools/list reply after it."""
    started = time.perf_counter()
    server = Server(argv, env, cwd)
    server.request("initialize", INITIALIZE)
    first = time.perf_counter() - started
    server.notify("notifications/initialized")
    tools = server.request("tools/list", {})
    listed = time.perf_counter() - started
    server.close()
    assert tools.get("tools"), tools
    return first, listed


def startup(runs: int, workdir: str) -> dict[str, float]:
    ours_py, peer_py = _common.ours_venv(), _common.peer_venv()
    ours_dir, peer_dir = os.path.join(workdir, "start-ours"), os.path.join(workdir, "start-peer")
    os.makedirs(ours_dir)
    os.makedirs(peer_dir)
    _common.build_ours(ours_dir, [])
    _common.build_peer(peer_dir, [])
    ours_env = _common.clean_env(HOME=ours_dir)
    peer_env = _common.clean_env(HOME=peer_dir, CONTEXT_KEEPER_PROJECT=peer_dir)
    names = ("pass", "venv_pass", "ours_init", "ours_list", "peer_init", "peer_list")
    samples: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(runs):
        samples["pass"].append(_whole([_common.PYTHON, "-c", "pass"], ours_env, ours_dir))
        samples["venv_pass"].append(_whole([ours_py, "-c", "pass"], ours_env, ours_dir))
        first, listed = _spawn_to(ours_server(ours_py, ours_dir), ours_env, ours_dir)
        samples["ours_init"].append(first)
        samples["ours_list"].append(listed)
        first, listed = _spawn_to(peer_server(peer_py), peer_env, peer_dir)
        samples["peer_init"].append(first)
        samples["peer_list"].append(listed)
    row = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    row["init_ratio"] = _ratio(samples["ours_init"], samples["peer_init"])
    row["list_ratio"] = _ratio(samples["ours_list"], samples["peer_list"])
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--writes", type=int, default=21)
    parser.add_argument("--startup-runs", type=int, default=15, help="0: skip start-up")
    args = parser.parse_args(argv)
    version = subprocess.check_output([_common.PYTHON, "--version"], text=True).strip()
    print(f"python3: {version} ({_common.PYTHON}); peer: {_common.PEER_SPEC}")
    print(
        f"{args.runs} reads and {args.writes} writes per size; ratio = ours / peer, median of rounds"
    )
    print()
    print(
        "| entries | get_context median / p95 (ours) | (peer) | ratio "
        "| record_entry median / p95 (ours) | (peer) | ratio "
        "| one-shot search (ours) | (peer) | ratio | first search after a write (ours) | (peer) "
        "| ratio | peak RSS after reads ours / peer | ratio | after writes | ratio |"
    )
    print("|---:" * 19 + "|")
    with tempfile.TemporaryDirectory(prefix="ctxk-peer-bench-") as workdir:
        for size in (int(s) for s in args.sizes.split(",")):
            r = measure(size, args.runs, args.writes, workdir)
            print(
                f"| {size:,} | {r['read_ours']:.1f} / {r['read_ours_p95']:.1f} ms "
                f"| {r['read_peer']:.1f} / {r['read_peer_p95']:.1f} ms | {r['read_ratio']:.2f}x "
                f"| {r['write_ours']:.1f} / {r['write_ours_p95']:.1f} ms "
                f"| {r['write_peer']:.1f} / {r['write_peer_p95']:.1f} ms | {r['write_ratio']:.2f}x "
                f"| {r['cli_ours']:.0f} ms | {r['cli_peer']:.0f} ms | {r['cli_ratio']:.2f}x "
                f"| {r['fresh_ours']:.0f} ms | {r['fresh_peer']:.0f} ms | {r['fresh_ratio']:.2f}x "
                f"| {r['rss_read_ours']:.0f} / {r['rss_read_peer']:.0f} MB "
                f"| {r['rss_read_ratio']:.2f}x "
                f"| {r['rss_ours']:.0f} / {r['rss_peer']:.0f} MB | {r['rss_ratio']:.2f}x |",
                flush=True,
            )
        if args.startup_runs > 0:
            s = startup(args.startup_runs, workdir)
            print()
            print(
                "| start-up | `python3 -c pass` | venv `python3 -c pass` | initialize (ours) "
                "| (peer) | ratio | tools/list (ours) | (peer) | ratio |"
            )
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
            print(
                f"| spawn to reply | {s['pass']:.1f} ms | {s['venv_pass']:.1f} ms "
                f"| {s['ours_init']:.1f} ms | {s['peer_init']:.1f} ms | {s['init_ratio']:.2f}x "
                f"| {s['ours_list']:.1f} ms | {s['peer_list']:.1f} ms | {s['list_ratio']:.2f}x |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
