"""The human verbs: approve, reject, lift, purge. The MCP server never imports this module.

That absence is the gate (DESIGN.md: "the gate is structural, not a flag"): an agent has no
code path to these verbs, and a test asserts the server's import graph never reaches here.
Approve and reject decide proposed entries and pending changes (:mod:`ctxkeeper.core.changes`).

A verdict binds to what the person was shown (:mod:`ctxkeeper.cli.verdicts`, taken when shown):
given ``shown``, :func:`decide` applies only if everything it decides still has that digest
under the store lock, and otherwise refuses it as stale, writing nothing.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Final

from ctxkeeper.cli import verdicts
from ctxkeeper.core import times
from ctxkeeper.core.changes import (
    changes_of,
    find_change,
    is_change_id,
    is_stale,
    supersessions_by,
    without_change,
)
from ctxkeeper.core.errors import NotFoundError, StateError, UsageError
from ctxkeeper.core.model import (
    LIVE_STATUSES,
    TOMBSTONE_STATUSES,
    check_id,
    editable_view,
    ordered,
    revision_of,
    with_fields,
)
from ctxkeeper.core.store import Commit, Transaction
from ctxkeeper.read import render
from ctxkeeper.write import derived  # noqa: F401  # registers the refreshes a commit runs
from ctxkeeper.write.capture import check_candidate, value_digest
from ctxkeeper.write.verbs import require_editable, set_status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.store import Store

HUMAN_REASON_FLOOR: Final = 10
HUMAN_VERBS: Final = ("approve", "reject", "lift", "purge")


def _reason(reason: str, verb: str) -> str:
    text = reason.strip()
    if len(text) < HUMAN_REASON_FLOOR:
        raise UsageError(f"{verb} needs --reason of at least {HUMAN_REASON_FLOOR} characters")
    return text


def decide(
    store: Store,
    verb: str,
    ids: list[str],
    *,
    actor: JSONObject,
    reason: str = "",
    dry_run: bool = False,
    shown: Mapping[str, str] | None = None,
) -> list[JSONObject]:
    """Run a human verb on entry or change ids in one transaction; return what it did.

    Each item has ``action``, ``id`` (the entry), ``change`` (a change id or None), ``entry``
    (its value after; before, for purge) and ``text`` (one line, plus a field diff for an
    update, for the person deciding). Any refused id refuses them all and nothing is written.

    :param dry_run: validate against the current store and describe what would happen,
        writing nothing (the CLI shows this before it asks ``[y/N]``; :func:`plan` also
        returns what the person is shown, to bind the verdict to).
    :param shown: each id's :func:`~ctxkeeper.cli.verdicts.verdict_digest` when the person was
        shown it; under the lock, an id whose digest moved (or is missing) raises
        :class:`~ctxkeeper.core.errors.StaleVerdictError` and nothing is written.
    """
    if dry_run:
        return plan(store, verb, ids, actor=actor, reason=reason).items
    why, run, at = _prepared(verb, ids, reason)
    with store.transaction() as tx:
        if shown is not None:
            verdicts.require_as_shown(tx.entries, verb, ids, shown)
        done = run(tx, ids, actor, why, at)
    if verb == "purge":
        _drop_text_index(store)
    return done


def _drop_text_index(store: Store) -> None:
    # The search index built before the purge still holds the entry's terms until the next
    # search rebuilds it; a purge must leave no file holding them, so it goes now.
    from ctxkeeper.read.textindex import CACHE_FILE

    # A failure is left to the report, which looks at the files afterwards and names it.
    with contextlib.suppress(OSError):
        os.remove(os.path.join(store.dir, "cache", CACHE_FILE))


@dataclass(frozen=True)
class Plan:
    """What a verdict would do, as the person is shown it before they answer."""

    items: list[JSONObject]
    """What :func:`decide` would return, from a dry run."""
    subjects: dict[str, JSONObject]
    """Each id's :func:`~ctxkeeper.cli.verdicts.verdict_subject`, from the same read of the
    store as ``items``."""

    @property
    def shown(self) -> dict[str, str]:
        """The digests to pass to :func:`decide` as ``shown``."""
        return {token: verdicts.subject_digest(s) for token, s in self.subjects.items()}


def plan(store: Store, verb: str, ids: list[str], *, actor: JSONObject, reason: str = "") -> Plan:
    """Validate a verdict against the store as it is and describe it, writing nothing."""
    why, run, at = _prepared(verb, ids, reason)
    store.require()
    dry = Transaction(store.load(), store.config(), read_journal=store.read_journal)
    # Taken before the dry run stages anything: what the person is shown is the store as read.
    subjects = {token: verdicts.verdict_subject(dry.entries, token) for token in ids}
    return Plan(run(dry, ids, actor, why, at), subjects)


def shown_entry(planned: Plan, entry_id: str) -> Mapping[str, JSONValue] | None:
    """The entry ``entry_id`` as the plan's read of the store held it, if the plan decides it."""
    for subject in planned.subjects.values():
        found = verdicts.parts(subject).get(entry_id)
        if found is not None:
            return found
    return None


