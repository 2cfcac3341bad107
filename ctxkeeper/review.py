"""The human verbs: approve, reject, lift, purge. The MCP server never imports this module.

That absence is the gate (DESIGN.md: "the gate is structural, not a flag"): an agent has no
code path to these verbs, and a test asserts the server's import graph never reaches here.
"""

from __future__ import annotations

from typing import Final

from ctxkeeper import times
from ctxkeeper.errors import StateError, UsageError
from ctxkeeper.model import TOMBSTONE_STATUSES, check_id
from ctxkeeper.verbs import set_status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper._types import JSONObject
    from ctxkeeper.store import Store

HUMAN_REASON_FLOOR: Final = 10


def _reason(reason: str, verb: str) -> str:
    text = reason.strip()
    if len(text) < HUMAN_REASON_FLOOR:
        raise UsageError(f"{verb} needs --reason of at least {HUMAN_REASON_FLOOR} characters")
    return text


def _review_proposed(
    store: Store,
    entry_ids: list[str],
    *,
    status: str,
    op: str,
    actor: JSONObject,
    reason: str | None,
    refusal: str,
) -> list[JSONObject]:
    """Move proposed entries to ``status`` in one transaction; any other status refuses all."""
    at = times.now_iso()
    done: list[JSONObject] = []
    with store.transaction() as tx:
        for entry_id in map(check_id, entry_ids):
            current = tx.get(entry_id).get("status")
            if current != "proposed":
                raise StateError(f"{entry_id} is {current}; {refusal}")
            done.append(set_status(tx, entry_id, status, op=op, actor=actor, reason=reason, at=at))
    return done


def approve(store: Store, entry_ids: list[str], *, actor: JSONObject) -> list[JSONObject]:
    """Make proposed entries active (a person reviewed them)."""
    return _review_proposed(
        store,
        entry_ids,
        status="active",
        op="approve",
        actor=actor,
        reason=None,
        refusal="only proposed entries are approved",
    )


def reject(
    store: Store, entry_ids: list[str], reason: str, *, actor: JSONObject
) -> list[JSONObject]:
    """Refuse proposed entries; each becomes a tombstone carrying the reason."""
    return _review_proposed(
        store,
        entry_ids,
        status="rejected",
        op="reject",
        actor=actor,
        reason=_reason(reason, "reject"),
        refusal="reject is for proposed entries (retire an active one with deprecate)",
    )


def lift(store: Store, entry_id: str, *, actor: JSONObject, reason: str = "") -> JSONObject:
    """Lift a tombstone: the entry returns to ``proposed`` and stops refusing new writes.

    It comes back for review (dec-002-d03e) rather than straight to ``active``, so a rule retired for a
    reason is not silently re-imposed; a successor can now supersede it.
    """
    check_id(entry_id)
    at = times.now_iso()
    with store.transaction() as tx:
        status = tx.get(entry_id).get("status")
        if status not in TOMBSTONE_STATUSES:
            raise StateError(f"{entry_id} is {status}, not a tombstone; there is nothing to lift")
        return set_status(
            tx,
            entry_id,
            "proposed",
            op="lift",
            actor=actor,
            reason=reason.strip() or "tombstone lifted by a person",
            at=at,
        )


def purge(store: Store, entry_id: str, reason: str, *, actor: JSONObject) -> JSONObject:
    """Remove an entry from the store; the journal keeps its last value and the reason."""
    why = _reason(reason, "purge")
    check_id(entry_id)
    at = times.now_iso()
    with store.transaction() as tx:
        before = tx.get(entry_id)
        tx.put("purge", entry_id, None, actor=actor, reason=why, at=at)
    return before
