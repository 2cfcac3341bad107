"""Time values: one unit everywhere, ISO-8601 UTC strings; a bare date means the whole UTC day.

Every time ctxkeeper compares lies in :data:`EARLIEST` .. :data:`LATEST`. The bounds keep all
arithmetic safe: a bare date's end-of-day (+1 day) and any UTC offset shift stay inside
``datetime``'s years 1..9999, so no stored value can raise ``OverflowError`` in a read. A
caller-supplied time outside the range is refused; a stored one is treated as absent.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from typing import Final

from ctxkeeper.core.errors import UsageError, ValidationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

#: The earliest accepted instant: nothing a coding agent records predates the Unix epoch.
EARLIEST: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
# dec-012-3850: the accepted range and why.
#: One past the latest accepted instant (years 1970..9998): ``9998-12-31`` as a bound still
#: has a next day, and an offset of up to a day cannot push it past year 9999.
LATEST: Final = datetime(9999, 1, 1, tzinfo=timezone.utc)
_RANGE_TEXT: Final = "years 1970 to 9998 (UTC)"
# The extended ISO-8601 forms Python 3.10's fromisoformat reads, and nothing else: the basic
# form (20260131) parses differently across Python versions, so it is refused, not guessed at.
_BARE_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_BASIC_FORM: Final = re.compile(r"\d{8}(?:[Tt]\d{4,6})?")
_DATE_TIME: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{3}(?:\d{3})?)?)?"
    r"(?:[Zz]|[+-]\d{2}:\d{2})?"
)


def now() -> datetime:
    """The current instant in UTC, to the second (the stored precision)."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def format_instant(instant: datetime) -> str:
    """``2026-11-30T09:15:00Z``: the one way ctxkeeper writes an instant."""
    return instant.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_iso() -> str:
    return format_instant(now())


class _OutOfRangeError(ValueError):
    pass


#: The form ctxkeeper writes, digits ASCII only (``\d`` would take other scripts' digits).
_CANONICAL_FORM: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def _canonical_instant(value: str) -> datetime | None:
    """The form ctxkeeper writes (``2026-11-30T09:15:00Z``), read without the general
    parser: most stored and journaled times are in it (an import reads tens of thousands).
    None for anything else, which the general parser then judges. It lives here so every
    reader shares it (con-024-333a)."""
    if not _CANONICAL_FORM.fullmatch(value):
        return None
    try:
        # Its first 19 characters are a form every supported Python's fromisoformat reads.
        return datetime.fromisoformat(value[:19]).replace(tzinfo=timezone.utc)
    except ValueError:
        raise ValueError(value) from None  # 2026-02-30T...: the form, but no such instant


def _parse(text: str) -> tuple[datetime, bool]:
    """Parse an ISO date or date-time; return the UTC instant and whether it was a bare date.

    :raise _OutOfRangeError: it parses but lies outside ``EARLIEST``..``LATEST``.
    :raise ValueError: anything else that is not an accepted form.
    """
    value = text.strip()
    canonical = _canonical_instant(value)
    if canonical is not None:
        instant, bare = canonical, False
    elif _BARE_DATE.fullmatch(value):
        day = date.fromisoformat(value)
        instant, bare = datetime(day.year, day.month, day.day, tzinfo=timezone.utc), True
    elif _DATE_TIME.fullmatch(value):
        if value.endswith(("Z", "z")):
            value = value[:-1] + "+00:00"
        parsed = datetime.fromisoformat(value.replace("t", "T"))
        if parsed.tzinfo is None:
            # A time without an offset is read as UTC: the store has one unit, never local time.
            parsed = parsed.replace(tzinfo=timezone.utc)
        try:
            instant, bare = parsed.astimezone(timezone.utc), False
        except OverflowError:  # 9999-12-31T23:00-05:00 is past datetime.max in UTC
            raise _OutOfRangeError(value) from None
    else:
        raise ValueError(value)
    # A bare date covers its whole day, so the day after must still be in range.
    last = LATEST - timedelta(days=1) if bare else LATEST - timedelta(microseconds=1)
    if not EARLIEST <= instant <= last:
        raise _OutOfRangeError(value)
    return instant, bare


