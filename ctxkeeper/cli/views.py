"""What the CLI prints for people: the entry table, one entry, its history, notes after ``add``.

Everything is laid out for ``room`` columns and coloured through a :class:`term.Style`, which
is off in a pipe, so piped output is the same text without escape codes. Every stored string
passes through :func:`render.visible` (con-008-6b2d): entries are untrusted, and a control
character must never reach a reviewer's terminal raw.
"""

from __future__ import annotations

import json
from typing import Final

from ctxkeeper.cli import term
from ctxkeeper.core.changes import changes_of
from ctxkeeper.core.model import LIST_FIELDS, ordered
from ctxkeeper.read import render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

#: A paragraph of a value: a marker on its first line (``1. ``, ``| ``) and the text after it.
Paragraph = tuple[str, str]

#: Room for output nobody clips: a pipe has no width, and ``grep`` must see whole headlines.
NO_CLIP: Final = 1 << 30
#: List fields whose items are single words or ids, listed with commas.
_WORD_LISTS: Final = frozenset({"tags", "related_to", "supersedes"})
#: Shown in the header line of ``show``, not among the fields.
_IN_HEADER: Final = frozenset({"id", "kind", "status", "revision"})
#: Bookkeeping a history block leaves out of its diff (its header has the time and revision).
_NOT_DIFFED: Final = frozenset({"updated_at", "revision", "pending_changes"})
_NOT_RECORDED: Final = frozenset({"id", "kind", "revision", "created_at", "updated_at"})
_LABEL_MAX: Final = 16
#: Columns the headline keeps on a narrow terminal before other columns make way.
_HEADLINE_MIN: Final = 16
_IN_FORCE: Final = "the fields above stay in force until a person decides: `ctxkeeper review`"
#: What a value reads as in one line of a diff before it gets lines of its own.
_INLINE_MAX: Final = 24


def label(key: str) -> str:
    return render.visible(key.replace("_", " "))


def _empty(value: JSONValue) -> bool:
    return value is None or value == [] or value == ""


def status_text(entry: Mapping[str, JSONValue], style: term.Style) -> str:
    return style.status(render.visible(str(entry.get("status"))))


def _lines(text: str, room: int, *, indent: int = 0, hang: int = 0) -> list[str]:
    """``text`` wrapped to ``room`` columns at ``indent``, later lines ``hang`` further in."""
    first, *rest = term.wrap(text, room - indent - hang)
    return [" " * indent + first, *(" " * (indent + hang) + line for line in rest)]


def flow(parts: Iterable[str], room: int, *, indent: int = 4, gap: int = 2) -> list[str]:
    """Styled ``parts`` side by side, ``gap`` apart; a part that would pass ``room`` starts a
    new line at ``indent`` (a part wider than a line is clipped)."""
    lines: list[str] = []
    line, used = "", 0
    for part in parts:
        size = term.cells(part)
        if line and used + gap + size > room:
            lines.append(line)
            line, used = " " * indent, indent
        elif line:
            line, used = line + " " * gap, used + gap
        if used + size > room:
            part = term.clip(term.strip(part), room - used)
            size = term.cells(part)
        line, used = line + part, used + size
    if line:
        lines.append(line)
    return lines


# -- values ---------------------------------------------------------------------------------


