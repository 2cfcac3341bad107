"""PreToolUse on Edit/Write/NotebookEdit: deliver covering constraints, gate on hard ones.

The first edit of a file governed by hard constraints the session has not been given is
denied with those constraints as the reason, so the model reads them before the change lands
and re-issues a compliant edit, which then passes (DESIGN.md promise 4). Soft constraints ride
along as ``additionalContext``. Edits of the store itself are denied with the MCP tool to use.

Constraints go out framed as stored project memory (``ctxkeeper.core.framing``): quoted, with
their provenance, so a rule's text cannot pass for our words or the user's.

Import-light on purpose (con-001-5f40): the scope index, the ledger, ``ctxkeeper.core.scope``
and ``ctxkeeper.core.framing``.
"""

from __future__ import annotations

import os

from ctxkeeper.core import driftcache, scopeindex
from ctxkeeper.core.framing import MEMORY_END, MEMORY_HEAD, entry_lines, literal
from ctxkeeper.core.scope import relative_path
from ctxkeeper.plugin import ledger
from ctxkeeper.plugin.hookio import HookInputError, utc_now

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.scopeindex import Record
    from ctxkeeper.plugin.hookio import HookContext

#: Constraints shown per tool call; the rest are one ``get_context`` away.
SHOWN_PER_CALL = 5
_EVENT = "PreToolUse"


def _target(ctx: HookContext) -> str:
    tool_input = ctx.payload.get("tool_input")
    if not isinstance(tool_input, dict):
        raise HookInputError("stdin field 'tool_input' is missing or not an object")
    keys = ("notebook_path", "file_path")
    if ctx.payload.get("tool_name") != "NotebookEdit":
        keys = ("file_path", "notebook_path")
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, str) and value and "\0" not in value:
            return value
    raise HookInputError("tool_input has no file_path (or notebook_path) string")


