"""SessionStart, SubagentStart and PreCompact: what a (sub)agent is told once, up front.

Not on the per-edit path, so these may load the store and the summary. SessionStart output
depends only on the store, never on the clock or a random order, so an unchanged store gives
byte-identical context (the prompt cache stays warm); the one exception is the quality note
after compaction, which reads the clock (expired entries, entries unverified for 90 days).
"""

from __future__ import annotations

import os

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
#: Room kept for the lines that open and close the stored entries (core/framing.py).
FRAME_ROOM = 320
#: The compaction note looks for likely duplicates up to this many live entries: beyond it
#: the check alone passes a second (PreCompact's timeout is 5 s; bench/quality.py measures).
HOOK_DUPLICATES_UP_TO = 3000
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
        and times.is_valid_at(entry, instant)
    ]


def _lines(entry: JSONObject, approved: dict[str, str]) -> str:
    """One constraint as the model reads it: quoted, with its provenance (core/framing.py)."""
    from ctxkeeper.core.framing import entry_lines, literal
    from ctxkeeper.core.provenance import code

    scope = entry.get("scope")
    where = literal(scope) if isinstance(scope, list) and scope else "whole project"
    facts = f"{literal(str(entry.get('hardness')))[1:-1]} constraint, scope {where}"
    made = code(entry.get("origin"), approved.get(str(entry.get("id")), ""))
    fields = (("rule", entry.get("rule")), ("reason", entry.get("reason")))
    return "\n".join(entry_lines(str(entry.get("id")), facts, made, fields))


def _framed(lines: list[str]) -> list[str]:
    from ctxkeeper.core.framing import MEMORY_END, MEMORY_HEAD

    return [MEMORY_HEAD, *lines, MEMORY_END] if lines else []


def _approvals(store: Store) -> dict[str, str]:
    from ctxkeeper.core.provenance import approvals

    return approvals(store.dir)


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

    # A hook runs inside the agent's session: what it finds written by hand is not a person's.
    session = ctx.text("session_id", required=False)
    return Store.open(ctx.root, writer={"origin": "agent", "session_id": session})


def session_start(ctx: HookContext) -> JSONObject | None:
    """The project summary and project-wide hard constraints; re-arms after compaction."""
    import time

    from ctxkeeper.read.summary import render_summary

    # The ledger names the session: read first, so a bad stdin fails before the import writes.
    ledger_file = ctx.ledger()
    store = _open(ctx)
    arrived = _import_team_snapshot(store)
    compacted = ctx.payload.get("source") == "compact"
    if compacted:
        ledger.rearm(ledger_file)
    ledger.prune(ctx.cache_dir, time.time())
    planted = _planted_index_note(ctx)
    index = scopeindex.open_index(ctx.context_dir)  # warm the per-edit path
    summary = _summary_with_drift(store)
    parts = [
        "ctxkeeper project memory (.context/):",
        render_summary(summary, hard_delivery=index.hard_delivery),
    ]
    parts.append(GATE_NOTE if index.hard_delivery == "gate" else GATE_OFF_NOTE)
    wide = sorted(
        (e for e in _live_constraints(store) if e.get("hardness") == "hard" and not e.get("scope")),
        key=lambda e: str(e.get("id")),
    )
    head = "Project-wide hard constraints (they cover every file):"
    room = CONTEXT_CAP - sum(len(p) + 1 for p in parts) - len(head) - 1 - FRAME_ROOM
    approved = _approvals(store)
    shown = _fit([_lines(e, approved) for e in wide], room)
    if shown:
        parts += [head, *_framed(shown)]
        ledger.mark(ledger_file, [str(e["id"]) for e in wide[: len(shown)]])
    answer: JSONObject = {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": "\n".join(parts)[:CONTEXT_CAP],
        }
    }
    note = _person_note(
        store,
        summary,
        compacted=compacted,
        arrived=arrived,
        event="SessionStart",
    )
    note = _with_drift(note, summary.get("drift"))
    for extra in (planted, _policy_note(store), _unmade_note(store), _cli_note(ctx)):
        if extra:
            note = f"{note} {extra}" if note else extra
    if note:
        answer["systemMessage"] = note
    return answer


def _cli_note(ctx: HookContext) -> str | None:
    """How the person reaches the CLI when it is not on PATH: once, as the session starts."""
    if ctx.payload.get("source") != "startup":
        return None
    from ctxkeeper.plugin.clihint import cli_hint

    return cli_hint(os.environ)


#: The person's line when SessionStart cannot brief the session: the hooks fail open, and
#: the person must not learn it from hook-errors.log alone.
DELIVERY_OFF = (
    "ctxkeeper: memory delivery is off for this session: {why}. The agent gets no project "
    "memory and edits may not be gated until it is fixed: {fix}."
)
_WHY_CAP = 300


