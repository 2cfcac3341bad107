"""What a person's verdict binds to: the content they were shown, and its digest (issue 22).

A verdict (approve, reject, lift, purge; of an entry, a pending change or a supersession) is
taken against a screen drawn from one read of the store. :func:`verdict_digest` of that read is
kept with the screen, and :func:`ctxkeeper.cli.review.decide` applies the verdict only if the
store, under its lock, still gives the same digest: otherwise what the person would decide is
not what they saw, and the verdict is refused as stale.
"""

from __future__ import annotations

import hashlib
from typing import Final

from ctxkeeper.core.changes import FIELD, changes_of, find_change, is_change_id, supersessions_by
from ctxkeeper.core.errors import StaleVerdictError, UsageError
from ctxkeeper.core.journal import canonical
from ctxkeeper.read import render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

#: Left out of what a verdict binds to: the entry's other pending changes (each is decided by
#: its own verdict) and a verification, which changes no text (the agent may verify directly).
_UNBOUND: Final = frozenset({FIELD, "verified_at", "verified_sha"})


def verdict_digest(entries: Mapping[str, JSONObject], token: str) -> str:
    """The digest a verdict on ``token`` binds to; take it from the entries the person's screen
    was drawn from."""
    return subject_digest(verdict_subject(entries, token))


def subject_digest(subject: JSONObject) -> str:
    """sha256 of the canonical JSON of a :func:`verdict_subject`: the one digest a verdict binds to."""
    return hashlib.sha256(canonical(subject)).hexdigest()


def verdict_subject(entries: Mapping[str, JSONObject], token: str) -> JSONObject:
    """What a verdict on ``token`` decides, as ``entries`` hold it: the entry, the pending change
    the token names (an entry id names its one pending change, unless the entry is proposed),
    and every other entry that verdict writes: the supersessions a successor's approval applies
    (or its rejection drops), and the successor a supersession's approval makes active.
    Similar entries shown next to it are context, not part of it."""
    entry_id, change = _target(entries, token)
    subject: JSONObject = {"token": token, "entry": _bound(entries.get(entry_id or ""))}
    successor = entry_id
    if change is not None:
        subject["change"] = change
        if change.get("op") == "supersede":
            successor = str(change.get("successor"))
            subject["successor"] = _bound(entries.get(successor))
        else:
            return subject
    subject["supersedes"] = [
        {"change": found, "entry": _bound(entries.get(old_id))}
        for old_id, found in supersessions_by(entries.values(), successor or "")
    ]
    return subject


def _target(entries: Mapping[str, JSONObject], token: str) -> tuple[str | None, JSONObject | None]:
    if is_change_id(token):
        try:
            return find_change(entries.values(), token)
        except UsageError:
            return None, None
    entry = entries.get(token)
    if entry is None or entry.get("status") == "proposed":
        return token, None
    waiting = changes_of(entry)
    return token, waiting[0] if len(waiting) == 1 else None


def _bound(entry: Mapping[str, JSONValue] | None) -> JSONValue:
    if entry is None:
        return None
    return {key: value for key, value in entry.items() if key not in _UNBOUND}


def require_as_shown(
    entries: Mapping[str, JSONObject], verb: str, ids: list[str], shown: Mapping[str, str]
) -> None:
    """Raise :class:`StaleVerdictError` for the first id whose digest in ``entries`` is not the
    one ``shown`` holds for it (an id left out of ``shown`` was never shown)."""
    for token in ids:
        now = verdict_subject(entries, token)
        if shown.get(token) != subject_digest(now):
            raise StaleVerdictError(verb, token, now)


def what_changed(before: JSONObject, after: JSONObject) -> list[str]:
    """How a verdict's subject moved, for the person: a field diff of each entry and change
    in it, under its id."""
    old, new = parts(before), parts(after)
    lines: list[str] = []
    for name in [*old, *(key for key in new if key not in old)]:
        if name not in new:
            lines.append(f"{render.visible(name)}: no longer stored or no longer waiting")
            continue
        diff = render.field_diff(old.get(name), new[name])
        if diff or name not in old:
            lines.append(f"{render.visible(name)}:" + ("" if name in old else " (new)"))
            lines.extend(diff)
    return lines


def parts(subject: JSONObject) -> dict[str, Mapping[str, JSONValue]]:
    """The entries and changes of a subject by id (a change's fields flattened to its own)."""
    found: dict[str, Mapping[str, JSONValue]] = {}
    pairs: list[JSONValue] = [subject]
    supersedes = subject.get("supersedes")
    if isinstance(supersedes, list):
        pairs.extend(supersedes)
    for pair in pairs:
        if not isinstance(pair, dict):
            continue
        for key in ("entry", "successor", "change"):
            value = pair.get(key)
            if not isinstance(value, dict):
                continue
            name = str(value.get("change") if key == "change" else value.get("id"))
            fields = value.get("fields")
            found[name] = {**value, **fields} if isinstance(fields, dict) else value
    return found
