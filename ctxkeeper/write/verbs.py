"""The write verbs and single-entry reads every door shares: record, update, deprecate, get."""

from __future__ import annotations

import getpass
from typing import Final

from ctxkeeper.core import githead, times
from ctxkeeper.core.changes import needs_review, pending_changes, propose
from ctxkeeper.core.errors import (
    ControlCharacterError,
    SecretDetectedError,
    StateError,
    TooLongError,
    UsageError,
)
from ctxkeeper.core.model import (
    LIVE_STATUSES,
    TEXT_MAX,
    TOMBSTONE_STATUSES,
    changed_fields,
    check_id,
    check_kind,
    editable_view,
    new_entry,
    ordered,
    revision_of,
    with_fields,
)
from ctxkeeper.core.secretscan import find_secret
from ctxkeeper.core.text import forbidden_control, readable_length
from ctxkeeper.team import teamlog
from ctxkeeper.write import derived  # noqa: F401  # registers the refreshes a commit runs
from ctxkeeper.write.capture import check_candidate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.store import Store, Transaction

UPDATE_REASON_FLOOR: Final = 10
DEPRECATE_REASON_FLOOR: Final = 20


def user_actor() -> JSONObject:
    """A person at the CLI; the login name is recorded where the system knows it."""
    try:
        name: str | None = getpass.getuser()
    except (KeyError, OSError):  # No passwd entry (containers) and no LOGNAME.
        name = None
    return {"origin": "user", "user": name}


def agent_actor(session_id: str | None = None) -> JSONObject:
    """The agent writing through MCP: it cannot claim any other origin."""
    return {"origin": "agent", "session_id": session_id}


def require_reason(reason: object, floor: int, verb: str) -> str:
    """The reason of an update or deprecation, held to the same rules as an entry's prose.

    Measured as read, capped, free of control characters and secret-shaped strings: it is
    journaled, shown in every history, and echoed by the tombstone it makes.
    """
    text = reason.strip() if isinstance(reason, str) else ""
    if len(text) > TEXT_MAX:
        raise TooLongError("reason", len(text), TEXT_MAX)
    char = forbidden_control(text, multiline=True)
    if char is not None:
        raise ControlCharacterError("reason", char)
    length = readable_length(text)
    if length < floor:
        raise UsageError(
            f"{verb} needs a reason of at least {floor} characters (got {length}, counted as "
            "read): say why, for whoever reads the history later"
        )
    secret_kind = find_secret(text)
    if secret_kind is not None:
        raise SecretDetectedError("reason", secret_kind)
    return text


def require_editable(entry: Mapping[str, JSONValue]) -> None:
    """Refuse a change to a frozen (superseded) or retired (tombstone) entry."""
    status = entry.get("status")
    entry_id = entry.get("id")
    if status == "superseded":
        raise StateError(
            f"{entry_id} is superseded by {entry.get('superseded_by')} and frozen; record a "
            f"successor with supersedes=[{entry_id!r}] instead of editing history"
        )
    if status in TOMBSTONE_STATUSES:
        raise StateError(
            f"{entry_id} is {status} (a tombstone) and cannot be changed; only a person can "
            f"lift it with `ctxkeeper lift {entry_id}`"
        )


