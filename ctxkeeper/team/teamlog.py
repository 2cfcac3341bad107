"""The team's history: journal events shared across clones, and the one rule that folds them.

Every clone is a replica. Its journal holds its own events and the ones it imported, each with
the identity (``event``) it was born with. An event names the versions of its entry it
changed (``parents``), the way a git commit names its parents, so where two clones changed one
entry at once the entry's events branch. :func:`fold` resolves every branch by one
deterministic rule (dec-018-7d31), so any two clones holding the same events hold the same entries,
whatever order the events reached them in.
"""

from __future__ import annotations

from typing import Final

from ctxkeeper.core.journal import is_redacted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

#: The fields of an event as the team shares it, in the snapshot's order: the sort key first, so
#: a line's place is read from its first bytes (ctxkeeper.team.snapshotpatch). The rest of a
#: journal record is this clone's (``seq``, ``prev``, ``hash``, ``tx``), and ``before`` follows
#: from the parents.
EVENT_FIELDS: Final = ("id", "at", "event", "version", "op", "actor", "reason", "parents", "after")
#: An event that presents another for a person's review (an imported event that claims to be a
#: person's and is not in the team's history) names it here; it is void once that event is
#: among the entry's own (it arrived through the team's history, or a person imported it).
STANDS_FOR: Final = "stands_for"
#: Fields only some events carry, shared when present: a purge's value digest, a stand-in's
#: claimed event.
OPTIONAL_FIELDS: Final = ("blocks", STANDS_FOR)
#: A local record that moved an entry to the resolved version of its branches after an import
#: carries the versions it resolved here; it is this clone's bookkeeping, never shared.
RESOLVES: Final = "resolves"
#: Statuses that end an entry's life: they win over a concurrent version that is still live.
_TERMINAL: Final = frozenset({"deprecated", "rejected", "superseded"})
#: The entry field holding the agent's proposed changes (ctxkeeper.core.changes).
PENDING: Final = "pending_changes"
#: The statuses a person must have stood behind (see :func:`justified_status`).
_NEEDS_A_PERSON: Final = frozenset({"active"})


#: Ids of journal records about this clone's store rather than an entry (a change of the
#: review policy seen in config.json, a record doctor quarantined): this clone's history, never
#: shared (a teammate's snapshot holds entries' events only).
LOCAL_IDS: Final = frozenset({"config.json", "journal.jsonl"})


def is_resolution(record: Mapping[str, JSONValue]) -> bool:
    return record.get("op") == "import" and isinstance(record.get(RESOLVES), list)


def is_local(record: Mapping[str, JSONValue]) -> bool:
    """A record about this clone's store, not an entry: never shared (see :data:`LOCAL_IDS`)."""
    return record.get("id") in LOCAL_IDS


def team_events(records: Iterable[Mapping[str, JSONValue]]) -> list[JSONObject]:
    """The journal's records as team events, in journal order, each with explicit parents.

    A record written here names no parents: it followed the version its entry had in this
    journal, which is the previous record of that entry (or the versions a resolution record
    settled on). An imported record keeps the parents it was born with.
    """
    current: dict[str, list[JSONValue]] = {}
    events: list[JSONObject] = []
    for record in records:
        if is_local(record):
            continue
        entry_id = str(record.get("id"))
        if is_resolution(record):
            resolved = record.get(RESOLVES)
            current[entry_id] = list(resolved) if isinstance(resolved, list) else []
            continue
        parents = record.get("parents")
        event = shared_fields(record)
        followed = parents if isinstance(parents, list) else current.get(entry_id, [])
        event["parents"] = [*sorted(str(p) for p in followed)]
        events.append(event)
        current[entry_id] = [str(record.get("event"))]
    return events


def shared_fields(record: Mapping[str, JSONValue]) -> JSONObject:
    """The fields of a journal record the team shares (see :data:`EVENT_FIELDS`)."""
    event: JSONObject = dict(zip(EVENT_FIELDS, map(record.get, EVENT_FIELDS), strict=True))
    for name in OPTIONAL_FIELDS:
        if name in record:
            event[name] = record[name]
    return event


def heads(events: Iterable[Mapping[str, JSONValue]]) -> list[Mapping[str, JSONValue]]:
    """The events of one entry that no other event of it followed: the tips of its branches."""
    group = list(events)
    followed = {str(p) for event in group for p in _parents(event)}
    followed |= _void(group)
    tips = [event for event in group if str(event.get("event")) not in followed]
    # Parents that loop can only come from a hand-made file; every event is then a candidate.
    return tips or group


def _void(group: list[Mapping[str, JSONValue]]) -> set[str]:
    """The stand-ins among ``group`` whose event is among it too: the event they presented for
    review arrived through the team's history, and it, not they, carries the entry on (a stand-in
    is then as if that event followed it)."""
    standing = [event for event in group if isinstance(event.get(STANDS_FOR), str)]
    if not standing:
        return set()
    present = {str(event.get("event")) for event in group}
    return {str(event.get("event")) for event in standing if event.get(STANDS_FOR) in present}


