"""What the review queue shows: the items awaiting a person, newest first, and each one's screen.

Pure functions of the store's entries, so the screen can be checked against a golden file.
Every stored string passes through :func:`ctxkeeper.read.render.visible` (con-008-6b2d), and
every line is wrapped to the terminal's width, counted in cells.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ctxkeeper.cli import term
from ctxkeeper.core.changes import changes_of, is_stale, pending_changes, supersessions_by
from ctxkeeper.read import render
from ctxkeeper.write.similarity import matching_tombstone, similar_entries

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

#: How each kind of line looks on a colour terminal.
_ROLES: Final = {
    "rule": ("bold",),
    "title": ("bold",),
    "head": ("bold", "cyan"),
    "del": ("red",),
    "add": ("green",),
    "warn": ("yellow",),
    "danger": ("bold", "red"),
    "note": ("dim",),
}
_LABELS: Final = {
    "likely_restatement": "likely restatement",
    "likely_contradiction": "likely contradiction",
}
#: Continuation lines are indented at least this far: deeper than any field label (2) or list
#: item (4), so a wrapped value can never pass for a line of its own.
_MIN_HANG: Final = 6
_ITEM_MARK: Final = re.compile(r"^ *\d+\. ")
_MULTILINE_MARK: Final = "      | "
_STALE: Final = "STALE: the entry changed since this was proposed; it can only be rejected"

Line = tuple[str, str]
"""A logical line, plain text, and its role (a key of ``_ROLES``, or "" for plain)."""


@dataclass(frozen=True)
class Item:
    """One thing awaiting a person: a proposed entry (``op`` "entry") or a pending change."""

    op: str
    target: str
    """The id :func:`ctxkeeper.cli.review.decide` takes: the entry's, or the change's."""
    entry_id: str
    at: str


def queue(entries: Mapping[str, JSONObject]) -> list[Item]:
    """Everything awaiting a decision, newest first.

    A supersession proposed by a still-proposed successor rides with that successor's item
    (approving the successor applies it), as :func:`ctxkeeper.core.changes.awaiting_decision`
    counts it.
    """
    proposed = {key for key, entry in entries.items() if entry.get("status") == "proposed"}
    items = [
        Item(
            "entry", key, key, str(entries[key].get("updated_at") or entries[key].get("created_at"))
        )
        for key in proposed
    ]
    for change in pending_changes(entries.values()):
        if change["op"] == "supersede" and str(change.get("successor")) in proposed:
            continue
        items.append(
            Item(str(change["op"]), str(change["change"]), str(change["id"]), str(change["at"]))
        )
    items.sort(key=lambda item: (item.at, item.target), reverse=True)
    return items


def change_of(item: Item, entries: Mapping[str, JSONObject]) -> JSONObject | None:
    """The pending change an item decides, while it still waits (None for an entry item)."""
    entry = entries.get(item.entry_id) or {}
    return next((c for c in changes_of(entry) if c["change"] == item.target), None)


def waiting(item: Item, entries: Mapping[str, JSONObject]) -> bool:
    """Whether the item still awaits a decision (an earlier verdict may have settled it)."""
    if item.op == "entry":
        return (entries.get(item.entry_id) or {}).get("status") == "proposed"
    return change_of(item, entries) is not None


def editable(item: Item) -> bool:
    return item.op in ("entry", "update")


def screen(item: Item, entries: Mapping[str, JSONObject], number: int, total: int) -> list[Line]:
    """The item shown whole: what is asked, the entries involved, similar entries, tombstone."""
    entry = entries[item.entry_id]
    progress = f"-- {number} of {total} "
    lines: list[Line] = [("", ""), (progress, "rule")]
    change = change_of(item, entries)
    if change is None:
        lines.extend(_proposed(entry, entries))
        candidate: Mapping[str, JSONValue] | None = entry
    else:
        lines.extend(_change(item, change, entry, entries))
        fields = change.get("fields")
        successor = entries.get(str(change.get("successor")))
        candidate = (
            {**entry, **fields}
            if item.op == "update" and isinstance(fields, dict)
            else successor
            if item.op == "supersede"
            else None
        )
    if candidate is not None:
        lines.extend(_neighbours(candidate, entries))
    return lines


def _block(entry: Mapping[str, JSONValue], label: str = "") -> list[Line]:
    first, *rest = render.block(entry).splitlines()
    return [(label + first, "title"), *((line, _role(line)) for line in rest)]


def _role(line: str) -> str:
    return "del" if line.startswith("  - ") else "add" if line.startswith("  + ") else ""


def _proposed(entry: Mapping[str, JSONValue], entries: Mapping[str, JSONObject]) -> list[Line]:
    entry_id = render.visible(str(entry.get("id")))
    kind, origin = render.visible(str(entry.get("kind"))), render.visible(str(entry.get("origin")))
    at = render.visible(str(entry.get("created_at")))
    olds = supersessions_by(entries.values(), str(entry.get("id")))
    if not olds:
        return [(f"proposed {kind}, recorded by {origin} at {at}", "head"), *_block(entry)]
    replaced = ", ".join(render.visible(old_id) for old_id, _ in olds)
    lines: list[Line] = [
        (f"proposed supersession: {entry_id} would replace {replaced}", "head"),
        (f"recorded by {origin} at {at}", ""),
        *_block(entry, "successor: "),
    ]
    for old_id, _ in olds:
        lines.extend(_block(entries[old_id], "replaces: "))
    lines.append(
        (
            f"approving {entry_id} supersedes {replaced}; rejecting it keeps {replaced} in force",
            "note",
        )
    )
    return lines


def _who(change: Mapping[str, JSONValue]) -> str:
    actor = change.get("actor")
    if not isinstance(actor, dict):
        return "?"
    who = render.visible(str(actor.get("origin")))
    if actor.get("session_id"):
        return f"{who} (session {render.visible(str(actor['session_id']))})"
    return f"{who} ({render.visible(str(actor['user']))})" if actor.get("user") else who


def _change(
    item: Item,
    change: Mapping[str, JSONValue],
    entry: Mapping[str, JSONValue],
    entries: Mapping[str, JSONObject],
) -> list[Line]:
    entry_id, change_id = render.visible(item.entry_id), render.visible(item.target)
    noun = {"update": "update", "deprecate": "deprecation", "supersede": "supersession"}[item.op]
    lines: list[Line] = [
        (f"proposed {noun} {change_id} of {entry_id}", "head"),
        (f"by {_who(change)} at {render.visible(str(change.get('at')))}", ""),
        (f"  reason: {render.visible(str(change.get('reason')), multiline=True)}", ""),
    ]
    if is_stale(entry, change):
        lines.append((_STALE, "danger"))
    fields = change.get("fields")
    if item.op == "update" and isinstance(fields, dict):
        lines.extend([("", ""), ("the change, against the live entry:", "head")])
        lines.extend((line, _role(line)) for line in render.field_diff(entry, {**entry, **fields}))
    elif item.op == "deprecate":
        successor = change.get("superseded_by")
        if successor:
            lines.append((f"  in favour of: {render.visible(str(successor))}", ""))
        lines.append(("approving retires it as a tombstone; rejecting keeps it in force", "note"))
    elif item.op == "supersede":
        successor_id = str(change.get("successor"))
        found = entries.get(successor_id)
        if found is None:
            lines.append((f"successor: {render.visible(successor_id)} (no longer stored)", "warn"))
        else:
            lines.extend(_block(found, "successor: "))
        lines.extend(_block(entry, "replaces: "))
        return lines
    lines.extend([("", ""), ("the live entry, in force and unchanged until you decide:", "head")])
    lines.extend(_block(entry))
    return lines


def _neighbours(
    candidate: Mapping[str, JSONValue], entries: Mapping[str, JSONObject]
) -> list[Line]:
    """Similar entries (labelled) and the tombstone the candidate's content resembles."""
    own = candidate.get("id")
    others = [entry for key, entry in entries.items() if key != own]
    similar = similar_entries(candidate, others)
    lines: list[Line] = [
        ("", ""),
        ("similar entries:" if similar else "similar entries: none", "head"),
    ]
    for hit in similar:
        found = entries.get(hit["id"]) or {}
        label = _LABELS.get(str(hit["label"]), "similar")
        text = (
            f"  {render.visible(hit['id'])} ({render.visible(hit['status'])}, "
            f"{hit['similarity']:.2f}, {label}): {render.headline(found)}"
        )
        lines.append((text, "warn" if hit["label"] else ""))
    tombstone = matching_tombstone(candidate, others)
    if tombstone is not None:
        match, score = tombstone
        dead = entries.get(str(match.get("id"))) or {}
        text = (
            f"resembles tombstone {render.visible(str(dead.get('id')))} "
            f"({render.visible(str(dead.get('status')))}, {score:.2f}): {render.headline(dead)}"
        )
        lines.append((text, "danger"))
        reason = render.visible(str(dead.get("status_reason")), multiline=True)
        lines.append((f"  its reason: {reason}", ""))
    return lines