def record_entry(
    store: Store,
    kind: str,
    fields: Mapping[str, object],
    *,
    actor: JSONObject,
    supersedes: list[str] | None = None,
) -> JSONObject:
    """Record a new entry; return ``id``, ``entry``, ``similar_entries``, ``superseded``,
    ``pending_supersession``, ``pending`` and ``possible_supersession``.

    Agent entries start ``proposed`` under the default review policy; a person's start
    ``active``. An active entry supersedes the old ones in the same journaled transaction. A
    proposed one only proposes it: each old entry gets a pending change and stays as it is
    until a person approves the successor.
    """
    kind = check_kind(kind)
    old_ids = [check_id(item) for item in dict.fromkeys(supersedes or [])]
    origin = str(actor["origin"])
    at = times.now_iso()
    head = githead.current_head(store.root)
    with store.transaction() as tx:
        status = "proposed" if origin == "agent" and tx.config.review == "agent" else "active"
        for old_id in old_ids:
            old = tx.get(old_id)
            if old.get("status") not in LIVE_STATUSES:
                raise StateError(
                    f"{old_id} is {old.get('status')}; only active or proposed entries can be "
                    "superseded"
                )
        clean, report = check_candidate(
            kind,
            fields,
            tx.entries.values(),
            floors=tx.config.floors,
            exclude=old_ids,
            root=store.root,
            purged=tx.state.purged,
        )
        entry_id = tx.new_id(kind)
        entry = new_entry(
            kind,
            clean,
            entry_id=entry_id,
            status=status,
            origin=origin,
            at=at,
            supersedes=old_ids,
        )
        # The entry is taken to hold at the commit it was written at; its created_at is when
        # (verified_at stays null until someone verifies it again).
        entry = ordered({**entry, "verified_sha": head})
        tx.put("record", entry_id, entry, actor=actor, reason=None, at=at)
        superseded: list[JSONValue] = []
        pending: list[JSONValue] = []
        for old_id in old_ids:
            if status == "proposed":
                change, _ = propose(
                    tx,
                    old_id,
                    "supersede",
                    {"successor": entry_id},
                    actor=actor,
                    reason=f"superseded by {entry_id}",
                    at=at,
                )
                pending.append({"id": old_id, "change": change["change"]})
                continue
            old = dict(tx.get(old_id))
            old.update(
                status="superseded",
                superseded_by=entry_id,
                updated_at=at,
                revision=revision_of(old) + 1,
            )
            tx.put("supersede", old_id, old, actor=actor, reason=f"superseded by {entry_id}", at=at)
            superseded.append(old_id)
    return {
        "id": entry_id,
        "entry": entry,
        "similar_entries": list(report.similar_entries),
        "superseded": superseded,
        "pending_supersession": pending,
        "pending": bool(pending),
        "possible_supersession": [i for i in report.possible_supersession if i not in old_ids],
        "notes": list(report.notes),
    }


def update_entry(
    store: Store,
    entry_id: str,
    updates: Mapping[str, object],
    reason: str,
    *,
    actor: JSONObject,
) -> JSONObject:
    """Change an active or proposed entry; floors re-apply and the before-value is journaled.

    Returns ``id``, ``entry``, ``revision``, ``changed`` (field names), ``similar_entries``
    and ``pending``. An agent's change to an entry a person recorded or approved is only
    proposed (``pending`` true, its ``change`` id): ``entry`` is the live entry, unchanged.
    """
    check_id(entry_id)
    why = require_reason(reason, UPDATE_REASON_FLOOR, "update_entry")
    if not updates:
        raise UsageError('updates is empty; give the fields to change, e.g. {"reason": "..."}')
    at = times.now_iso()
    with store.transaction() as tx:
        current = tx.get(entry_id)
        require_editable(current)
        kind = str(current["kind"])
        merged = {**editable_view(current), **updates}
        clean, report = check_candidate(
            kind,
            merged,
            tx.entries.values(),
            floors=tx.config.floors,
            exclude=[entry_id],
            root=store.root,
            purged=tx.state.purged,
        )
        changed = changed_fields(current, clean)
        if not changed:
            raise UsageError(f"the updates leave {entry_id} unchanged; nothing was written")
        result: JSONObject = {"id": entry_id, "changed": list(changed)}
        if needs_review(current, actor, tx.config.review, changed):
            # An emptied optional field is proposed as empty: applied, it is left out.
            proposed = {field: clean.get(field, []) for field in changed}
            change, _ = propose(
                tx, entry_id, "update", {"fields": proposed}, actor=actor, reason=why, at=at
            )
            after = tx.get(entry_id)
            result.update(pending=True, change=change["change"])
        else:
            after = ordered(
                {
                    **with_fields(current, clean),
                    "updated_at": at,
                    "revision": revision_of(current) + 1,
                }
            )
            tx.put("update", entry_id, after, actor=actor, reason=why, at=at)
            result["pending"] = False
    return {
        **result,
        "entry": after,
        "revision": revision_of(after),
        "similar_entries": list(report.similar_entries),
        "notes": list(report.notes),
    }


