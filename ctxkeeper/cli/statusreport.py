"""``ctxkeeper status``: counts, what awaits a person, tombstones, journal health, snapshot state.

Everything here is cheap: the journal is checked through its verified-prefix cache (one
``stat`` while it is unchanged), and the snapshot's lines are counted, not parsed. A store
whose journal or entries cannot be read still gets a report: the problem, and what to run.
"""

from __future__ import annotations

import contextlib
import os
from typing import Final

from ctxkeeper.cli import term
from ctxkeeper.cli.views import labelled
from ctxkeeper.core import fsutil
from ctxkeeper.core.changes import awaiting_decision, pending_changes
from ctxkeeper.core.entriesfile import ENTRIES_FILE, parse_entries_document
from ctxkeeper.core.errors import StoreError
from ctxkeeper.core.model import KINDS, STATUSES, TOMBSTONE_STATUSES
from ctxkeeper.core.wording import counted
from ctxkeeper.read import render
from ctxkeeper.team import snapshot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.store import Store

_LABEL_WIDTH: Final = len("pending review")
_ENTRY_LINE: Final = b'\n{"entry":'
_EVENT_LINE: Final = b'\n{"journal":'


def gather(store: Store) -> JSONObject:
    """Everything ``status`` reports, as the object ``status --json`` prints.

    ``total``, ``pending_review``, ``pending_changes`` and ``counts`` are null when the
    entries cannot be read at all; ``problem`` then says why.
    """
    journal = _journal(store)
    entries, problem = _entries(store, journal_ok=bool(journal["ok"]))
    data: JSONObject = {"dir": store.dir}
    if entries is None:
        data.update({"total": None, "pending_review": None, "pending_changes": None})
        data.update({"counts": None, "proposed": None, "tombstones": None})
    else:
        data.update(_counts(entries))
    data["problem"] = problem
    data["journal"] = journal
    data["snapshot"] = _snapshot(store)
    data["policy"] = _policy(store)
    return data


def _policy(store: Store) -> JSONObject | None:
    """``review`` and ``hard_delivery``, against the committed config and the last session."""
    from ctxkeeper.core import policywatch

    try:
        return policywatch.status(store.root, store.dir, store.config())
    except StoreError:
        return None  # a config that does not parse: doctor reports it


def _counts(entries: list[JSONObject]) -> JSONObject:
    counts: dict[str, JSONValue] = {}
    for kind in KINDS:
        by_status: dict[str, JSONValue] = {}
        for status in STATUSES:
            n = sum(1 for e in entries if e.get("kind") == kind and e.get("status") == status)
            if n:
                by_status[status] = n
        counts[kind] = by_status
    tombstones: dict[str, JSONValue] = {
        status: sum(1 for e in entries if e.get("status") == status)
        for status in sorted(TOMBSTONE_STATUSES)
    }
    tombstones["total"] = sum(int(str(n)) for n in tombstones.values())
    return {
        "total": len(entries),
        "pending_review": awaiting_decision(entries),
        "pending_changes": len(pending_changes(entries)),
        "counts": counts,
        "proposed": sum(1 for e in entries if e.get("status") == "proposed"),
        "tombstones": tombstones,
    }


def _journal(store: Store) -> JSONObject:
    try:
        view = store.journal_view()
    except StoreError as exc:
        return {"ok": False, "records": None, "problem": str(exc), "unfinished_bytes": None}
    return {
        "ok": True,
        "records": view.seq,
        "problem": None,
        "unfinished_bytes": view.file_size - view.size,
    }


def _entries(store: Store, *, journal_ok: bool) -> tuple[list[JSONObject] | None, str | None]:
    """The entries, and why they are not the verified ones (read from entries.json alone)."""
    problem = "the journal has a problem (below)"
    if journal_ok:  # else reading through the journal fails the same way
        try:
            return list(store.load().entries.values()), None
        except StoreError as exc:
            problem = str(exc)
    path = store.path(ENTRIES_FILE)
    try:
        data = fsutil.read_bytes(path)
        state = parse_entries_document(data, path) if data is not None else None
    except StoreError:
        return None, problem
    if state is None:
        return None, problem
    entries = list(state.entries.values())
    return entries, f"{problem}; the counts are read from {ENTRIES_FILE} alone, unverified"


def _snapshot(store: Store) -> JSONObject:
    path = snapshot.default_path(store.dir)
    state: JSONObject = {
        "path": path,
        "exists": os.path.isfile(path),
        "unimported": False,
        "entries": None,
        "events": None,
        "auto_export": None,
        "problem": None,
        "stale": snapshot.refresh_failure(store.dir, path),
    }
    with contextlib.suppress(StoreError):  # doctor reports a broken config; this line need not
        state["auto_export"] = store.config().auto_export
    if not state["exists"]:
        return state
    try:
        state["unimported"] = snapshot.unseen(store.dir, path)
        data = fsutil.read_bytes(path) or b""
    except (StoreError, OSError) as exc:
        state["problem"] = str(exc)
        return state
    # Lines counted by how the format begins them, not parsed (`ctxkeeper import` checks them);
    # a union merge may repeat a line, so these are lines, not distinct events.
    state["entries"] = data.count(_ENTRY_LINE)
    state["events"] = data.count(_EVENT_LINE)
    return state


# -- text ------------------------------------------------------------------------------------


