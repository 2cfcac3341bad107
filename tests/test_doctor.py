from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxkeeper import journal
from ctxkeeper.doctor import run_doctor
from ctxkeeper.store import ENTRIES_FILE, JOURNAL_FILE, Store
from ctxkeeper.verbs import record_entry, user_actor
from tests.conftest import constraint_fields, decision_fields

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
        assert Path(str(path) + ".corrupt").read_text() == '{"version": 1, "entries": ['
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
