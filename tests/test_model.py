from __future__ import annotations

import os

import pytest

from ctxkeeper.core.errors import (
    BelowFloorError,
    ControlCharacterError,
    TooLongError,
    UsageError,
    ValidationError,
)
from ctxkeeper.core.model import (
    CONTRACT_FLOORS,
    ITEM_MAX,
    TEXT_MAX,
    check_id,
    clean_fields,
    contract_floors,
    kind_of_id,
    new_entry,
    ordered,
    stored_problems,
)
from tests.conftest import FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core.store import Store

TEXT_FLOOR_CASES = [
    pytest.param(kind, field, floor, id=f"{kind}-{field}-{floor}")
    for kind, floors in CONTRACT_FLOORS.items()
    for field, floor in floors.items()
    if field not in ("steps", "step")
]


def _letters(length: int) -> str:
    """A run of distinct-looking letters whose readable length is its length."""
    return "".join(chr(ord("a") + n % 26) for n in range(length))


class TestFloors:
    @pytest.mark.parametrize(("kind", "field", "floor"), TEXT_FLOOR_CASES)
    @pytest.mark.parametrize("delta", [-1, 0, 1], ids=["below", "at", "above"])
    def test_text_field_boundary(self, kind: str, field: str, floor: int, delta: int) -> None:
        fields = FIELDS[kind](**{field: _letters(floor + delta)})
        if delta < 0:
            with pytest.raises(BelowFloorError) as info:
                clean_fields(kind, fields, contract_floors())
            assert info.value.field == field
            assert f"is {floor - 1} characters; the minimum is {floor}" in str(info.value)
        else:
            assert clean_fields(kind, fields, contract_floors())[field] == _letters(floor + delta)

    @pytest.mark.parametrize("delta", [-1, 0, 1], ids=["below", "at", "above"])
    def test_each_step_boundary(self, delta: int) -> None:
        fields = FIELDS["pipeline"](steps=["Run the whole test suite", _letters(10 + delta)])
        if delta < 0:
            with pytest.raises(
                BelowFloorError, match=r"steps\[1\]' is 9 characters; the minimum is 10"
            ):
                clean_fields("pipeline", fields, contract_floors())
        else:
            assert clean_fields("pipeline", fields, contract_floors())["steps"] == [
                "Run the whole test suite",
                _letters(10 + delta),
            ]

    def test_pipeline_needs_a_step(self) -> None:
        with pytest.raises(BelowFloorError, match="'steps' is 0 steps; the minimum is 1"):
            clean_fields("pipeline", FIELDS["pipeline"](steps=[]), contract_floors())

    def test_whitespace_does_not_count(self) -> None:
        with pytest.raises(BelowFloorError):
            clean_fields(
                "constraint", FIELDS["constraint"](rule="  short rule    "), contract_floors()
            )

    @pytest.mark.parametrize(
        ("padding", "readable"),
        [
            pytest.param("\u200b" * 40, 0, id="zero-width-spaces"),
            pytest.param("." * 40, 1, id="dots"),
            pytest.param("a" + " " * 38 + "b", 3, id="letter-spaces-letter"),
            pytest.param("   lonely   \t\n   ", 6, id="padded-word"),
            pytest.param("x" * 40, 3, id="one-letter-repeated"),
            pytest.param("very " * 10, 4, id="one-word-repeated"),
            pytest.param("a\u0301" * 40, 3, id="combining-marks"),
            pytest.param("\u3164" * 40, 0, id="hangul-filler"),
        ],
    )
    def test_padding_does_not_count(self, padding: str, readable: int) -> None:
        fields = FIELDS["constraint"](reason=padding)
        with pytest.raises(BelowFloorError) as info:
            clean_fields("constraint", fields, contract_floors())
        assert info.value.field == "reason"
        assert info.value.length == readable
        assert f"'reason' is {readable} characters; the minimum is 40" in str(info.value)
        assert "counted as read" in str(info.value)
        # The control: real prose of the same raw length passes.
        prose = "Retries without a key charged customers twice"
        assert clean_fields("constraint", FIELDS["constraint"](reason=prose), contract_floors())

    def test_ordinary_punctuation_and_other_scripts_count(self) -> None:
        # 43 characters of prose with an abbreviation, a path and a non-Latin word.
        reason = "E.g. src/app.py breaks: caf\u00e9 \u6570\u636e lost twice!"
        clean = clean_fields("constraint", FIELDS["constraint"](reason=reason), contract_floors())
        assert clean["reason"] == reason

    def test_raised_floor_applies(self) -> None:
        floors = contract_floors()
        floors["decision"]["summary"] = 60
        fields = FIELDS["decision"]()
        assert clean_fields("decision", fields, contract_floors())
        with pytest.raises(BelowFloorError, match="minimum is 60"):
            clean_fields("decision", fields, floors)


