"""Entries and histories as the MCP tools hand them to the model: framed stored memory.

The CLI shows a person entries through ``ctxkeeper.read.render``; the model reads them through
here, every stored value quoted by ``ctxkeeper.core.framing.literal`` and each entry with its
provenance (``ctxkeeper.core.provenance``), so no entry can pass for our words or the user's.
"""

from __future__ import annotations

from ctxkeeper.core.framing import (
    MEMORY_END,
    MEMORY_HEAD,
    entry_lines,
    facts_of,
    headline_line,
    literal,
)
from ctxkeeper.core.provenance import approvals, code, describe
from ctxkeeper.read.render import headline_field, pending_line

#: The entry field holding the agent's proposed changes (ctxkeeper.core.changes).
PENDING = "pending_changes"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.store import Store

#: Said in the head line (facts_of) or bookkeeping the model does not need.
_NOT_SHOWN = frozenset(
    {"id", "kind", "status", "hardness", "scope", "origin", "created_at", "updated_at", "revision"}
)


def provenance_codes(store: Store) -> dict[str, str]:
    """Every entry's approval by id (see ``provenance.approvals``), for :func:`code_of`."""
    return approvals(store.dir)


def code_of(entry: Mapping[str, JSONValue], approved: Mapping[str, str]) -> str:
    return code(entry.get("origin"), approved.get(str(entry.get("id")), ""))


def provenance_text(entry: Mapping[str, JSONValue], approved: Mapping[str, str]) -> str:
    """The provenance of an entry in words, for structured results."""
    return describe(code_of(entry, approved))


def entry_block(entry: Mapping[str, JSONValue], made: str, note: str = "") -> list[str]:
    """One entry: head line of our words, then each stored field on its own quoted line."""
    fields = [
        (key.replace("_", " "), value)
        for key, value in entry.items()
        if key not in _NOT_SHOWN and key != PENDING and value not in (None, [], "")
    ]
    lines = entry_lines(str(entry.get("id")), facts_of(entry) + note, made, fields)
    changes = entry.get(PENDING)
    for change in changes if isinstance(changes, list) else []:
        if isinstance(change, dict):
            # Our words, with the stored names in them escaped as a quoted value would be.
            lines.append(f"    pending change {literal(pending_line(change))[1:-1]}")
            if change.get("fields"):
                lines.append(f"      proposed values: {literal(change.get('fields'))}")
    if isinstance(changes, list) and changes:
        lines.append("    (the fields above stay in force until a person decides)")
    return lines


def framed(blocks: Iterable[list[str]]) -> str:
    """Blocks of entry lines between the lines that open and close stored memory."""
    lines = [line for block in blocks for line in block]
    return "\n".join([MEMORY_HEAD, *lines, MEMORY_END]) if lines else ""


def history_block(entry_id: str, records: list[JSONValue]) -> list[str]:
    """An entry's journal records: when, what, who (and whether here or by import), why, and
    the values it set, every stored value quoted."""
    lines: list[str] = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            continue
        actor = record.get("actor")
        origin = actor.get("origin") if isinstance(actor, dict) else None
        who = {"user": "a person", "agent": "the agent"}.get(str(origin), "an import")
        at, op = literal(str(record.get("at")))[1:-1], literal(str(record.get("op")))[1:-1]
        lines.append(f"  #{number} {at} {op} by {who}")
        if record.get("reason"):
            lines.append(f"    reason: {literal(record.get('reason'))}")
        before, after = record.get("before"), record.get("after")
        old = before if isinstance(before, dict) else {}
        if isinstance(after, dict):
            changed: JSONObject = {
                key: value
                for key, value in after.items()
                if key not in ("updated_at", "revision") and old.get(key) != value
            }
            if changed:
                lines.append(f"    set: {literal(changed)}")
    return [f"history of {literal(entry_id)[1:-1]}:", *lines]


def entry_line(entry: Mapping[str, JSONValue], approved: Mapping[str, str]) -> str:
    """An entry in one line (lists, the summary): its head and its headline field quoted."""
    headline = entry.get(headline_field(entry))
    return headline_line(str(entry.get("id")), facts_of(entry), code_of(entry, approved), headline)