# -- layout ---------------------------------------------------------------------------------


def lay_out(lines: list[Line], room: int, style: term.Style) -> list[str]:
    """Wrap each line to ``room`` cells and colour it by its role; rules fill the width."""
    out: list[str] = []
    for text, role in lines:
        if role == "rule":
            text = text + "-" * max(0, room - term.cells(text))
        styles = _ROLES.get(role, ())
        out.extend(style(part, *styles) if styles else part for part in wrap(text, room))
    return out


def wrap(line: str, room: int) -> list[str]:
    """``line`` broken at spaces into lines of at most ``room`` cells (long words are cut).

    Continuation lines hang under the value (after ``label: ``), at least ``_MIN_HANG`` deep.
    """
    if term.cells(line) <= room:
        return [line]
    hang = " " * _hang(line, room)
    if line.startswith(_MULTILINE_MARK):
        hang = _MULTILINE_MARK
    lead = line[: len(line) - len(line.lstrip(" "))]
    out: list[str] = []
    current, empty = lead, True
    for word in line[len(lead) :].split(" "):
        piece = word if empty else " " + word
        if term.cells(current) + term.cells(piece) > room and not empty:
            out.append(current.rstrip())
            current, empty, piece = hang, True, word
        while term.cells(current) + term.cells(piece) > room:
            cut = _fit(piece, room - term.cells(current))
            out.append(current + piece[:cut])
            current, piece = hang, piece[cut:]
        current += piece
        empty = empty and not piece
    if not empty or not out:
        out.append(current.rstrip())
    return out


def _hang(line: str, room: int) -> int:
    match = _ITEM_MARK.match(line)
    colon = line.find(": ")
    at = match.end() if match else colon + 2 if colon > 0 else 0
    return max(_MIN_HANG, at if at <= room // 2 else _MIN_HANG)


def _fit(text: str, room: int) -> int:
    """How many leading characters of ``text`` fit in ``room`` cells (at least one)."""
    used = 0
    for index, char in enumerate(text):
        used += term.cells(char)
        if used > room:
            return max(1, index)
    return len(text)