def session_start_or_notice(ctx: HookContext) -> JSONObject | None:
    """:func:`session_start`, failing open with one line for the person when the store cannot
    be read (a journal line that does not parse, a broken config...). Bad stdin stays silent:
    it is Claude Code's, not the person's to fix."""
    from ctxkeeper.plugin.hookio import HookInputError, log_error

    try:
        return session_start(ctx)
    except HookInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - fail open, and say so
        log_error(ctx.context_dir, "SessionStart", f"{type(exc).__name__}: {exc}")
        why = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
        if len(why) > _WHY_CAP:
            why = why[: _WHY_CAP - 3] + "..."
        fix = (
            "`ctxkeeper doctor` in your terminal says what is wrong, and "
            "`ctxkeeper doctor --repair` repairs what it can"
        )
        return {"systemMessage": DELIVERY_OFF.format(why=why, fix=fix)}


def _policy_note(store: Store) -> str | None:
    """One line when ``review`` or ``hard_delivery`` differs from the committed config or
    changed since the last session; a change not journaled yet is journaled first."""
    from ctxkeeper.core import policywatch
    from ctxkeeper.core.errors import CtxkeeperError
    from ctxkeeper.plugin.hookio import log_error

    config = store.config()
    if policywatch.needs_journal(store.dir, config):
        from ctxkeeper.write import derived  # noqa: F401  # the refreshes this commit runs

        try:
            with store.transaction():
                pass  # the transaction journals the change it sees (Store._policy_change)
        except (CtxkeeperError, OSError) as exc:
            log_error(store.dir, "SessionStart", f"policy change not journaled: {exc}")
    found = policywatch.session_notes(store.root, store.dir, config)
    if not found:
        return None
    return (
        f"ctxkeeper: {'; '.join(found)} (`git diff .context/config.json` or "
        "`git log -p .context/config.json` shows who changed it)."
    )


def _unmade_note(store: Store) -> str | None:
    """One line when the journal holds records that name a person but that no write in this
    clone made: they promoted or changed entries as if a person had."""
    from ctxkeeper.core import personmarks

    count = personmarks.unmade_count(store.dir)
    if not count:
        return None
    from ctxkeeper.core.wording import counted

    names, them = ("names", "it") if count == 1 else ("name", "them")
    return (
        f"ctxkeeper: {counted(count, 'journal record')} {names} a person but no ctxkeeper "
        f"write in this clone made {them}: `ctxkeeper doctor` lists {them} for your review."
    )


def _planted_index_note(ctx: HookContext) -> str | None:
    """One line when a symbolic link sits where the scope index belongs (a cloned repository
    can ship one): opening the index replaces it by a real directory, never following it."""
    if not os.path.islink(os.path.join(ctx.cache_dir, scopeindex.INDEX_DIR)):
        return None
    return (
        "ctxkeeper: .context/cache/scope-index was a symbolic link (not ctxkeeper's; a cloned "
        "repository can ship one); it was replaced by a real directory rebuilt from the store, "
        "and nothing was read or written through it."
    )


def refused_store(reason: str) -> JSONObject:
    """The person's line for a store the hooks refuse to use (``hookio.store_refusal``)."""
    link = ".context/cache" if reason.startswith(".context/cache") else ".context"
    fix = (
        f"`rm {link}` removes the link (not what it points at), and ctxkeeper makes a real "
        "directory there"
        if link == ".context/cache"
        else "put the store itself at .context instead of a link to it"
    )
    why = f"{reason}, and ctxkeeper never follows links in its store (a cloned repository can ship one)"
    return {"systemMessage": DELIVERY_OFF.format(why=why, fix=fix)}


#: Seconds the session's drift check may spend in git: the hook has 20 (hooks.json), and the
#: summary and hard constraints must still go out when a history is slow to read.
DRIFT_SECONDS = 8.0


def _summary_with_drift(store: Store) -> JSONObject:
    """The summary with its drift ids, or without them when the drift check fails (logged):
    drift is advice, and must never cost the session its briefing."""
    from ctxkeeper.core import gitlog
    from ctxkeeper.plugin.hookio import log_error
    from ctxkeeper.read.summary import project_summary

    try:
        with gitlog.within(DRIFT_SECONDS):
            return project_summary(store, with_drift=True)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        log_error(store.dir, "SessionStart", f"drift check failed: {type(exc).__name__}: {exc}")
        return project_summary(store)


