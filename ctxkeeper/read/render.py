"""Plain-text renderings of entries and histories, shared by the CLI and the MCP server.

Every stored string passes through :func:`visible` on its way out: entries are untrusted
(an agent wrote them, or someone edited ``entries.json`` by hand), and an escape sequence or a
bidirectional override would make a reviewer's terminal show a rule other than the stored one.
"""

from __future__ import annotations

import textwrap

from ctxkeeper.core.model import KINDS, kind_spec, multiline_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONValue

# What a terminal would act on or hide instead of showing: controls (ESC, CR, BEL, NUL, C1),
# format characters (bidi overrides and isolates, zero-width characters), line and paragraph
# separators, surrogates and private-use code points.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})
# Continuation lines of a multi-line value get a prefix no field line has, so a value cannot
# fake a line of its own ("  rule: ..." inside a reason).
_CONTINUATION = "\n      | "


# con-008-6b2d: every human-facing rendering escapes through here.
def visible(text: str, *, multiline: bool = False) -> str:
    """Return text with every control or invisible character shown as ``<U+001B>``.

    :param multiline: keep newlines and tabs (prose fields); otherwise they are escaped too.
    """
    if text.isprintable() and not (multiline and "\n" in text):
        return text
    import unicodedata  # Only text that needs escaping pays for it.

    out = []
    for char in text:
        if multiline and char in "\n\t":
            out.append(_CONTINUATION if char == "\n" else char)
        elif unicodedata.category(char) in _HIDDEN_CATEGORIES:
            out.append(f"<U+{ord(char):04X}>")
        else:
            out.append(char)
    return "".join(out)


def headline_field(entry: Mapping[str, JSONValue]) -> str:
    """The field that names ``entry`` in one line (its kind's headline; ``id`` if no kind)."""
    kind = entry.get("kind")
    return kind_spec(kind).headline if isinstance(kind, str) and kind in KINDS else "id"


def prose_fields() -> frozenset[str]:
    """Prose fields whose line breaks are kept (as continuation lines)."""
    return multiline_fields() | {"status_reason"}


_LABELS = {
    "why_chosen": "why chosen",
    "status_reason": "status reason",
    "superseded_by": "superseded by",
    "related_to": "related to",
    "valid_from": "valid from",
    "valid_until": "valid until",
    "pending_changes": "pending changes",
    "asked_as": "asked as",
}


def headline(entry: Mapping[str, JSONValue]) -> str:
    return visible(str(entry.get(headline_field(entry), "")))


def status_label(entry: Mapping[str, JSONValue]) -> str:
    """The status as a reader needs it: unreviewed and retired entries say so."""
    status = visible(str(entry.get("status")))
    if status == "proposed":
        return "proposed, unreviewed"
    if status == "superseded":
        return f"superseded by {visible(str(entry.get('superseded_by')))}"
    return status


def one_line(entry: Mapping[str, JSONValue], *, width: int = 100) -> str:
    hardness = f" {visible(str(entry['hardness']))}" if entry.get("kind") == "constraint" else ""
    head = f"{visible(str(entry.get('id')))} [{status_label(entry)}{hardness}] "
    return textwrap.shorten(head + headline(entry), width=width, placeholder="...")


def _value(value: JSONValue, *, multiline: bool = False) -> str:
    if isinstance(value, list):
        return "; ".join(visible(str(item)) for item in value) if value else "(none)"
    return "(none)" if value is None else visible(str(value), multiline=multiline)


def relevance_line(result: Mapping[str, JSONValue]) -> str:
    """The head of a ``get_context`` answer: how relevant the best match is, the band it falls
    in, and the distinctive words of the question it leaves out (see read/coverage.py); in the
    words the agent reads in the tool's note (read/guidance.py)."""
    from ctxkeeper.read import guidance

    line = f"top_relevance {result.get('top_relevance')}"
    if result.get("no_confident_match"):
        line += f" - {guidance.NOTHING_CONFIDENT}"
    elif result.get("weak_match"):
        line += f" - {guidance.WEAK}"
    return "\n".join([line, *(visible(s) for s in guidance.missing_sentences(result))])


def terms_line(item: Mapping[str, JSONValue]) -> str:
    """One result's match with the query: the words it matched and the distinctive ones it
    does not cover (it may name them only among rejected alternatives or paths); empty when
    the query had no words."""
    matched, missing = _strings(item.get("matched_terms")), _strings(item.get("missing_terms"))
    if not matched and not missing:
        return ""
    parts = [f"matches {_words(matched, 'and')}"] if matched else []
    parts += [f"does not cover {_words(missing)}"] if missing else []
    return "\n  (" + "; ".join(parts) + ")"


