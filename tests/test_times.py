from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from ctxkeeper.core import times
from ctxkeeper.core.errors import UsageError, ValidationError
from ctxkeeper.core.store import ENTRIES_FILE, Store
from ctxkeeper.read.query import query_entries
from ctxkeeper.read.rank import get_context
from ctxkeeper.read.summary import project_summary
from ctxkeeper.write.verbs import record_entry, update_entry, user_actor
from tests.conftest import constraint_fields, decision_fields

USER = user_actor()

UTC = timezone.utc


class TestCallerTimes:
    @pytest.mark.parametrize(
        ("text", "stored"),
        [
            pytest.param("2026-01-31", "2026-01-31", id="bare-date"),
            pytest.param("2026-01-31T09:15:00Z", "2026-01-31T09:15:00Z", id="utc"),
            pytest.param("2026-01-31T10:15:00+01:00", "2026-01-31T09:15:00Z", id="offset"),
            pytest.param("2026-01-31T09:15", "2026-01-31T09:15:00Z", id="no-seconds"),
            pytest.param("1970-01-01", "1970-01-01", id="earliest"),
            pytest.param("9998-12-31", "9998-12-31", id="latest-day"),
            pytest.param("9998-12-31T23:59:59Z", "9998-12-31T23:59:59Z", id="latest-instant"),
        ],
    )
    def test_accepted(self, text: str, stored: str) -> None:
        assert times.normalize_time(text, field="valid_until") == stored

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("9999-12-31", id="last-day-of-datetime"),
            pytest.param("9999-12-31T23:59:59-05:00", id="offset-past-datetime-max"),
            pytest.param("0001-01-01T00:00:00+01:00", id="offset-before-datetime-min"),
            pytest.param("1969-12-31T23:59:59Z", id="before-epoch"),
            pytest.param("9999-01-01T00:00:00Z", id="year-9999"),
        ],
    )
    def test_out_of_range_is_a_clear_error(self, text: str) -> None:
        with pytest.raises(UsageError, match=r"valid_until: .* outside the supported range"):
            times.normalize_time(text, field="valid_until")

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("20260131", id="basic-date"),
            pytest.param("20260131T091500Z", id="basic-date-time"),
            pytest.param("2026-W05-6", id="week-date"),
            pytest.param("someday", id="words"),
            pytest.param("", id="empty"),
            pytest.param("2026-02-30", id="no-such-day"),
        ],
    )
    def test_unaccepted_forms(self, text: str) -> None:
        with pytest.raises(UsageError, match=r"not an ISO-8601 time ctxkeeper reads; .*2026-11-30"):
            times.parse_time(text, field="as_of")

    def test_basic_form_is_named(self) -> None:
        with pytest.raises(UsageError, match="basic form without dashes is not accepted"):
            times.parse_time("20260131", field="valid_until")

    def test_bare_date_end_of_day(self) -> None:
        end = times.parse_time("2026-01-31", field="v", end_of_day=True)
        assert end == datetime(2026, 2, 1, tzinfo=UTC)
        assert times.parse_time("2026-01-31", field="v") == datetime(2026, 1, 31, tzinfo=UTC)

    def test_optional_time(self) -> None:
        assert times.parse_optional_time(None, field="as_of") is None
        assert times.parse_optional_time("2026-01-31", field="as_of") is not None
        for bad in ("", "  ", 5):
            with pytest.raises(UsageError, match="as_of"):
                times.parse_optional_time(bad, field="as_of")


class TestStoredTimes:
    @pytest.mark.parametrize(
        "value",
        [
            pytest.param("9999-12-31", id="overflowing-day"),
            pytest.param("9999-12-31T23:59:59-05:00", id="overflowing-offset"),
            pytest.param("0001-01-01T00:00:00+01:00", id="underflowing-offset"),
            pytest.param("someday", id="words"),
            pytest.param(20260131, id="number"),
            pytest.param(["2026-01-31"], id="list"),
        ],
    )
    def test_any_stored_value_is_tolerated(self, value: object) -> None:
        instant = datetime(2026, 6, 1, tzinfo=UTC)
        entry: dict[str, object] = {"valid_from": value, "valid_until": value}
        assert times.parse_stored_bound(value, end_of_day=True) is None
        assert times.is_valid_at(entry, instant)  # treated as absent: valid
        assert times.stored_time_problem(value) is not None
        assert times.stored_time_problem("2026-01-31") is None  # control

    def test_bounds_still_bound(self) -> None:
        entry: dict[str, object] = {"valid_from": "2026-01-01", "valid_until": "2026-01-31"}
        assert times.is_valid_at(entry, datetime(2026, 1, 31, 23, 59, tzinfo=UTC))
        assert not times.is_valid_at(entry, datetime(2026, 2, 1, tzinfo=UTC))
        assert not times.is_valid_at(entry, datetime(2025, 12, 31, tzinfo=UTC))


