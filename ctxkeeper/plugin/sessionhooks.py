"""SessionStart, SubagentStart and PreCompact: what a (sub)agent is told once, up front.

Not on the per-edit path, so these may load the store and the summary. SessionStart output
depends only on the store, never on the clock or a random order, so an unchanged store gives
byte-identical context (the prompt cache stays warm); the one exception is the quality note
after compaction, which counts entries unverified for 90 days.
"""

from __future__ import annotations

from ctxkeeper.core import scopeindex
from ctxkeeper.plugin import ledger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.store import Store
    from ctxkeeper.plugin.hookio import HookContext

#: Claude Code moves hook text over 10,000 characters to a file; stay below it.
CONTEXT_CAP = 9500
UNVERIFIED_DAYS = 90
GATE_NOTE = (
    "Hard constraints scoped to files hold back the first edit of each file they govern in a "
    "session: that edit is denied with the constraints as the reason. The denial is expected; "
    "the same edit may be re-issued once it complies, and then goes through."
)
GATE_OFF_NOTE = (
    "Constraints scoped to files arrive next to the first edit of each file they govern "
    '("hard_delivery": "context" in .context/config.json).'
)


def _live_constraints(store: Store) -> list[JSONObject]:
    from ctxkeeper.core import times

    instant = times.now()
    return [
        entry
        for entry in store.load().entries.values()
        if entry.get("kind") == "constraint"
        and entry.get("status") == "active"
        and times.is_valid_at(dict(entry), instant)
    ]


def _line(entry: JSONObject) -> str:
    scope = entry.get("scope")
    where = ", ".join(str(s) for s in scope) if isinstance(scope, list) and scope else ""
    return (
        f"- {entry.get('id')} ({entry.get('hardness')}, scope {where or 'whole project'}): "
        f"{entry.get('rule')} Reason: {entry.get('reason')}"
    )


def _fit(lines: list[str], room: int) -> list[str]:
    kept: list[str] = []
    for line in lines:
        if len(line) + 1 > room:
            break
        kept.append(line)
        room -= len(line) + 1
    return kept


def _open(ctx: HookContext) -> Store:
    from ctxkeeper.core.store import Store

    return Store.open(ctx.root)


def session_start(ctx: HookContext) -> JSONObject | None:
    """The project summary and project-wide hard constraints; re-arms after compaction."""
    import time

    from ctxkeeper.read.summary import project_summary, render_summary

    store = _open(ctx)
    arrived = _import_team_snapshot(store)
    ledger_file = ctx.ledger()
    compacted = ctx.payload.get("source") == "compact"
    if compacted:
        ledger.rearm(ledger_file)
    ledger.prune(ctx.cache_dir, time.time())
    index = scopeindex.open_index(ctx.context_dir)  # warm the per-edit path
    summary = project_summary(store, with_drift=True)
    parts = ["ctxkeeper project memory (.context/):", render_summary(summary)]
    parts.append(GATE_NOTE if index.hard_delivery == "gate" else GATE_OFF_NOTE)
    wide = sorted(
        (e for e in _live_constraints(store) if e.get("hardness") == "hard" and not e.get("scope")),
        key=lambda e: str(e.get("id")),
    )
    head = "Project-wide hard constraints (they cover every file):"
    room = CONTEXT_CAP - sum(len(p) + 1 for p in parts) - len(head) - 1
    shown = _fit([_line(e) for e in wide], room)
    if shown:
        parts += [head, *shown]
        ledger.mark(ledger_file, [str(e["id"]) for e in wide[: len(shown)]])
    answer: JSONObject = {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": "\n".join(parts)[:CONTEXT_CAP],
        }
    }
    note = _person_note(
        store, int(str(summary.get("pending_review", 0))), compacted=compacted, arrived=arrived
    )
    note = _with_drift(note, summary.get("drift"))
    if note:
        answer["systemMessage"] = note
    return answer


def _with_drift(note: str | None, drift: object) -> str | None:
    """The person's line, with how many entries drifted or lost a scope path (the ids are in
    the model's summary; ``ctxkeeper drift`` shows the commits)."""
    if not isinstance(drift, dict):
        return note
    drifted, orphaned = drift.get("drifted_count"), drift.get("orphaned_count")
    parts = []
    if isinstance(drifted, int) and drifted:
        parts.append(f"{drifted} entr{'y' if drifted == 1 else 'ies'} drifted since verified")
    if isinstance(orphaned, int) and orphaned:
        parts.append(f"{orphaned} with a scope path gone")
    if not parts:
        return note
    text = "ctxkeeper: " + ", ".join(parts) + " (`ctxkeeper drift`)."
    return f"{note} {text}" if note else text