def _prepared(
    verb: str, ids: list[str], reason: str
) -> tuple[str, Callable[[Transaction, list[str], JSONObject, str, str], list[JSONObject]], str]:
    if verb not in HUMAN_VERBS:
        raise UsageError(f"{verb!r} is not a human verb; use one of {', '.join(HUMAN_VERBS)}")
    if not ids:
        raise UsageError(f"{verb} needs at least one id")
    why = _reason(reason, verb) if verb in ("reject", "purge") else reason.strip()
    return why, _DECIDERS[verb], times.now_iso()


def approve(
    store: Store, ids: list[str], *, actor: JSONObject, reason: str = ""
) -> list[JSONObject]:
    """Make proposed entries active and apply pending changes; return the entries changed."""
    return [_entry(d) for d in decide(store, "approve", ids, actor=actor, reason=reason)]


def reject(store: Store, ids: list[str], reason: str, *, actor: JSONObject) -> list[JSONObject]:
    """Refuse proposed entries (each becomes a tombstone carrying the reason) and pending
    changes (the entry stays as it is); return the entries changed."""
    return [_entry(d) for d in decide(store, "reject", ids, actor=actor, reason=reason)]


def lift(store: Store, entry_id: str, *, actor: JSONObject, reason: str = "") -> JSONObject:
    """Lift a tombstone: the entry returns to ``proposed`` and stops refusing new writes.

    It comes back for review (dec-002-d03e) rather than straight to ``active``, so a rule retired for a
    reason is not silently re-imposed; a successor can now supersede it.
    """
    return _entry(decide(store, "lift", [entry_id], actor=actor, reason=reason)[0])


def purge(store: Store, entry_id: str, reason: str, *, actor: JSONObject) -> JSONObject:
    """Remove an entry from the store; the journal keeps its last value and the reason."""
    return _entry(decide(store, "purge", [entry_id], actor=actor, reason=reason)[0])


def _entry(decision: JSONObject) -> JSONObject:
    entry = decision["entry"]
    assert isinstance(entry, dict)
    return entry


def _decision(action: str, entry: JSONObject, text: str, change: str | None = None) -> JSONObject:
    return {"action": action, "id": entry["id"], "change": change, "entry": entry, "text": text}


# -- which thing an id names ------------------------------------------------------------