def paragraphs(key: str, value: JSONValue) -> list[Paragraph]:
    """A field's value as the paragraphs it shows as, every string escaped."""
    if isinstance(value, list) and any(key in fields for fields in LIST_FIELDS.values()):
        # A kind's own list (steps, alternatives): one item a line, numbered.
        numbered = [(f"{n}. ", render.visible(str(item))) for n, item in enumerate(value, 1)]
        return numbered or [("", "(none)")]
    if key == "asked_as" and isinstance(value, list):
        # One phrasing a line: a phrasing may hold the separator another list is joined by.
        return [("- ", render.visible(str(item))) for item in value] or [("", "(none)")]
    if key == "scope" and _empty(value):
        return [("", "(project-wide)")]
    if key == "pending_changes" and isinstance(value, list):
        return [
            ("", render.visible(render.pending_line(change)))
            for change in value
            if isinstance(change, dict)
        ]
    if isinstance(value, list):
        joiner = ", " if key in _WORD_LISTS else "; "
        return [("", joiner.join(render.visible(str(item)) for item in value) or "(none)")]
    if isinstance(value, dict):
        return [("", render.visible(json.dumps(value, ensure_ascii=False, sort_keys=True)))]
    if value is None:
        return [("", "(none)")]
    text = str(value)
    if key not in render.prose_fields():
        return [("", render.visible(text))]
    return [
        ("" if number == 0 else "| ", render.visible(part, multiline=True))
        for number, part in enumerate(text.split("\n"))
    ]


def labelled(
    rows: Iterable[tuple[str, list[Paragraph], tuple[str, ...]]],
    room: int,
    style: term.Style,
    *,
    indent: int = 2,
    width: int | None = None,
) -> list[str]:
    """``label  value`` lines, the labels in a column and each value wrapped beside it.

    :param rows: a label, the value's paragraphs, and the styles the value is shown in.
    :param width: the label column's width (default: the widest label, up to 16).
    """
    rows = list(rows)
    if width is None:
        width = min(max((term.cells(name) for name, _, _ in rows), default=0), _LABEL_MAX)
    column = indent + width + 2
    out: list[str] = []
    for name, parts, styles in rows:
        pending_label = name
        if term.cells(name) > width:  # a long (hand-made) key gets a line of its own
            out.append(" " * indent + style(name, "dim"))
            pending_label = ""
        for marker, text in parts:
            hang = term.cells(marker)
            pieces = term.wrap(text, max(room - column, 16) - hang)
            for number, piece in enumerate(pieces):
                lead = marker if number == 0 else " " * hang
                if pending_label:
                    pad = " " * (width - term.cells(pending_label) + 2)
                    prefix = " " * indent + style(pending_label, "dim") + pad
                    pending_label = ""
                else:
                    prefix = " " * column
                out.append(prefix + lead + style(piece, *styles))
    return out


# -- list -----------------------------------------------------------------------------------


def entry_table(
    entries: Iterable[Mapping[str, JSONValue]], style: term.Style, *, room: int = NO_CLIP
) -> str:
    """One row per entry: id, kind, status, hardness (when a constraint is listed), headline.

    The headline is clipped to ``room``; on a narrow terminal the kind column goes first (the
    id's prefix names it), then hardness. Notes after the table say what awaits a person.
    """
    listed = list(entries)
    if not listed:
        return "no entries"
    columns = ["id", "kind", "status", "hardness", "headline"]
    if not any(entry.get("kind") == "constraint" for entry in listed):
        columns.remove("hardness")
    cells: list[dict[str, str]] = []
    changed = proposed = 0
    for entry in listed:
        mark = "*" if changes_of(entry) else ""
        changed += bool(mark)
        proposed += entry.get("status") == "proposed"
        is_rule = entry.get("kind") == "constraint"
        cells.append(
            {
                "id": render.visible(str(entry.get("id"))),
                "kind": render.visible(str(entry.get("kind"))),
                "status": status_text(entry, style) + mark,
                "hardness": render.visible(str(entry.get("hardness"))) if is_rule else "",
                "headline": render.headline(entry),
            }
        )
    for droppable in ("kind", "hardness"):
        fixed = sum(
            max(term.cells(name), *(term.cells(row[name]) for row in cells)) + 2
            for name in columns[:-1]
        )
        if fixed + _HEADLINE_MIN <= room or droppable not in columns:
            continue
        columns.remove(droppable)
    rows = [[style(name, "bold") for name in columns]]
    rows += [[row[name] for name in columns] for row in cells]
    lines = [term.table(rows, room=room)]
    notes = []
    if changed:
        notes.append(f"* {changed} with a change awaiting a person: `ctxkeeper review`")
    if proposed:
        notes.append(f"{proposed} proposed, unreviewed: `ctxkeeper review`")
    for note in notes:
        lines += [style(line, "dim") for line in _lines(note, room, hang=2)]
    return "\n".join(lines)


