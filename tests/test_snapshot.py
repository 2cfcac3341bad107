"""Exporting the team snapshot: deterministic bytes, auto-export, the unseen guard, git set-up,
the merge driver, and SessionStart's import."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ctxkeeper.core import fsutil
from ctxkeeper.core.errors import SnapshotError, UsageError
from ctxkeeper.core.store import Store
from ctxkeeper.team import gitsetup, mergedriver, snapshot, snapshotformat
from ctxkeeper.team.snapshotformat import parse
from ctxkeeper.write import exchange
from ctxkeeper.write.verbs import (
    agent_actor,
    deprecate_entry,
    record_entry,
    update_entry,
    user_actor,
)

from .conftest import REPO_ROOT, constraint_fields, decision_fields, pipeline_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def _snap(store: Store) -> bytes:
    with open(snapshot.default_path(store.dir), "rb") as handle:
        return handle.read()


def _clone(tmp_path: Path, name: str, source: Store) -> Store:
    """A teammate's fresh clone: the committed files only (config and snapshot)."""
    root = tmp_path / name
    (root / ".context").mkdir(parents=True)
    for file in ("config.json", "snapshot.jsonl"):
        with open(os.path.join(source.dir, file), "rb") as handle:
            (root / ".context" / file).write_bytes(handle.read())
    return Store.open(str(root))


@pytest.fixture
def filled(store: Store) -> Store:
    record_entry(store, "decision", decision_fields(), actor=user_actor())
    record_entry(store, "constraint", constraint_fields(), actor=user_actor())
    record_entry(store, "pipeline", pipeline_fields(), actor=agent_actor("s1"))
    return store


