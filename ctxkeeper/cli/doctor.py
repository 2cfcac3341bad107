"""``ctxkeeper doctor``: check every store file, explain each problem, and repair without loss.

Doctor collects every problem rather than stopping at the first (a bad config must not hide a
hand edit). Its repair never leaves the store holding less than it started with unless the
caller accepted the loss it was shown (``accept_loss``: a person said yes at a terminal);
every file it replaces is first copied to a backup whose name is never reused.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from dataclasses import dataclass, field

from ctxkeeper.core import fsutil, journal, journalfile, scopeindex, times
from ctxkeeper.core.entriesfile import parse_entries_document, render_entries_document
from ctxkeeper.core.errors import CtxkeeperError, StoreError
from ctxkeeper.core.model import ID_PATTERN, stored_problems
from ctxkeeper.core.store import (
    CACHE_DIR,
    ENTRIES_FILE,
    JOURNAL_FILE,
    LOCK_FILE,
    State,
    Store,
    entry_shape_problem,
    note_purges,
)
from ctxkeeper.core.wording import counted
from ctxkeeper.write import derived  # noqa: F401  # registers the refreshes a commit runs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.read.quality import Finding

#: A temporary file younger than this may belong to a write in progress: leave it alone.
ORPHAN_AGE_S = 60.0
_ID_IN_TEXT = re.compile(rb'"id"\s*:\s*"((?:dec|con|pip)-\d{3,}-[0-9a-f]{4})"')


@dataclass
class Report:
    """What doctor found and did; ``ok`` when nothing needs a person's attention."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    manual_edits: list[str] = field(default_factory=list)
    repaired: bool = False
    would_lose: list[str] = field(default_factory=list)
    """What the repair would drop; it waits for a person's yes (``needs_confirmation``)."""
    needs_confirmation: bool = False
    backups: list[str] = field(default_factory=list)

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
            "would_lose": list(self.would_lose),
            "needs_confirmation": self.needs_confirmation,
            "backups": list(self.backups),
        }


@dataclass
class _Findings:
    """Everything read while checking, so repair acts on exactly what was reported."""

    journal_bytes: bytes = b""
    entries_bytes: bytes | None = None
    records: list[JSONObject] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    chain: list[journal.ChainProblem] = field(default_factory=list)
    journal_readable: bool = True
    journal_future: bool = False
    state: State | None = None
    entries_future: bool = False
    orphans: list[str] = field(default_factory=list)
    index_problems: list[str] = field(default_factory=list)
    unshareable: list[tuple[int, str]] = field(default_factory=list)
    """Records a snapshot must not carry (position, what is wrong): quarantined by repair."""


# dec-011-54a1: repair never rebuilds a smaller store, and asks before any loss.
def run_doctor(
    store: Store, *, actor: JSONObject, repair: bool = False, accept_loss: bool = False
) -> Report:
    """Check everything; journal hand edits of ``entries.json`` as ``manual_edit``.

    :param repair: also fix what can be fixed: reseal a hand-edited journal, journal the
        entries again after the journal was cut, rebuild an ``entries.json`` that does not
        parse, remove orphaned temporary files. Files of a newer version are never touched.
    :param accept_loss: the caller showed ``would_lose`` to a person who agreed; without it a
        repair that would drop anything changes nothing and sets ``needs_confirmation``.
    """
    store.require()
    report = Report()
    found = _check(store, report)
    if repair and _repairable(found, report):
        _plan_loss(found, report)
        if report.would_lose and not accept_loss:
            report.needs_confirmation = True
            report.notes.append(
                "not repaired: the repair would lose what is listed; confirm to go ahead "
                "(backups of every replaced file are kept)"
            )
            return report
        done = _repair(store, found, actor)
        after = run_doctor(store, actor=actor)
        after.repaired = True
        after.backups = done.backups
        after.notes = [*done.notes, *after.notes]
        after.manual_edits = [*done.manual_edits, *after.manual_edits]
        return after
    if found.state is not None and not found.chain and found.journal_readable:
        edited = _hand_edited_ids(found)
        _journal_hand_edits(store, report, actor)
        missed = [i for i in edited if i not in report.manual_edits]
        if missed:
            report.problems.append(
                f"{counted(len(missed), 'hand edit')} of {ENTRIES_FILE} not yet journaled: "
                f"{', '.join(missed)} "
                "(fix the problems above, then run doctor again to journal them)"
            )
    return report