def search_text(result: Mapping[str, JSONValue], style: term.Style, *, room: int) -> str:
    """``search``'s answer: how relevant the best match is, the entries as a table, why an
    entry is flagged (unreviewed, superseded, a tombstone), and what the budget left out."""
    head, *notes = render.relevance_line(result).splitlines()
    if result.get("no_confident_match"):
        head = style(
            f"top_relevance {result.get('top_relevance')} (no confident match: nothing "
            "stored clearly answers this)",
            "yellow",
        )
    elif result.get("weak_match"):
        head = style(
            f"top_relevance {result.get('top_relevance')} (weak match: related entries "
            "that may not answer this)",
            "yellow",
        )
    lines = [head, *(style(note, "yellow") for note in notes)]
    items = result.get("results")
    found = [item for item in (items if isinstance(items, list) else []) if isinstance(item, dict)]
    entries = [entry for item in found if isinstance(entry := item.get("entry"), dict)]
    if entries:
        lines.append(entry_table(entries, style, room=room))
    lines += [render.visible(str(item["line"])) for item in found if item.get("line")]
    lines += [
        style(render.visible(f"{item.get('id')}: {item['label']}"), "dim")
        for item in found
        if item.get("label")
    ]
    dropped = result.get("dropped_ids")
    if isinstance(dropped, list) and dropped:
        lines.append(
            f"{len(dropped)} more matched beyond the token budget: raise --budget to see them"
        )
    return "\n".join(lines)


# -- show -----------------------------------------------------------------------------------


def entry_header(entry: Mapping[str, JSONValue], style: term.Style, room: int) -> str:
    """``id  kind  status  hardness  revision N``, the status coloured and explained."""
    status = status_text(entry, style)
    if entry.get("status") == "proposed":
        status += " (unreviewed)"
    elif entry.get("status") == "superseded" and entry.get("superseded_by"):
        status += f" by {render.visible(str(entry.get('superseded_by')))}"
    parts = [
        style(render.visible(str(entry.get("id"))), "bold"),
        render.visible(str(entry.get("kind"))),
        status,
    ]
    if entry.get("kind") == "constraint":
        parts.append(render.visible(str(entry.get("hardness"))))
    parts.append(f"revision {render.visible(str(entry.get('revision')))}")
    return "\n".join(flow(parts, room, indent=2))


def entry_view(entry: Mapping[str, JSONValue], style: term.Style, *, room: int) -> str:
    """An entry at a glance: the header line, then every field labelled and wrapped."""
    headline = render.headline_field(entry)
    shown_in_header = entry.get("status") == "superseded"
    rows: list[tuple[str, list[Paragraph], tuple[str, ...]]] = []
    for key, value in ordered(entry).items():
        in_header = key == "hardness" or (key == "superseded_by" and shown_in_header)
        if key in _IN_HEADER or in_header:
            continue
        if _empty(value) and key != "scope":
            continue
        rows.append((label(key), paragraphs(key, value), ("bold",) if key == headline else ()))
        if key == "pending_changes":
            rows.append(("", [("", _IN_FORCE)], ("dim",)))
    return "\n".join([entry_header(entry, style, room), *labelled(rows, room, style)])


def similar_lines(result: Mapping[str, JSONValue]) -> list[str]:
    """The notes ``add`` prints after recording: similar entries, a possible supersession."""
    similar = result.get("similar_entries")
    superseding = result.get("possible_supersession")
    lines = [
        f"note: {item.get('label')} of {item.get('id')} ({item.get('status')}, "
        f"similarity {item.get('similarity')})"
        for item in (similar if isinstance(similar, list) else [])
        if isinstance(item, dict)
    ]
    lines.extend(
        f"note: this may supersede {entry_id}; if so, record it with --supersedes {entry_id}"
        for entry_id in (superseding if isinstance(superseding, list) else [])
    )
    return [render.visible(line) for line in lines]