def _resolve(tx: Transaction, token: str, verb: str) -> tuple[str, JSONObject | None]:
    """The entry id ``token`` names and the pending change it decides (None: the entry).

    An entry id decides the entry itself when it is proposed, else its one pending change.
    """
    if is_change_id(token):
        return find_change(tx.entries.values(), token)
    try:
        entry_id = check_id(token)
    except UsageError:
        raise UsageError(
            f"{token!r} is neither an entry id (like con-010-acde) nor a change id (like "
            "chg-1a2b3c4d); `ctxkeeper review` lists what awaits a decision"
        ) from None
    entry = tx.get(entry_id)
    if entry.get("status") == "proposed":
        return entry_id, None
    waiting = changes_of(entry)
    if len(waiting) == 1:
        return entry_id, waiting[0]
    if not waiting:
        refusal = (
            "only proposed entries are approved, and pending changes"
            if verb == "approve"
            else f"reject is for proposed entries and pending changes (retire an active entry "
            f"with `ctxkeeper deprecate {entry_id} --reason TEXT`)"
        )
        raise StateError(f"{entry_id} is {entry.get('status')} with no pending change; {refusal}")
    listed = ", ".join(str(c["change"]) for c in waiting)
    raise StateError(
        f"{entry_id} has {len(waiting)} pending changes ({listed}); {verb} them by change id, "
        f"e.g. `ctxkeeper {verb} {waiting[0]['change']}`"
    )


def _who(change: Mapping[str, JSONValue]) -> str:
    actor = change.get("actor")
    return str(actor.get("origin")) if isinstance(actor, dict) else "?"


def _describe(change: Mapping[str, JSONValue], entry: Mapping[str, JSONValue]) -> str:
    op = change.get("op")
    what = f"{op} of {entry.get('id')}"
    fields = change.get("fields")
    if op == "update" and isinstance(fields, dict):
        what += f" ({', '.join(fields)})"
    if op == "supersede":
        what += f" by {change.get('successor')}"
    return f"{what}, proposed by {_who(change)}: {change.get('reason')}"


def _require_fresh(entry: Mapping[str, JSONValue], change: Mapping[str, JSONValue]) -> None:
    if is_stale(entry, change):
        raise StateError(
            f"{entry.get('id')} changed since {change.get('change')} was proposed (revision "
            f"{change.get('base_revision')} then, {entry.get('revision')} now); approving it "
            f"would overwrite that edit. Reject it with `ctxkeeper reject {change.get('change')} "
            "--reason ...` and let the agent propose again against the current entry"
        )


# -- approve ------------------------------------------------------------------------------


def _approve(
    tx: Transaction, ids: list[str], actor: JSONObject, reason: str, at: str
) -> list[JSONObject]:
    done: list[JSONObject] = []
    decided: set[str] = set()
    for token in ids:
        if token in decided:
            continue
        entry_id, change = _resolve(tx, token, "approve")
        if change is None:
            done.extend(_approve_entry(tx, entry_id, actor, reason, at, decided))
        elif change["op"] == "supersede":
            successor = str(change.get("successor"))
            found = tx.entries.get(successor)
            if found is None or found.get("status") != "proposed":
                state = "gone" if found is None else found.get("status")
                raise StateError(
                    f"{change['change']} proposes {successor} to supersede {entry_id}, but "
                    f"{successor} is {state}; reject {change['change']} instead"
                )
            if successor not in decided:
                done.extend(_approve_entry(tx, successor, actor, reason, at, decided))
        else:
            done.append(_apply_change(tx, entry_id, change, actor, reason, at))
        decided.update({token, entry_id if change is None else str(change["change"])})
    return done


def _approve_entry(
    tx: Transaction, entry_id: str, actor: JSONObject, reason: str, at: str, decided: set[str]
) -> list[JSONObject]:
    """Approve a proposed entry and, in the same transaction, the supersessions it proposed."""
    before = tx.get(entry_id)
    after = set_status(
        tx, entry_id, "active", op="approve", actor=actor, reason=reason or None, at=at
    )
    text = f"approve {entry_id} ({before.get('kind')} by {before.get('origin')}): "
    done = [_decision("approve", after, text + render.headline(before))]
    for old_id, change in supersessions_by(tx.entries.values(), entry_id):
        old = tx.get(old_id)
        if old.get("status") not in LIVE_STATUSES:
            raise StateError(
                f"{entry_id} would supersede {old_id}, which is {old.get('status')} now; "
                f"reject that supersession first with `ctxkeeper reject {change['change']} "
                "--reason ...`"
            )
        _require_fresh(old, change)
        superseded = ordered(
            {
                **without_change(old, str(change["change"])),
                "status": "superseded",
                "superseded_by": entry_id,
                "updated_at": at,
                "revision": revision_of(old) + 1,
            }
        )
        why = f"superseded by {entry_id} (approved {change['change']})"
        tx.put("supersede", old_id, superseded, actor=actor, reason=why, at=at)
        decided.update({old_id, str(change["change"])})
        line = f"  and supersede {old_id} ({change['change']}): {render.headline(old)}"
        done.append(_decision("supersede", superseded, line, str(change["change"])))
    decided.add(entry_id)
    return done