def _hand_edited_ids(found: _Findings) -> list[str]:
    """Entries that differ from the journal's fold (read-only; journaling happens later)."""
    assert found.state is not None
    entries = dict(found.state.entries)
    journal.fold([r for r in found.records if _seq(r) > found.state.seq], entries)
    folded = _fold(found.records)
    return sorted(i for i in set(entries) | set(folded) if entries.get(i) != folded.get(i))


# -- checking -------------------------------------------------------------------------------


def _check(store: Store, report: Report) -> _Findings:
    found = _Findings()
    try:
        store.config()
    except CtxkeeperError as exc:
        report.problems.append(str(exc))
    found.orphans = fsutil.orphaned_temp_files(store.dir)
    if found.orphans:
        report.problems.append(
            f"{counted(len(found.orphans), 'temporary file')} left by an interrupted write in "
            f"{store.dir}: {', '.join(found.orphans)}; `ctxkeeper doctor --repair` removes them"
        )
    _check_journal(store, found, report)
    _check_shareable(store, found, report)
    _check_person_marks(store, found, report)
    _check_entries(store, found, report)
    _check_agreement(store, found, report)
    _check_scope_index(store, found, report)
    return found


def _check_person_marks(store: Store, found: _Findings, report: Report) -> None:
    """Records that name a person but that no write in this clone made (a hand append)."""
    from ctxkeeper.core import personmarks

    if not found.journal_readable or found.journal_future:
        return
    since, noted = personmarks.marks(store.dir)
    for record in personmarks.unmade(found.records, since, noted):
        report.problems.append(f"{store.path(JOURNAL_FILE)}: {personmarks.describe(record)}")


def _check_shareable(store: Store, found: _Findings, report: Report) -> None:
    """Journal records the team snapshot must not carry: one stops every refresh of it."""
    from ctxkeeper.team import snapshot

    if not found.journal_readable or found.journal_future:
        return
    unreplayable = set(_dropped_records(found))
    found.unshareable = [
        (position, detail)
        for position, detail in snapshot.unshareable(found.records)
        if position not in unreplayable  # repair drops those already (would_lose)
    ]
    path = store.path(JOURNAL_FILE)
    for position, detail in found.unshareable:
        record = found.records[position]
        report.problems.append(
            f"{path}:{position + 1}: journal seq {record.get('seq')} (op {record.get('op')!r}, "
            f"id {record.get('id')!r}) is something a snapshot must not carry ({detail}), so "
            "every refresh of the team snapshot stops on it; `ctxkeeper doctor --repair` moves "
            "it to a quarantine file beside the journal and journals that it did"
        )


def _quarantine(store: Store, found: _Findings, done: Report) -> list[JSONObject]:
    """Copy the unshareable records' lines, as they were, to a quarantine file; return the
    ``manual_edit`` events that say what was removed, by whom, and where it went."""
    if not found.unshareable:
        return []
    jpath = store.path(JOURNAL_FILE)
    lines = []
    for position, _detail in found.unshareable:
        start = found.ends[position - 1] if position else 0
        lines.append(found.journal_bytes[start : found.ends[position]])
    target = _backup(jpath, b"".join(lines), "quarantined")
    done.backups.append(target)
    events: list[JSONObject] = []
    for position, detail in found.unshareable:
        record = found.records[position]
        entry_id = record.get("id")
        about = (
            entry_id
            if isinstance(entry_id, str) and ID_PATTERN.fullmatch(entry_id)
            else JOURNAL_FILE
        )
        reason = (
            f"doctor --repair quarantined journal record seq {record.get('seq')} (op "
            f"{record.get('op')!r}, event {record.get('event')!r}) to "
            f"{os.path.basename(target)}: {detail}"
        )
        events.append({"id": about, "reason": reason[:1000]})
        done.notes.append(
            f"quarantined journal line {position + 1} (seq {record.get('seq')}) to {target}"
        )
    return events


