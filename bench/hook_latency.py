"""Benchmark: the PreToolUse hook's whole-process wall time, next to ``python3 -c pass``.

Run ``python bench/hook_latency.py [--runs 31] [--sizes 100,1000,10000,100000]
[--project-wide 0.1]``.

For each size it builds a store of that many hard constraints in a temporary folder, a share
of them project-wide (an empty scope: ``--project-wide``, a tenth by default, as issue 24
measures the hook) and the rest each on its own module folder, in
one store transaction (the real ``Store.transaction`` and ``Transaction.put`` with entries
made by ``model.clean_fields``/``new_entry``, so the journal, ``entries.json`` and the scope
index are written by the real write path; the similarity check of ``record_entry`` is
skipped, it is quadratic over a bulk load). It then times, interleaved, the median of N runs
of: ``python3 -I -c pass``; ctxkeeper's ``hooks/pre_tool_use.py`` on an Edit of a file covered
by one hard constraint, with a fresh ``session_id`` each run so every run does the full work
(index lookup, ledger read and append, the denial); and Context Keeper 0.19's
``hooks/scope_guard.py`` (installed from PyPI as ``context-keeper-mcp==0.19.*`` into a scratch
venv under ``.cache/``, never copied) on the same constraints, written in its own format
(``.context/constraints.json``, where a project-wide one is scoped ``global``), also with a
fresh session each run. Every project-wide constraint covers the edited file, so ours, with a
fresh session, gates on all of them at once: the worst case of a session's first edit.

Beside the edit hook it times the same script on two Bash calls, as ``hooks/hooks.json`` runs
it for the Bash tool: a write command (``sed -i`` of the same covered file, on the denying
path: the write finder, then the edit gate) and an ordinary command (``git status --short &&
pytest -q 2>&1 | tail -5``: the human-verb guard and the write finder, which find nothing to
gate). ``--no-peer`` leaves Context Keeper out (no PyPI, no scratch venv).
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
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject, JSONValue

HOOK = os.path.join(ROOT, "hooks", "pre_tool_use.py")
PYTHON = _common.PYTHON


def _hook_flags() -> list[str]:
    """The interpreter flags hooks.json starts the PreToolUse hook with (e.g. ``-I -S``)."""
    with open(os.path.join(ROOT, "hooks", "hooks.json"), encoding="utf-8") as handle:
        hooks = json.load(handle)["hooks"]
    command = str(hooks["PreToolUse"][0]["hooks"][0]["command"])
    return [word for word in command.split() if word.startswith("-")]


#: Both hooks run with the flags the plugin uses, so the comparison is of the code alone.
FLAGS = _hook_flags()


def peer_hook() -> str:
    """Install the peer into its scratch venv (once) and return its scope_guard.py."""
    _common.peer_venv()
    return os.path.join(_common.peer_site(), "hooks", "scope_guard.py")


def _scope(n: int) -> str:
    # A realistic tree: 100 packages of modules, each constraint on its own module folder.
    return f"src/pkg{n % 100}/mod{n // 100}/"


def project_wide(n: int, share: float) -> bool:
    """Whether constraint ``n`` has an empty scope: evenly spread, ``share`` of them in all.

    Constraint 7 (the one on the edited file's folder) stays scoped at any share below 1/8."""
    return int((n + 1) * share) > int(n * share)


def _scopes(n: int, share: float) -> list[JSONValue]:
    return [] if project_wide(n, share) else [_scope(n)]


def build_ours(project: str, size: int, share: float) -> float:
    """Write ``size`` hard constraints through one store transaction; return seconds taken."""
    constraints: list[tuple[str, JSONObject]] = [
        (
            "constraint",
            {
                "rule": f"Module {n} validates every request body against its schema first",
                "reason": f"Unvalidated payloads crashed worker {n} in production twice last year.",
                "hardness": "hard",
                "scope": _scopes(n, share),
            },
        )
        for n in range(size)
    ]
    return _common.build_ours(project, constraints)


def build_peer(project: str, size: int, share: float) -> None:
    """The same constraints in Context Keeper 0.19's store format."""
    os.makedirs(os.path.join(project, ".context"), exist_ok=True)
    constraints = [
        {
            "id": f"con-{n + 1:03d}",
            "rule": f"Module {n} validates every request body against its schema first",
            "reason": f"Unvalidated payloads crashed worker {n} in production twice last year.",
            "hardness": "absolute",
            # The peer's word for project-wide; its scope guard never fires on it.
            "scope": "global" if project_wide(n, share) else _scope(n),
            "status": "active",
        }
        for n in range(size)
    ]
    with open(os.path.join(project, ".context", "constraints.json"), "w") as handle:
        json.dump(constraints, handle)


def _payload(project: str, target: str) -> bytes:
    return json.dumps(
        {
            "session_id": uuid.uuid4().hex,
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": os.path.join(project, target), "old_string": "a"},
            "cwd": project,
        }
    ).encode()


#: The Bash calls timed: one writes the covered file, one is an everyday command.
BASH_WRITE = "sed -i 's/schema/model/' {target}"
BASH_ORDINARY = "git status --short && pytest -q 2>&1 | tail -5"


def _bash_payload(project: str, command: str) -> bytes:
    return json.dumps(
        {
            "session_id": uuid.uuid4().hex,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "bench"},
            "cwd": project,
        }
    ).encode()


def _time(argv: list[str], stdin: bytes, project: str, env: dict[str, str]) -> tuple[float, bytes]:
    """Wall time of one whole process, and what it printed."""
    started = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, capture_output=True, cwd=project, env=env, check=True)
    wall = time.perf_counter() - started
    return wall, proc.stdout