def _with_drift(note: str | None, drift: object) -> str | None:
    """The person's line, with how many entries drifted or lost a scope path (the ids are in
    the model's summary; ``ctxkeeper drift`` shows the commits)."""
    if not isinstance(drift, dict):
        return note
    drifted, orphaned = drift.get("drifted_count"), drift.get("orphaned_count")
    from ctxkeeper.core.wording import counted

    parts = []
    if isinstance(drifted, int) and drifted:
        parts.append(f"{counted(drifted, 'entry', 'entries')} drifted since verified")
    if isinstance(orphaned, int) and orphaned:
        parts.append(f"{orphaned} with a scope path gone")
    if not parts:
        return note
    text = "ctxkeeper: " + ", ".join(parts) + " (`ctxkeeper drift`)."
    return f"{note} {text}" if note else text


def _import_team_snapshot(store: Store) -> str | None:
    """Import ``.context/snapshot.jsonl`` when it holds what this clone has not seen (after
    ``git pull``, in a fresh clone); one line for the person on what arrived, or why not."""
    from ctxkeeper.team import snapshot

    path = snapshot.default_path(store.dir)
    changed = os.path.isfile(path) and not snapshot.untouched(store.dir, path)
    held = os.path.isfile(store.path("held.jsonl"))  # held-back events, waiting for git
    if not changed and not held:
        return None  # by its stat alone; a changed file is read once, by the import
    from ctxkeeper.core.errors import CtxkeeperError
    from ctxkeeper.write.exchange import IMPORT_ACTOR, import_snapshot, recheck_held, summary_line

    try:
        report = import_snapshot(store, actor=dict(IMPORT_ACTOR)) if changed else None
        report = (recheck_held(store) if held else None) or report
        if report is None:
            return None
    except CtxkeeperError as exc:
        return f"the team snapshot was not imported ({exc}); run `ctxkeeper import` to see why"
    return None if report.get("unchanged") else summary_line(report)


def _person_note(
    store: Store, summary: JSONObject, *, compacted: bool, arrived: str | None = None, event: str
) -> str | None:
    from ctxkeeper.read.guidance import awaiting_review

    notes = [arrived] if arrived else []
    pending = awaiting_review(summary)
    if pending:
        notes.append(f"{pending} awaiting review (`ctxkeeper review` in your terminal)")
    if compacted:
        notes += _quality_notes(store, event)
    if not notes:
        return None
    return "ctxkeeper: " + "; ".join(notes) + "."


def _quality_notes(store: Store, event: str) -> list[str]:
    """The quality scan's counts in one clause (read/quality.py), and the active entries
    unverified for :data:`UNVERIFIED_DAYS`. Fails open: a scan that breaks is logged to
    ``hook-errors.log`` and left out, and the rest of the hook's answer still goes out."""
    from ctxkeeper.core import times
    from ctxkeeper.core.model import LIVE_STATUSES
    from ctxkeeper.plugin.hookio import log_error
    from ctxkeeper.read.drift import stale_entries
    from ctxkeeper.read.quality import duplicates_checked, scan, summary_line

    notes: list[str] = []
    try:
        entries = list(store.load().entries.values())
        found = scan(
            entries,
            floors=store.config().floors,
            instant=times.now(),
            duplicates_up_to=HOOK_DUPLICATES_UP_TO,
        )
    except Exception as exc:  # noqa: BLE001 - advice must never cost the session its context
        log_error(store.dir, event, f"quality scan failed: {type(exc).__name__}: {exc}")
        return notes
    live = sum(1 for entry in entries if entry.get("status") in LIVE_STATUSES)
    line = summary_line(found, duplicates=duplicates_checked(live, HOOK_DUPLICATES_UP_TO))
    if line:
        notes.append(line)
    # The active entries `ctxkeeper stale --days 90` lists: one definition of "not verified".
    stale = stale_entries(store, UNVERIFIED_DAYS)["results"]
    unverified = sum(
        1
        for item in (stale if isinstance(stale, list) else [])
        if isinstance(item, dict) and item.get("status") == "active"
    )
    if unverified:
        notes.append(f"{unverified} not verified for {UNVERIFIED_DAYS}+ days")
    return notes


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
    room = min(store.config().summary_budget * 4, CONTEXT_CAP) - len(head) - 1 - FRAME_ROOM
    approved = _approvals(store)
    shown = _fit([_lines(e, approved) for e in entries], room - 120)
    lines = [head, *_framed(shown)]
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
    person the quality note as a ``systemMessage``: the pending reviews, one clause of quality
    scan counts (``ctxkeeper doctor --quality`` lists the findings), the long-unverified
    entries; nothing at all when there is nothing to say. Never blocks compaction.

    The reference says Claude Code 2.1.332 discards PreCompact's ``systemMessage``, so the
    same note is also shown by SessionStart with source ``compact``, which runs right after
    compaction; the PreCompact copy costs nothing and reaches the person where it is honoured.
    """
    from ctxkeeper.read.summary import project_summary

    ledger.rearm(ctx.ledger())
    store = _open(ctx)
    note = _person_note(store, project_summary(store), compacted=True, event="PreCompact")
    return {"systemMessage": note} if note else None