def _journal_quarantine(store: Store, events: list[JSONObject], actor: JSONObject) -> None:
    """One ``manual_edit`` per quarantined record; the entry it was about stays as it is."""
    if not events:
        return
    at = times.now_iso()
    with store.transaction(audit_actor=actor) as tx:
        for event in events:
            entry_id = str(event["id"])
            current = tx.entries.get(entry_id)
            tx.put(
                "manual_edit",
                entry_id,
                current,
                actor=dict(actor),
                reason=str(event["reason"]),
                at=at,
                before=current,
            )


def _check_scope_index(store: Store, found: _Findings, report: Report) -> None:
    """Is the hooks' scope index the one the store derives? A shard overwritten by hand would
    hide a rule from the edit gate in every later session."""
    if found.state is None or not found.journal_readable or found.chain:
        return  # the store itself is reported; the index is rebuilt once it reads again
    try:
        entries = list(store.load().entries.values())
    except StoreError:
        return
    found.index_problems = scopeindex.verify(store.dir, entries)
    if found.index_problems:
        report.problems.append(
            "the hooks' scope index is not the one the store derives, so the edit gate "
            f"could miss a rule ({'; '.join(found.index_problems[:3])}); "
            "`ctxkeeper doctor --repair` rebuilds it"
        )


def _rebuild_scope_index(store: Store, found: _Findings, done: Report) -> None:
    if found.index_problems:
        scopeindex.rebuild(store.dir)
        done.notes.append("rebuilt the hooks' scope index from the store")


def _check_journal(store: Store, found: _Findings, report: Report) -> None:
    path = store.path(JOURNAL_FILE)
    try:
        found.journal_bytes = fsutil.read_bytes(path) or b""
        records, found.ends = journal.parse_lines(found.journal_bytes, path)
    except CtxkeeperError as exc:
        found.journal_readable = False
        report.problems.append(
            f"{exc} Repair cannot guess what that line said: fix its JSON by hand (one object "
            "per line) and run doctor again, which then reseals the chain."
        )
        return
    found.records = journal.complete_transactions(records)
    found.chain = journal.check_chain(found.records)
    for problem in found.chain:
        report.problems.append(f"{path}:{problem.line}: {problem.message}")
    found.journal_future = any(problem.future for problem in found.chain)
    if found.journal_future:
        report.problems.append(
            f"{path} holds records of a newer ctxkeeper; repair will not touch it. Upgrade."
        )
    elif found.chain:
        report.notes.append(
            f"the journal changed after it was written (a hand edit?); `ctxkeeper doctor "
            f"--repair` keeps the file as a backup and reseals the chain from line "
            f"{found.chain[0].line}, keeping the records as they now read"
        )


def _check_entries(store: Store, found: _Findings, report: Report) -> None:
    path = store.path(ENTRIES_FILE)
    try:
        found.entries_bytes = fsutil.read_bytes(path)
        if found.entries_bytes is None:
            found.state = State()
            return
        found.state = parse_entries_document(found.entries_bytes, path)
    except CtxkeeperError as exc:
        found.entries_future = "newer ctxkeeper" in str(exc)
        advice = (
            "repair will not touch a file a newer ctxkeeper wrote; upgrade ctxkeeper"
            if found.entries_future
            else f"`ctxkeeper doctor --repair` rebuilds {ENTRIES_FILE} from the journal and "
            "keeps the unreadable file as a backup"
        )
        report.problems.append(f"{exc} {advice}")
        return
    state = found.state
    for entry_id in dict.fromkeys(state.duplicates):
        report.problems.append(
            f"{path}: id {entry_id} appears more than once; writes are refused until you "
            "delete the copy you do not want by hand (reads use the last one)"
        )
    for entry in state.entries.values():
        shape = entry_shape_problem(entry)
        if shape is not None:
            report.problems.append(
                f"{path}: {entry.get('id')}: {shape}; it is left out of reads until fixed"
            )
            continue
        report.problems.extend(stored_problems(entry))
        report.notes.extend(_bad_times(entry))


