from __future__ import annotations

import pytest

from ctxkeeper.core import journal
from ctxkeeper.core.errors import CorruptFileError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxkeeper.core._types import JSONObject

ACTOR: JSONObject = {"origin": "user", "user": "tester"}


def _records(n: int) -> list[JSONObject]:
    events = [
        journal.make_event(
            op="record",
            entry_id=f"con-00{i}-abcd",
            before=None,
            after={"id": f"con-00{i}-abcd", "rule": f"rule {i}"},
            actor=ACTOR,
            reason=None,
            at="2026-11-30T09:15:00Z",
        )
        for i in range(1, n + 1)
    ]
    return journal.chain(events, seq=0, head=journal.GENESIS, tx="t")


class TestChain:
    def test_intact_chain_verifies(self) -> None:
        records = _records(3)
        assert [r["seq"] for r in records] == [1, 2, 3]
        assert records[0]["prev"] == journal.GENESIS
        assert records[1]["prev"] == records[0]["hash"]
        assert journal.verify_chain(records) == []

    @pytest.mark.parametrize(
        ("mutate", "message"),
        [
            pytest.param(
                lambda r: r[1].update(reason="quietly edited"), "hash does not match", id="edit"
            ),
            pytest.param(lambda r: r.pop(1), "where 2 was expected", id="drop-record"),
            pytest.param(lambda r: r[1].update(prev="f" * 64), "prev does not match", id="relink"),
            pytest.param(lambda r: r.insert(0, r.pop(2)), "where 1 was expected", id="reorder"),
        ],
    )
    def test_tampering_is_detected(
        self, mutate: Callable[[list[JSONObject]], object], message: str
    ) -> None:
        records = _records(3)
        assert journal.verify_chain(records) == []
        mutate(records)
        problems = journal.verify_chain(records)
        assert any(message in p for p in problems), problems

    def test_sealed_lines_are_the_canonical_encoding(self) -> None:
        # Whatever a record holds, its line is its canonical encoding and its hash verifies.
        tricky: JSONObject = {
            "id": "con-009-abcd",
            "rule": 'quote " and \\ and \u00e9 and \x00 nul',
            "n": [1, {"b": 2, "a": None}],
        }
        events = [
            journal.make_event(
                op="record",
                entry_id="con-009-abcd",
                before=None,
                after=tricky,
                actor=ACTOR,
                reason="why",
                at="2026-11-30T09:15:00Z",
            ),
            journal.make_event(
                op="purge",
                entry_id="con-009-abcd",
                before=journal.redacted(tricky),
                after=None,
                actor=ACTOR,
                reason=None,
                at="2026-11-30T09:16:00Z",
            ),
            journal.make_event(
                op="update",
                entry_id="con-009-abcd",
                before=tricky,
                after=journal.redacted(tricky),
                actor=ACTOR,
                reason=None,
                at="2026-11-30T09:17:00Z",
            ),
            {
                **journal.make_event(
                    op="record",
                    entry_id="con-008-abcd",
                    before=None,
                    after={"id": "con-008-abcd"},
                    actor=ACTOR,
                    reason=None,
                    at="2026-11-30T09:18:00Z",
                ),
                "version": 1,
            },
        ]
        sealed = journal.sealed(events, seq=4, head="a" * 64, tx="t")
        records = [record for record, _line in sealed]
        assert b"".join(line for _record, line in sealed) == journal.encode(records)
        assert records == journal.chain(events, seq=4, head="a" * 64, tx="t")
        assert [r["hash"] for r in records] == [journal.record_hash(r) for r in records]
        assert journal.verify_chain(records, seq=4, head="a" * 64) == []


class TestParse:
    def test_round_trip_and_torn_tail(self) -> None:
        data = journal.encode(_records(2))
        records, ends = journal.parse_lines(data + b'{"seq": 3', "j")
        assert len(records) == 2
        assert ends[-1] == len(data)

    def test_bad_line_names_line_and_column(self) -> None:
        data = journal.encode(_records(1)) + b'{"seq": 2,, }\n'
        with pytest.raises(CorruptFileError, match=r"^j:2:11: "):
            journal.parse_lines(data, "j")

    def test_non_object_line(self) -> None:
        with pytest.raises(CorruptFileError, match="not a JSON object"):
            journal.parse_lines(b"[1, 2]\n", "j")


class TestTransactions:
    def test_incomplete_transaction_is_cut(self) -> None:
        records = _records(3)
        assert journal.complete_transactions(records[:2]) == []
        assert journal.complete_transactions(records) == records

    def test_fold_applies_after_values_and_removals(self) -> None:
        records = _records(2)
        purge = dict(records[0], after=None)
        state: dict[str, JSONObject] = {}
        journal.fold([*records, purge], state)
        assert list(state) == ["con-002-abcd"]


class TestRecordChecks:
    @pytest.mark.parametrize(
        ("change", "message", "future"),
        [
            pytest.param({"version": 3}, "written by a newer ctxkeeper", True, id="future-version"),
            pytest.param({"op": "promote"}, "unknown op 'promote'", False, id="unknown-op"),
            pytest.param({"id": None}, "no entry id", False, id="no-id"),
            pytest.param({"after": "text"}, "neither an entry nor null", False, id="bad-after"),
        ],
    )
    def test_unreplayable_record_is_located(
        self, change: JSONObject, message: str, future: bool
    ) -> None:
        records = _records(3)
        records[1].update(change)
        records[1]["hash"] = journal.record_hash(records[1])
        records[2]["prev"] = records[1]["hash"]
        records[2]["hash"] = journal.record_hash(records[2])
        problems = journal.check_chain(records, first_line=1)
        assert [(p.line, p.future) for p in problems] == [(2, future)]
        assert message in problems[0].message
        assert journal.check_chain(_records(3)) == []  # control

    def test_reseal_makes_an_edited_chain_verify(self) -> None:
        records = _records(3)
        records[1]["reason"] = "edited by hand"
        assert journal.verify_chain(records) != []
        resealed = journal.reseal(records, start=1)
        assert journal.verify_chain(resealed) == []
        assert resealed[0] == records[0]
        assert resealed[1]["reason"] == "edited by hand"