def parse_time(text: str, *, field: str, end_of_day: bool = False) -> datetime:
    """Parse a caller-supplied time; a bad value is an error naming the field.

    :param end_of_day: for a bare date, return the first instant *after* that day, so a
        bound like ``valid_until: 2026-01-31`` holds through the end of Jan 31.
    """
    instant, bare = _parse_or_raise(text, field)
    if bare and end_of_day:
        return instant + timedelta(days=1)
    return instant


def parse_optional_time(value: object, *, field: str, end_of_day: bool = False) -> datetime | None:
    """An optional time argument: absent (None) means "not given"; anything else must parse.

    An empty string is an error, not "now": a caller who meant now leaves the argument out.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{field} must be an ISO-8601 string such as 2026-11-30T09:15:00Z")
    return parse_time(value, field=field, end_of_day=end_of_day)


def normalize_time(text: str, *, field: str) -> str:
    """Canonical stored form: a bare date stays a bare date, anything else becomes UTC ``Z``."""
    instant, bare = _parse_or_raise(text, field)
    return instant.date().isoformat() if bare else format_instant(instant)


def _parse_or_raise(text: str, field: str) -> tuple[datetime, bool]:
    try:
        return _parse(text)
    except _OutOfRangeError:
        raise UsageError(
            f"{field}: {text!r} is outside the supported range, {_RANGE_TEXT}; "
            "leave the bound out for an open end"
        ) from None
    except ValueError:
        basic = bool(_BASIC_FORM.match(text.strip()))
        hint = "the basic form without dashes is not accepted; " if basic else ""
        raise UsageError(
            f"{field}: {text!r} is not an ISO-8601 time ctxkeeper reads; {hint}use 2026-11-30 "
            "(a whole UTC day) or 2026-11-30T09:15:00Z"
        ) from None


def parse_stored_bound(value: object, *, end_of_day: bool) -> datetime | None:
    """A stored time; one that does not parse or is out of range is absent (doctor reports it).

    Never raises, whatever the value: a hand-edited or cloned store must not break reads.
    """
    if not isinstance(value, str):
        return None
    try:
        instant, bare = _parse(value)
    except ValueError:
        return None
    return instant + timedelta(days=1) if bare and end_of_day else instant


def stored_time_problem(value: object) -> str | None:
    """Why a stored time is ignored (for doctor), or None when it is absent or sound."""
    if value is None:
        return None
    if not isinstance(value, str):
        return f"{value!r} is not a string"
    try:
        _parse(value)
    except _OutOfRangeError:
        return f"{value!r} is outside {_RANGE_TEXT}"
    except ValueError:
        return f"{value!r} does not parse"
    return None


def check_window(valid_from: object, valid_until: object) -> None:
    """Refuse a validity window that ends before it starts (it would never be valid).

    :raise ValidationError: naming both bounds.
    """
    start = parse_stored_bound(valid_from, end_of_day=False)
    end = parse_stored_bound(valid_until, end_of_day=True)
    if start is not None and end is not None and start >= end:
        raise ValidationError(
            f"valid_from {valid_from!r} is not before valid_until {valid_until!r}: the entry "
            "would never be valid; swap them or leave one out",
            field="valid_until",
        )


def is_valid_at(entry: Mapping[str, object], instant: datetime) -> bool:
    """True when ``instant`` lies in ``[valid_from, valid_until]`` (bare dates cover their day)."""
    start = parse_stored_bound(entry.get("valid_from"), end_of_day=False)
    if start is not None and instant < start:
        return False
    end = parse_stored_bound(entry.get("valid_until"), end_of_day=True)
    return end is None or instant < end
