"""Pending changes: an agent's proposed update, deprecation or supersession of an entry a
person recorded or approved, held on that entry until a person decides.

A pending change lives in the entry's ``pending_changes`` list and nowhere else, so the
journal fold stays a plain "apply ``after``" and the entry's live fields, status and revision
do not move until a person approves (DESIGN.md, "Review policy"). Deciding a change is a
human verb and lives in :mod:`ctxkeeper.cli.review`, which the MCP server never imports.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Final

from ctxkeeper.core.errors import StateError, UsageError
from ctxkeeper.core.journal import canonical
from ctxkeeper.core.model import EDITABLE_FIELDS, RULE_FREE_FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.store import Transaction

FIELD: Final = "pending_changes"
CHANGE_OPS: Final = ("update", "deprecate", "supersede")
#: The journal op that records each kind of proposal.
PROPOSE_OPS: Final = {
    "update": "propose_update",
    "deprecate": "propose_deprecate",
    "supersede": "propose_supersede",
}
CHANGE_ID_PATTERN: Final = re.compile(r"^chg-[0-9a-f]{8}$")
#: An agent in a loop must not grow one entry without bound; a person clears the queue.
MAX_PENDING: Final = 10


# con-005-c0ea: an agent change to a person's entry waits; dec-008-a07c: held on the entry.
def needs_review(
    entry: Mapping[str, JSONValue],
    actor: Mapping[str, JSONValue],
    policy: str,
    changed: Iterable[str] = (),
) -> bool:
    """Whether ``actor``'s change to ``entry`` must wait for a person.

    Under the ``agent`` policy every agent change does, except to an agent's own entry that
    is still ``proposed`` (reviewed as a whole when a person approves it) and an update whose
    ``changed`` fields all change no rule (``asked_as``: like a verification, journaled).
    """
    if actor.get("origin") != "agent" or policy != "agent":
        return False
    names = set(changed)
    if names and names <= RULE_FREE_FIELDS:
        return False
    return not (entry.get("origin") == "agent" and entry.get("status") == "proposed")


def is_change_id(value: str) -> bool:
    return CHANGE_ID_PATTERN.match(value) is not None


def changes_of(entry: Mapping[str, JSONValue]) -> list[JSONObject]:
    """The entry's pending changes; malformed items (a hand edit) are left out."""
    items = entry.get(FIELD)
    if not isinstance(items, list):
        return []
    return [
        item
        for item in items
        if isinstance(item, dict)
        and isinstance(item.get("change"), str)
        and is_change_id(str(item["change"]))
        and item.get("op") in CHANGE_OPS
    ]


# dec-009-4b23: staleness is a digest of writable fields, not the revision.
def base_digest(entry: Mapping[str, JSONValue]) -> str:
    """A digest of the fields a writer can change: a proposal made against other content is
    stale. Status is left out so approving a proposed entry does not stale its changes."""
    fields = EDITABLE_FIELDS.get(str(entry.get("kind")), ())
    # Phrasings an agent adds directly change no rule a proposal was made against.
    view: JSONValue = {
        key: entry[key] for key in fields if key in entry and key not in RULE_FREE_FIELDS
    }
    return hashlib.sha256(canonical(view)).hexdigest()[:16]


def is_stale(entry: Mapping[str, JSONValue], change: Mapping[str, JSONValue]) -> bool:
    return change.get("base") != base_digest(entry)


def without_change(entry: Mapping[str, JSONValue], change_id: str) -> JSONObject:
    """The entry with one pending change removed (the field goes when the list empties)."""
    rest: list[JSONValue] = [c for c in changes_of(entry) if c.get("change") != change_id]
    out: JSONObject = {key: value for key, value in entry.items() if key != FIELD}
    if rest:
        out[FIELD] = rest
    return out


def find_change(
    entries: Iterable[Mapping[str, JSONValue]], change_id: str
) -> tuple[str, JSONObject]:
    """The id of the entry holding ``change_id``, and the change."""
    for entry in entries:
        for change in changes_of(entry):
            if change["change"] == change_id:
                return str(entry["id"]), change
    raise UsageError(f"no pending change {change_id!r}; `ctxkeeper review` lists the waiting ones")


