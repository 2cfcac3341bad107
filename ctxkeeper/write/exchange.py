"""Team sharing: export the store as a snapshot, and import a teammate's.

An import adds the events this clone has not seen, each as it was born, and moves every entry
they touch to the version :func:`ctxkeeper.team.teamlog.resolve` folds its events to, so every
clone holding the same events holds the same entries. It is idempotent (a second import adds
nothing) and non-destructive (nothing local is dropped). The file is untrusted: it is checked
whole before anything is written, and a refused import leaves every file as it was.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import itertools
import operator
import os
from typing import Final

from ctxkeeper.core import fsutil, times
from ctxkeeper.core.changes import propose
from ctxkeeper.core.errors import CtxkeeperError, SnapshotError, StateError, UsageError
from ctxkeeper.core.journal import JOURNAL_VERSION, canonical, is_redacted
from ctxkeeper.core.model import (
    EDITABLE_FIELDS,
    TOMBSTONE_STATUSES,
    arriving_problems,
    clean_fields,
    contract_floors,
    editable_view,
    revision_of,
)
from ctxkeeper.core.wording import counted
from ctxkeeper.team import snapshot, snapshotformat, teamlog, upstream
from ctxkeeper.team.snapshot import default_path, digest, holds, untouched
from ctxkeeper.team.snapshotformat import Snapshot, event_order, normal_entry, parse, same_event
from ctxkeeper.team.snapshotpatch import CannotPatchError, line_key
from ctxkeeper.write import derived, heldback
from ctxkeeper.write.similarity import matching_tombstone

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.store import Commit, Store, Transaction

#: Who writes the events an import derives (an entry added by hand to the file, a restatement
#: of a tombstone retired): the same in every clone, so every clone derives the same event.
IMPORT_ACTOR: Final = {"origin": "import", "user": None}
_LIVE: Final = frozenset({"active", "proposed"})


def resolve_path(store: Store, path: str | None) -> str:
    """The snapshot file ``path`` names (relative to the project root), refused outside
    ``.context/``, so nothing can make ctxkeeper write outside it."""
    if not path:
        return default_path(store.dir)
    if "\x00" in path:
        raise UsageError("path must be a file path")
    target = os.path.realpath(os.path.join(store.root, path))
    fence = os.path.realpath(store.dir)
    if os.path.commonpath([target, fence]) != fence or target == fence:
        raise UsageError(f"path {path!r} is outside .context/; give a path inside it")
    if not target.endswith(".jsonl"):
        raise UsageError(f"path {path!r} must name a .jsonl file")
    return target


def export_snapshot(store: Store, path: str | None = None) -> JSONObject:
    """Write the snapshot (default ``.context/snapshot.jsonl``) under the store lock."""
    store.require()
    target = resolve_path(store, path)
    with _no_cycle_collection(), store.transaction() as tx:
        tx.after_commit(_snapshot_written(None, target))
    return {"path": target, "written": True}


def _snapshot_written(
    read: tuple[str, str] | None, export_to: str | None
) -> Callable[[Commit], None]:
    """The listener of a transaction that read the snapshot file ``read`` (its path and the
    digest of the bytes imported: remembered as seen, so it is exported over and not imported
    again) or writes one to ``export_to``, or both."""

    def written(commit: Commit) -> None:
        directory = commit.store.dir
        if read is not None:
            snapshot.remember(directory, *read)
        if export_to is not None:
            force = read is not None and read[0] == export_to  # just imported: nothing is lost
            journal = commit.store.read_journal()
            snapshot.write(
                directory, commit.state.entries.values(), journal, path=export_to, force=force
            )
            commit.done.add(derived.SNAPSHOT)
        elif read is not None:
            if read[0] == default_path(directory):
                # An import of the default file decided itself whether it needs rewriting.
                commit.done.add(derived.SNAPSHOT)
            else:
                commit.records = None  # one of another file: the default one is rebuilt

    return written


def import_snapshot(
    store: Store,
    path: str | None = None,
    *,
    actor: JSONObject,
    fence: str = "context",
    vouched_by_actor: bool | None = None,
) -> JSONObject:
    """Merge a snapshot into the store; return what arrived.

    A person's event in the file counts as a person's only when the team's reviewed history
    holds it (:mod:`ctxkeeper.team.upstream`) or ``vouched_by_actor``; any other is held back
    and presented for review as the agent's (see :func:`_held_back`).

    :param fence: where ``path`` may be: ``"context"`` (inside ``.context/``, the agent's
        door) or ``"none"`` (a person at the CLI may import any file).
    :param vouched_by_actor: ``actor`` is a person who speaks for what the file holds (a
        person at their terminal who named it); by default, whenever ``actor`` is a person.
    :raise SnapshotError: the file is missing or wrong in any way; nothing was written.
    """
    store.require()
    source = os.path.abspath(path) if fence == "none" and path else resolve_path(store, path)
    try:
        size = os.stat(source).st_size
    except OSError:
        size = 0
    if size > snapshotformat.MAX_BYTES:
        # Refused before reading: the limit is there so a hostile file cannot fill memory.
        raise SnapshotError(
            source, None, f"{size} bytes is over the {snapshotformat.MAX_BYTES}-byte limit"
        )
    if os.path.isfile(source) and untouched(store.dir, source):
        # This clone wrote or imported this very file: it holds everything in it (and the
        # file, tens of megabytes in a large project, is not read at all).
        return _nothing_new(store, source)
    data = fsutil.read_bytes(source)
    if data is None:
        raise SnapshotError(
            source, None, "no snapshot here (export one with `ctxkeeper export snapshot`)"
        )
    sha256 = digest(data)  # taken once: for the seen check and the seen-file record
    if holds(store.dir, source, sha256):
        return _nothing_new(store, source)  # the same bytes, rewritten (a git checkout)
    vouch = actor.get("origin") == "user" and vouched_by_actor is not False
    with _no_cycle_collection():
        return _import(store, (source, sha256), data, actor, vouch)


def _nothing_new(store: Store, source: str) -> JSONObject:
    entries = store.load().entries
    return _report(source, entries, {}, [], [], [], len(entries))


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Hold the cycle collector while an import builds a few hundred thousand objects: none of
    them form cycles, and each collection would walk them all again (about a fifth of the
    time of a large import)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _import(
    store: Store, read: tuple[str, str], data: bytes, actor: JSONObject, vouch: bool
) -> JSONObject:
    """Import ``data``, the bytes of the file ``read`` names with their digest: every check
    runs on them before the merge sees any of it."""
    return _merged(store, read, data, parse(data, read[0]), (actor, vouch))


def _merged(
    store: Store,
    read: tuple[str, str],
    data: bytes,
    snapshot: Snapshot,
    who: tuple[JSONObject, bool],
) -> JSONObject:
    source = read[0]
    kept = os.path.isfile(heldback.held_path(store))
    with store.transaction() as tx:
        report = _merge(store, tx, snapshot, source, who)
        held = _HELD.pop(id(tx), [])
        export_to = None
        if (
            tx.config.auto_export
            and source == default_path(store.dir)
            and (report.get("held_back") or not _already_normal(data, snapshot, tx, report))
        ):
            # A held-back event is not this clone's to pass on: the rewrite leaves it out (it
            # reaches the team from the clone that made it, through the team's review).
            # Rewrite the merged file in its normal form: one line per event, sorted, the
            # entries as every clone now holds them.
            export_to = source
        tx.after_commit(_snapshot_written(read, export_to))
    if held or kept:
        arrived = [str(event["event"]) for event in tx.events if "event" in event]
        heldback.keep(store, held, arrived)
    return report


#: The events one transaction's merge held back, for :func:`_merged` to keep (by the id of
#: the transaction, which lives only while the merge runs).
_HELD: Final[dict[int, list[JSONObject]]] = {}


def recheck_held(store: Store) -> JSONObject | None:
    """Import the held-back events again once the upstream snapshot moved (SessionStart):
    those the team's history now holds come in; None when nothing was due."""
    if not heldback.recheck_due(store):
        return None
    path = heldback.held_path(store)
    data = fsutil.read_bytes(path)
    if data is None:
        return None
    with _no_cycle_collection():
        return _import(store, (path, digest(data)), data, dict(IMPORT_ACTOR), False)


