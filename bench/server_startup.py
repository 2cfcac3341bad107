"""How fast the MCP server answers its first request after launch.

Spawns the server N times and measures, from spawn, the time to the ``initialize`` reply and to
the ``server/discover`` reply (each in a fresh process: the era is fixed per process), next to
the time of ``python3 -c pass`` measured in the same run. Claude Code gives a server about 3 s and
the Python SDK probes discover first (mcp.md §5), so the target is well under 300 ms.

Usage: python3 bench/server_startup.py [--runs N] [--project-dir DIR] [-- SERVER COMMAND...]
The default server command is ``python3 -m ctxkeeper.mcp.server --project-dir DIR``.
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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
DISCOVER = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}


def time_first_reply(command: Sequence[str], request: dict[str, object]) -> float:
    """Seconds from spawning ``command`` to reading its reply to ``request``."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    start = time.perf_counter()
    child = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=ROOT
    )
    assert child.stdin is not None
    assert child.stdout is not None
    child.stdin.write(json.dumps(request).encode() + b"\n")
    child.stdin.flush()
    line = child.stdout.readline()
    elapsed = time.perf_counter() - start
    child.stdin.close()
    child.wait()
    if not line.startswith(b'{"jsonrpc":"2.0","id":1,"result"'):
        raise SystemExit(f"unexpected reply from {' '.join(command)}: {line[:200]!r}")
    return elapsed


def time_python_pass() -> float:
    """Seconds to run ``python3 -c pass``: the floor any Python server pays."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def summarise(label: str, samples: list[float], floor: float) -> str:
    """One report line: median, min and max in milliseconds, and the ratio to the floor."""
    median = statistics.median(samples)
    return (
        f"{label:<28} median {median * 1000:7.1f} ms  min {min(samples) * 1000:7.1f} ms  "
        f"max {max(samples) * 1000:7.1f} ms  ({median / floor:4.2f}x python3 -c pass)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print one line per measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--project-dir", help="store to serve (default: a fresh temp dir)")
    parser.add_argument("command", nargs="*", help="server command (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        project_dir = args.project_dir or scratch
        command = args.command or [
            sys.executable,
            "-m",
            "ctxkeeper.mcp.server",
            "--project-dir",
            project_dir,
        ]
        floor, initialize, discover = [], [], []
        for _ in range(args.runs):
            # Interleaved, so drift in machine load affects all three alike.
            floor.append(time_python_pass())
            initialize.append(time_first_reply(command, INITIALIZE))
            discover.append(time_first_reply(command, DISCOVER))
    base = statistics.median(floor)
    print(f"server: {' '.join(command)}  ({args.runs} runs)")
    print(summarise("python3 -c pass", floor, base))
    print(summarise("spawn -> initialize reply", initialize, base))
    print(summarise("spawn -> discover reply", discover, base))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
