"""The load run in CI: ``bench/load.py`` for 10 seconds with 8 processes (4 MCP servers, 4 CLI
loops) against one store, with the checks of the full 60-second run (README: Load)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

LOAD = os.path.join(REPO_ROOT, "bench", "load.py")


@pytest.mark.slow
def test_ten_seconds_of_mixed_load(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            LOAD,
            "--seconds",
            "10",
            "--procs",
            "8",
            "--json",
            "--project-dir",
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    result = json.loads(done.stdout)
    assert result["errors"] == []
    assert result["problems"] == []
    assert (done.returncode, result["ok"]) == (0, True), done.stderr
    assert (result["mcp_servers"], result["cli_loops"]) == (4, 4)
    latency = result["latency"]
    for op in ("get_context", "query_entries", "record_entry", "update_entry"):
        assert latency[f"mcp {op}"]["count"] >= 4, op  # every server made each call
    for op in ("add", "list"):
        assert latency[f"cli {op}"]["count"] >= 4, op
    for row in latency.values():
        assert 0 < row["p50_ms"] <= row["p99_ms"] <= row["max_ms"]
    assert result["writes_acknowledged"] >= 16
    # The checks looked at a real store: the acknowledged writes are there.
    listed = subprocess.run(
        [sys.executable, "-m", "ctxkeeper", "--json", "--project-dir", str(project), "list"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=True,
    )
    assert len(json.loads(listed.stdout)["results"]) >= latency["mcp record_entry"]["count"]
