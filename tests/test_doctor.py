from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from ctxkeeper.cli.doctor import run_doctor
from ctxkeeper.core import journal
from ctxkeeper.core.errors import StoreError
from ctxkeeper.core.store import ENTRIES_FILE, JOURNAL_FILE, Store
from ctxkeeper.read.rank import get_context
from ctxkeeper.write import exchange
from ctxkeeper.write.verbs import record_entry, user_actor
from tests.conftest import constraint_fields, decision_fields, pipeline_fields

USER = user_actor()


def _two_entries(store: Store) -> tuple[str, str]:
    a = record_entry(store, "constraint", constraint_fields(), actor=USER)["id"]
    b = record_entry(store, "decision", decision_fields(), actor=USER)["id"]
    return str(a), str(b)


class TestDoctor:
    def test_clean_store_is_ok(self, store: Store) -> None:
        _two_entries(store)
        report = run_doctor(store, actor=USER)
        assert report.ok
        assert report.as_json()["problems"] == []

    def test_tampered_journal_line_is_detected(self, store: Store) -> None:
        _two_entries(store)
        path = Path(store.path(JOURNAL_FILE))
        lines = path.read_bytes().splitlines(keepends=True)
        record = json.loads(lines[0])
        record["after"]["rule"] = "Charges may be retried freely without any key"
        lines[0] = journal.canonical(record) + b"\n"
        path.write_bytes(b"".join(lines))
        report = run_doctor(store, actor=USER)
        assert not report.ok
        assert any("seq 1: hash does not match" in p for p in report.problems)
        assert report.manual_edits == []  # a broken chain is not papered over

    def test_hand_edit_is_journaled_as_manual_edit(self, store: Store) -> None:
        rule_id, decision_id = _two_entries(store)
        path = Path(store.path(ENTRIES_FILE))
        doc: Any = json.loads(path.read_text())
        for entry in doc["entries"]:
            if entry["id"] == rule_id:
                entry["reason"] = (
                    "Hand-corrected: the storm was on 2025-02-12, not the 11th as logged."
                )
        path.write_text(json.dumps(doc, indent=2))
        report = run_doctor(store, actor=USER)
        assert report.ok
        assert report.manual_edits == [rule_id]
        last = store.read_journal()[-1]
        assert last["op"] == "manual_edit"
        assert last["actor"]["origin"] == "user"  # type: ignore[index,call-overload]
        assert "2025-02-11" in str(last["before"]["reason"])  # type: ignore[index,call-overload]
        assert "Hand-corrected" in str(last["after"]["reason"])  # type: ignore[index,call-overload]
        assert journal.verify_chain(store.read_journal()) == []
        assert run_doctor(store, actor=USER).manual_edits == []  # idempotent
        assert store.get(decision_id)["revision"] == 1  # the control entry is untouched

    def test_corrupt_entries_explained_then_repaired(self, store: Store) -> None:
        rule_id, _ = _two_entries(store)
        path = Path(store.path(ENTRIES_FILE))
        path.write_text('{"version": 1, "entries": [')
        report = run_doctor(store, actor=USER)
        assert not report.ok
        assert any("entries.json:1:" in p and "--repair" in p for p in report.problems)
        assert path.read_text() == '{"version": 1, "entries": ['
        repaired = run_doctor(store, actor=USER, repair=True)
        assert repaired.repaired
        [backup] = repaired.backups
        assert backup.startswith(str(path) + ".corrupt-")
        assert Path(backup).read_text() == '{"version": 1, "entries": ['
        assert store.get(rule_id)["rule"] == constraint_fields()["rule"]
        assert run_doctor(store, actor=USER).ok

    def test_unparseable_bound_is_reported(self, store: Store) -> None:
        rule_id, _ = _two_entries(store)
        path = Path(store.path(ENTRIES_FILE))
        doc: Any = json.loads(path.read_text())
        doc["entries"][0]["valid_until"] = "someday"
        path.write_text(json.dumps(doc))
        report = run_doctor(store, actor=USER)
        assert any("valid_until 'someday' does not parse" in n for n in report.notes)
        assert report.ok
        assert rule_id in report.manual_edits