# -- history --------------------------------------------------------------------------------


def _actor(actor: JSONValue) -> str:
    if not isinstance(actor, dict):
        return "?"
    who = render.visible(str(actor.get("origin")))
    if actor.get("user"):
        who += f" ({render.visible(str(actor['user']))})"
    elif actor.get("session_id"):
        who += f" (session {render.visible(str(actor['session_id']))})"
    return who


_SIGN_STYLE: Final = {"+": "green", "-": "red", "~": "yellow", "?": "yellow", "=": "dim"}


def _diff_item(
    sign: str, key: str, value: JSONValue, style: term.Style, room: int, indent: int
) -> list[str]:
    """``+ label: value`` wrapped under itself; a value of several paragraphs (steps, prose
    with line breaks) gets lines of its own below the label."""
    colour = _SIGN_STYLE.get(sign, "")
    parts = paragraphs(key, value)
    if len(parts) == 1 and not parts[0][0]:
        lines = _lines(f"{sign} {label(key)}: {parts[0][1]}", room, indent=indent, hang=2)
        return [style(line, colour) for line in lines]
    out = [style(" " * indent + f"{sign} {label(key)}:", colour)]
    for marker, text in parts:
        hang = term.cells(marker)
        pieces = term.wrap(text, room - indent - 4 - hang)
        for number, piece in enumerate(pieces):
            lead = marker if number == 0 else " " * hang
            out.append(style(" " * (indent + 4) + lead + piece, colour))
    return out


def _inline(key: str, value: JSONValue) -> str | None:
    parts = paragraphs(key, value)
    if len(parts) != 1 or parts[0][0] or term.cells(parts[0][1]) > _INLINE_MAX:
        return None
    return parts[0][1]


def field_diff(
    before: Mapping[str, JSONValue] | None,
    after: Mapping[str, JSONValue] | None,
    style: term.Style,
    *,
    room: int,
    indent: int = 4,
) -> list[str]:
    """What changed from ``before`` to ``after``: ``~ field: old → new`` for short values,
    ``- field: old`` / ``+ field: new`` otherwise; pending changes as proposed or decided."""
    old, new = before or {}, after or {}
    out: list[str] = []
    for key in ordered({**old, **new}):
        if key in _NOT_DIFFED or old.get(key) == new.get(key):
            continue
        was, now = old.get(key), new.get(key)
        short_was, short_now = _inline(key, was), _inline(key, now)
        if _empty(was):
            out += _diff_item("+", key, now, style, room, indent)
        elif _empty(now):
            out += _diff_item("-", key, was, style, room, indent)
        elif short_was is not None and short_now is not None:
            text = f"~ {label(key)}: {short_was} → {short_now}"
            out += [style(line, "yellow") for line in _lines(text, room, indent=indent, hang=2)]
        else:
            out += _diff_item("-", key, was, style, room, indent)
            out += _diff_item("+", key, now, style, room, indent)
    out += _pending_diff(old.get("pending_changes"), new.get("pending_changes"), style, room)
    return out


def _pending_diff(old: JSONValue, new: JSONValue, style: term.Style, room: int) -> list[str]:
    def by_id(value: JSONValue) -> dict[str, Mapping[str, JSONValue]]:
        items = value if isinstance(value, list) else []
        return {str(c.get("change")): c for c in items if isinstance(c, dict)}

    before, after = by_id(old), by_id(new)
    out: list[str] = []
    for key, change in after.items():
        if key in before:
            continue
        line = f"? proposed {render.visible(render.pending_line(change))}"
        out += [style(piece, "yellow") for piece in _lines(line, room, indent=4, hang=2)]
        fields = change.get("fields")
        for name, value in (fields if isinstance(fields, dict) else {}).items():
            out += _diff_item("+", str(name), value, style, room, 6)
    for key in before:
        if key not in after:
            out.append(style(f"    = decided {render.visible(key)}", "dim"))
    return out


