"""The benchmark beside Context Keeper 0.19, the similarity benchmark and the similarity index
check still run.

The benchmark itself is run by hand (its figures are in the README); this runs it at a tiny
size so it cannot rot. It needs the peer from PyPI in ``.cache/`` (the script installs it):
without network and without a cached copy the test is skipped, saying so.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from .conftest import REPO_ROOT

PEER_VENV = os.path.join(REPO_ROOT, ".cache", "peer-ck019")


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
    run = subprocess.run(
        [
            sys.executable,
            "bench/peer.py",
            "--sizes",
            "20",
            "--runs",
            "2",
            "--writes",
            "2",
            "--startup-runs",
            "1",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("| ")]
    assert rows[1].startswith("| 20 |"), run.stdout
    assert rows[1].count("x |") == 4  # read, write, one-shot and memory ratios
    assert any(row.startswith("| spawn to reply |") for row in rows), run.stdout


def test_similarity_index_changes_no_finding_on_the_labelled_pairs() -> None:
    run = subprocess.run(
        # Every 5th candidate against the whole store keeps this fast; the full check is
        # `python evals/similarity_eval.py --index-check` (every candidate).
        [sys.executable, "evals/similarity_eval.py", "--index-check", "--every", "5"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    first = run.stdout.splitlines()[0]
    agree, total = first.split()[2].split("/")
    assert agree == total
    assert int(total) > 80  # the control: the candidates were checked


def test_similarity_benchmark_runs_at_a_tiny_size() -> None:
    run = subprocess.run(
        [sys.executable, "bench/similarity.py", "--sizes", "40", "80", "--writes", "2"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in rows[1:]] == ["| 40", "| 80"], run.stdout
    assert all(row.endswith("x |") for row in rows[1:]), run.stdout