def _already_normal(data: bytes, snapshot: Snapshot, tx: Transaction, report: JSONObject) -> bool:
    """True when the file already says what an export would: it holds every event this
    clone has, each line once and in order, and the entries as they now stand. A teammate's
    export pulled as is needs no rewrite; a union merge's file does."""
    if report.get("local_only_events"):
        return False
    if len(snapshot.entries) != len(tx.entries):
        return False
    if any(tx.entries.get(str(entry["id"])) != entry for _, entry in snapshot.entries):
        return False
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the newline that ends the file
    try:
        keys = list(map(line_key, lines))  # an empty line in between cannot be keyed
    except CannotPatchError:
        return False
    return all(map(operator.lt, keys, itertools.islice(keys, 1, None)))


def _merge(
    store: Store, tx: Transaction, snapshot: Snapshot, source: str, who: tuple[JSONObject, bool]
) -> JSONObject:
    actor, vouch = who
    review = tx.config.review
    local = teamlog.team_events(store.read_journal())
    known = {str(event["event"]): event for event in local}
    lines: dict[str, int] = {}
    foreign: list[JSONObject] = []
    for event_id, (line, event) in snapshot.events.items():
        mine = known.get(event_id)
        # con-018-2cde: a copy this clone holds is kept as it is, purged or not.
        if mine is None:
            foreign.append(event)
            lines[event_id] = line
        elif not same_event(mine, event):
            raise SnapshotError(
                source,
                line,
                f"event {event_id} differs from this clone's copy of it (edited by hand?)",
            )
    local_only = sum(1 for event_id in known if event_id not in snapshot.events)
    held = [] if vouch or review == "off" else _held_back(store, foreign)
    _HELD[id(tx)] = held
    if held:
        away = {str(event["event"]) for event in held}
        foreign = [event for event in foreign if str(event["event"]) not in away]
    events = [*local, *foreign]
    with_events = {str(event["id"]) for event in [*events, *held]}
    for line, entry in snapshot.entries:
        if str(entry["id"]) not in with_events:
            added = _hand_added(entry)
            if str(added["event"]) not in lines:
                foreign.append(added)
                events.append(added)
                lines[str(added["event"])] = line
    groups = teamlog.by_entry(events)
    touched = sorted({str(event["id"]) for event in foreign})
    before = dict(tx.entries)
    targets: dict[str, JSONObject | None] = {}
    tips: dict[str, list[str]] = {}
    for entry_id in touched:
        targets[entry_id], tips[entry_id] = teamlog.resolve(groups[entry_id], review)
    notes: list[str] = []
    restated = _retire_restatements(before, targets, tips, groups, foreign, review, notes)
    for entry_id in restated:
        targets[entry_id], tips[entry_id] = teamlog.resolve(groups[entry_id], review)
    # An entry line parse() already held to the model needs only this project's own floors.
    vetted = {str(entry["id"]): entry for _, entry in snapshot.entries}
    _check_live(store, tx, targets, before, groups, lines, source, vetted)

    last: dict[str, str] = {}
    for event in sorted(foreign, key=event_order):
        # Its before-value is the version its parents name, already in the journal: kept as
        # null rather than a second copy (get_entry shows it from the parents).
        tx.adopt(teamlog.shared_fields(event), None)
        last[str(event["id"])] = str(event["event"])
    at = times.now_iso()
    for entry_id in touched:
        resolved: list[JSONValue] = [*tips[entry_id]]
        if tx.entries.get(entry_id) != targets[entry_id] or tips[entry_id] != [last[entry_id]]:
            tx.put(
                "import",
                entry_id,
                targets[entry_id],
                actor=actor,
                reason=f"resolved {counted(len(tips[entry_id]), 'version')} from "
                f"{os.path.basename(source)}",
                at=at,
                extra={teamlog.RESOLVES: resolved},
            )
    presented = _present_held(tx, held, local, at) if held else []
    notes.extend(_line_notes(snapshot, targets, groups, {str(e["id"]) for e in held}))
    report = _report(source, before, targets, foreign, restated, notes, len(tx.entries))
    report["local_only_events"] = local_only
    report["held_back"] = len(held)
    if held:
        report["unchanged"] = False
        waiting = _list(report["awaiting_review"])
        report["awaiting_review"] = [*sorted({*map(str, waiting), *presented})]
    return report


