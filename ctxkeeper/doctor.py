"""``ctxkeeper doctor``: verify the journal chain and that the entries equal its fold."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ctxkeeper import fsutil, journal, times
from ctxkeeper.errors import CtxkeeperError
from ctxkeeper.model import stored_problems
from ctxkeeper.store import ENTRIES_FILE, JOURNAL_FILE, State, Store, render_entries_document

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper._types import JSONObject


@dataclass
class Report:
    """What doctor found and did; ``ok`` when nothing needs a person's attention."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    manual_edits: list[str] = field(default_factory=list)
    repaired: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> JSONObject:
        return {
            "ok": self.ok,
            "problems": list(self.problems),
            "notes": list(self.notes),
            "manual_edits": list(self.manual_edits),
            "repaired": self.repaired,
        }


def run_doctor(store: Store, *, actor: JSONObject, repair: bool = False) -> Report:
    """Check everything; journal hand edits as ``manual_edit``; with ``repair``, rebuild a
    corrupt ``entries.json`` from the journal (the corrupt file is kept beside it)."""
    report = Report()
    store.require()
    try:
        store.config()
    except CtxkeeperError as exc:
        report.problems.append(str(exc))
    try:
        records = store.read_journal()
    except CtxkeeperError as exc:
        report.problems.append(f"{exc} Restore the journal from a backup or snapshot.")
        return report
    chain_problems = journal.verify_chain(records)
    report.problems.extend(chain_problems)
    folded: dict[str, JSONObject] = {}
    journal.fold(records, folded)
    try:
        state = store.load()
    except CtxkeeperError as exc:
        if not repair:
            report.problems.append(
                f"{exc} `ctxkeeper doctor --repair` rebuilds {ENTRIES_FILE} from the journal "
                "and keeps the unreadable file as entries.json.corrupt."
            )
            return report
        if chain_problems:
            report.problems.append("not repairing: the journal chain itself is broken")
            return report
        _rebuild(store, records, folded)
        report.repaired = True
        report.notes.append(f"rebuilt {ENTRIES_FILE} from {len(records)} journal records")
        return report
    for entry in state.entries.values():
        report.problems.extend(stored_problems(entry))
        report.notes.extend(_bad_bounds(entry))
    if chain_problems:
        return report
    _journal_hand_edits(store, state, folded, report, actor)
    return report


def _bad_bounds(entry: JSONObject) -> list[str]:
    notes = []
    for key in ("valid_from", "valid_until"):
        value = entry.get(key)
        if value is not None and times.parse_stored_bound(value, end_of_day=False) is None:
            notes.append(f"{entry.get('id')}: {key} {value!r} does not parse; it is ignored")
    return notes


def _journal_hand_edits(
    store: Store,
    state: State,
    folded: dict[str, JSONObject],
    report: Report,
    actor: JSONObject,
) -> None:
    """Record each difference between the entries file and the journal's fold as a
    ``manual_edit``, so a hand edit becomes history instead of a silent divergence."""
    changed = sorted(
        entry_id
        for entry_id in set(state.entries) | set(folded)
        if state.entries.get(entry_id) != folded.get(entry_id)
    )
    if not changed:
        return
    at = times.now_iso()
    with store.transaction() as tx:
        for entry_id in changed:
            tx.put(
                "manual_edit",
                entry_id,
                tx.entries.get(entry_id),
                actor=actor,
                reason="hand edit of entries.json found by doctor",
                at=at,
                before=folded.get(entry_id),
            )
    report.manual_edits.extend(changed)
    report.notes.append(
        f"journaled {len(changed)} hand edit(s) as manual_edit: {', '.join(changed)}"
    )


def _rebuild(store: Store, records: list[JSONObject], folded: dict[str, JSONObject]) -> None:
    path = store.path(ENTRIES_FILE)
    corrupt = fsutil.read_bytes(path)
    if corrupt is not None:
        fsutil.write_atomic(path + ".corrupt", corrupt)
    jsize = os.path.getsize(store.path(JOURNAL_FILE)) if records else 0
    state = State(
        entries=folded,
        seq=int(str(records[-1]["seq"])) if records else 0,
        head=str(records[-1]["hash"]) if records else journal.GENESIS,
        journal_bytes=jsize,
    )
    fsutil.write_atomic(path, render_entries_document(state))