def measure(size: int, runs: int, peer: str | None, workdir: str, share: float) -> dict[str, float]:
    ours_dir = os.path.join(workdir, f"ours-{size}")
    peer_dir = os.path.join(workdir, f"peer-{size}")
    os.makedirs(ours_dir)
    os.makedirs(peer_dir)
    build_s = build_ours(ours_dir, size, share)
    target = "src/pkg7/mod0/handler.py"  # covered by constraint 7 in both stores
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PYTHON"))}
    ours_env = {**base_env, "CLAUDE_PROJECT_DIR": ours_dir}
    peer_env = {**base_env, "CLAUDE_PROJECT_DIR": peer_dir, "CONTEXT_KEEPER_PROJECT": peer_dir}
    hook = [PYTHON, *FLAGS, HOOK]
    write = BASH_WRITE.format(target=target)
    # Warm the page cache and check each hook answers as expected before timing.
    assert b'"deny"' in _time(hook, _payload(ours_dir, target), ours_dir, ours_env)[1]
    assert b'"deny"' in _time(hook, _bash_payload(ours_dir, write), ours_dir, ours_env)[1]
    assert _time(hook, _bash_payload(ours_dir, BASH_ORDINARY), ours_dir, ours_env)[1] == b""
    if peer is not None:
        build_peer(peer_dir, size, share)
        _, out = _time([PYTHON, *FLAGS, peer], _payload(peer_dir, target), peer_dir, peer_env)
        assert b"con-008" in out, out
    names = ("pass", "bare", "ours", "bash_write", "bash_plain", "peer")
    samples: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(runs):
        samples["pass"].append(_time([PYTHON, "-c", "pass"], b"", ours_dir, base_env)[0])
        samples["bare"].append(_time([PYTHON, *FLAGS, "-c", "pass"], b"", ours_dir, base_env)[0])
        wall, out = _time(hook, _payload(ours_dir, target), ours_dir, ours_env)
        assert b'"deny"' in out
        samples["ours"].append(wall)
        wall, out = _time(hook, _bash_payload(ours_dir, write), ours_dir, ours_env)
        assert b'"deny"' in out
        samples["bash_write"].append(wall)
        wall, out = _time(hook, _bash_payload(ours_dir, BASH_ORDINARY), ours_dir, ours_env)
        assert out == b""
        samples["bash_plain"].append(wall)
        peer_argv = [PYTHON, *FLAGS, peer] if peer is not None else [PYTHON, *FLAGS, "-c", "0"]
        samples["peer"].append(_time(peer_argv, _payload(peer_dir, target), peer_dir, peer_env)[0])
    med = {name: statistics.median(values) for name, values in samples.items()}
    # Ratios are medians of per-round ratios: each round runs them back to back, so load
    # from other processes on the machine cancels instead of skewing one column.
    rounds = [
        dict(zip(names, values, strict=True)) for values in zip(*samples.values(), strict=True)
    ]
    row: dict[str, float] = {"size": size, "build_s": build_s}
    for name in names:
        row[f"{name}_ms"] = med[name] * 1000
        row[f"{name}_ratio"] = statistics.median(r[name] / r["pass"] for r in rounds)
        row[f"{name}_bare"] = statistics.median(r[name] / r["bare"] for r in rounds)
    return row


def _cell(row: dict[str, float], name: str) -> str:
    return (
        f"| {row[name + '_ms']:.1f} ms | {row[name + '_ratio']:.2f}x / {row[name + '_bare']:.2f}x "
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument(
        "--project-wide",
        type=float,
        default=0.1,
        metavar="SHARE",
        help="share of the constraints with an empty (project-wide) scope, below 0.125",
    )
    parser.add_argument("--no-peer", action="store_true", help="leave Context Keeper 0.19 out")
    args = parser.parse_args(argv)
    if not 0 <= args.project_wide < 0.125:
        parser.error(
            "--project-wide must be at least 0 and below 0.125 (constraint 7 stays scoped)"
        )
    peer = None if args.no_peer else peer_hook()
    version = subprocess.check_output([PYTHON, "--version"], text=True).strip()
    print(f"python3: {version} ({PYTHON})")
    if peer is not None:
        print(f"peer: {_common.PEER_SPEC} at {peer}")
    flags = " ".join(FLAGS)
    print(f"median of {args.runs} rounds, whole-process wall time; ratio = median per-round ratio")
    print(f"every hook runs as `python3 {flags} HOOK`, the way hooks/hooks.json starts ours")
    print(f"Bash write: `{BASH_WRITE}`; Bash ordinary: `{BASH_ORDINARY}`")
    print(f"project-wide (empty scope): {args.project_wide:.0%} of the constraints, all hard")
    columns = ["Edit (deny)", "Bash write (deny)", "Bash ordinary"]
    if peer is not None:
        columns.append("peer 0.19 Edit")
    header = "".join(f"| {c} | ratio (to -c pass / to bare) " for c in columns)
    print(f"| constraints | build (s) | `python3 -c pass` | `python3 {flags} -c pass` {header}|")
    print("|---:|---:|---:|---:" + "|---:|---:" * len(columns) + "|")
    with tempfile.TemporaryDirectory(prefix="ctxk-hook-bench-") as workdir:
        for size in (int(s) for s in args.sizes.split(",")):
            row = measure(size, args.runs, peer, workdir, args.project_wide)
            cells = ["ours", "bash_write", "bash_plain"] + (["peer"] if peer else [])
            print(
                f"| {size:,} | {row['build_s']:.1f} | {row['pass_ms']:.1f} ms "
                f"| {row['bare_ms']:.1f} ms " + "".join(_cell(row, name) for name in cells) + "|",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