def deprecate_entry(
    store: Store,
    entry_id: str,
    reason: str,
    *,
    actor: JSONObject,
    superseded_by: str | None = None,
) -> JSONObject:
    """Retire an entry with a reason: it becomes a tombstone later writes are checked against.

    An agent's deprecation of an entry a person recorded or approved is only proposed
    (``pending`` true, its ``change`` id); the entry stays live until a person approves it.
    """
    check_id(entry_id)
    why = require_reason(reason, DEPRECATE_REASON_FLOOR, "deprecate_entry")
    at = times.now_iso()
    with store.transaction() as tx:
        current = tx.get(entry_id)
        require_editable(current)
        if superseded_by is not None:
            if check_id(superseded_by) == entry_id:
                raise UsageError("an entry cannot be superseded by itself")
            tx.get(superseded_by)
        if needs_review(current, actor, tx.config.review):
            details: JSONObject = {"superseded_by": superseded_by}
            change, _ = propose(tx, entry_id, "deprecate", details, actor=actor, reason=why, at=at)
            return {
                "id": entry_id,
                "entry": tx.get(entry_id),
                "pending": True,
                "change": change["change"],
            }
        after = ordered(
            {
                **current,
                "status": "deprecated",
                "status_reason": why,
                "superseded_by": superseded_by,
                "updated_at": at,
                "revision": revision_of(current) + 1,
            }
        )
        tx.put("deprecate", entry_id, after, actor=actor, reason=why, at=at)
    return {"id": entry_id, "entry": after, "pending": False}


def verify_entry(store: Store, entry_id: str, *, actor: JSONObject) -> JSONObject:
    """Record that an entry still holds at HEAD: ``verified_at`` now, ``verified_sha`` HEAD's
    commit (null outside git), journaled as ``verify``.

    It changes no text, so it keeps the ``revision`` (dec-023-a24c; a concurrent edit in another clone, a
    higher revision, wins over it: the old text's verification does not carry to the new) and
    ``updated_at``, and the review policy does not hold it back: the agent may verify a
    person's entry directly. Superseded and retired entries are refused.
    """
    check_id(entry_id)
    at = times.now_iso()
    head = githead.current_head(store.root)
    with store.transaction() as tx:
        current = tx.get(entry_id)
        status = current.get("status")
        if status == "superseded":
            raise StateError(
                f"{entry_id} is superseded by {current.get('superseded_by')}: verify the "
                "entry that replaced it instead"
            )
        if status in TOMBSTONE_STATUSES:
            raise StateError(
                f"{entry_id} is {status} (a tombstone): it is no longer claimed to hold, so "
                "there is nothing to verify"
            )
        after = ordered({**current, "verified_at": at, "verified_sha": head})
        where = f"at {head[:12]}" if head else "with no git commit to name"
        tx.put("verify", entry_id, after, actor=actor, reason=f"still holds {where}", at=at)
    return {"id": entry_id, "entry": after, "verified_at": at, "verified_sha": head}


def get_entry(store: Store, entry_id: str) -> JSONObject:
    """One entry, its pending changes and its history: every revision's op, actor, reason,
    before and after."""
    check_id(entry_id)
    entry = store.get(entry_id)
    records = [record for record in store.read_journal() if record.get("id") == entry_id]
    history: list[JSONValue] = [
        {
            "seq": record.get("seq"),
            "at": record.get("at"),
            "op": record.get("op"),
            "actor": record.get("actor"),
            "reason": record.get("reason"),
            "before": _before_of(record, records),
            "after": record.get("after"),
        }
        for record in records
    ]
    pending: list[JSONValue] = [*pending_changes([entry])]
    return {"entry": entry, "pending_changes": pending, "history": history}


def _before_of(record: JSONObject, records: list[JSONObject]) -> JSONValue:
    """A record's before-value; an imported event keeps none, and names its parents instead."""
    parents = record.get("parents")
    if record.get("before") is not None or not isinstance(parents, list) or not parents:
        return record.get("before")
    named = [r for r in records if r.get("event") in parents]
    return teamlog.resolve(teamlog.team_events(named), "off")[0] if named else None


def set_status(
    tx: Transaction,
    entry_id: str,
    status: str,
    *,
    op: str,
    actor: JSONObject,
    reason: str | None,
    at: str,
) -> JSONObject:
    """Stage a status change (used by the review verbs); returns the new entry."""
    current = tx.get(entry_id)
    after = ordered(
        {
            **current,
            "status": status,
            "status_reason": reason
            if status in TOMBSTONE_STATUSES
            else current.get("status_reason"),
            "updated_at": at,
            "revision": revision_of(current) + 1,
        }
    )
    tx.put(op, entry_id, after, actor=actor, reason=reason, at=at)
    return after
