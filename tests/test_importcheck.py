"""A large snapshot's checks run in a second process (ctxkeeper.write.importcheck): its verdict
is the one the checks here give, nothing is written before it, a missing or doubtful verdict
sends the checks back here, and that process runs none of the project's code.

Real processes throughout: the checker starts this interpreter as the import would."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from ctxkeeper.core.errors import SnapshotError
from ctxkeeper.core.snapshotformat import parse
from ctxkeeper.core.store import Store
from ctxkeeper.write import importcheck
from ctxkeeper.write.exchange import import_snapshot
from ctxkeeper.write.importcheck import Checker
from ctxkeeper.write.verbs import record_entry, update_entry, user_actor
from tests.conftest import check_every_import_elsewhere, constraint_fields, decision_fields
from tests.test_snapshot_hostile import GITHUB_TOKEN, tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


EMPTY = hashlib.sha256(b"").hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def checked_here(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file counts as large; the files whose checks ran in this process (the
    fallback)."""
    return check_every_import_elsewhere(monkeypatch)


def _refusal(checker: Checker | None) -> SnapshotError:
    """The error a started checker's verdict raises."""
    assert checker is not None
    with pytest.raises(SnapshotError) as refused:
        checker.verdict()
    return refused.value


def _team_snapshot(tmp_path: Path) -> bytes:
    """A teammate's exported snapshot: two entries, one of them updated."""
    (tmp_path / "teammate").mkdir(exist_ok=True)
    teammate = Store.open(str(tmp_path / "teammate"))
    teammate.init()
    con = record_entry(teammate, "constraint", constraint_fields(), actor=user_actor())["id"]
    record_entry(teammate, "decision", decision_fields(), actor=user_actor())
    update_entry(
        teammate,
        str(con),
        {"reason": "Incident 12: the retry storm double-charged customers at checkout."},
        "the incident's number was wrong",
        actor=user_actor(),
    )
    with open(os.path.join(teammate.dir, "snapshot.jsonl"), "rb") as handle:
        return handle.read()


def _with_secret(data: bytes) -> tuple[bytes, int]:
    """The snapshot with a token in its last event's reason, and that line's number."""
    lines = data.splitlines(keepends=True)
    event = json.loads(lines[-1])
    event["journal"]["reason"] = f"rotated {GITHUB_TOKEN}"
    lines[-1] = json.dumps(event, separators=(",", ":")).encode() + b"\n"
    return b"".join(lines), len(lines)


def _clone(tmp_path: Path, name: str, data: bytes) -> Store:
    (tmp_path / name).mkdir()
    clone = Store.open(str(tmp_path / name))
    clone.init()
    with open(os.path.join(clone.dir, "snapshot.jsonl"), "wb") as handle:
        handle.write(data)
    return clone


def _file(tmp_path: Path, name: str, data: bytes) -> str:
    path = str(tmp_path / name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def test_a_large_import_is_checked_in_the_second_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checked_here: list[str]
) -> None:
    data = _team_snapshot(tmp_path)
    started: list[Checker | None] = []
    real_start = Checker.start

    def spied(path: str, data: bytes, sha256: str) -> Checker | None:
        started.append(real_start(path, data, sha256))
        return started[-1]

    monkeypatch.setattr(Checker, "start", staticmethod(spied))
    elsewhere = import_snapshot(_clone(tmp_path, "elsewhere", data), actor=user_actor())
    assert len(started) == 1
    assert started[0] is not None
    assert started[0]._process.returncode == 0
    assert checked_here == []
    # The control: the same file checked here gives the same import.
    monkeypatch.setattr(importcheck, "CHECK_ELSEWHERE_BYTES", len(data) + 1)
    here_store = _clone(tmp_path, "here", data)
    here = import_snapshot(here_store, actor=user_actor())
    assert started[-1] is None
    assert {k: v for k, v in elsewhere.items() if k != "path"} == {
        k: v for k, v in here.items() if k != "path"
    }
    assert here["added"] == sorted(here_store.load().entries)
    assert len(here_store.load().entries) == 2


def test_the_verdict_is_the_error_the_checks_here_give(
    tmp_path: Path, checked_here: list[str]
) -> None:
    good = _team_snapshot(tmp_path)
    bad, line = _with_secret(good)
    path = _file(tmp_path, "team.jsonl", bad)
    with pytest.raises(SnapshotError) as here:
        parse(bad, path)
    checker = Checker.start(path, bad, sha(bad))
    assert checker is not None
    with pytest.raises(SnapshotError) as elsewhere:
        checker.verdict()
    with pytest.raises(SnapshotError) as again:
        checker.verdict()  # asked twice (the gate, then the import's error path): one answer
    assert str(elsewhere.value) == str(here.value) == str(again.value)
    assert elsewhere.value.line == line
    assert "GitHub token" in elsewhere.value.detail
    assert GITHUB_TOKEN not in str(elsewhere.value)
    # The control: the file without the token passes.
    sound = Checker.start(_file(tmp_path, "sound.jsonl", good), good, sha(good))
    assert sound is not None
    sound.verdict()
    assert checked_here == []


