"""Benchmark: ``check_drift`` over 1,000 scoped entries in a generated repository of 2,000
commits, beside a baseline measured in the same run: ``git log --name-only`` alone.

Run ``.venv/bin/python bench/drift.py [--commits 2000] [--entries 1000] [--repeat 5]`` from the
repository root. The repository is written in one ``git fast-import`` stream (each commit
changes two files under 500 directories; every 50th renames one), then 1,000 constraints are
recorded in one transaction, each scoped to one directory and verified at a commit spread over
the history (so the one ``git log`` pass reads nearly all of it). The times are medians of
``--repeat`` runs in this process, the baseline and the check taking turns; the first, cold,
call is printed too.

Targets (issue): under 2 seconds, and within 2x of the baseline; the ratio is printed. Exit
status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxkeeper.core import times
from ctxkeeper.core.model import clean_fields, contract_floors, new_entry
from ctxkeeper.core.store import Store
from ctxkeeper.read.drift import check_drift
from ctxkeeper.write import derived  # noqa: F401  # writes refresh the index, as every door's do

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxkeeper.core._types import JSONObject

USER: JSONObject = {"origin": "user", "user": "bench"}
DIRS = [f"pkg{k:02d}/mod{m}" for k in range(50) for m in range(10)]
_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, capture_output=True, env=_ENV, check=True
    ).stdout


def generate(repo: Path, commits: int, rng: random.Random) -> list[str]:
    """A repository of ``commits`` linear commits from one fast-import stream; its shas,
    oldest first."""
    git(repo, "-c", "init.defaultBranch=main", "init", "-q")
    start = int(time.time()) - commits * 60
    out: list[bytes] = []
    files = {d: [f"{d}/f{n}.py" for n in range(3)] for d in DIRS}
    for n in range(1, commits + 1):
        when = start + n * 60
        message = f"change {n}: tune the module code".encode()
        out.append(b"commit refs/heads/main\n")
        out.append(f"mark :{n}\n".encode())
        out.append(f"committer Bench <bench@example.com> {when} +0000\n".encode())
        out.append(f"data {len(message)}\n".encode() + message + b"\n")
        if n > 1:
            out.append(f"from :{n - 1}\n".encode())
        touched = rng.sample(DIRS, 2) if n > 1 else DIRS
        for directory in touched:
            for path in files[directory] if n == 1 else [rng.choice(files[directory])]:
                body = f"# {path} at {n}\nvalue = {n}\n".encode()
                out.append(f"M 100644 inline {path}\n".encode())
                out.append(f"data {len(body)}\n".encode() + body + b"\n")
        if n % 50 == 0:
            directory = rng.choice(DIRS)
            old = files[directory][0]
            new = f"{directory}/renamed{n}.py"
            out.append(f"R {old} {new}\n".encode())
            files[directory][0] = new
        out.append(b"\n")
    git(repo, "fast-import", "--quiet", stdin=b"".join(out))
    git(repo, "checkout", "-q", "main")
    return git(repo, "rev-list", "--reverse", "HEAD").decode().split()


def fill_store(repo: Path, entries: int, shas: list[str], rng: random.Random) -> Store:
    """``entries`` active constraints in one transaction, each on one directory and verified
    at a commit spread over the history."""
    store = Store.open(str(repo))
    store.init()
    config = json.loads(Path(store.path("config.json")).read_text())
    config["auto_export"] = False  # the bench times drift, not the snapshot
    Path(store.path("config.json")).write_text(json.dumps(config, indent=2) + "\n")
    floors = contract_floors()
    at = times.now_iso()
    with store.transaction() as tx:
        for n in range(entries):
            directory = DIRS[n % len(DIRS)]
            fields = clean_fields(
                "constraint",
                {
                    "rule": f"Module code under {directory} keeps rule {n} in every change",
                    "reason": f"Breaking rule {n} there once cost a day of debugging for the team.",
                    "hardness": "hard" if n % 4 == 0 else "soft",
                    "scope": [directory + "/"],
                },
                floors,
            )
            entry_id = tx.new_id("constraint")
            entry = new_entry(
                "constraint", fields, entry_id=entry_id, status="active", origin="user", at=at
            )
            entry["verified_sha"] = shas[rng.randrange(len(shas) // 10, len(shas))]
            tx.put("record", entry_id, entry, actor=USER, reason=None, at=at)
    return store


def timed(actions: list[Callable[[], None]], repeat: int) -> list[list[float]]:
    """Each action's time in seconds, ``repeat`` times, the actions taking turns so a change
    in the machine's load falls on all of them alike."""
    samples: list[list[float]] = [[] for _ in actions]
    for _ in range(repeat):
        for action, times_taken in zip(actions, samples, strict=True):
            start = time.perf_counter()
            action()
            times_taken.append(time.perf_counter() - start)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(12)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        begin = time.perf_counter()
        shas = generate(repo, args.commits, rng)
        made = time.perf_counter() - begin
        store = fill_store(repo, args.entries, shas, rng)
        print(
            f"repository: {len(shas)} commits in {made:.2f} s (fast-import); "
            f"{args.entries} scoped entries"
        )

        def baseline() -> None:
            git(repo, "log", "--name-only")

        reports: list[JSONObject] = []

        def drift() -> None:
            reports.append(check_drift(store))

        base_runs, drift_runs = timed([baseline, drift], args.repeat)
        base_cold, base = base_runs[0], statistics.median(base_runs)
        drift_cold, took = drift_runs[0], statistics.median(drift_runs)
        report = reports[-1]
        drifted = report["drifted"]
        orphaned = report["orphaned"]
        assert isinstance(drifted, list)
        assert isinstance(orphaned, list)
        ratio = took / base
        best = min(drift_runs) / min(base_runs)
        print(
            f"baseline git log --name-only: median {base * 1000:.0f} ms (first {base_cold * 1000:.0f} ms)"
        )
        print(
            f"check_drift:                  median {took * 1000:.0f} ms (first {drift_cold * 1000:.0f} ms)"
        )
        print(
            f"ratio drift / baseline: {ratio:.2f}x of the medians, {best:.2f}x of the fastest "
            f"runs (target within 2x); under 2 s: {took < 2}"
        )
        print(f"found: {len(drifted)} drifted, {len(orphaned)} orphaned")
        return 0 if took < 2 and ratio <= 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