def _strings(value: JSONValue) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _words(words: list[str], conjunction: str = "or") -> str:
    shown = [visible(w) for w in words]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} {conjunction} {shown[-1]}"


def pending_line(change: Mapping[str, JSONValue]) -> str:
    """One pending change, as a reader of the entry needs it (see ``ctxkeeper.core.changes``)."""
    actor = change.get("actor")
    who = actor.get("origin") if isinstance(actor, dict) else "?"
    what = str(change.get("op"))
    fields = change.get("fields")
    if isinstance(fields, dict):
        what += f" of {', '.join(fields)}"
    if change.get("successor"):
        what += f" by {change.get('successor')}"
    return f"{change.get('change')}: {what}, proposed by {who}, awaiting a person"


def block(entry: Mapping[str, JSONValue], *, fields: tuple[str, ...] | None = None) -> str:
    """A multi-line view of an entry; list fields are bulleted."""
    prose = prose_fields()
    lines = [one_line(entry, width=200)]
    shown = fields or tuple(key for key in entry if key not in ("id", "status"))
    for key in shown:
        value = entry.get(key)
        if value in (None, [], "") and key not in ("scope",):
            continue
        label = visible(_LABELS.get(key, key))
        if key == "pending_changes" and isinstance(value, list):
            lines.append(f"  {label} (the fields above stay in force until a person decides):")
            lines.extend(f"    {pending_line(c)}" for c in value if isinstance(c, dict))
        elif key == "scope" and not value:
            lines.append(f"  {label}: (project-wide)")
        elif isinstance(value, list) and key in ("steps", "alternatives"):
            lines.append(f"  {label}:")
            lines.extend(f"    {n}. {visible(str(item))}" for n, item in enumerate(value, start=1))
        elif isinstance(value, list) and key == "asked_as":
            # A phrasing may hold a semicolon; one a line keeps each whole.
            lines.append(f"  {label}:")
            lines.extend(f"    - {visible(str(item))}" for item in value)
        else:
            lines.append(f"  {label}: {_value(value, multiline=key in prose)}")
    return "\n".join(lines)


def field_diff(
    before: Mapping[str, JSONValue] | None, after: Mapping[str, JSONValue] | None
) -> list[str]:
    """Changed fields as ``- old`` / ``+ new`` lines, skipping bookkeeping fields.

    Pending changes are told as one ``? proposed`` or ``= decided`` line each, not as a diff of
    the raw list.
    """
    prose = prose_fields()
    skip = {"updated_at", "revision", "pending_changes"}
    old = before or {}
    new = after or {}
    lines: list[str] = []
    for key in [*old, *(k for k in new if k not in old)]:
        if key in skip or old.get(key) == new.get(key):
            continue
        label = visible(_LABELS.get(key, key))
        if key in old:
            lines.append(f"  - {label}: {_value(old.get(key), multiline=key in prose)}")
        if key in new:
            lines.append(f"  + {label}: {_value(new.get(key), multiline=key in prose)}")
    lines.extend(_pending_diff(old.get("pending_changes"), new.get("pending_changes")))
    return lines


def _pending_diff(old: JSONValue, new: JSONValue) -> list[str]:
    def by_id(value: JSONValue) -> dict[str, Mapping[str, JSONValue]]:
        items = value if isinstance(value, list) else []
        return {str(c.get("change")): c for c in items if isinstance(c, dict)}

    before, after = by_id(old), by_id(new)
    lines = [f"  ? proposed {pending_line(c)}" for key, c in after.items() if key not in before]
    lines.extend(f"  = decided {key}" for key in before if key not in after)
    for key, change in after.items():
        fields = change.get("fields")
        if key not in before and isinstance(fields, dict):
            lines.extend(f"      {name}: {_value(value)}" for name, value in fields.items())
    return lines


def history(records: list[JSONValue]) -> str:
    """One block per revision: when, what, who and why, then the field diff."""
    out: list[str] = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            continue
        actor = record.get("actor")
        who = "?"
        if isinstance(actor, dict):
            who = visible(str(actor.get("origin")))
            detail = actor.get("user") or actor.get("session_id")
            who += f" ({visible(str(detail))})" if detail else ""
        reason = (
            f": {visible(str(record['reason']), multiline=True)}" if record.get("reason") else ""
        )
        at, op = visible(str(record.get("at"))), visible(str(record.get("op")))
        out.append(f"#{number} {at} {op} by {who}{reason}")
        before = record.get("before")
        after = record.get("after")
        diff = field_diff(
            before if isinstance(before, dict) else None,
            after if isinstance(after, dict) else None,
        )
        if record.get("op") == "record":
            diff = (
                [f"  + {line}" for line in block(after).splitlines()[1:]]
                if isinstance(after, dict)
                else []
            )
        out.extend(diff)
    return "\n".join(out)