def _counts_table(counts: Mapping[str, JSONValue], style: term.Style, room: int) -> str:
    """Statuses down, kinds across (narrow enough for a 40-column terminal), with totals."""
    head = ["", *KINDS, "total"]
    rows = [["", *(style(name, "bold") for name in head[1:])]]
    table = {kind: counts.get(kind) for kind in KINDS}
    totals = [0] * (len(KINDS) + 1)
    for status in STATUSES:
        numbers = []
        for kind in KINDS:
            found = table[kind]
            numbers.append(int(str(found.get(status, 0))) if isinstance(found, dict) else 0)
        numbers.append(sum(numbers))
        totals = [a + b for a, b in zip(totals, numbers, strict=True)]
        rows.append([style.status(status), *_number_cells(numbers, head, style)])
    rows.append([style("total", "bold"), *_number_cells(totals, head, style)])
    return term.table(rows, room=room)


def _number_cells(numbers: list[int], head: list[str], style: term.Style) -> list[str]:
    # Right-aligned under each heading: the table pads on the right.
    cells = []
    for number, name in zip(numbers, head[1:], strict=True):
        text = str(number).rjust(len(name))
        cells.append(style(text, "dim") if number == 0 else text)
    return cells


def render_text(data: Mapping[str, JSONValue], style: term.Style, *, room: int) -> str:
    """The report a person reads: a counts table, then one labelled line per concern."""
    store = [("store", [("", render.visible(str(data.get("dir"))))], ("bold",))]
    lines = labelled(store, room, style, indent=0, width=_LABEL_WIDTH)
    counts = data.get("counts")
    rows: list[tuple[str, list[tuple[str, str]], tuple[str, ...]]] = []
    if isinstance(counts, dict):
        lines += ["", _counts_table(counts, style, room), ""]
        rows.append(("pending review", [("", _pending(data))], _alert(data, "pending_review")))
        rows.append(("tombstones", [("", _tombstones(data))], ()))
    if data.get("problem"):
        rows.append(("entries", [("", str(data["problem"]))], ("red",)))
    journal = data.get("journal")
    if isinstance(journal, dict):
        rows.append(("journal", [("", _journal_text(journal))], () if journal["ok"] else ("red",)))
    shot = data.get("snapshot")
    if isinstance(shot, dict):
        unseen = bool(shot.get("unimported")) or bool(shot.get("problem"))
        alert = ("red",) if shot.get("stale") else ("yellow",) * unseen
        rows.append(("snapshot", [("", _snapshot_text(shot, data))], alert))
    policy = data.get("policy")
    if isinstance(policy, dict):
        told = policy.get("notes")
        alert = ("red",) if told else ()
        rows.append(("policy", [("", _policy_text(policy))], alert))
    lines += labelled(rows, room, style, indent=0, width=_LABEL_WIDTH)
    return "\n".join(lines)


def _policy_text(policy: Mapping[str, JSONValue]) -> str:
    from ctxkeeper.core import policywatch

    text = policywatch.describe(policy)
    told = policy.get("notes")
    if isinstance(told, list) and told:
        return f"{text}; {'; '.join(render.visible(str(n)) for n in told)}"
    if policy.get("committed") is None:
        return text
    return f"{text}, as committed"


def _alert(data: Mapping[str, JSONValue], key: str) -> tuple[str, ...]:
    return ("yellow",) if data.get(key) else ()


def _pending(data: Mapping[str, JSONValue]) -> str:
    pending = int(str(data.get("pending_review") or 0))
    if not pending:
        return "nothing awaits a person"
    proposed = int(str(data.get("proposed") or 0))
    changes = int(str(data.get("pending_changes") or 0))
    parts = [counted(proposed, "proposed entry", "proposed entries")]
    if changes:
        parts.append(counted(changes, "change to an entry in force", "changes to entries in force"))
    return f"{pending} ({', '.join(parts)}); decide with `ctxkeeper review`"


def _tombstones(data: Mapping[str, JSONValue]) -> str:
    stones = data.get("tombstones")
    if not isinstance(stones, dict):
        return "unknown"
    parts = ", ".join(f"{stones.get(s, 0)} {s}" for s in sorted(TOMBSTONE_STATUSES))
    return f"{stones.get('total', 0)} ({parts})"


def _journal_text(journal: Mapping[str, JSONValue]) -> str:
    if not journal.get("ok"):
        return f"PROBLEM: {journal.get('problem')}"
    text = f"chain verified, {counted(int(str(journal.get('records') or 0)), 'record')}"
    unfinished = int(str(journal.get("unfinished_bytes") or 0))
    if unfinished:
        text += (
            f"; an interrupted write left {unfinished} bytes after the last whole transaction "
            "(never applied; the next write cuts them off)"
        )
    return text


def _snapshot_text(shot: Mapping[str, JSONValue], data: Mapping[str, JSONValue]) -> str:
    text = _snapshot_state(shot, data)
    if shot.get("stale"):
        # A refresh that failed leaves the file behind the store until the cause is fixed.
        text += (
            f"; STALE: the last refresh failed ({render.visible(str(shot['stale']))}), so it "
            "lacks the writes since; `ctxkeeper doctor` names what stops it"
        )
    return text


def _snapshot_state(shot: Mapping[str, JSONValue], data: Mapping[str, JSONValue]) -> str:
    path = str(shot.get("path"))
    shown = render.visible(os.path.relpath(path, os.path.dirname(str(data.get("dir")))))
    off = shot.get("auto_export") is False
    if not shot.get("exists"):
        hint = "`ctxkeeper export snapshot` writes it" if off else "the next write exports it"
        return f"{shown}: not written yet; {hint}"
    if shot.get("problem"):
        return f"{shown}: cannot be read: {shot['problem']}"
    entries = counted(int(str(shot.get("entries") or 0)), "entry line")
    events = counted(int(str(shot.get("events") or 0)), "event line")
    text = f"{shown}: {entries}, {events}"
    if shot.get("unimported"):
        return text + "; holds changes not imported yet (after `git pull`?): run `ctxkeeper import`"
    text += "; nothing new to import"
    if off:
        text += " (auto_export is off: `ctxkeeper export snapshot` refreshes it)"
    return text