#: Who presents a held-back event for review: the agent, since nothing vouches for the person
#: the event names (DESIGN.md, "Review policy").
HELD_ACTOR: Final = {"origin": "agent", "session_id": None}


def _held_back(store: Store, foreign: list[JSONObject]) -> list[JSONObject]:
    """The arriving events that claim to be a person's and that neither this clone made nor
    the team's reviewed history holds (ctxkeeper.team.upstream), with every arriving event
    that follows one of them (it builds on what they claim). git is read only when an arriving
    event claims a person."""
    claims = [event for event in foreign if _claims_a_person(event)]
    if not claims:
        return []
    trusted = upstream.vouched(store.root, default_path(store.dir), claims)
    held = {str(event["event"]) for event in claims} - trusted
    grew = bool(held)
    while grew:
        grew = False
        for event in foreign:
            key = str(event["event"])
            parents = event.get("parents")
            if key not in held and any(str(p) in held for p in _list(parents)):
                held.add(key)
                grew = True
    return [event for event in foreign if str(event["event"]) in held]


def _claims_a_person(event: Mapping[str, JSONValue]) -> bool:
    actor = event.get("actor")
    return isinstance(actor, dict) and actor.get("origin") == "user"


def _present_held(
    tx: Transaction, held: list[JSONObject], local: list[JSONObject], at: str
) -> list[str]:
    """Present each held-back line of history for review, as the agent's: what it would change
    in an entry this clone holds becomes a pending change on it; an entry only it holds
    arrives ``proposed``; an approval adds nothing (the entry stays proposed, in review). Each
    stand-in names the event it presents (teamlog.STANDS_FOR), so it is made once, and is void
    once that event arrives through the team's history. Returns the entry ids presented."""
    made = {str(event[teamlog.STANDS_FOR]) for event in local if teamlog.STANDS_FOR in event}
    presented: list[str] = []
    for entry_id, group in sorted(teamlog.by_entry(held).items()):
        for tip in sorted(teamlog.heads(group), key=lambda e: str(e.get("event"))):
            key = str(tip.get("event"))
            if key in made:
                continue
            if _stand_in(tx, entry_id, tip, at):
                presented.append(entry_id)
    return presented