def _live_after(event: Mapping[str, JSONValue]) -> JSONObject | None:
    """The entry an event left, or None when it removed it (a purge, or a purged value)."""
    after = event.get("after")
    return after if isinstance(after, dict) and not is_redacted(after) else None


def _precedence(event: Mapping[str, JSONValue]) -> tuple[int, int, str, str]:
    """dec-018-7d31: a purge, then an ending (deprecated, rejected, superseded) over a live version,
    then the higher revision, the later time, the larger event id. The tips that lose stay in
    the journal, as history."""
    after = _live_after(event)
    if after is None:
        return (2, 0, str(event.get("at")), str(event.get("event")))
    revision = after.get("revision")
    return (
        1 if after.get("status") in _TERMINAL else 0,
        revision if isinstance(revision, int) and not isinstance(revision, bool) else 0,
        str(event.get("at")),
        str(event.get("event")),
    )


def justified_status(
    entry: JSONObject, events: Iterable[Mapping[str, JSONValue]], review: str
) -> JSONObject:
    """``entry`` with the status its events justify: ``active`` needs a person's event (a
    record, an approval, an edit) among them unless the review policy is ``off``, so editing
    a snapshot by hand cannot promote an agent's proposal; it arrives ``proposed``."""
    if entry.get("status") not in _NEEDS_A_PERSON or review == "off":
        return entry
    if any(_actor_origin(event) == "user" for event in events):
        return entry
    return {**entry, "status": "proposed"}


def resolve(
    events: Iterable[Mapping[str, JSONValue]], review: str
) -> tuple[JSONObject | None, list[str]]:
    """The version one entry's events fold to (None: purged) and the tips it was chosen from."""
    group = list(events)
    present = {str(event.get("event")) for event in group}
    void = _void(group)
    if void:
        group = [event for event in group if str(event.get("event")) not in void]
    tips = heads(group)
    best = max(tips, key=_precedence)
    after = _live_after(best)
    value = justified_status(after, group, review) if after is not None else None
    if value is not None and value.get("status") not in _TERMINAL and len(tips) > 1:
        carried = _carried_changes(best, tips, group)
        if carried:
            value = {**value, PENDING: [*_pending(value), *carried]}
    if value is not None and void:
        value = _without_stand_ins(value, present)
    return value, sorted(str(tip.get("event")) for tip in tips)


def _without_stand_ins(value: JSONObject, present: set[str]) -> JSONObject:
    """``value`` without the pending changes that stood for an event now among its own."""
    kept: list[JSONValue] = [
        change
        for change in _pending(value)
        if not (isinstance(change, dict) and change.get(STANDS_FOR) in present)
    ]
    if len(kept) == len(_pending(value)):
        return value
    out = {key: item for key, item in value.items() if key != PENDING}
    if kept:
        out[PENDING] = kept
    return out


def _carried_changes(
    best: Mapping[str, JSONValue],
    tips: list[Mapping[str, JSONValue]],
    group: list[Mapping[str, JSONValue]],
) -> list[JSONValue]:
    """The agent's pending changes on the losing tips that the winning line of history never
    held: a concurrent edit must not silently drop a proposal awaiting a person (a person who
    saw and decided it removed it, and then it is not carried back)."""
    by_id = {str(event.get("event")): event for event in group}
    seen: set[str] = set()
    stack, visited = [best], set()
    while stack:
        event = stack.pop()
        key = str(event.get("event"))
        if key in visited:
            continue
        visited.add(key)
        after = event.get("after")
        seen.update(_change_id(c) for c in _pending(after if isinstance(after, dict) else {}))
        stack.extend(by_id[str(p)] for p in _parents(event) if str(p) in by_id)
    carried: list[JSONValue] = []
    for tip in sorted(tips, key=lambda t: str(t.get("event"))):
        after = tip.get("after")
        for change in _pending(after if isinstance(after, dict) else {}):
            if _change_id(change) not in seen:
                seen.add(_change_id(change))
                carried.append(change)
    return carried


def _pending(entry: Mapping[str, JSONValue]) -> list[JSONValue]:
    items = entry.get(PENDING)
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _change_id(change: JSONValue) -> str:
    return str(change.get("change")) if isinstance(change, dict) else ""


def by_entry(events: Iterable[Mapping[str, JSONValue]]) -> dict[str, list[Mapping[str, JSONValue]]]:
    groups: dict[str, list[Mapping[str, JSONValue]]] = {}
    for event in events:
        groups.setdefault(str(event.get("id")), []).append(event)
    return groups


def fold(events: Iterable[Mapping[str, JSONValue]], review: str) -> dict[str, JSONObject]:
    """The entries a set of team events folds to, the same in every clone that holds them."""
    entries: dict[str, JSONObject] = {}
    for entry_id, group in by_entry(events).items():
        value, _ = resolve(group, review)
        if value is not None:
            entries[entry_id] = value
    return entries


def _parents(event: Mapping[str, JSONValue]) -> list[JSONValue]:
    parents = event.get("parents")
    return parents if isinstance(parents, list) else []


def _actor_origin(event: Mapping[str, JSONValue]) -> object:
    actor = event.get("actor")
    return actor.get("origin") if isinstance(actor, dict) else None