def _bad_times(entry: JSONObject) -> list[str]:
    notes = []
    for key in ("valid_from", "valid_until", "created_at", "updated_at"):
        problem = times.stored_time_problem(entry.get(key))
        if problem is not None:
            notes.append(f"{entry.get('id')}: {key} {problem}; it is ignored")
    try:
        times.check_window(entry.get("valid_from"), entry.get("valid_until"))
    except CtxkeeperError as exc:
        notes.append(f"{entry.get('id')}: {exc}")
    return notes


def _check_agreement(store: Store, found: _Findings, report: Report) -> None:
    """Does ``entries.json`` point at a place the journal really has?"""
    state = found.state
    if state is None or not found.journal_readable or found.chain:
        return
    view = _verified_view(found)
    if state.journal_bytes > view.size:
        report.problems.append(
            f"{store.path(JOURNAL_FILE)} is shorter than {ENTRIES_FILE} expects ({view.size} < "
            f"{state.journal_bytes} bytes; it holds {view.seq} of {state.seq} records): it was "
            f"cut or removed and that history is gone. `ctxkeeper doctor --repair` keeps every "
            f"entry and journals the difference as manual_edit."
        )
    elif state.journal_bytes == view.size and (state.seq, state.head) != (view.seq, view.head):
        report.problems.append(
            f"{ENTRIES_FILE} and {JOURNAL_FILE} disagree about record {state.seq}; "
            "`ctxkeeper doctor --repair` keeps the entries and journals the difference"
        )
    elif state.journal_bytes < view.size:
        try:
            store.load()
        except StoreError as exc:
            report.problems.append(str(exc))
        else:
            report.notes.append(
                f"{counted(view.seq - state.seq, 'journal record')} not yet in {ENTRIES_FILE} "
                "(reads fold them in; the next write applies them)"
            )


def _verified_view(found: _Findings) -> journalfile.View:
    if not found.records:
        return journalfile.View(file_size=len(found.journal_bytes))
    last = found.records[-1]
    size = found.ends[len(found.records) - 1]
    return journalfile.View(size, _seq(last), str(last["hash"]), len(found.journal_bytes))


def _journal_hand_edits(store: Store, report: Report, actor: JSONObject) -> None:
    """Record each difference between the entries file and the journal's fold as a
    ``manual_edit``, so a hand edit becomes history instead of a silent divergence."""
    try:
        with store.transaction(audit_actor=actor) as tx:
            changed = [str(event["id"]) for event in tx.manual_edits]
    except CtxkeeperError as exc:
        if not report.problems:
            report.problems.append(str(exc))
        return
    if changed:
        report.manual_edits.extend(changed)
        report.notes.append(
            f"journaled {counted(len(changed), 'hand edit')} as manual_edit: {', '.join(changed)}"
        )


# -- repairing ------------------------------------------------------------------------------


def _repairable(found: _Findings, report: Report) -> bool:
    if found.journal_future or found.entries_future:
        report.notes.append("not repairing: a file was written by a newer ctxkeeper")
        return False
    if not found.journal_readable:
        report.notes.append("not repairing: a journal line does not parse (see above)")
        return False
    if found.state is not None and found.state.duplicates:
        report.notes.append("not repairing: remove the duplicated entry copies by hand first")
        return False
    return True


def _dropped_records(found: _Findings) -> list[int]:
    """Records repair drops: ones this ctxkeeper must not replay (unknown op, no id...)."""
    bad = {
        p.position
        for p in found.chain
        if "unknown op" in p.message or "no entry id" in p.message or "'after'" in p.message
    }
    return sorted(bad)