class TestWindow:
    @pytest.mark.parametrize(
        ("start", "end"),
        [
            pytest.param("2026-02-01", "2026-01-31", id="dates"),
            pytest.param("2026-01-31T10:00:00Z", "2026-01-31T09:00:00Z", id="instants"),
            pytest.param("2026-01-31T09:00:00Z", "2026-01-31T09:00:00Z", id="empty"),
        ],
    )
    def test_inverted_window_refused(self, start: str, end: str) -> None:
        with pytest.raises(ValidationError, match="is not before valid_until"):
            times.check_window(start, end)

    def test_sound_windows(self) -> None:
        times.check_window("2026-01-31", "2026-01-31")  # the whole day
        times.check_window(None, "2026-01-31")
        times.check_window("2026-01-31", None)


class TestThroughTheStore:
    """Every ranked or filtered read survives any stored bound; writes refuse bad ones."""

    def test_out_of_range_stored_bounds_do_not_break_reads(self, store: Store) -> None:
        good = record_entry(store, "constraint", constraint_fields(), actor=USER)["id"]
        odd = record_entry(store, "decision", decision_fields(), actor=USER)["id"]
        path = Path(store.path(ENTRIES_FILE))
        doc: Any = json.loads(path.read_text())
        for entry in doc["entries"]:
            if entry["id"] == odd:
                entry["valid_until"] = "9999-12-31T23:59:59-05:00"
                entry["valid_from"] = "0001-01-01T00:00:00+01:00"
                entry["updated_at"] = "9999-12-31"
        path.write_text(json.dumps(doc))
        found = get_context(store, {"query": "advisory locks scheduler idempotency"})
        assert {r["id"] for r in found["results"]} == {good, odd}  # type: ignore[index,union-attr,call-overload]
        queried = query_entries(store, {"as_of": "2026-06-01"})
        assert queried["total"] == 2
        assert project_summary(store)["total"] == 2

    @pytest.mark.parametrize(
        "bounds",
        [
            pytest.param({"valid_until": "9999-12-31"}, id="until-9999"),
            pytest.param({"valid_until": "9999-12-31T23:59:59-05:00"}, id="until-offset"),
            pytest.param({"valid_from": "0001-01-01T00:00:00+01:00"}, id="from-year-1"),
            pytest.param({"valid_from": "2026-02-01", "valid_until": "2026-01-31"}, id="inverted"),
            pytest.param({"valid_until": "20260131"}, id="basic-format"),
        ],
    )
    def test_record_refuses_bad_bounds(self, store: Store, bounds: dict[str, str]) -> None:
        with pytest.raises((UsageError, ValidationError), match="valid_"):
            record_entry(store, "constraint", constraint_fields(**bounds), actor=USER)
        assert store.load().entries == {}
        record_entry(store, "constraint", constraint_fields(valid_until="2026-01-31"), actor=USER)
        assert len(store.load().entries) == 1

    def test_update_refuses_an_inverted_window(self, store: Store) -> None:
        entry_id = str(
            record_entry(
                store, "constraint", constraint_fields(valid_until="2026-01-31"), actor=USER
            )["id"]
        )
        with pytest.raises(ValidationError, match="is not before valid_until"):
            update_entry(
                store, entry_id, {"valid_from": "2026-03-01"}, "start it later", actor=USER
            )
        update_entry(
            store, entry_id, {"valid_from": "2026-01-01"}, "start it in January", actor=USER
        )
        assert store.get(entry_id)["valid_from"] == "2026-01-01"

    def test_empty_as_of_is_an_argument_error(self, store: Store) -> None:
        with pytest.raises(UsageError, match="as_of"):
            get_context(store, {"query": "x", "as_of": ""})
        with pytest.raises(UsageError, match="as_of"):
            query_entries(store, {"as_of": ""})
        assert get_context(store, {"query": "x"})["results"] == []


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-30T09:15:00Z",
        "2026-02-30T09:15:00Z",
        "1969-12-31T23:59:59Z",
        "9998-12-31T23:59:59Z",
        "9999-01-01T00:00:00Z",
        "2026-1_-30T09:15:00Z",
        "2026-+1-30T09:15:00Z",
        "2026-11-30T24:00:00Z",
        "\uff12026-11-30T09:15:00Z",
    ],
)
def test_the_canonical_fast_path_judges_as_the_general_parser(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = times.stored_time_problem(value), times.parse_stored_bound(value, end_of_day=False)
    monkeypatch.setattr(times, "_canonical_instant", lambda _value: None)
    general = times.stored_time_problem(value), times.parse_stored_bound(value, end_of_day=False)
    assert fast == general