def _stand_in(tx: Transaction, entry_id: str, tip: Mapping[str, JSONValue], at: str) -> bool:
    key = str(tip.get("event"))
    actor = tip.get("actor")
    name = actor.get("user") if isinstance(actor, dict) else None
    why = (
        f"an imported {tip.get('op')} (event {key}) names {name or 'a person'} as its author, "
        f"but it is not in the team's history ({upstream.UPSTREAM_REF}) and this clone did not "
        "make it: presented for a person's review"
    )
    after = tip.get("after")
    claimed = after if isinstance(after, dict) and not is_redacted(after) else None
    current = tx.entries.get(entry_id)
    extra: dict[str, JSONValue] = {teamlog.STANDS_FOR: key}
    if current is None:
        if claimed is None or claimed.get("status") not in _LIVE:
            return False
        value = normal_entry({**claimed, "status": "proposed", "origin": "agent"})
        view = {
            k: v for k, v in editable_view(value).items() if k not in ("valid_from", "valid_until")
        }
        try:
            clean_fields(str(value["kind"]), view, tx.config.floors)
        except CtxkeeperError:
            return False  # below this project's floors: nothing a person could approve
        if arriving_problems(value):
            return False
        tx.put("record", entry_id, value, actor=dict(HELD_ACTOR), reason=why, at=at, extra=extra)
        return True
    if current.get("status") not in _LIVE:
        return False
    details: JSONObject
    if claimed is None or claimed.get("status") not in _LIVE:
        op, details = "deprecate", {"superseded_by": None}
    else:
        names = EDITABLE_FIELDS.get(str(current.get("kind")), ())
        fields = {n: claimed.get(n) for n in names if claimed.get(n) != current.get(n)}
        if not fields:
            return False  # a bare approval: the entry stays proposed, awaiting review
        op, details = "update", {"fields": fields}
    try:
        _, new = propose(
            tx, entry_id, op, {**details, **extra}, actor=dict(HELD_ACTOR), reason=why, at=at
        )
    except StateError:
        return False  # the entry's queue is full; the held event stays out
    if new:
        tx.events[-1].update(extra)
    return new


def _list(value: JSONValue) -> list[JSONValue]:
    return value if isinstance(value, list) else []


