"""What a hand edit of ``entries.json`` becomes when a write finds it: whose it is, and
whether it applies at once or waits for a person.

A person's edit, found by their own CLI at a terminal, is journaled as their ``manual_edit``
and applies (DESIGN.md, "Journal"). Found by any other process (the MCP server, a hook, the CLI
in an agent's shell) nobody vouches that a person made it, so it is the agent's: journaled
with origin ``agent`` and, under the ``agent`` review policy, held to the rule every agent
change is held to. An edit of an entry in force becomes a pending change a person reviews, and
the entry stays as the journal has it; a status the file claims (an approval, a retirement) is
never taken from the file; an entry added by hand arrives ``proposed``. An edit of phrasings
alone (``asked_as``) changes no rule and applies, as ``update_entry`` applies it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from ctxkeeper.core.model import (
    EDITABLE_FIELDS,
    OPTIONAL_FIELDS,
    RULE_FREE_FIELDS,
    ordered,
    stored_problems,
)
from ctxkeeper.core.secretscan import scan_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

#: The journal's reason for a hand edit that applied as found.
FOUND_REASON: Final = "hand edit of entries.json found before a write"
#: The reason journaled when an agent's process found a hand edit it may not apply.
REFUSED_REASON: Final = (
    "hand edit of entries.json found by an agent's process was not applied: only a person "
    "approves, retires or removes an entry in force"
)
#: The reason of the pending change a held-back hand edit becomes.
HELD_REASON: Final = (
    "hand edit of entries.json found by an agent's process: it waits for a person "
    "(`ctxkeeper review`)"
)


@dataclass
class Plan:
    """What the write that found the edits does with them."""

    applied: dict[str, tuple[JSONObject | None, str]] = field(default_factory=dict)
    """Entry id -> the value a ``manual_edit`` journals it at (None: removed), and why."""
    held: dict[str, dict[str, JSONValue]] = field(default_factory=dict)
    """Entry id -> the editable fields a person must approve; the entry keeps its fold."""


def plan(
    found: Mapping[str, JSONObject],
    folded: Mapping[str, JSONObject],
    changed: list[str],
    *,
    by_agent: bool,
    policy: str,
) -> Plan:
    """Sort each changed entry id into applied or held.

    :param found: the entries the file holds; ``folded``: the journal's fold of them.
    :param by_agent: the finding process is not a person's own terminal.
    """
    result = Plan()
    for entry_id in changed:
        before, after = folded.get(entry_id), found.get(entry_id)
        if not by_agent or policy != "agent":
            result.applied[entry_id] = (after, FOUND_REASON)
        elif before is None:
            added = _as_proposal(after) if after is not None else None
            result.applied[entry_id] = (added, FOUND_REASON)
        elif _agents_own_proposal(before):
            # The agent may edit its own proposal; it still cannot approve it by hand.
            kept = None if after is None else {**after, "status": before.get("status")}
            result.applied[entry_id] = (kept, FOUND_REASON)
        elif edited := _edited_fields(before, after):
            phrased = _with_edited(before, edited) if set(edited) <= RULE_FREE_FIELDS else None
            if phrased is not None and not stored_problems(phrased) and not scan_fields(edited):
                result.applied[entry_id] = (phrased, FOUND_REASON)
            else:
                # What a write would refuse waits too: approving it re-checks it.
                result.held[entry_id] = edited
        else:
            result.applied[entry_id] = (before, REFUSED_REASON)
    return result


def _agents_own_proposal(entry: Mapping[str, JSONValue]) -> bool:
    return entry.get("origin") == "agent" and entry.get("status") == "proposed"


def _as_proposal(entry: JSONObject) -> JSONObject:
    """An entry added by hand: the agent's, and a proposal unless it is a tombstone (which
    only blocks, so it needs no person)."""
    status = entry.get("status")
    return ordered(
        {**entry, "origin": "agent", "status": "proposed" if status == "active" else status}
    )


def _edited_fields(before: JSONObject, after: JSONObject | None) -> dict[str, JSONValue]:
    """The writer-settable fields the file changed; a removed entry or a changed status
    proposes nothing (a retirement needs its own reason, a promotion a person)."""
    if after is None:
        return {}
    kind = str(before.get("kind"))
    names = EDITABLE_FIELDS.get(kind, ())
    edited = {name: after.get(name) for name in names if after.get(name) != before.get(name)}
    # An optional field taken out of the file is proposed as emptied, which a write accepts.
    return {
        name: [] if value is None and name in OPTIONAL_FIELDS else value
        for name, value in edited.items()
    }


def _with_edited(before: JSONObject, edited: Mapping[str, JSONValue]) -> JSONObject:
    """The journal's entry with ``edited`` applied; an emptied optional field left out."""
    kept = {key: value for key, value in before.items() if key not in edited}
    kept.update({key: value for key, value in edited.items() if value != []})
    return ordered(kept)