class TestExport:
    def test_every_write_refreshes_the_snapshot_and_it_parses(self, filled: Store) -> None:
        parsed = parse(_snap(filled), "snapshot.jsonl")
        assert sorted(str(e["id"])[:3] for _, e in parsed.entries) == ["con", "dec", "pip"]
        assert len(parsed.events) == 3
        before = _snap(filled)
        entry_id = next(i for i in filled.load().entries if i.startswith("dec"))
        update_entry(
            filled, entry_id, {"tags": ["db"]}, "tag it for the search", actor=user_actor()
        )
        after = _snap(filled)
        assert after != before
        # Only the updated entry's line changed; one event line was added beside its history.
        old, new = before.splitlines(), after.splitlines()
        assert len(new) == len(old) + 1
        assert len(set(new) - set(old)) == 2
        assert len(set(old) - set(new)) == 1

    def test_an_export_that_changed_nothing_leaves_every_byte(self, filled: Store) -> None:
        first = _snap(filled)
        result = exchange.export_snapshot(filled)
        assert _snap(filled) == first
        assert result["path"] == snapshot.default_path(filled.dir)
        assert b'"at"' in first
        assert b"exported" not in first

    def test_same_store_same_bytes_in_another_clone(self, filled: Store, tmp_path: Path) -> None:
        theirs = _clone(tmp_path, "theirs", filled)
        exchange.import_snapshot(theirs, actor=user_actor())
        assert _snap(theirs) == _snap(filled)
        assert theirs.load().entries == filled.load().entries

    def test_auto_export_off_writes_no_snapshot(self, store: Store) -> None:
        with open(store.path("config.json"), encoding="utf-8") as handle:
            config = json.load(handle)
        config["auto_export"] = False
        with open(store.path("config.json"), "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        record_entry(store, "decision", decision_fields(), actor=user_actor())
        assert not os.path.exists(snapshot.default_path(store.dir))
        exchange.export_snapshot(store)  # the control: on demand it is written
        assert os.path.exists(snapshot.default_path(store.dir))

    def test_never_written_over_changes_not_yet_imported(
        self, filled: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        theirs = _clone(tmp_path, "theirs", filled)
        exchange.import_snapshot(theirs, actor=user_actor())
        record_entry(
            theirs,
            "constraint",
            constraint_fields(rule="Never log card numbers anywhere at all"),
            actor=user_actor(),
        )
        pulled = _snap(theirs)
        with open(snapshot.default_path(filled.dir), "wb") as handle:
            handle.write(pulled)  # what `git pull` does
        capsys.readouterr()
        record_entry(
            filled,
            "decision",
            decision_fields(summary="Keep invoices in UTC everywhere"),
            actor=user_actor(),
        )
        assert _snap(filled) == pulled
        assert "not imported" in capsys.readouterr().err
        with pytest.raises(SnapshotError, match="ctxkeeper import"):
            exchange.export_snapshot(filled)
        assert _snap(filled) == pulled
        exchange.import_snapshot(filled, actor=user_actor())  # merges, then rewrites it
        assert len(filled.load().entries) == 5
        assert _snap(filled) != pulled

    def test_paths_outside_context_are_refused(self, filled: Store) -> None:
        for path in ("../x.jsonl", "/tmp/x.jsonl", "src/x.jsonl", ".context/x.txt"):
            with pytest.raises(UsageError):
                exchange.export_snapshot(filled, path)
        exchange.export_snapshot(filled, ".context/copy.jsonl")  # the control
        assert os.path.exists(os.path.join(filled.dir, "copy.jsonl"))


def _as_version_1(data: bytes) -> bytes:
    """The file as ctxkeeper wrote it before entry lines had versions (snapshot version 1)."""
    lines = [json.loads(line) for line in data.splitlines()]
    out = [b'{"ctxkeeper_snapshot":1}']
    for line in lines[1:]:
        if "entry" in line:
            del line["version"]
        out.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode())
    return b"\n".join(out) + b"\n"


def _union(ours: bytes, theirs: bytes) -> bytes:
    """Git's union merge of two sides with no common base: our lines, then theirs not in ours."""
    mine = ours.splitlines()
    return b"\n".join([*mine, *(line for line in theirs.splitlines() if line not in mine)]) + b"\n"


class TestVersionedLines:
    def test_an_export_versions_every_entry_line_and_states_the_highest_in_its_header(
        self, filled: Store
    ) -> None:
        lines = [json.loads(line) for line in _snap(filled).splitlines()]
        assert lines[0] == {"ctxkeeper_snapshot": snapshotformat.SNAPSHOT_VERSION}
        entry_lines = [line for line in lines if "entry" in line]
        event_lines = [line for line in lines if "journal" in line]
        assert len(entry_lines) == 3
        assert {line["version"] for line in entry_lines} == {snapshotformat.ENTRY_VERSION}
        highest = max(
            snapshotformat.ENTRY_VERSION, *(line["journal"]["version"] for line in event_lines)
        )
        assert lines[0]["ctxkeeper_snapshot"] == highest

    def test_a_union_of_a_version_1_and_a_version_2_file_is_read_and_imported(
        self, filled: Store, tmp_path: Path
    ) -> None:
        current = _snap(filled)
        old = _as_version_1(current)
        assert old != current  # the control: the old layout really differs
        assert b'"version":2}' not in old.split(b"\n", 1)[1].split(b'{"journal"')[0]
        merged = _union(old, current)
        assert merged.count(b"ctxkeeper_snapshot") == 2  # both headers kept by the union
        read = parse(merged, "snapshot.jsonl")
        ids = set(filled.load().entries)
        assert {str(entry["id"]) for _, entry in read.entries} == ids
        assert len(read.entries) == 2 * len(ids)  # each entry in both spellings
        theirs = _clone(tmp_path, "theirs", filled)
        (tmp_path / "theirs" / ".context" / "snapshot.jsonl").write_bytes(merged)
        report = exchange.import_snapshot(theirs, actor=user_actor())
        assert report["total_entries"] == len(ids)
        assert theirs.load().entries == filled.load().entries
        # The import rewrote the merged file in the current layout, as every clone writes it.
        assert _snap(theirs) == current

    def test_a_line_of_a_newer_version_is_refused_by_its_line(self, filled: Store) -> None:
        current = _snap(filled)
        lines = current.splitlines()
        newer = json.loads(lines[1])
        newer["version"] = snapshotformat.ENTRY_VERSION + 1
        lines[1] = json.dumps(newer, separators=(",", ":")).encode()
        assert parse(current, "snapshot.jsonl").entries  # the control: the file as written
        with pytest.raises(SnapshotError, match="entry line version 3 was written by a newer"):
            parse(b"\n".join(lines) + b"\n", "snapshot.jsonl")
        header = json.dumps({"ctxkeeper_snapshot": snapshotformat.SNAPSHOT_VERSION + 1})
        with pytest.raises(SnapshotError, match="snapshot version 3 was written by a newer"):
            parse(header.encode() + b"\n" + current, "snapshot.jsonl")


class TestTombstonesAcrossClones:
    def test_a_restatement_from_a_teammate_is_retired_and_an_unrelated_entry_stays(
        self, store: Store, tmp_path: Path
    ) -> None:
        rule = constraint_fields()
        old = record_entry(store, "constraint", rule, actor=user_actor())
        exchange.export_snapshot(store)
        theirs = _clone(tmp_path, "theirs", store)
        exchange.import_snapshot(theirs, actor=user_actor())
        deprecate_entry(
            store, str(old["id"]), "charges moved to the provider's own retries", actor=user_actor()
        )
        # The teammate, not knowing, records the same rule again, and an unrelated one.
        restated = record_entry(
            theirs, "constraint", constraint_fields(scope=["src/payments/"]), actor=user_actor()
        )
        other = record_entry(theirs, "decision", decision_fields(), actor=user_actor())
        with open(snapshot.default_path(store.dir), "ab") as handle:
            handle.write(_snap(theirs))  # a union merge: both sides' lines
        report = exchange.import_snapshot(store, actor=user_actor())
        assert report["retired_restatements"] == [restated["id"]]
        entries = store.load().entries
        assert entries[str(restated["id"])]["status"] == "deprecated"
        assert entries[str(other["id"])]["status"] == "active"
        # The teammate receives the retirement as an event, not by re-deciding it.
        with open(snapshot.default_path(theirs.dir), "ab") as handle:
            handle.write(_snap(store))
        exchange.import_snapshot(theirs, actor=user_actor())
        assert theirs.load().entries == store.load().entries


class TestReimport:
    def test_a_rewritten_copy_of_an_imported_file_is_read_once_and_brings_nothing(
        self, filled: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """git rewrites a file with the same bytes on checkout (a new inode and time): the
        import reads it once, finds its digest seen, and merges nothing. A teammate's file with
        one more entry (the control) is imported, also from one read of it."""
        theirs = _clone(tmp_path, "theirs", filled)
        exchange.import_snapshot(theirs, actor=user_actor())
        path = snapshot.default_path(theirs.dir)
        data = _snap(theirs)
        os.replace(_written(tmp_path / "copy", data), path)
        assert not snapshot.untouched(theirs.dir, path)  # the stat no longer answers
        reads: list[str] = []
        real = fsutil.read_bytes

        def counted(name: str) -> bytes | None:
            reads.append(name)
            return real(name)

        monkeypatch.setattr(fsutil, "read_bytes", counted)
        again = exchange.import_snapshot(theirs, actor=user_actor())
        assert again["unchanged"] is True
        assert again["events_added"] == 0
        assert reads.count(path) == 1
        record_entry(
            filled,
            "decision",
            decision_fields(summary="Queue writes in Redis streams"),
            actor=user_actor(),
        )
        os.replace(_written(tmp_path / "changed", _snap(filled)), path)
        changed = exchange.import_snapshot(theirs, actor=user_actor())
        assert changed["events_added"] == 1
        assert reads.count(path) == 2


def _written(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


class TestRacyStat:
    """A file's stat proves it unchanged only when its mtime was safely older than the moment
    it was recorded: a rewrite in the same timestamp tick keeps size, mtime and inode."""

    def _rewrite_in_the_same_tick(self, path: str) -> None:
        before = os.stat(path)
        data = bytearray(_read(path))
        at = data.rindex(b"Z")  # one character of a time, same length
        data[at - 1 : at] = b"7" if data[at - 1 : at] != b"7" else b"8"
        with open(path, "r+b") as handle:  # in place: the same inode
            handle.write(bytes(data))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(path)
        assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
            before.st_size,
            before.st_mtime_ns,
            before.st_ino,
        )

    def test_a_rewrite_in_the_tick_it_was_written_is_read(self, filled: Store) -> None:
        path = snapshot.default_path(filled.dir)
        assert not snapshot.unseen(filled.dir, path)
        self._rewrite_in_the_same_tick(path)
        assert snapshot.unseen(filled.dir, path)
        assert not snapshot.untouched(filled.dir, path)

    def test_a_file_recorded_well_after_its_mtime_is_passed_over_by_stat(
        self, filled: Store
    ) -> None:
        # The control: the same file, its mtime two seconds and more before it was recorded,
        # is answered by stat alone, unread.
        path = snapshot.default_path(filled.dir)
        past = os.stat(path).st_mtime_ns - 3 * snapshot.RACY_NS
        os.utime(path, ns=(past, past))
        snapshot.remember(filled.dir, path, snapshot.digest(_read(path)))
        assert snapshot.untouched(filled.dir, path)
        assert not snapshot.unseen(filled.dir, path)


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


class TestGitSetup:
    def test_init_adds_the_union_line_once_and_keeps_the_rest(self, project: Path) -> None:
        (project / ".gitattributes").write_bytes(b"*.png binary")
        for _ in range(2):
            done = subprocess.run(
                [sys.executable, "-m", "ctxkeeper", "init", "--project-dir", str(project)],
                capture_output=True, text=True, cwd=REPO_ROOT, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
        text = (project / ".gitattributes").read_text()
        assert text.startswith("*.png binary\n")
        assert text.count(gitsetup.UNION_LINE) == 1

    def test_init_git_needs_a_person_at_a_terminal(self, project: Path) -> None:
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        done = subprocess.run(
            [sys.executable, "-m", "ctxkeeper", "init", "--git", "--project-dir", str(project)],
            capture_output=True, text=True, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        assert done.returncode == 2
        assert "terminal" in done.stderr
        config = subprocess.run(
            ["git", "-C", str(project), "config", "--local", "--get-regexp", "merge"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert "ctxkeeper" not in config.stdout
        gitsetup.register_driver(str(project))  # the control: registered when asked
        config = subprocess.run(
            ["git", "-C", str(project), "config", "--local", "merge.ctxkeeper.driver"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert config.stdout.strip().endswith("%O %A %B")
        info = project / ".git" / "info" / "attributes"
        assert gitsetup.DRIVER_LINE in info.read_text()
        assert gitsetup.DRIVER_LINE not in (project / ".gitattributes").read_text()


class TestMergeDriver:
    def test_the_merge_is_normal_and_the_same_from_either_side(
        self, filled: Store, tmp_path: Path
    ) -> None:
        theirs = _clone(tmp_path, "theirs", filled)
        exchange.import_snapshot(theirs, actor=user_actor())
        record_entry(
            theirs,
            "constraint",
            constraint_fields(rule="Never log card numbers anywhere at all"),
            actor=user_actor(),
        )
        record_entry(
            filled,
            "decision",
            decision_fields(summary="Keep invoices in UTC everywhere"),
            actor=user_actor(),
        )
        ours_bytes, theirs_bytes = _snap(filled), _snap(theirs)
        one = mergedriver.merged(ours_bytes, theirs_bytes, "agent")
        two = mergedriver.merged(theirs_bytes, ours_bytes, "agent")
        assert one == two
        exchange.import_snapshot(filled, actor=user_actor())  # unchanged file: nothing new
        path = tmp_path / "ours.jsonl"
        path.write_bytes(ours_bytes)
        (tmp_path / "theirs.jsonl").write_bytes(theirs_bytes)
        assert mergedriver.main(["/dev/null", str(path), str(tmp_path / "theirs.jsonl")]) == 0
        assert path.read_bytes() == one
        assert len(parse(one, "merged").entries) == 5

    def test_a_side_it_cannot_read_is_merged_line_by_line(self, tmp_path: Path) -> None:
        ours = tmp_path / "ours"
        ours.write_bytes(b'{"ctxkeeper_snapshot":1}\nnot json\n')
        theirs = tmp_path / "theirs"
        theirs.write_bytes(b'{"ctxkeeper_snapshot":1}\n{"entry":{}}\n')
        assert mergedriver.main(["/dev/null", str(ours), str(theirs)]) == 0
        assert ours.read_bytes() == b'{"ctxkeeper_snapshot":1}\nnot json\n{"entry":{}}\n'


class TestSessionStart:
    def _run(self, root: str) -> dict[str, object]:
        payload = {
            "session_id": "s",
            "hook_event_name": "SessionStart",
            "source": "startup",
            "cwd": root,
        }
        env = {**os.environ, "CLAUDE_PROJECT_DIR": root}
        done = subprocess.run(
            [sys.executable, "-I", "-S", os.path.join(REPO_ROOT, "hooks", "session_start.py")],
            input=json.dumps(payload), capture_output=True, text=True, env=env, check=True,
        )  # fmt: skip
        return json.loads(done.stdout) if done.stdout else {}

    def test_a_fresh_clone_imports_once_and_says_what_arrived(
        self, filled: Store, tmp_path: Path
    ) -> None:
        theirs = _clone(tmp_path, "theirs", filled)
        first = self._run(theirs.root)
        note = str(first.get("systemMessage"))
        assert "from the team snapshot: 1 new entry" in note
        # A copy with no git behind it: nothing vouches for the person's entries in it (the
        # no-remote case), so they arrive as proposals for this clone's person to review.
        assert "2 events claim to be a person's and are not in the team's history" in note
        mine, held = filled.load().entries, theirs.load().entries
        assert set(held) == set(mine)
        assert {e["status"] for e in mine.values()} == {"active", "proposed"}
        assert {e["status"] for e in held.values()} == {"proposed"}
        second = self._run(theirs.root)
        assert "team snapshot" not in str(second.get("systemMessage"))
        assert "awaiting review" in str(second.get("systemMessage"))  # the control still shows

    def test_a_bad_snapshot_is_reported_and_changes_nothing(
        self, filled: Store, tmp_path: Path
    ) -> None:
        theirs = _clone(tmp_path, "theirs", filled)
        with open(snapshot.default_path(theirs.dir), "ab") as handle:
            handle.write(b'{"journal": 12}\n')
        answer = self._run(theirs.root)
        assert "was not imported" in str(answer.get("systemMessage"))
        assert ":8:" in str(answer.get("systemMessage"))
        assert not os.path.exists(theirs.path("journal.jsonl"))


class TestPatchedRefresh:
    def test_every_refresh_gives_the_bytes_of_a_full_export(
        self, filled: Store, tmp_path: Path
    ) -> None:
        from ctxkeeper.cli.review import decide
        from ctxkeeper.team import teamlog
        from ctxkeeper.team.snapshotformat import render
        from ctxkeeper.team.snapshotpatch import patched

        ids = sorted(filled.load().entries)
        con, dec, pip = ids
        steps: list[Callable[[], object]] = [
            lambda: update_entry(
                filled, dec, {"tags": ["db"]}, "tag it for search", actor=user_actor()
            ),
            lambda: update_entry(
                filled, con, {"tags": ["x"]}, "an agent's proposed change", actor=agent_actor()
            ),
            lambda: decide(filled, "approve", [pip], actor=user_actor(), reason=""),
            lambda: record_entry(
                filled,
                "decision",
                decision_fields(summary="Keep invoices in UTC everywhere"),
                actor=user_actor(),
                supersedes=[dec],
            ),
            lambda: deprecate_entry(
                filled, con, "charges moved to the provider's own retries", actor=user_actor()
            ),
        ]
        for step in steps:
            old, seen = _snap(filled), len(filled.read_journal())
            step()
            new = _snap(filled)
            records = filled.read_journal()
            entries = filled.load().entries
            assert patched(old, records[seen:], entries) == new
            assert render(entries.values(), teamlog.team_events(records)) == new
            assert new != old


class TestEdges:
    def test_the_patch_refuses_what_it_did_not_lay_out(self) -> None:
        from ctxkeeper.team.snapshotpatch import CannotPatchError, line_key, patched

        with pytest.raises(CannotPatchError):
            patched(b'{"entry":{"id":"x"}}\n', [], {})  # no header line
        header = snapshotformat.HEADER_LINE + b"\n"
        later = b'{"entry":{"id":"dec-002-aaaa","kind":"decision"}}\n'
        earlier = b'{"entry":{"id":"dec-001-aaaa","kind":"decision"}}\n'
        with pytest.raises(CannotPatchError):
            patched(header + later + earlier, [], {})  # out of order
        with pytest.raises(CannotPatchError):
            line_key(b'{"journal":{"at":"x"}}')
        assert patched(header + earlier + later, [], {}) == header + earlier + later  # control

    def test_a_file_laid_out_by_hand_is_rebuilt_on_the_next_write(self, filled: Store) -> None:
        path = snapshot.default_path(filled.dir)
        lines = _snap(filled).splitlines(keepends=True)
        shuffled = lines[:1] + list(reversed(lines[1:]))
        with open(path, "wb") as handle:
            handle.write(b"".join(shuffled))
        snapshot.remember(
            filled.dir, path, snapshot.digest(b"".join(shuffled))
        )  # as if this clone wrote it
        record_entry(
            filled,
            "decision",
            decision_fields(summary="Keep invoices in UTC everywhere"),
            actor=user_actor(),
        )
        rebuilt = _snap(filled).splitlines()
        assert rebuilt[1:] == sorted(rebuilt[1:], key=lambda line: line[:9])  # entries, then events
        assert len(rebuilt) == len(lines) + 2

    def test_merge_driver_usage_and_git_set_up_outside_git(self, project: Path) -> None:
        from ctxkeeper.core.errors import StoreError

        assert mergedriver.main(["only-one"]) == 2
        with pytest.raises(StoreError):
            gitsetup.register_driver(str(project))