def _derived_id(*parts: str) -> str:
    """An event identity every clone computes alike from the same facts."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def _hand_added(entry: JSONObject) -> JSONObject:
    """The event for an entry line no event produced (added to the file by hand): it arrives
    ``proposed`` with origin ``import``, whatever it claims, for a person to review. Entries
    that come with their events keep the origin those give (dec-021-9a5b)."""
    after = normal_entry({**entry, "status": "proposed", "origin": "import"})
    return {
        "version": JOURNAL_VERSION,
        "event": _derived_id("hand-added", canonical(normal_entry(entry)).decode()),
        "at": str(entry.get("updated_at") or entry.get("created_at")),
        "actor": dict(IMPORT_ACTOR),
        "op": "import",
        "id": str(entry["id"]),
        "after": after,
        "reason": "an entry line with no journal events (added to the snapshot by hand)",
        "parents": [],
    }


def _retire_restatements(
    before: Mapping[str, JSONObject],
    targets: dict[str, JSONObject | None],
    tips: dict[str, list[str]],
    groups: dict[str, list[Mapping[str, JSONValue]]],
    foreign: list[JSONObject],
    review: str,
    notes: list[str],
) -> list[str]:
    """A tombstone this clone held wins over an entry that restates it and arrives from a
    teammate who had not seen it retired (con-015-3e21): the arriving entry is retired too, by an
    event every clone derives alike. An entry this clone already held is left alone, since
    whoever retired the tombstone here knew it and kept it."""
    tombstones = [entry for entry in before.values() if entry.get("status") in TOMBSTONE_STATUSES]
    retired: list[str] = []
    if not tombstones:
        return retired
    for entry_id, value in targets.items():
        if entry_id in before or value is None or value.get("status") not in _LIVE:
            continue
        match = matching_tombstone(value, tombstones)
        if match is None:
            continue
        tombstone = match[0]
        tomb_id = str(tombstone["id"])
        group = groups[entry_id]
        at = max(
            [str(event["at"]) for event in group if str(event["event"]) in tips[entry_id]]
            + [str(tombstone.get("updated_at"))]
        )
        why = (
            f"restates {tomb_id}, which was {tombstone.get('status')} while this was recorded "
            f"in another clone ({tombstone.get('status_reason') or 'no reason recorded'})"
        )
        after = normal_entry(
            {
                **value,
                "status": "deprecated",
                "status_reason": why,
                "updated_at": at,
                "revision": revision_of(value) + 1,
            }
        )
        event: JSONObject = {
            "version": JOURNAL_VERSION,
            "at": at,
            "actor": dict(IMPORT_ACTOR),
            "op": "deprecate",
            "id": entry_id,
            "after": after,
            "reason": why,
            "parents": list(tips[entry_id]),
        }
        # The identity is a digest of the whole event, not only of the entry, tips and
        # tombstone it names: two clones that each hold the tombstone in another version (it
        # was retired in both at once, with other reasons and times) derive different events,
        # and one identity for two contents would make every later import refuse the pair.
        event["event"] = _derived_id("restates", canonical(event).decode())
        foreign.append(event)
        group.append(event)
        retired.append(entry_id)
        notes.append(f"{entry_id} arrived restating the tombstone {tomb_id}; it was retired too")
    return retired


def _check_live(
    store: Store,
    tx: Transaction,
    targets: Mapping[str, JSONObject | None],
    before: Mapping[str, JSONObject],
    groups: Mapping[str, list[Mapping[str, JSONValue]]],
    lines: Mapping[str, int],
    source: str,
    vetted: Mapping[str, JSONObject],
) -> None:
    """Every entry the import makes live passes the model's checks and this project's
    floors, or nothing is written."""
    contract = tx.config.floors == contract_floors()
    for entry_id, value in targets.items():
        if value is None or value == before.get(entry_id):
            continue
        if contract and vetted.get(entry_id) == value:
            continue
        view = {
            k: v for k, v in editable_view(value).items() if k not in ("valid_from", "valid_until")
        }
        line = max((lines.get(str(e["event"]), 0) for e in groups[entry_id]), default=0)
        problems = arriving_problems(value)
        if problems:
            raise SnapshotError(source, line or None, "; ".join(problems))
        try:
            clean_fields(str(value["kind"]), view, tx.config.floors, root=store.root)
        except CtxkeeperError as exc:
            raise SnapshotError(source, line or None, f"{entry_id}: {exc}") from None
        loop = _supersession_loop(entry_id, value, targets, before)
        if loop:
            raise SnapshotError(source, line or None, loop)


def _supersession_loop(
    entry_id: str,
    value: Mapping[str, JSONValue],
    targets: Mapping[str, JSONObject | None],
    before: Mapping[str, JSONObject],
) -> str | None:
    """Why ``value`` cannot supersede what it names: itself, or an entry that supersedes it
    back. The write path only lets a new entry supersede older ones, so no loop arrives from it;
    a hand-made one would leave each entry frozen by the other."""
    for other in _list(value.get("supersedes")):
        if other == entry_id:
            return f"{entry_id} supersedes itself"
        named = targets.get(str(other), before.get(str(other)))
        if named is not None and entry_id in _list(named.get("supersedes")):
            return f"{entry_id} and {other} supersede each other"
    return None


def _line_notes(
    snapshot: Snapshot,
    targets: Mapping[str, JSONObject | None],
    groups: Mapping[str, list[Mapping[str, JSONValue]]],
    held: set[str],
) -> list[str]:
    """What the entry lines claimed that their events do not bear out (the events win)."""
    notes = [
        f"{entry_id}: an event claims to be a person's and is not in the team's history; "
        "it awaits your review (`ctxkeeper review`)"
        for entry_id in sorted(held)
    ]
    for line, entry in snapshot.entries:
        entry_id = str(entry["id"])
        if entry_id not in targets or entry_id in held:
            continue
        value = targets[entry_id]
        if value is None:
            continue
        if entry.get("status") == "active" and value.get("status") == "proposed":
            notes.append(
                f"line {line}: {entry_id} claims active, but no person recorded or approved it "
                "in its events; it arrives proposed, for review"
            )
        # normal_entry only reorders keys, and dictionaries compare whatever their order: so
        # the values compare as their normal forms do, without building them.
        elif entry != value and not any(e.get("after") == entry for e in groups.get(entry_id, [])):
            notes.append(
                f"line {line}: the entry line of {entry_id} matches none of its events' versions "
                "(edited by hand?); the events win"
            )
    return notes


def _report(
    source: str,
    before: Mapping[str, JSONObject],
    targets: Mapping[str, JSONObject | None],
    foreign: list[JSONObject],
    restated: list[str],
    notes: list[str],
    total: int,
) -> JSONObject:
    added = sorted(i for i, v in targets.items() if v is not None and i not in before)
    changed = sorted(
        i for i, v in targets.items() if i in before and v is not None and v != before[i]
    )
    removed = sorted(i for i, v in targets.items() if v is None and i in before)
    review: list[JSONValue] = [i for i in added if (targets[i] or {}).get("status") == "proposed"]
    return {
        "path": source,
        "events_added": len(foreign),
        "added": list(added),
        "updated": list(changed),
        "removed": list(removed),
        "retired_restatements": list(restated),
        "awaiting_review": review,
        "notes": list(notes),
        "unchanged": not foreign,
        "total_entries": total,
    }


def summary_line(report: Mapping[str, JSONValue]) -> str:
    """One line for a person: what arrived from the team."""
    if report.get("unchanged"):
        return "the team snapshot holds nothing new"
    added, updated, review = (
        _list(report.get(key)) for key in ("added", "updated", "awaiting_review")
    )
    held = report.get("held_back")
    held_text = held_line(held if isinstance(held, int) else 0)
    parts = [counted(len(added), "new entry", "new entries")]
    parts.append(f"{len(updated)} updated")
    removed = _list(report.get("removed"))
    if removed:
        parts.append(f"{len(removed)} purged")
    text = "from the team snapshot: " + ", ".join(parts)
    if review:
        text += f" ({counted(len(review), 'awaits', 'await')} review: `ctxkeeper review`)"
    return f"{text}; {held_text}" if held_text else text


def held_line(count: int) -> str:
    """The person's line on imported events held back (empty when there are none)."""
    if not count:
        return ""
    if count == 1:
        return "1 event claims to be a person's and is not in the team's history: it awaits your review"
    return (
        f"{count} events claim to be a person's and are not in the team's history: they await "
        "your review"
    )