def history_view(
    entry_id: str, records: list[JSONValue], style: term.Style, *, room: int, purged: bool
) -> str:
    """One block per journal record: number, seq, time, op, actor and revision; the reason;
    then the fields it changed (every field, for the record that created the entry)."""
    count = sum(isinstance(record, dict) for record in records)
    title = f"history of {render.visible(entry_id)}: {count} record{'s' * (count != 1)}"
    if purged:
        title += " (purged; only the journal keeps it)"
    out = [style(line, "bold") for line in _lines(title, room, hang=2)]
    number = 0
    for record in records:
        if not isinstance(record, dict):
            continue
        number += 1
        before, after = record.get("before"), record.get("after")
        before = before if isinstance(before, dict) else None
        after = after if isinstance(after, dict) else None
        parts = [
            style(f"#{number}", "bold"),
            style(f"seq {render.visible(str(record.get('seq')))}", "dim"),
            render.visible(str(record.get("at"))),
            style(render.visible(str(record.get("op"))), "bold"),
            f"by {_actor(record.get('actor'))}",
        ]
        if after is not None and after.get("revision") is not None:
            parts.append(f"revision {render.visible(str(after.get('revision')))}")
        out += ["", *flow(parts, room, indent=4)]
        reason = record.get("reason")
        if not _empty(reason):
            out += labelled([("reason", paragraphs("reason", reason), ())], room, style, indent=4)
        if record.get("op") == "record" and after is not None:
            for key, value in ordered(after).items():
                if key not in _NOT_RECORDED and not _empty(value):
                    out += _diff_item("+", key, value, style, room, 4)
        elif after is None:
            out.append(style("    (the entry left the store here)", "dim"))
        else:
            out += field_diff(before, after, style, room=room)
    return "\n".join(out)


def record_lines(result: JSONObject, style: term.Style, *, room: int) -> list[str]:
    """What ``add`` prints: what was recorded, the entry, and any notes."""
    entry = result.get("entry")
    shown_id = render.visible(str(result.get("id")))
    lines = [style(f"recorded {shown_id}", "green")]
    if isinstance(entry, dict) and entry.get("status") == "proposed":
        # Written from an agent's shell (ctxkeeper.cli.agentenv.cli_actor): the same proposal
        # an MCP write makes, and said so, so neither the agent nor a person mistakes it.
        lines[0] += " as a proposal: it awaits a person's review (`ctxkeeper review`)"
    pending = result.get("pending_supersession")
    for item in pending if isinstance(pending, list) else []:
        if isinstance(item, dict):
            old, change = (
                render.visible(str(item.get("id"))),
                render.visible(str(item.get("change"))),
            )
            lines.append(f"{old} stays in force until a person approves change {change}")
    if isinstance(entry, dict):
        lines.append(entry_view(entry, style, room=room))
    lines.extend(similar_lines(result))
    return lines


def emit(args: object, data: JSONValue, text: str) -> int:
    """Print a verb's result: JSON with ``--json``, else its text; exit status 0."""
    print(json_text(data) if getattr(args, "json", False) else text)
    return 0


def json_text(data: JSONValue) -> str:
    """``data`` as indented UTF-8 JSON whose every invisible character is a ``\\u`` escape.

    ``json.dumps`` escapes C0 controls only: a C1 CSI (U+009B) or a bidi override from an
    untrusted store would reach the terminal raw. The escapes parse back to the same value.
    """
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if text.isascii() and "\x7f" not in text:
        return text
    return "".join(
        char if char == "\n" or char.isprintable() else json.dumps(char)[1:-1] for char in text
    )