def _journal_lines(store: Store) -> list[bytes]:
    return Path(store.path(JOURNAL_FILE)).read_bytes().splitlines(keepends=True)


def _write_journal(store: Store, lines: list[bytes]) -> None:
    Path(store.path(JOURNAL_FILE)).write_bytes(b"".join(lines))


def _edit_entries(store: Store, entry_id: str, **changes: object) -> None:
    path = Path(store.path(ENTRIES_FILE))
    doc: Any = json.loads(path.read_text())
    for entry in doc["entries"]:
        if entry["id"] == entry_id:
            entry.update(changes)
    path.write_text(json.dumps(doc, indent=2))


class TestRepairLosesNothing:
    @pytest.mark.parametrize(
        "keep",
        [pytest.param(0, id="journal-removed"), pytest.param(1, id="journal-shortened")],
    )
    def test_cut_journal_keeps_every_entry(self, store: Store, keep: int) -> None:
        rule_id, decision_id = _two_entries(store)
        _write_journal(store, _journal_lines(store)[:keep])
        with pytest.raises(StoreError, match="journal was cut"):
            store.load()
        report = run_doctor(store, actor=USER)
        assert any("shorter than entries.json expects" in p for p in report.problems)
        repaired = run_doctor(store, actor=USER, repair=True)
        assert repaired.ok, repaired.problems
        assert sorted(store.load().entries) == sorted([rule_id, decision_id])
        assert any("was missing" in n for n in repaired.notes)
        assert sorted(repaired.manual_edits) == sorted([rule_id, decision_id][keep:])
        assert journal.verify_chain(store.read_journal()) == []
        assert run_doctor(store, actor=USER).ok

    def test_backups_are_never_overwritten(self, store: Store) -> None:
        _two_entries(store)
        path = Path(store.path(ENTRIES_FILE))
        path.write_text("{ first corruption")
        first = run_doctor(store, actor=USER, repair=True).backups
        path.write_text("{ second corruption")
        second = run_doctor(store, actor=USER, repair=True).backups
        assert len(first) == len(second) == 1
        assert first != second
        assert Path(first[0]).read_text() == "{ first corruption"
        assert Path(second[0]).read_text() == "{ second corruption"

    def test_rebuild_that_would_lose_entries_asks_first(self, store: Store) -> None:
        rule_id, decision_id = _two_entries(store)
        _write_journal(store, _journal_lines(store)[:1])  # the decision's record is gone
        path = Path(store.path(ENTRIES_FILE))
        text = path.read_text()
        path.write_text(text[: len(text) - 3])  # and entries.json no longer parses
        report = run_doctor(store, actor=USER, repair=True)
        assert report.needs_confirmation
        assert not report.repaired
        assert any(decision_id in item for item in report.would_lose)
        assert rule_id not in " ".join(report.would_lose)  # the journal still has it
        assert path.read_text() == text[: len(text) - 3]  # nothing changed
        accepted = run_doctor(store, actor=USER, repair=True, accept_loss=True)
        assert accepted.repaired
        assert list(store.load().entries) == [rule_id]
        assert Path(accepted.backups[0]).read_text() == text[: len(text) - 3]

    def test_a_repair_that_kept_fewer_entries_than_the_snapshot_suggests_import(
        self, store: Store
    ) -> None:
        rule_id, decision_id = _two_entries(store)
        path = Path(store.path(ENTRIES_FILE))
        path.write_text("{ corrupt")
        whole = run_doctor(store, actor=USER, repair=True)
        assert whole.repaired
        # The control: everything came back from the journal, so nothing to import.
        assert not any("ctxkeeper import" in note for note in whole.notes), whole.notes
        _write_journal(store, _journal_lines(store)[:1])
        path.write_text("{ corrupt again")
        cut = run_doctor(store, actor=USER, repair=True, accept_loss=True)
        assert cut.repaired
        [hint] = [note for note in cut.notes if "ctxkeeper import" in note]
        assert f"holds 1 entries the repaired store does not ({decision_id})" in hint
        assert rule_id not in hint
        exchange.import_snapshot(store, actor=USER)
        assert decision_id in store.load().entries


