from __future__ import annotations

import pytest

from ctxkeeper.errors import BelowFloorError, UsageError, ValidationError
from ctxkeeper.model import (
    CONTRACT_FLOORS,
    check_id,
    clean_fields,
    contract_floors,
    kind_of_id,
    new_entry,
    ordered,
    stored_problems,
)
from tests.conftest import FIELDS

TEXT_FLOOR_CASES = [
    pytest.param(kind, field, floor, id=f"{kind}-{field}-{floor}")
    for kind, floors in CONTRACT_FLOORS.items()
    for field, floor in floors.items()
    if field not in ("steps", "step")
]


class TestFloors:
    @pytest.mark.parametrize(("kind", "field", "floor"), TEXT_FLOOR_CASES)
    @pytest.mark.parametrize("delta", [-1, 0, 1], ids=["below", "at", "above"])
    def test_text_field_boundary(self, kind: str, field: str, floor: int, delta: int) -> None:
        fields = FIELDS[kind](**{field: "x" * (floor + delta)})
        if delta < 0:
            with pytest.raises(BelowFloorError) as info:
                clean_fields(kind, fields, contract_floors())
            assert info.value.field == field
            assert f"is {floor - 1} characters; the minimum is {floor}" in str(info.value)
        else:
            assert clean_fields(kind, fields, contract_floors())[field] == "x" * (floor + delta)

    @pytest.mark.parametrize("delta", [-1, 0, 1], ids=["below", "at", "above"])
    def test_each_step_boundary(self, delta: int) -> None:
        fields = FIELDS["pipeline"](steps=["Run the whole test suite", "y" * (10 + delta)])
        if delta < 0:
            with pytest.raises(
                BelowFloorError, match=r"steps\[1\]' is 9 characters; the minimum is 10"
            ):
                clean_fields("pipeline", fields, contract_floors())
        else:
            assert clean_fields("pipeline", fields, contract_floors())["steps"] == [
                "Run the whole test suite",
                "y" * (10 + delta),
            ]

    def test_pipeline_needs_a_step(self) -> None:
        with pytest.raises(BelowFloorError, match="'steps' is 0 steps; the minimum is 1"):
            clean_fields("pipeline", FIELDS["pipeline"](steps=[]), contract_floors())

    def test_whitespace_does_not_count(self) -> None:
        with pytest.raises(BelowFloorError):
            clean_fields(
                "constraint", FIELDS["constraint"](rule="  short rule    "), contract_floors()
            )

    def test_raised_floor_applies(self) -> None:
        floors = contract_floors()
        floors["decision"]["summary"] = 60
        fields = FIELDS["decision"]()
        assert clean_fields("decision", fields, contract_floors())
        with pytest.raises(BelowFloorError, match="minimum is 60"):
            clean_fields("decision", fields, floors)


class TestFields:
    def test_unknown_field_names_the_allowed_ones(self) -> None:
        with pytest.raises(ValidationError, match="constraint has no field 'summary'"):
            clean_fields("constraint", FIELDS["constraint"](summary="x" * 30), contract_floors())

    def test_missing_field(self) -> None:
        fields = FIELDS["decision"]()
        del fields["why_chosen"]
        with pytest.raises(ValidationError, match="decision needs 'why_chosen'"):
            clean_fields("decision", fields, contract_floors())

    @pytest.mark.parametrize("hardness", [None, "firm", "HARD"])
    def test_hardness_is_a_closed_vocabulary(self, hardness: object) -> None:
        with pytest.raises(ValidationError, match="hardness"):
            clean_fields("constraint", FIELDS["constraint"](hardness=hardness), contract_floors())

    def test_wrong_types(self) -> None:
        with pytest.raises(ValidationError, match="rule must be a string"):
            clean_fields("constraint", FIELDS["constraint"](rule=42), contract_floors())
        with pytest.raises(ValidationError, match="tags must be a list of strings"):
            clean_fields("constraint", FIELDS["constraint"](tags="billing"), contract_floors())

    def test_common_fields_are_normalised(self) -> None:
        clean = clean_fields(
            "constraint",
            FIELDS["constraint"](
                scope=["./src/billing/", "src/billing", "docs//api/"],
                tags=["Billing", "billing", "payments"],
                valid_until="2026-01-31",
                valid_from="2026-01-01T10:00:00+02:00",
                related_to=["dec-001-abcd"],
            ),
            contract_floors(),
        )
        assert clean["scope"] == ["src/billing", "docs/api"]
        assert clean["tags"] == ["billing", "payments"]
        assert clean["valid_until"] == "2026-01-31"
        assert clean["valid_from"] == "2026-01-01T08:00:00Z"
        assert clean["related_to"] == ["dec-001-abcd"]

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            pytest.param("tags", ["two words"], "one word", id="tag-with-space"),
            pytest.param("related_to", ["dec-1"], "not an entry id", id="bad-related-id"),
            pytest.param("valid_until", "next tuesday", "not an ISO-8601 time", id="bad-time"),
            pytest.param("scope", ["../outside"], "scope", id="escaping-scope"),
        ],
    )
    def test_bad_common_fields(self, field: str, value: object, message: str) -> None:
        with pytest.raises((ValidationError, UsageError), match=message):
            clean_fields("constraint", FIELDS["constraint"](**{field: value}), contract_floors())


class TestIdsAndEntries:
    @pytest.mark.parametrize("good", ["dec-021-b607", "con-010-acde", "pip-1003-91fe"])
    def test_good_ids(self, good: str) -> None:
        assert check_id(good) == good

    @pytest.mark.parametrize("bad", ["dec-21-b607", "xyz-021-b607", "dec-021-B607", "", None, 7])
    def test_bad_ids(self, bad: object) -> None:
        with pytest.raises(UsageError, match="not an entry id"):
            check_id(bad)

    def test_kind_of_id(self) -> None:
        assert kind_of_id("pip-003-91fe") == "pipeline"

    def test_new_entry_has_every_contract_field_in_order(self) -> None:
        clean = clean_fields("decision", FIELDS["decision"](), contract_floors())
        entry = new_entry(
            "decision",
            clean,
            entry_id="dec-001-abcd",
            status="active",
            origin="user",
            at="2026-11-30T09:15:00Z",
        )
        for key in (
            "id",
            "kind",
            "status",
            "origin",
            "scope",
            "tags",
            "related_to",
            "supersedes",
            "superseded_by",
            "valid_from",
            "valid_until",
            "created_at",
            "updated_at",
            "verified_at",
            "verified_sha",
            "revision",
        ):
            assert key in entry
        assert list(entry)[:4] == ["id", "kind", "status", "origin"]
        assert entry["revision"] == 1
        assert stored_problems(entry) == []
        assert list(ordered({"zzz": 1, **entry}))[-1] == "zzz"

    def test_stored_problems(self) -> None:
        clean = clean_fields("constraint", FIELDS["constraint"](), contract_floors())
        entry = new_entry(
            "constraint",
            clean,
            entry_id="con-001-abcd",
            status="active",
            origin="user",
            at="2026-11-30T09:15:00Z",
        )
        broken = {**entry, "status": "maybe", "origin": "robot", "revision": "2", "rule": "short"}
        problems = stored_problems(broken)
        assert any("bad status" in p for p in problems)
        assert any("bad origin" in p for p in problems)
        assert any("revision" in p for p in problems)
        assert any("'rule' is 5 characters" in p for p in problems)
        assert stored_problems({"id": "nope"}) == ["bad id 'nope'"]
        assert stored_problems({**entry, "kind": "memo"})[0].endswith("bad kind 'memo'")