def _import_team_snapshot(store: Store) -> str | None:
    """Import ``.context/snapshot.jsonl`` when it holds what this clone has not seen (after
    ``git pull``, in a fresh clone); one line for the person on what arrived, or why not."""
    from ctxkeeper.core import snapshot

    if not snapshot.unseen(store.dir, snapshot.default_path(store.dir)):
        return None
    from ctxkeeper.core.errors import CtxkeeperError
    from ctxkeeper.write.exchange import IMPORT_ACTOR, import_snapshot, summary_line

    try:
        report = import_snapshot(store, actor=dict(IMPORT_ACTOR))
    except CtxkeeperError as exc:
        return f"the team snapshot was not imported ({exc}); run `ctxkeeper import` to see why"
    return None if report.get("unchanged") else summary_line(report)


def _person_note(
    store: Store, pending: int, *, compacted: bool, arrived: str | None = None
) -> str | None:
    notes = [arrived] if arrived else []
    if pending:
        notes.append(f"{pending} entr{'y' if pending == 1 else 'ies'} awaiting review")
    if compacted:
        thin, unverified = _quality(store)
        if thin:
            notes.append(f"{thin} active entr{'y' if thin == 1 else 'ies'} close to the floors")
        if unverified:
            notes.append(f"{unverified} not verified for {UNVERIFIED_DAYS}+ days")
    if not notes:
        return None
    hint = " (`ctxkeeper review` in your terminal)" if pending else ""
    return "ctxkeeper: " + "; ".join(notes) + hint + "."


def _quality(store: Store) -> tuple[int, int]:
    """Active entries whose text is within 1.5x the floors, and those unverified for long."""
    import time

    from ctxkeeper.core.model import TEXT_FIELDS

    floors = store.config().floors
    cutoff = time.strftime("%Y-%m-%d", time.gmtime(time.time() - UNVERIFIED_DAYS * 86400))
    thin = unverified = 0
    for entry in store.load().entries.values():
        if entry.get("status") != "active":
            continue
        kind = str(entry.get("kind"))
        limits = floors.get(kind, {})
        if any(
            len(str(entry.get(name) or "")) < 1.5 * limits.get(name, 0)
            for name in TEXT_FIELDS.get(kind, ())
        ):
            thin += 1
        checked = entry.get("verified_at") or entry.get("created_at")
        if isinstance(checked, str) and checked[:10] < cutoff:
            unverified += 1
    return thin, unverified


def subagent_start(ctx: HookContext) -> JSONObject | None:
    """Every active constraint valid now, hard first, within the budget, for the subagent."""
    store = _open(ctx)
    entries = sorted(
        _live_constraints(store),
        key=lambda e: (e.get("hardness") != "hard", str(e.get("id"))),
    )
    if not entries:
        return None
    head = "ctxkeeper constraints in force in this project (hard first):"
    room = min(store.config().summary_budget * 4, CONTEXT_CAP) - len(head) - 1
    shown = _fit([_line(e) for e in entries], room - 120)
    lines = [head, *shown]
    if len(shown) < len(entries):
        lines.append(
            f"{len(entries) - len(shown)} more; get_context with path=<file> lists those "
            "covering a file."
        )
    ledger.mark(ctx.ledger(), [str(e["id"]) for e in entries[: len(shown)]])
    return {
        "hookSpecificOutput": {
            "hookEventName": "SubagentStart",
            "additionalContext": "\n".join(lines),
        }
    }


# dec-015-d3c1: the note goes out here and again at SessionStart compact.
def pre_compact(ctx: HookContext) -> JSONObject | None:
    """Re-arm delivery (after compaction every constraint is delivered again) and give the
    person the quality note as a ``systemMessage``.

    The reference says Claude Code 2.1.332 discards PreCompact's ``systemMessage``, so the
    same note is also shown by SessionStart with source ``compact``, which runs right after
    compaction; the PreCompact copy costs nothing and reaches the person where it is honoured.
    """
    from ctxkeeper.read.summary import project_summary

    ledger.rearm(ctx.ledger())
    store = _open(ctx)
    pending = int(str(project_summary(store).get("pending_review", 0)))
    note = _person_note(store, pending, compacted=True)
    return {"systemMessage": note} if note else None