def supersessions_by(
    entries: Iterable[Mapping[str, JSONValue]], successor: str
) -> list[tuple[str, JSONObject]]:
    """(old entry id, change) for every pending supersession proposed by ``successor``."""
    return [
        (str(entry["id"]), change)
        for entry in entries
        for change in changes_of(entry)
        if change["op"] == "supersede" and change.get("successor") == successor
    ]


def propose(
    tx: Transaction,
    entry_id: str,
    op: str,
    details: JSONObject,
    *,
    actor: JSONObject,
    reason: str,
    at: str,
) -> tuple[JSONObject, bool]:
    """Stage a pending ``op`` on ``entry_id``; return the change and whether it is new.

    The same proposal against the same content is not queued twice (an agent retrying a
    call gets the waiting change back), and nothing is staged for it.
    """
    current = tx.get(entry_id)
    base = base_digest(current)
    waiting = changes_of(current)
    for queued in waiting:
        same = all(queued.get(key) == value for key, value in details.items())
        if queued["op"] == op and queued.get("base") == base and same and op != "supersede":
            return queued, False
    if len(waiting) >= MAX_PENDING:
        raise StateError(
            f"{entry_id} already has {len(waiting)} changes awaiting a person; ask them to run "
            "`ctxkeeper review` before proposing more"
        )
    revision = current.get("revision")
    change: JSONObject = {
        "change": _new_change_id(tx.entries.values()),
        "op": op,
        **details,
        "reason": reason,
        "actor": actor,
        "at": at,
        "base_revision": revision if isinstance(revision, int) else 1,
        "base": base,
    }
    after: list[JSONValue] = [*waiting, change]
    tx.put(PROPOSE_OPS[op], entry_id, {**current, FIELD: after}, actor=actor, reason=reason, at=at)
    return change, True


def _new_change_id(entries: Iterable[Mapping[str, JSONValue]]) -> str:
    taken = {str(c["change"]) for entry in entries for c in changes_of(entry)}
    while True:
        candidate = f"chg-{secrets.token_hex(4)}"
        if candidate not in taken:
            return candidate


def pending_changes(entries: Iterable[Mapping[str, JSONValue]]) -> list[JSONObject]:
    """Every waiting change, oldest first, as a person reviews it: the change, the entry it
    targets (``id``, ``kind``, ``status``, the live value of each field it would change) and
    whether the entry changed since (``stale``)."""
    found: list[JSONObject] = []
    for entry in entries:
        for change in changes_of(entry):
            item: JSONObject = {
                **change,
                "id": entry.get("id"),
                "kind": entry.get("kind"),
                "status": entry.get("status"),
                "stale": is_stale(entry, change),
            }
            fields = change.get("fields")
            if change["op"] == "update" and isinstance(fields, dict):
                item["current"] = {key: entry.get(key) for key in fields}
            item.pop("base", None)
            found.append(item)
    found.sort(key=lambda item: (str(item.get("at")), str(item.get("change"))))
    return found


def awaiting_decision(entries: Iterable[Mapping[str, JSONValue]]) -> int:
    """How many things a person must decide (see :func:`awaiting_counts`)."""
    proposed, changes = awaiting_counts(entries)
    return proposed + changes


def awaiting_counts(entries: Iterable[Mapping[str, JSONValue]]) -> tuple[int, int]:
    """What a person must decide, by what it is: proposed entries, and pending changes not
    counted with them (a supersession proposed by a still-proposed successor rides with that
    successor's review)."""
    pool = list(entries)
    proposed = {str(e.get("id")) for e in pool if e.get("status") == "proposed"}
    changes = pending_changes(pool)
    riding = sum(
        1 for c in changes if c.get("op") == "supersede" and str(c.get("successor")) in proposed
    )
    return len(proposed), len(changes) - riding