def _plan_loss(found: _Findings, report: Report) -> None:
    for position in _dropped_records(found):
        record = found.records[position]
        report.would_lose.append(
            f"journal line {position + 1} (op {record.get('op')!r}, id {record.get('id')!r}) is "
            "dropped: this ctxkeeper cannot replay it"
        )
    if found.state is None and found.entries_bytes is not None:
        folded = _fold(_kept_records(found))
        readable_ids = {m.decode() for m in _ID_IN_TEXT.findall(found.entries_bytes)}
        for entry_id in sorted(readable_ids - set(folded)):
            report.would_lose.append(
                f"{entry_id} appears in the unreadable {ENTRIES_FILE} but not in the journal; "
                "the rebuilt file will not have it"
            )


def _kept_records(found: _Findings) -> list[JSONObject]:
    dropped = set(_dropped_records(found)) | {position for position, _ in found.unshareable}
    return [r for i, r in enumerate(found.records) if i not in dropped]


def _fold(records: list[JSONObject]) -> dict[str, JSONObject]:
    folded: dict[str, JSONObject] = {}
    journal.fold(records, folded)
    return folded


def _repair(store: Store, found: _Findings, actor: JSONObject) -> Report:
    done = Report()
    jpath, epath = store.path(JOURNAL_FILE), store.path(ENTRIES_FILE)
    with fsutil.exclusive_lock(store.path(LOCK_FILE)):
        if (fsutil.read_bytes(jpath) or b"") != found.journal_bytes or fsutil.read_bytes(
            epath
        ) != found.entries_bytes:
            raise StoreError("the store changed while doctor ran; run it again")
        _remove_orphans(store, found, done)
        records = found.records
        kept = _kept_records(found)
        quarantined = _quarantine(store, found, done)
        if found.chain or found.unshareable:
            label = "edited" if found.chain else "before-quarantine"
            done.backups.append(_backup(jpath, found.journal_bytes, label))
            first = min([p.position for p in found.chain] + [p for p, _ in found.unshareable])
            records = journal.reseal(kept, start=first)
            fsutil.write_atomic(jpath, journal.encode(records))
            done.notes.append(f"resealed the journal from line {first + 1}")
        expected: int | None = None
        if found.state is None:
            if found.entries_bytes is not None:
                done.backups.append(_backup(epath, found.entries_bytes, "corrupt"))
            state = State(entries=_fold(records))
            note_purges(records, state.purged)
            done.notes.append(
                f"rebuilt {ENTRIES_FILE} from {counted(len(records), 'journal record')}"
            )
        else:
            state = found.state
            expected = state.journal_bytes
            # Records past what the entry file had applied are newer writes: keep them (by
            # their sequence before any reseal renumbered them).
            newer = [r for r in (kept if found.unshareable else records) if _seq(r) > state.seq]
            journal.fold(newer, state.entries)
            note_purges(newer, state.purged)
        state.seq = _seq(records[-1]) if records else 0
        state.head = str(records[-1]["hash"]) if records else journal.GENESIS
        resealed = bool(found.chain or found.unshareable)
        state.journal_bytes = (
            len(journal.encode(records)) if resealed else _verified_view(found).size
        )
        if expected is not None and expected > state.journal_bytes and not found.unshareable:
            done.notes.append(
                f"journal history after record {state.seq} was missing (lost before this "
                f"repair); {ENTRIES_FILE} kept every entry, and the differences are "
                "journaled as manual_edit"
            )
        journalfile.forget(store.path(CACHE_DIR))
        fsutil.write_atomic(epath, render_entries_document(state))
    _journal_hand_edits(store, done, actor)
    _journal_quarantine(store, quarantined, actor)
    _rebuild_scope_index(store, found, done)
    _suggest_import(store, state.entries, done)
    return done