def _deny(reason: str) -> JSONObject:
    return {
        "hookSpecificOutput": {
            "hookEventName": _EVENT,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def _in_store(path: str, root: str) -> bool:
    # Compare the lexical and the resolved path, so a symlink into .context/ is caught too;
    # lower-case, because macOS and Windows file systems ignore case.
    for rel in (relative_path(path, root), relative_path(os.path.realpath(path), root)):
        if rel is not None and (rel.lower() == ".context" or rel.lower().startswith(".context/")):
            return True
    return False


STORE_EDIT_REASON = (
    "Files under .context/ are ctxkeeper's store; its tools change them, so the journal "
    "keeps every revision. Use the ctxkeeper MCP tools instead: record_entry for a new "
    "decision, constraint or pipeline, update_entry to change an entry, deprecate_entry to "
    "retire one."
)


def describe(record: Record, note: str = "") -> list[str]:
    """One constraint as the model reads it: our words for its id, hardness, scope and
    provenance (and ``note``), then its rule and reason quoted (``ctxkeeper.core.framing``)."""
    entry_id, hardness, rule, reason, *_bounds, made, key = record
    scope = literal(key) if key else "whole project"
    facts = f"{hardness} constraint, scope {scope}{note}"
    return entry_lines(entry_id, facts, made, (("rule", rule), ("reason", reason)))


def _order(record: Record) -> tuple[int, int, str]:
    # Hard first, then the narrowest scope (the rule written for this very place), then id.
    return (record[1] != "hard", -len(record[-1].split("/")) if record[-1] else 0, record[0])


def _drift_note(entry_id: str, drifted: dict[str, int], orphaned: set[str]) -> str:
    """A few words on a drifted constraint, from the drift cache (the hook never runs git:
    con-021-bed7)."""
    notes = []
    count = drifted.get(entry_id)
    if count:
        notes.append(
            f"{count} commit{'' if count == 1 else 's'} touched its scope since it was verified"
        )
    if entry_id in orphaned:
        notes.append("a scope path of it no longer exists")
    return f"; drifted: {', '.join(notes)}" if notes else ""


def _pointer(rel: str, hidden: int) -> str:
    more = f"{hidden} more constraint{' covers' if hidden == 1 else 's cover'} it"
    return f"{more}; get_context with path={literal(rel)} lists them all."


def _real_relative(path: str, root: str, rel: str) -> str | None:
    """The repo-relative path of the file itself when a symlink inside the project leads to
    it (``bill/charge.py`` with ``bill -> src/billing``); None when it is ``rel`` already."""
    real = relative_path(os.path.realpath(os.path.join(root, path)), root)
    return real if real is not None and real != rel else None


def handle(ctx: HookContext) -> JSONObject | None:
    """The PreToolUse answer for an Edit, Write or NotebookEdit call, or None to stay silent."""
    return gate(ctx, _target(ctx))


def gate(ctx: HookContext, path: str) -> JSONObject | None:
    """The answer for a change of one file (an edit, or a write a Bash command makes)."""
    if _in_store(path, ctx.root):
        return _deny(STORE_EDIT_REASON)
    rel = relative_path(path, ctx.root)
    if rel is None:
        return None  # Outside the project: no scope covers it.
    # Scopes name real paths: match the file a link inside the project leads to, as well.
    real = _real_relative(path, ctx.root, rel)
    index, records = scopeindex.lookup(ctx.context_dir, rel)
    if real is not None:
        known = {record[0] for record in records}
        records = records + [
            r for r in scopeindex.lookup(ctx.context_dir, real)[1] if r[0] not in known
        ]
        rel = real
    now = utc_now()
    live = [record for record in records if scopeindex.valid_at(record, now)]
    if not live:
        return None
    ledger_file = ctx.ledger()
    seen = ledger.delivered(ledger_file)
    fresh = sorted((r for r in live if r[0] not in seen), key=_order)
    if not fresh:
        return None
    shown = fresh[:SHOWN_PER_CALL]
    hard = [r for r in fresh if r[1] == "hard"]
    drifted, orphaned = driftcache.read(ctx.context_dir, ctx.root)
    lines = [MEMORY_HEAD]
    for record in shown:
        lines += describe(record, _drift_note(record[0], drifted, orphaned))
    lines.append(MEMORY_END)
    if len(fresh) > len(shown):
        lines.append(_pointer(rel, len(fresh) - len(shown)))
    if hard and index.hard_delivery == "gate":
        # Every hard one counts as delivered, shown or not: one denial per file per session.
        ledger.mark(ledger_file, dict.fromkeys([r[0] for r in hard] + [r[0] for r in shown]))
        # Not "not yet shown": the session's summary may have listed their headlines already.
        one = len(hard) == 1
        head = (
            f"ctxkeeper: {literal(rel)} is governed by {len(hard)} hard "
            f"constraint{'' if one else 's'}; this edit was held back before it ran, so that "
            f"you read {'it' if one else 'them'} in full before changing it:"
        )
        tail = (
            f"The same edit may be re-issued once it complies with {'it' if one else 'them'}; "
            f"{'this constraint does' if one else 'these constraints do'} not hold back "
            "another edit in this session."
        )
        return _deny("\n".join([head, *lines, tail]))
    ledger.mark(ledger_file, [r[0] for r in shown])
    head = f"ctxkeeper: constraints in force for {literal(rel)}:"
    return {
        "hookSpecificOutput": {
            "hookEventName": _EVENT,
            "additionalContext": "\n".join([head, *lines]),
        }
    }


if __name__ == "__main__":
    # `python -m ctxkeeper.plugin.editgate`: this gate as a process of its own, with the hook's
    # stdin and environment, for callers that may not import the plugin layer (`ctxkeeper demo`
    # plays Claude Code's part; con-012-6598 keeps cli below plugin).
    from ctxkeeper.plugin.hookio import run

    raise SystemExit(run("PreToolUse", handle))