class TestJournalHandEdits:
    @pytest.mark.parametrize(
        ("old", "new"),
        [
            pytest.param(b"forty", b"FORTY", id="same-length"),
            pytest.param(b"forty", b"forty-one", id="longer"),
            pytest.param(b"forty ", b"", id="shorter"),
        ],
    )
    def test_detected_by_reads_and_writes_then_resealed(
        self, store: Store, old: bytes, new: bytes
    ) -> None:
        rule_id, decision_id = _two_entries(store)
        store.load()  # the verified prefix is remembered
        lines = _journal_lines(store)
        lines[0] = lines[0].replace(old, new)
        _write_journal(store, lines)
        with pytest.raises(StoreError, match=r"journal.jsonl:1: journal seq 1: hash does not"):
            store.load()
        with pytest.raises(StoreError, match=r"journal.jsonl:1: "):
            record_entry(store, "pipeline", pipeline_fields(), actor=USER)
        report = run_doctor(store, actor=USER)
        assert any("journal.jsonl:1:" in p for p in report.problems)
        repaired = run_doctor(store, actor=USER, repair=True)
        assert repaired.ok, repaired.problems
        assert Path(repaired.backups[0]).read_bytes() == b"".join(lines)
        assert store.get(rule_id)["reason"] == constraint_fields()["reason"]  # entries win
        assert repaired.manual_edits == [rule_id]
        assert store.get(decision_id)["revision"] == 1
        record_entry(store, "pipeline", pipeline_fields(), actor=USER)  # writes work again
        assert journal.verify_chain(store.read_journal()) == []

    def test_future_version_record_is_refused_and_never_repaired(self, store: Store) -> None:
        _two_entries(store)
        lines = _journal_lines(store)
        record = json.loads(lines[1])
        record["version"] = 99
        record["hash"] = journal.record_hash(record)
        lines[1] = journal.canonical(record) + b"\n"
        _write_journal(store, lines)
        with pytest.raises(StoreError, match=r"journal.jsonl:2: .*newer ctxkeeper"):
            store.load()
        report = run_doctor(store, actor=USER, repair=True)
        assert not report.repaired
        assert _journal_lines(store) == lines

    def test_unknown_op_is_not_replayed_and_repair_asks_before_dropping(self, store: Store) -> None:
        rule_id, _ = _two_entries(store)
        state = store.load()
        forged = journal.make_event(
            op="record",
            entry_id="con-009-abcd",
            before=None,
            after={"id": "con-009-abcd", "kind": "constraint", "rule": "thin"},
            actor=USER,
            reason=None,
            at="2026-11-30T09:15:00Z",
        )
        forged["op"] = "promote"
        [record] = journal.chain([forged], seq=state.seq, head=state.head, tx="t")
        with open(store.path(JOURNAL_FILE), "ab") as handle:
            handle.write(journal.encode([record]))
        with pytest.raises(StoreError, match=r"journal.jsonl:3: .*unknown op 'promote'"):
            store.load()
        report = run_doctor(store, actor=USER, repair=True)
        assert report.needs_confirmation
        assert any("journal line 3" in item for item in report.would_lose)
        accepted = run_doctor(store, actor=USER, repair=True, accept_loss=True)
        assert accepted.ok, accepted.problems
        assert "con-009-abcd" not in store.load().entries
        assert rule_id in store.load().entries