class TestLimits:
    @pytest.mark.parametrize(
        ("field", "char", "codepoint"),
        [
            pytest.param("rule", "\x1b[2K", "U+001B", id="esc-in-rule"),
            pytest.param("rule", "\r", "U+000D", id="cr-in-rule"),
            pytest.param("reason", "\x00", "U+0000", id="nul-in-reason"),
            pytest.param("reason", "\x07", "U+0007", id="bel-in-reason"),
            pytest.param("reason", "\u202e", "U+202E", id="rlo-in-reason"),
            pytest.param("rule", "\u2066", "U+2066", id="isolate-in-rule"),
            pytest.param("rule", "\n", "U+000A", id="newline-in-rule"),
            pytest.param("rule", "\t", "U+0009", id="tab-in-rule"),
            pytest.param("reason", "\x85", "U+0085", id="c1-next-line"),
        ],
    )
    def test_control_characters_are_refused(self, field: str, char: str, codepoint: str) -> None:
        fields = FIELDS["constraint"]()
        fields[field] = f"{fields[field]} {char}and more"
        with pytest.raises(ControlCharacterError) as info:
            clean_fields("constraint", fields, contract_floors())
        assert info.value.field == field
        assert codepoint in str(info.value)
        assert char not in str(info.value)

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            pytest.param("tags", ["ok", "ba\x1bd"], id="tag"),
            pytest.param("scope", ["src/\u202egp.py"], id="scope"),
        ],
    )
    def test_list_items_refuse_control_characters(self, field: str, value: list[str]) -> None:
        with pytest.raises(ControlCharacterError) as info:
            clean_fields("constraint", FIELDS["constraint"](**{field: value}), contract_floors())
        assert info.value.field == f"{field}[{len(value) - 1}]"

    def test_newline_and_tab_stay_in_prose_fields(self) -> None:
        reason = "First line of the reason, long enough.\n\tAnd an indented second line."
        clean = clean_fields("constraint", FIELDS["constraint"](reason=reason), contract_floors())
        assert clean["reason"] == reason

    @pytest.mark.parametrize(
        ("field", "value", "maximum"),
        [
            pytest.param("reason", "beta " * (TEXT_MAX // 5) + "x", TEXT_MAX, id="text-field"),
            pytest.param("tags", ["t" * (ITEM_MAX + 1)], ITEM_MAX, id="list-item"),
            pytest.param("tags", [f"t{n}" for n in range(51)], 50, id="list-items"),
        ],
    )
    def test_maximum_length(self, field: str, value: object, maximum: int) -> None:
        with pytest.raises(TooLongError) as info:
            clean_fields("constraint", FIELDS["constraint"](**{field: value}), contract_floors())
        assert info.value.maximum == maximum
        assert f"the maximum is {maximum:,}" in str(info.value)
        at_max = "alpha beta " * (TEXT_MAX // 11) + "x" * (TEXT_MAX % 11)
        assert len(at_max) == TEXT_MAX
        clean = clean_fields("constraint", FIELDS["constraint"](reason=at_max), contract_floors())
        assert clean["reason"] == at_max.strip()

    def test_mcp_schema_shares_the_maximum(self) -> None:
        from ctxkeeper.mcp.tools import record_input

        properties = record_input()["properties"]
        assert isinstance(properties, dict)
        rule = properties["rule"]
        steps = properties["steps"]
        assert isinstance(rule, dict)
        assert isinstance(steps, dict)
        assert rule["maxLength"] == TEXT_MAX
        assert steps["items"] == {"type": "string", "maxLength": ITEM_MAX}


class TestScopes:
    def test_absolute_scope_inside_root_is_stored_relative(self, tmp_path: object) -> None:
        root = str(tmp_path)
        fields = FIELDS["constraint"](scope=[f"{root}/src/billing/", "lib/x.py"])
        clean = clean_fields("constraint", fields, contract_floors(), root=root)
        assert clean["scope"] == ["src/billing", "lib/x.py"]

    def test_absolute_scope_outside_root_is_refused(self, tmp_path: object) -> None:
        fields = FIELDS["constraint"](scope=["/etc/passwd"])
        with pytest.raises(UsageError, match="outside the project root"):
            clean_fields("constraint", fields, contract_floors(), root=str(tmp_path))

    @pytest.mark.parametrize("spelling", [".", "", "./", "src/.."])
    def test_whole_project_spellings_become_an_empty_scope(self, spelling: str) -> None:
        notes: list[str] = []
        fields = FIELDS["constraint"](scope=["src/", spelling])
        clean = clean_fields("constraint", fields, contract_floors(), notes=notes)
        assert clean["scope"] == []
        assert len(notes) == 1
        assert "whole project" in notes[0]
        # Control: a narrow scope alone is kept and says nothing.
        quiet: list[str] = []
        fields = FIELDS["constraint"](scope=["src/"])
        assert clean_fields("constraint", fields, contract_floors(), notes=quiet)["scope"] == [
            "src"
        ]
        assert quiet == []

    @pytest.mark.parametrize(
        ("glob", "suggested"),
        [
            pytest.param("src/**/*.py", "'src/'", id="double-star"),
            pytest.param("api/v?/handlers", "'api/'", id="question-mark"),
            pytest.param("lib/[ab]*/x", "'lib/'", id="bracket"),
            pytest.param("*.py", "project-wide", id="top-level"),
        ],
    )
    def test_glob_scopes_are_refused(self, glob: str, suggested: str) -> None:
        fields = FIELDS["constraint"](scope=[glob])
        with pytest.raises(UsageError) as info:
            clean_fields("constraint", fields, contract_floors())
        assert "glob" in str(info.value)
        assert suggested in str(info.value)


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


class TestScopesThroughTheVerbs:
    """Every door goes through record_entry, which gives the model the store's project root."""

    def test_absolute_scope_and_dot(self, store: Store) -> None:
        from ctxkeeper.write.verbs import record_entry, user_actor

        absolute = os.path.join(store.root, "src", "billing") + "/"
        result = record_entry(
            store, "constraint", FIELDS["constraint"](scope=[absolute]), actor=user_actor()
        )
        assert result["entry"]["scope"] == ["src/billing"]  # type: ignore[index,call-overload]
        assert result["notes"] == []
        wide = record_entry(
            store,
            "constraint",
            FIELDS["constraint"](rule="Every refund is logged with its operator", scope=["."]),
            actor=user_actor(),
        )
        assert wide["entry"]["scope"] == []  # type: ignore[index,call-overload]
        notes = wide["notes"]
        assert isinstance(notes, list)
        assert "whole project" in str(notes[0])
