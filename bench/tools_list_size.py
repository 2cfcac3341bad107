"""What the MCP server's tool list costs every request: tools/list in characters and tokens.

Claude Code puts each tool's name, description and input schema into every request to the
model, in every repository where the plugin is installed, with or without ``.context/``. This
runs the real server of this checkout and the server of a baseline commit (extracted with
``git archive`` into a temporary directory), asks each for ``tools/list`` over stdio, and
prints both sizes side by side with their ratio: the serialized ``tools`` array, and the part
the model reads (name, description, input schema). Tokens are estimated as characters / 4.

Usage: python3 bench/tools_list_size.py [--baseline COMMIT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The server before its descriptions were trimmed (issue 25).
BASELINE = "17beb7f"
_INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


def tools_list(code_root: str, project_dir: str) -> list[dict[str, object]]:
    """The ``tools`` of ``tools/list`` from the server whose package sits in ``code_root``."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": _INITIALIZE},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    ]
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeeper", "serve", "--project-dir", project_dir],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        cwd=code_root,
        env={**os.environ, "PYTHONPATH": code_root},
        timeout=60,
        check=False,
    )
    for line in done.stdout.splitlines():
        reply = json.loads(line)
        if reply.get("id") == 2:
            tools = reply["result"]["tools"]
            assert isinstance(tools, list)
            return tools
    raise SystemExit(f"no tools/list reply from {code_root}: {done.stderr[-500:]}")


def extract(commit: str, into: str) -> str:
    """The ``ctxkeeper`` package of ``commit`` unpacked under ``into``; the directory."""
    archive = os.path.join(into, "code.tar")
    subprocess.run(
        ["git", "-C", ROOT, "archive", "--format=tar", "-o", archive, commit, "ctxkeeper"],
        check=True,
    )
    code_root = os.path.join(into, "code")
    with tarfile.open(archive) as tar:
        tar.extractall(code_root, filter="data")
    return code_root


def sizes(tools: list[dict[str, object]]) -> tuple[int, int, int]:
    """Characters of the whole array, of what the model reads, and of the descriptions."""
    whole = len(json.dumps(tools, ensure_ascii=False))
    read = len(
        json.dumps(
            [{k: t.get(k) for k in ("name", "description", "inputSchema")} for t in tools],
            ensure_ascii=False,
        )
    )
    described = sum(len(str(t.get("description", ""))) for t in tools)
    return whole, read, described


def main(argv: Sequence[str] | None = None) -> int:
    """Measure both servers and print one line per measure, baseline next to now."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"commit (default {BASELINE})")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        project = os.path.join(scratch, "project")  # no .context/: the cost paid everywhere
        os.mkdir(project)
        before = tools_list(extract(args.baseline, scratch), project)
        now = tools_list(ROOT, project)
    print(f"tools/list: {len(before)} tools at {args.baseline}, {len(now)} now")
    labels = ("tools array", "name+description+inputSchema", "descriptions alone")
    for label, old, new in zip(labels, sizes(before), sizes(now), strict=True):
        print(
            f"{label:<30} {args.baseline}: {old:6d} chars (~{old // 4:5d} tokens)  "
            f"now: {new:6d} chars (~{new // 4:5d} tokens)  ({new / old:4.2f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