def _apply_change(
    tx: Transaction,
    entry_id: str,
    change: JSONObject,
    actor: JSONObject,
    reason: str,
    at: str,
) -> JSONObject:
    """Apply a pending update or deprecation, re-checked against the store as it is now."""
    current = tx.get(entry_id)
    require_editable(current)
    _require_fresh(current, change)
    change_id = str(change["change"])
    base = without_change(current, change_id)
    text = f"approve {change_id}: {_describe(change, current)}"
    if change["op"] == "update":
        fields = change.get("fields")
        if not isinstance(fields, dict) or not fields:
            raise StateError(f"{change_id} holds no fields to apply; reject it")
        merged = {**editable_view(current), **fields}
        clean, _ = check_candidate(
            str(current["kind"]),
            merged,
            tx.entries.values(),
            floors=tx.config.floors,
            exclude=[entry_id],
            purged=tx.state.purged,
        )
        after = ordered(
            {**with_fields(base, clean), "updated_at": at, "revision": revision_of(current) + 1}
        )
        text = "\n".join([text, *render.field_diff(base, after)])
    else:
        successor = change.get("superseded_by")
        if isinstance(successor, str):
            tx.get(successor)
        after = ordered(
            {
                **base,
                "status": "deprecated",
                "status_reason": change.get("reason"),
                "superseded_by": successor if isinstance(successor, str) else None,
                "updated_at": at,
                "revision": revision_of(current) + 1,
            }
        )
    why = f"approved {change_id} ({_describe(change, current)})" + (f"; {reason}" if reason else "")
    tx.put("approve_change", entry_id, after, actor=actor, reason=why, at=at)
    return _decision("approve_change", after, text, change_id)


# -- reject -------------------------------------------------------------------------------


def _reject(
    tx: Transaction, ids: list[str], actor: JSONObject, reason: str, at: str
) -> list[JSONObject]:
    done: list[JSONObject] = []
    decided: set[str] = set()
    for token in ids:
        if token in decided:
            continue
        entry_id, change = _resolve(tx, token, "reject")
        if change is None:
            before = tx.get(entry_id)
            after = set_status(
                tx, entry_id, "rejected", op="reject", actor=actor, reason=reason, at=at
            )
            line = f"reject {entry_id} (it becomes a tombstone): {render.headline(before)}"
            done.append(_decision("reject", after, line))
            for old_id, dropped in supersessions_by(tx.entries.values(), entry_id):
                done.append(_drop_change(tx, old_id, dropped, actor, reason, at, decided))
            decided.update({token, entry_id})
        else:
            done.append(_drop_change(tx, entry_id, change, actor, reason, at, decided))
            decided.add(token)
    return done


def _drop_change(
    tx: Transaction,
    entry_id: str,
    change: JSONObject,
    actor: JSONObject,
    reason: str,
    at: str,
    decided: set[str],
) -> JSONObject:
    """Refuse one pending change: the entry it targets stays exactly as it is."""
    change_id = str(change["change"])
    current = tx.get(entry_id)
    after = without_change(current, change_id)
    why = f"rejected {change_id} ({_describe(change, current)}): {reason}"
    tx.put("reject_change", entry_id, after, actor=actor, reason=why, at=at)
    decided.add(change_id)
    text = f"reject {change_id}: {_describe(change, current)}; {entry_id} stays as it is"
    successor = tx.entries.get(str(change.get("successor")))
    supersedes = successor.get("supersedes") if successor else None
    if (
        successor is not None
        and successor.get("status") == "proposed"
        and isinstance(supersedes, list)
        and entry_id in supersedes
    ):
        # The proposed successor no longer claims to replace the entry; it awaits review alone.
        kept: list[JSONValue] = [item for item in supersedes if item != entry_id]
        revised = ordered(
            {
                **successor,
                "supersedes": kept,
                "updated_at": at,
                "revision": revision_of(successor) + 1,
            }
        )
        tx.put("reject_change", str(successor["id"]), revised, actor=actor, reason=why, at=at)
    return _decision("reject_change", after, text, change_id)