def test_nothing_is_written_before_the_verdict(tmp_path: Path) -> None:
    """The unchecked file merges and seals fully here; the verdict stops the write."""
    bad, line = _with_secret(_team_snapshot(tmp_path))
    clone = _clone(tmp_path, "clone", bad)
    before = tree(clone.dir)
    with pytest.raises(SnapshotError) as refused:
        import_snapshot(clone, actor=user_actor())
    assert refused.value.line == line
    after = tree(clone.dir)
    assert after.pop(".lock") == EMPTY  # the store lock, taken for the merge
    assert after == before
    assert clone.load().entries == {}


def test_the_first_bad_line_is_named_when_the_merge_fails_on_a_later_one(
    tmp_path: Path,
) -> None:
    """Line A holds an event time the merge never reads; line B an entry line the merge
    refuses. Checked in line order, A is the error; the merge, unchecked, fails on B first."""
    lines = _team_snapshot(tmp_path).splitlines(keepends=True)
    event_at = next(i for i, raw in enumerate(lines) if raw.startswith(b'{"journal"'))
    event = json.loads(lines[event_at])
    event["journal"]["at"] = "2026-02-30T00:00:00Z"
    lines[event_at] = json.dumps(event, separators=(",", ":")).encode() + b"\n"
    hand_added = decision_fields(summary="ok")  # under the floor, and no events behind it
    entry = {"id": "dec-077-abcd", "kind": "decision", "status": "active", "origin": "user"}
    lines.append(json.dumps({"entry": {**entry, **hand_added, "revision": 1}}).encode() + b"\n")
    data = b"".join(lines)
    with pytest.raises(SnapshotError) as here:
        parse(data, "x")
    assert here.value.line == event_at + 1
    clone = _clone(tmp_path, "clone", data)
    with pytest.raises(SnapshotError) as refused:
        import_snapshot(clone, actor=user_actor())
    assert refused.value.line == event_at + 1, str(refused.value)
    assert "at" in refused.value.detail
    assert clone.load().entries == {}


@pytest.mark.parametrize(
    "boot",
    [
        "import sys; sys.exit(3)",  # the process dies
        "print('not a verdict')",  # it answers something else
        'print(\'{"sha256": "0"}\')',  # it checked other bytes
    ],
)
def test_without_a_verdict_the_checks_run_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checked_here: list[str], boot: str
) -> None:
    monkeypatch.setattr(importcheck, "_BOOT", boot)
    good = _team_snapshot(tmp_path)
    bad, line = _with_secret(good)
    refused = _refusal(Checker.start(_file(tmp_path, "bad.jsonl", bad), bad, sha(bad)))
    assert refused.line == line
    sound = Checker.start(_file(tmp_path, "good.jsonl", good), good, sha(good))
    assert sound is not None
    sound.verdict()
    assert len(checked_here) == 2


def test_other_bytes_at_the_path_are_not_taken_for_these(
    tmp_path: Path, checked_here: list[str]
) -> None:
    """The file changed between the import's read and the second process's: the sound file
    the second process read says nothing about the bytes the import holds."""
    good = _team_snapshot(tmp_path)
    bad, line = _with_secret(good)
    refused = _refusal(Checker.start(_file(tmp_path, "team.jsonl", good), bad, sha(bad)))
    assert refused.line == line
    assert len(checked_here) == 1


def test_small_files_are_checked_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _team_snapshot(tmp_path)
    path = _file(tmp_path, "team.jsonl", data)
    monkeypatch.setattr(importcheck, "CHECK_ELSEWHERE_BYTES", len(data) + 1)
    assert Checker.start(path, data, sha(data)) is None
    monkeypatch.setattr(importcheck, "CHECK_ELSEWHERE_BYTES", len(data))
    large = Checker.start(path, data, sha(data))
    assert large is not None
    large.verdict()
    monkeypatch.setattr(importcheck, "_processors", lambda: 1)
    assert (
        Checker.start(path, data, sha(data)) is None
    )  # one processor: a second process only waits


def test_the_second_process_runs_none_of_the_projects_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cloned repository holding a ``ctxkeeper`` package, as the working directory and on
    PYTHONPATH: the second process still runs this package's code."""
    trap = tmp_path / "repo"
    marker = tmp_path / "ran"
    package = trap / "ctxkeeper" / "write"
    package.mkdir(parents=True)
    for folder in (trap / "ctxkeeper", package):
        (folder / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "importcheck.py").write_text("def main(path):\n    print('{}')\n")
    # The control: a plain interpreter in that directory does run the repository's code.
    subprocess.run(
        [sys.executable, "-c", "import ctxkeeper.write.importcheck"], cwd=trap, check=True
    )
    assert marker.exists()
    marker.unlink()
    good = _team_snapshot(tmp_path)
    bad, line = _with_secret(good)
    path = _file(tmp_path, "team.jsonl", bad)
    monkeypatch.chdir(trap)
    monkeypatch.setenv("PYTHONPATH", str(trap))
    checker = Checker.start(path, bad, sha(bad))
    assert checker is not None
    with pytest.raises(SnapshotError) as refused:
        checker.verdict()
    assert refused.value.line == line
    assert not marker.exists()
