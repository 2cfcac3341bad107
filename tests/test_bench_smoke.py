"""The benchmark beside Context Keeper 0.19, the similarity benchmark and the similarity index
check still run.

The benchmark itself is run by hand (its figures are in the README); this runs it at a tiny
size so it cannot rot. It needs the peer from PyPI in ``.cache/`` (the script installs it):
without network and without a cached copy the test is skipped, saying so.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import pytest

from .conftest import REPO_ROOT

PEER_VENV = os.path.join(REPO_ROOT, ".cache", "peer-ck019")


def _script(*argv: str) -> str:
    """Run a script of the repository with this interpreter; its output, once it succeeded."""
    run = subprocess.run(
        [sys.executable, *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def _peer_ready() -> bool:
    found = glob.glob(os.path.join(PEER_VENV, "lib", "python*", "site-packages", "server.py"))
    if found:
        return True
    install = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, 'bench'); import _common; _common.peer_venv()",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=300,
        check=False,
    )
    return install.returncode == 0


def test_peer_benchmark_runs_at_a_tiny_size() -> None:
    if not _peer_ready():
        pytest.skip("Context Keeper 0.19 could not be installed from PyPI (no network?)")
    out = _script(
        "bench/peer.py", "--sizes", "20", "--runs", "2", "--writes", "2", "--startup-runs", "1"
    )
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert rows[1].startswith("| 20 |"), out
    # read, write, one-shot, first search after a write, memory after reads and after writes
    assert rows[1].count("x |") == 6
    assert any(row.startswith("| spawn to reply |") for row in rows), out


def test_hook_latency_benchmark_runs_with_project_wide_constraints() -> None:
    out = _script(
        "bench/hook_latency.py",
        "--sizes",
        "40",
        "--runs",
        "1",
        "--no-peer",
        "--project-wide",
        "0.1",
    )
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert rows[1].startswith("| 40 |"), out
    assert rows[1].count("x |") == 3  # the edit hook, the Bash write and the ordinary command
    assert "project-wide (empty scope): 10% of the constraints" in out


def test_similarity_index_changes_no_finding_on_the_labelled_pairs() -> None:
    # Every 5th candidate against the whole store keeps this fast; the full check is
    # `python evals/similarity_eval.py --index-check` (every candidate).
    out = _script("evals/similarity_eval.py", "--index-check", "--every", "5")
    first = out.splitlines()[0]
    agree, total = first.split()[2].split("/")
    assert agree == total
    assert int(total) > 80  # the control: the candidates were checked


def test_similarity_benchmark_runs_at_a_tiny_size() -> None:
    out = _script("bench/similarity.py", "--sizes", "40", "80", "--writes", "2")
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in rows[1:]] == ["| 40", "| 80"], out
    assert all(row.endswith("x |") for row in rows[1:]), out


def test_snapshot_benchmark_runs_at_a_tiny_size() -> None:
    """Each import runs in its own process (as the hook runs it), asserts its own result, and
    reports back; the table then holds both sizes beside the baseline."""
    out = _script("bench/snapshot.py", "--entries", "20", "40")
    rows = {line.split()[0]: line for line in out.splitlines() if line[:8].strip().isdigit()}
    assert set(rows) == {"20", "40"}, out
    assert all(row.count("x /") == 2 for row in rows.values()), out
    assert "peak memory of the import of 40 entries:" in out
    assert "import of 40 entries / " in out


def test_tools_list_size_prints_the_baseline_beside_now() -> None:
    if subprocess.run(
        ["git", "-C", REPO_ROOT, "cat-file", "-e", "17beb7f^{commit}"], check=False
    ).returncode:
        pytest.skip("the baseline commit 17beb7f is not in this clone's history")
    out = _script("bench/tools_list_size.py")
    assert "tools/list: 11 tools at 17beb7f, 11 now" in out
    read = next(line for line in out.splitlines() if line.startswith("name+description"))
    before, now = (int(n) for n in re.findall(r"(\d+) chars", read))
    assert now < before
