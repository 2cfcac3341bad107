"""``query_entries``: exact filters, no ranking; ``known_at`` folds the journal to a past time."""

from __future__ import annotations

from typing import Final

from ctxkeeper.core import journal, times
from ctxkeeper.core.errors import UsageError
from ctxkeeper.core.model import HARDNESS, KINDS, ORIGINS, STATUSES, kind_specs
from ctxkeeper.core.scope import covers, normalize_scope, relative_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from datetime import datetime

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.store import Store

DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 500


def _strings(arguments: Mapping[str, object], key: str, allowed: Sequence[str] = ()) -> list[str]:
    value = arguments.get(key)
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise UsageError(f"{key} must be a string or a list of strings")
    for item in items:
        if allowed and item not in allowed:
            raise UsageError(f"{key}: {item!r} is not one of {', '.join(allowed)}")
    return list(items)


def _time(
    arguments: Mapping[str, object], key: str, *, end_of_day: bool = False
) -> datetime | None:
    return times.parse_optional_time(arguments.get(key), field=key, end_of_day=end_of_day)


def _text_of(entry: Mapping[str, JSONValue]) -> str:
    parts: list[str] = []
    # Every kind's own fields but its choices (hardness), and why a retired entry went.
    own = (f.name for spec in kind_specs() for f in spec.fields if not f.choices)
    for key in (*dict.fromkeys(own), "status_reason"):
        value = entry.get(key)
        if isinstance(value, list):
            parts.extend(str(v) for v in value)
        elif isinstance(value, str):
            parts.append(value)
    return "\n".join(parts).lower()


def build_filters(
    arguments: Mapping[str, object], root: str
) -> list[Callable[[Mapping[str, JSONValue]], bool]]:
    """One predicate per argument given; an argument left out does not filter."""
    filters: list[Callable[[Mapping[str, JSONValue]], bool]] = []

    def member(key: str, allowed: Sequence[str], field: str) -> None:
        wanted = set(_strings(arguments, key, allowed))
        if wanted:
            filters.append(lambda e: e.get(field) in wanted)

    member("kinds", KINDS, "kind")
    member("status", STATUSES, "status")
    member("origin", ORIGINS, "origin")
    member("hardness", HARDNESS, "hardness")
    tags_any = {t.lower() for t in _strings(arguments, "tags_any")}
    if tags_any:
        filters.append(lambda e: bool(tags_any & set(_json_strings(e.get("tags")))))
    tags_all = {t.lower() for t in _strings(arguments, "tags_all")}
    if tags_all:
        filters.append(lambda e: tags_all <= set(_json_strings(e.get("tags"))))
    if arguments.get("scope") is not None:
        exact = {normalize_scope(s, root) for s in _strings(arguments, "scope")}
        filters.append(lambda e: exact <= set(_json_strings(e.get("scope"))))
    if arguments.get("covers_path") is not None:
        rel = relative_path(str(arguments["covers_path"]), root)
        filters.append(lambda e: covers(_json_strings(e.get("scope")), rel))
    needles = [t.lower() for t in _strings(arguments, "text")]
    if needles:
        filters.append(lambda e: all(n in _text_of(e) for n in needles))
    # since/before read updated_at: "what changed since my last session" (dec-007-8f41).
    since = _time(arguments, "since")
    if since is not None:
        filters.append(lambda e: _stamp(e, "updated_at") >= since)
    before = _time(arguments, "before")
    if before is not None:
        filters.append(lambda e: _stamp(e, "updated_at") < before)
    supersedes = _strings(arguments, "supersedes")
    if supersedes:
        filters.append(lambda e: bool(set(supersedes) & set(_json_strings(e.get("supersedes")))))
    superseded_by = _strings(arguments, "superseded_by")
    if superseded_by:
        filters.append(lambda e: e.get("superseded_by") in superseded_by)
    as_of = _time(arguments, "as_of")
    if as_of is not None:
        filters.append(lambda e: times.is_valid_at(e, as_of))
    return filters


def _json_strings(value: JSONValue) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _stamp(entry: Mapping[str, JSONValue], key: str) -> datetime:
    parsed = times.parse_stored_bound(entry.get(key), end_of_day=False)
    return parsed if parsed is not None else times.parse_time("1970-01-01", field=key)


def entries_known_at(store: Store, instant: datetime) -> dict[str, JSONObject]:
    """What the store held at ``instant``: the fold of the journal records made by then."""
    held: dict[str, JSONObject] = {}
    journal.fold(
        (r for r in store.read_journal() if _stamp(r, "at") <= instant),
        held,
    )
    return held


def query_entries(store: Store, arguments: Mapping[str, object]) -> JSONObject:
    """Exact filtering; returns ``results`` (sorted by id, at most ``limit``) and ``total``."""
    limit = arguments.get("limit", DEFAULT_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    filters = build_filters(arguments, store.root)
    known_at = _time(arguments, "known_at", end_of_day=True)
    pool: Iterable[JSONObject]
    if known_at is not None:
        pool = entries_known_at(store, known_at).values()
    else:
        pool = store.load().entries.values()
    matched = sorted((e for e in pool if all(f(e) for f in filters)), key=lambda e: str(e["id"]))
    results: list[JSONValue] = list(matched[:limit])
    return {"results": results, "total": len(matched), "truncated": len(matched) > limit}
