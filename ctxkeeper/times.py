"""Time values: one unit everywhere, ISO-8601 UTC strings; a bare date means the whole UTC day."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

from ctxkeeper.errors import UsageError

_DATE_LEN = 10  # "YYYY-MM-DD"


def now() -> datetime:
    """The current instant in UTC, to the second (the stored precision)."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def format_instant(instant: datetime) -> str:
    """``2026-11-30T09:15:00Z``: the one way ctxkeeper writes an instant."""
    return instant.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_iso() -> str:
    return format_instant(now())


def _parse(text: str) -> tuple[datetime, bool]:
    """Parse an ISO date or date-time; return the UTC instant and whether it was a bare date."""
    value = text.strip()
    if len(value) == _DATE_LEN:
        day = date.fromisoformat(value)
        return datetime(day.year, day.month, day.day, tzinfo=timezone.utc), True
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    instant = datetime.fromisoformat(value)
    if instant.tzinfo is None:
        # A time without an offset is read as UTC: the store has one unit, never local time.
        instant = instant.replace(tzinfo=timezone.utc)
    return instant.astimezone(timezone.utc), False


def parse_time(text: str, *, field: str, end_of_day: bool = False) -> datetime:
    """Parse a caller-supplied time; a bad value is an error naming the field.

    :param end_of_day: for a bare date, return the first instant *after* that day, so a
        bound like ``valid_until: 2026-01-31`` holds through the end of Jan 31.
    """
    instant, bare = _parse_or_raise(text, field)
    if bare and end_of_day:
        return instant + timedelta(days=1)
    return instant


def normalize_time(text: str, *, field: str) -> str:
    """Canonical stored form: a bare date stays a bare date, anything else becomes UTC ``Z``."""
    instant, bare = _parse_or_raise(text, field)
    return instant.date().isoformat() if bare else format_instant(instant)


def _parse_or_raise(text: str, field: str) -> tuple[datetime, bool]:
    try:
        return _parse(text)
    except ValueError:
        raise UsageError(
            f"{field}: {text!r} is not an ISO-8601 time; use 2026-11-30 or 2026-11-30T09:15:00Z"
        ) from None


def parse_stored_bound(value: object, *, end_of_day: bool) -> datetime | None:
    """A stored validity bound; one that does not parse is treated as absent (doctor reports it)."""
    if not isinstance(value, str):
        return None
    try:
        instant, bare = _parse(value)
    except ValueError:
        return None
    return instant + timedelta(days=1) if bare and end_of_day else instant


def is_valid_at(entry: dict[str, object], instant: datetime) -> bool:
    """True when ``instant`` lies in ``[valid_from, valid_until]`` (bare dates cover their day)."""
    start = parse_stored_bound(entry.get("valid_from"), end_of_day=False)
    if start is not None and instant < start:
        return False
    end = parse_stored_bound(entry.get("valid_until"), end_of_day=True)
    return end is None or instant < end