# -- lift and purge -----------------------------------------------------------------------


def _lift(
    tx: Transaction, ids: list[str], actor: JSONObject, reason: str, at: str
) -> list[JSONObject]:
    [entry_id] = ids
    status = tx.get(check_id(entry_id)).get("status")
    if status not in TOMBSTONE_STATUSES:
        raise StateError(f"{entry_id} is {status}, not a tombstone; there is nothing to lift")
    after = set_status(
        tx,
        entry_id,
        "proposed",
        op="lift",
        actor=actor,
        reason=reason or "tombstone lifted by a person",
        at=at,
    )
    line = f"lift the tombstone {entry_id} (it returns to proposed): {render.headline(after)}"
    return [_decision("lift", after, line)]


def _purge(
    tx: Transaction, ids: list[str], actor: JSONObject, reason: str, at: str
) -> list[JSONObject]:
    """Remove an entry and its text (dec-020-b077): the entry goes, every journal record of it keeps
    only digests, and a digest of its value keeps refusing a re-record. An id a teammate
    purged (gone here, its text still in this journal) has its records redacted the same way."""
    [entry_id] = ids
    check_id(entry_id)
    before = tx.entries.get(entry_id)
    done: list[JSONObject] = []
    if before is None:
        last = _last_readable_value(tx, entry_id)
        if last is None:
            raise NotFoundError(entry_id)
        line = f"purge the text {entry_id} still has in this journal (it left the store already): "
        blocks: JSONObject = {"value_sha256": value_digest(last), "at": at}
        tx.put("purge", entry_id, None, actor=actor, reason=reason, at=at, extra={"blocks": blocks})
        tx.after_commit(_redacted({entry_id}))
        return [_decision("purge", last, line + render.headline(last))]
    # A purged successor's proposed supersessions would point at nothing; drop them first.
    for old_id, change in supersessions_by(tx.entries.values(), entry_id):
        done.append(_drop_change(tx, old_id, change, actor, reason, at, set()))
    blocks = {"value_sha256": value_digest(before), "at": at}
    tx.put("purge", entry_id, None, actor=actor, reason=reason, at=at, extra={"blocks": blocks})
    tx.after_commit(_redacted({entry_id}))
    line = f"purge {entry_id} and its text from the store, the journal and the snapshot: "
    done.insert(0, _decision("purge", before, line + render.headline(before)))
    return done


def _redacted(ids: set[str]) -> Callable[[Commit], None]:
    """Once the purge is committed, replace the values and reasons of every journal record of
    ``ids`` by their digests; the team snapshot still holds the text, so it is rebuilt."""

    def redact(commit: Commit) -> None:
        commit.store.redact(commit.state, ids)
        commit.records = None

    return redact


def _last_readable_value(tx: Transaction, entry_id: str) -> JSONObject | None:
    """The last value of ``entry_id`` this journal still holds in full, if any."""
    from ctxkeeper.core.journal import is_redacted

    found: JSONObject | None = None
    for record in tx.read_journal():
        if record.get("id") != entry_id:
            continue
        for name in ("before", "after"):
            value = record.get(name)
            if isinstance(value, dict) and not is_redacted(value):
                found = value
    return found


_DECIDERS: Final[
    dict[str, Callable[[Transaction, list[str], JSONObject, str, str], list[JSONObject]]]
] = {"approve": _approve, "reject": _reject, "lift": _lift, "purge": _purge}