def _suggest_import(store: Store, kept: Mapping[str, JSONValue], done: Report) -> None:
    """Point at the team snapshot when it holds entries the repaired store does not: the
    repair could only keep what this clone's files held, and an import brings the rest back."""
    from ctxkeeper.core.errors import SnapshotError
    from ctxkeeper.team import snapshot, snapshotformat

    path = store.path("snapshot.jsonl")
    data = fsutil.read_bytes(path)
    if not data:
        return
    try:
        held = snapshotformat.parse(data, path)
    except SnapshotError:
        return  # a snapshot that does not read is reported by import itself
    missing = sorted({str(entry["id"]) for _, entry in held.entries} - set(kept))
    if missing:
        # This clone wrote that file, so an import would skip it as already held.
        snapshot.forget(store.dir, path)
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        done.notes.append(
            f"the team snapshot holds {len(missing)} entries the repaired store does not "
            f"({shown}); `ctxkeeper import` brings them back"
        )


def _seq(record: JSONObject) -> int:
    value = record.get("seq")
    return value if isinstance(value, int) else 0


def _remove_orphans(store: Store, found: _Findings, done: Report) -> None:
    cutoff = time.time() - ORPHAN_AGE_S
    for name in found.orphans:
        path = os.path.join(store.dir, name)
        try:
            if os.lstat(path).st_mtime < cutoff:
                os.unlink(path)
                done.notes.append(f"removed the orphaned temporary file {name}")
        except OSError:
            continue


def _backup(path: str, data: bytes, label: str) -> str:
    """Copy ``data`` to a new file beside ``path``; the name is unique, never overwritten."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    digest = hashlib.sha256(data).hexdigest()[:8]
    while True:
        target = f"{path}.{label}-{stamp}-{digest}-{secrets.token_hex(2)}"
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        break
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return target


# -- quality (``doctor --quality``) ----------------------------------------------------------


@dataclass
class QualityReport:
    """What ``doctor --quality`` found: advice on the live entries (see read/quality.py)."""

    entries: int
    live: int
    findings: list[Finding]

    def as_json(self) -> JSONObject:
        from ctxkeeper.read.quality import count_by_code

        findings: list[JSONValue] = []
        for finding in self.findings:
            ids: list[JSONValue] = [*finding["ids"]]
            findings.append({"code": finding["code"], "ids": ids, "message": finding["message"]})
        counts: JSONObject = {**count_by_code(self.findings)}
        return {"entries": self.entries, "live": self.live, "counts": counts, "findings": findings}

    def lines(self) -> list[str]:
        """The findings grouped by code, each group headed by its count; stored text shown
        visibly (an entry is untrusted text, con-008)."""
        from ctxkeeper.read.quality import LABELS, count_by_code
        from ctxkeeper.read.render import visible

        counts = count_by_code(self.findings)
        if not counts:
            return [
                f"ok: no quality findings in {counted(self.live, 'live entry', 'live entries')}"
            ]
        lines: list[str] = []
        for code, count in counts.items():
            one, more = LABELS.get(code, (code, code))
            lines.append(f"{code}: {count} {one if count == 1 else more}")
            lines += [f"  - {visible(f['message'])}" for f in self.findings if f["code"] == code]
        lines.append(
            f"{counted(len(self.findings), 'finding')} in "
            f"{counted(self.live, 'live entry', 'live entries')}: advice, nothing is "
            "broken. Change an entry with `ctxkeeper edit ID` or retire it with `ctxkeeper "
            "deprecate ID` in your own terminal (the agent: update_entry, deprecate_entry)."
        )
        return lines


def run_quality(store: Store) -> QualityReport:
    """The quality scan of the store as it reads now: advice, never a change (read-only)."""
    from ctxkeeper.core.model import LIVE_STATUSES
    from ctxkeeper.read.quality import scan

    store.require()
    entries = list(store.load().entries.values())
    findings = scan(entries, floors=store.config().floors, instant=times.now())
    live = sum(1 for entry in entries if entry.get("status") in LIVE_STATUSES)
    return QualityReport(entries=len(entries), live=live, findings=findings)