class TestEntriesHandEdits:
    def test_next_write_journals_the_hand_edit_first(self, store: Store) -> None:
        rule_id, decision_id = _two_entries(store)
        _edit_entries(store, rule_id, reason="Hand-corrected: the storm hit on 2025-02-12 instead.")
        record_entry(store, "pipeline", pipeline_fields(), actor=USER)
        records = store.read_journal()
        assert [r["op"] for r in records[-2:]] == ["manual_edit", "record"]
        manual = records[-2]
        assert manual["id"] == rule_id
        assert manual["actor"] == {"origin": "user", "user": None}
        assert "2025-02-11" in str(manual["before"]["reason"])  # type: ignore[index,call-overload]
        assert "Hand-corrected" in str(manual["after"]["reason"])  # type: ignore[index,call-overload]
        assert decision_id not in {r["id"] for r in records[-2:]}
        assert run_doctor(store, actor=USER).manual_edits == []

    def test_write_without_a_hand_edit_journals_no_manual_edit(self, store: Store) -> None:
        _two_entries(store)
        record_entry(store, "pipeline", pipeline_fields(), actor=USER)
        assert [r["op"] for r in store.read_journal()] == ["record", "record", "record"]


class TestCollectsEverything:
    def test_bad_config_does_not_hide_a_hand_edit(self, store: Store) -> None:
        rule_id, _ = _two_entries(store)
        Path(store.path("config.json")).write_text("{ not json")
        _edit_entries(store, rule_id, reason="Hand-corrected: the storm hit on 2025-02-12 instead.")
        report = run_doctor(store, actor=USER)
        assert any("config.json:1:" in p for p in report.problems)
        assert any(f"not yet journaled: {rule_id}" in p for p in report.problems)
        assert report.manual_edits == []

    def test_duplicate_ids_and_orphans_are_reported(self, store: Store) -> None:
        rule_id, _ = _two_entries(store)
        path = Path(store.path(ENTRIES_FILE))
        doc: Any = json.loads(path.read_text())
        doc["entries"].append(dict(doc["entries"][0]))
        path.write_text(json.dumps(doc, indent=2))
        orphan = Path(store.dir) / ".tmp-abc123.part"
        orphan.write_text("half a file")
        fresh = Path(store.dir) / ".tmp-def456.part"
        fresh.write_text("a write in progress")
        old = time.time() - 3600
        os.utime(orphan, (old, old))
        report = run_doctor(store, actor=USER)
        assert any(
            f"id {doc['entries'][0]['id']} appears more than once" in p for p in report.problems
        )
        assert any(".tmp-abc123.part" in p for p in report.problems)
        with pytest.raises(StoreError, match="appears more than once"):
            record_entry(store, "pipeline", pipeline_fields(), actor=USER)
        doc["entries"].pop()
        path.write_text(json.dumps(doc, indent=2))
        repaired = run_doctor(store, actor=USER, repair=True)
        assert not orphan.exists()
        assert fresh.exists()  # too young to be an orphan
        assert any("removed the orphaned" in n for n in repaired.notes)
        assert rule_id in store.load().entries

    def test_newer_entries_file_is_never_touched(self, store: Store) -> None:
        _two_entries(store)
        path = Path(store.path(ENTRIES_FILE))
        doc: Any = json.loads(path.read_text())
        doc["version"] = 99
        path.write_text(json.dumps(doc))
        before = path.read_bytes()
        report = run_doctor(store, actor=USER, repair=True)
        assert any("newer ctxkeeper" in p for p in report.problems)
        assert not report.repaired
        assert path.read_bytes() == before

    def test_malformed_entry_is_reported_and_skipped_by_reads(self, store: Store) -> None:
        rule_id, decision_id = _two_entries(store)
        path = Path(store.path(ENTRIES_FILE))
        doc: Any = json.loads(path.read_text())
        for entry in doc["entries"]:
            if entry["id"] == rule_id:
                del entry["kind"]
        path.write_text(json.dumps(doc, indent=2))
        state = store.load()
        assert list(state.entries) == [decision_id]
        assert rule_id in state.skipped
        found = get_context(store, {"query": "advisory locks idempotency"})
        assert [r["id"] for r in found["results"]] == [decision_id]  # type: ignore[index,union-attr,call-overload]
        report = run_doctor(store, actor=USER)
        assert any(rule_id in p and "kind" in p for p in report.problems)
