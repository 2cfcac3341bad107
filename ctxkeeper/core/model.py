"""The entry model: kinds, fields, floors, statuses and origins (knows nothing of files)."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Final, Literal, get_args

from ctxkeeper.core.errors import (
    BelowFloorError,
    ControlCharacterError,
    TooLongError,
    UsageError,
    ValidationError,
)
from ctxkeeper.core.scope import normalize_scope
from ctxkeeper.core.text import forbidden_control, readable_length
from ctxkeeper.core.times import check_window, normalize_time, stored_time_problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

Kind = Literal["decision", "constraint", "pipeline"]
Status = Literal["proposed", "active", "superseded", "deprecated", "rejected"]
Origin = Literal["agent", "user", "import"]
Hardness = Literal["hard", "soft"]

KINDS: Final[tuple[str, ...]] = get_args(Kind)
STATUSES: Final[tuple[str, ...]] = get_args(Status)
ORIGINS: Final[tuple[str, ...]] = get_args(Origin)
HARDNESS: Final[tuple[str, ...]] = get_args(Hardness)

#: Entries a hook may deliver and a default read returns.
LIVE_STATUSES: Final = frozenset({"active", "proposed"})
#: Retired entries that later writes and imports consult (DESIGN.md promise 2).
TOMBSTONE_STATUSES: Final = frozenset({"deprecated", "rejected"})

KIND_PREFIX: Final = MappingProxyType({"decision": "dec", "constraint": "con", "pipeline": "pip"})
PREFIX_KIND: Final = MappingProxyType({v: k for k, v in KIND_PREFIX.items()})
#: The largest revision: every JSON reader holds it exactly, and no entry is edited that often.
MAX_REVISION: Final = 2**53 - 1
ID_PATTERN: Final = re.compile(r"^(dec|con|pip)-(\d{3,})-([0-9a-f]{4})$")

#: The text fields each kind must fill, in display order.
TEXT_FIELDS: Final = MappingProxyType(
    {
        "decision": ("summary", "problem", "why_chosen"),
        "constraint": ("rule", "reason"),
        "pipeline": ("name", "purpose"),
    }
)
#: Fields holding a list of strings, per kind.
LIST_FIELDS: Final = MappingProxyType(
    {"decision": ("alternatives",), "constraint": (), "pipeline": ("steps",)}
)
#: Fields of each kind beyond the common ones, in display order.
KIND_FIELDS: Final = MappingProxyType(
    {
        "decision": ("summary", "problem", "why_chosen", "alternatives"),
        "constraint": ("rule", "reason", "hardness"),
        "pipeline": ("name", "purpose", "steps"),
    }
)
#: The contract's floors in characters; ``steps`` counts items and ``step`` is each step's floor.
CONTRACT_FLOORS: Final = MappingProxyType(
    {
        "decision": MappingProxyType({"summary": 20, "problem": 40, "why_chosen": 60}),
        "constraint": MappingProxyType({"rule": 15, "reason": 40}),
        "pipeline": MappingProxyType({"name": 3, "purpose": 40, "steps": 1, "step": 10}),
    }
)
#: Common fields a writer may set.
COMMON_INPUT_FIELDS: Final = ("scope", "tags", "related_to", "valid_from", "valid_until")
#: Fields ``update_entry`` may change; identity, status and provenance are not among them.
EDITABLE_FIELDS: Final = MappingProxyType(
    {kind: (*KIND_FIELDS[kind], *COMMON_INPUT_FIELDS) for kind in KINDS}
)
#: The order fields are written in, so files diff cleanly and read top-down.
FIELD_ORDER: Final = (
    "id",
    "kind",
    "status",
    "origin",
    "summary",
    "rule",
    "name",
    "problem",
    "reason",
    "hardness",
    "purpose",
    "why_chosen",
    "steps",
    "alternatives",
    "scope",
    "tags",
    "related_to",
    "supersedes",
    "superseded_by",
    "status_reason",
    "valid_from",
    "valid_until",
    "created_at",
    "updated_at",
    "verified_at",
    "verified_sha",
    "revision",
)

#: Prose fields that may hold several lines (newline and tab); every other field is one line.
MULTILINE_FIELDS: Final = frozenset({"problem", "why_chosen", "reason", "purpose"})
#: The longest text field, in characters, for every door: the MCP schema's ``maxLength``
#: (tools.py imports it), so the CLI cannot store what MCP could not return.
TEXT_MAX: Final = 20_000
#: The longest item of a list field (a step, an alternative, a scope, a tag) and the most items.
ITEM_MAX: Final = 2_000
LIST_MAX: Final = 50

Floors = dict[str, dict[str, int]]
_TAG_MAX = 40
_MULTILINE_NAMES: Final = ", ".join(sorted(MULTILINE_FIELDS))


def contract_floors() -> Floors:
    """A mutable copy of the contract's floors, for config to raise."""
    return {kind: dict(fields) for kind, fields in CONTRACT_FLOORS.items()}


#: The contract's floors for checks that only read them (clean_fields never changes its floors):
#: built once, as an import checks thousands of entries against them.
_CONTRACT_FLOORS: Final = contract_floors()


def check_kind(kind: object) -> str:
    if kind not in KINDS:
        raise ValidationError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}", field="kind")
    assert isinstance(kind, str)
    return kind


def check_id(entry_id: object) -> str:
    if not isinstance(entry_id, str) or not ID_PATTERN.match(entry_id):
        raise UsageError(
            f"{entry_id!r} is not an entry id; ids look like dec-021-b607, con-010-acde, pip-003-91fe"
        )
    return entry_id


def kind_of_id(entry_id: str) -> str:
    return PREFIX_KIND[check_id(entry_id).split("-", 1)[0]]


def _checked_string(field: str, text: str, maximum: int, *, multiline: bool = False) -> str:
    if len(text) > maximum:
        raise TooLongError(field, len(text), maximum)
    char = forbidden_control(text, multiline=multiline)
    if char is not None:
        raise ControlCharacterError(field, char, multiline_fields=_MULTILINE_NAMES)
    return text.strip()


def _text(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string, got {type(value).__name__}", field=field)
    return _checked_string(field, value, TEXT_MAX, multiline=field in MULTILINE_FIELDS)


def _string_list(field: str, value: object, *, keep_empty: bool = False) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError(f"{field} must be a list of strings", field=field)
    if len(value) > LIST_MAX:
        raise TooLongError(field, len(value), LIST_MAX, unit="items")
    items = [_checked_string(f"{field}[{n}]", item, ITEM_MAX) for n, item in enumerate(value)]
    return items if keep_empty else [item for item in items if item]


def _unique(items: list[str]) -> list[JSONValue]:
    """Deduplicate keeping first occurrences, typed as a JSON list (lists are invariant)."""
    out: list[JSONValue] = []
    out.extend(dict.fromkeys(items))
    return out


def _check_floor(kind: str, field: str, text: str, floors: Floors, *, label: str = "") -> None:
    minimum = floors[kind].get(field, 0)
    # Counted as a reader reads it: forty zero-width spaces or dots explain nothing.
    length = readable_length(text) if minimum else 0
    if length < minimum:
        raise BelowFloorError(kind, label or field, length, minimum)


def _clean_scopes(items: list[str], root: str | None, notes: list[str] | None) -> JSONValue:
    scopes = [normalize_scope(item, root) for item in items]
    if "" not in scopes:
        return _unique(scopes)
    # "." (or "", "./") means the whole project, which an empty list already says; stored as
    # [""] it would cover every file while looking like a narrow scope.
    if notes is not None:
        notes.append(
            "scope: "
            + ", ".join(repr(item) for item, scope in zip(items, scopes, strict=True) if not scope)
            + " means the whole project; stored as project-wide (an empty scope list)"
        )
    return []


def _clean_common(
    field: str, value: object, root: str | None = None, notes: list[str] | None = None
) -> JSONValue:
    if field in ("valid_from", "valid_until"):
        if value is None:
            return None
        return normalize_time(_text(field, value), field=field)
    if field == "scope":
        # An empty string is a spelling of the whole project here, not a blank to skip.
        return _clean_scopes(_string_list(field, value, keep_empty=True), root, notes)
    items = _string_list(field, value)
    if field == "tags":
        tags = [item.lower() for item in items]
        for number, tag in enumerate(tags):
            if len(tag) > _TAG_MAX or any(ch.isspace() for ch in tag):
                # A long tag is not echoed: it may be a pasted value rather than a word.
                shown = repr(tag) if len(tag) <= _TAG_MAX else f"#{number + 1} ({len(tag)} chars)"
                raise ValidationError(
                    f"tag {shown} must be one word of at most {_TAG_MAX} characters", field="tags"
                )
        return _unique(tags)
    return _unique([_related_id(number, item) for number, item in enumerate(items)])


def _related_id(number: int, item: str) -> str:
    # check_id's message names the value only; a writer needs to know which field held it.
    try:
        return check_id(item)
    except UsageError as exc:
        raise UsageError(f"related_to[{number}]: {exc}") from None


def clean_fields(
    kind: str,
    fields: Mapping[str, object],
    floors: Floors,
    *,
    root: str | None = None,
    notes: list[str] | None = None,
) -> JSONObject:
    """Validate and normalise a writer's fields for ``kind``; floors apply to every text field.

    Lengths are measured as read (:func:`ctxkeeper.core.text.readable_length`); every field is capped
    at :data:`TEXT_MAX` (list items at :data:`ITEM_MAX`) and refuses control characters.

    :param root: the project root, so that an absolute scope inside it is stored repo-relative.
    :param notes: receives what was normalised in a way the writer should be told about.
    :raise ValidationError: an unknown or mistyped field, or a field below its floor
        (:class:`BelowFloorError` names the field, its length and the minimum), too long
        (:class:`TooLongError`) or holding a control character (:class:`ControlCharacterError`).
    """
    allowed = EDITABLE_FIELDS[kind]
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        raise ValidationError(
            f"{kind} has no field {', '.join(map(repr, unknown))}; its fields are {', '.join(allowed)}",
            field=unknown[0],
        )
    clean: JSONObject = {}
    for field in TEXT_FIELDS[kind]:
        if field not in fields:
            raise ValidationError(f"{kind} needs {field!r}", field=field)
        text = _text(field, fields[field])
        _check_floor(kind, field, text, floors)
        clean[field] = text
    if kind == "constraint":
        hardness = fields.get("hardness")
        if hardness not in HARDNESS:
            raise ValidationError(
                f"constraint needs hardness 'hard' (the first edit of a covered file is stopped "
                f"until the rule is read) or 'soft' (the rule rides along); got {hardness!r}",
                field="hardness",
            )
        clean["hardness"] = hardness
    if kind == "decision":
        clean["alternatives"] = _unique(
            _string_list("alternatives", fields.get("alternatives", []))
        )
    if kind == "pipeline":
        steps = _string_list("steps", fields.get("steps", []))
        minimum = floors["pipeline"]["steps"]
        if len(steps) < minimum:
            raise BelowFloorError("pipeline", "steps", len(steps), minimum, unit="steps")
        for index, step in enumerate(steps):
            _check_floor("pipeline", "step", step, floors, label=f"steps[{index}]")
        clean["steps"] = [*steps]
    for field in COMMON_INPUT_FIELDS:
        default: object = None if field.startswith("valid_") else []
        clean[field] = _clean_common(field, fields.get(field, default), root, notes)
    check_window(clean["valid_from"], clean["valid_until"])
    return clean


def ordered(entry: Mapping[str, JSONValue]) -> JSONObject:
    """The entry with its fields in :data:`FIELD_ORDER` (unknown fields kept, at the end)."""
    out: JSONObject = {key: entry[key] for key in FIELD_ORDER if key in entry}
    out.update({key: value for key, value in entry.items() if key not in out})
    return out


def revision_of(entry: Mapping[str, JSONValue]) -> int:
    """The entry's revision number; 1 when a hand edit left it missing or mistyped."""
    revision = entry.get("revision")
    return revision if isinstance(revision, int) else 1


def new_entry(
    kind: str,
    clean: JSONObject,
    *,
    entry_id: str,
    status: str,
    origin: str,
    at: str,
    supersedes: list[str] | None = None,
) -> JSONObject:
    """A complete entry from already-cleaned fields (see :func:`clean_fields`)."""
    entry: JSONObject = {
        "id": entry_id,
        "kind": kind,
        "status": status,
        "origin": origin,
        **clean,
        "supersedes": list(supersedes or []),
        "superseded_by": None,
        "status_reason": None,
        "created_at": at,
        "updated_at": at,
        "verified_at": None,
        "verified_sha": None,
        "revision": 1,
    }
    return ordered(entry)


def editable_view(entry: Mapping[str, object]) -> dict[str, object]:
    """The writer-settable fields of a stored entry, the base an update is applied to."""
    kind = str(entry["kind"])
    return {field: entry[field] for field in EDITABLE_FIELDS[kind] if field in entry}


def arriving_problems(entry: Mapping[str, object]) -> list[str]:
    """What is wrong with an entry another clone sends: :func:`stored_problems` and the
    validity window the write path refuses, since an import must accept nothing a write would
    not (a hand edit already in this store is only reported, its bad bounds read as absent)."""
    problems = stored_problems(entry)
    entry_id = entry.get("id")
    for name in ("valid_from", "valid_until"):
        problem = stored_time_problem(entry.get(name))
        if problem:
            problems.append(f"{entry_id}: {name}: {problem}")
    if not problems:
        try:
            check_window(entry.get("valid_from"), entry.get("valid_until"))
        except ValidationError as exc:
            problems.append(f"{entry_id}: {exc}")
    return problems


def stored_problems(entry: Mapping[str, object]) -> list[str]:
    """What is wrong with a stored entry (for doctor and import); empty when it is sound."""
    problems: list[str] = []
    entry_id = entry.get("id")
    if not isinstance(entry_id, str) or not ID_PATTERN.match(entry_id):
        return [f"bad id {entry_id!r}"]
    if entry.get("kind") not in KINDS:
        return [f"{entry_id}: bad kind {entry.get('kind')!r}"]
    if entry.get("status") not in STATUSES:
        problems.append(f"{entry_id}: bad status {entry.get('status')!r}")
    if entry.get("origin") not in ORIGINS:
        problems.append(f"{entry_id}: bad origin {entry.get('origin')!r}")
    revision = entry.get("revision")
    if not isinstance(revision, int) or isinstance(revision, bool):
        problems.append(f"{entry_id}: revision must be an integer")
    elif not 1 <= revision <= MAX_REVISION:
        # A huge revision would win every later fold of concurrent versions (teamlog.resolve).
        problems.append(f"{entry_id}: revision must be between 1 and {MAX_REVISION}")
    kind = str(entry["kind"])
    # A validity bound that does not parse is treated as absent; doctor notes it separately.
    view = {k: v for k, v in editable_view(entry).items() if k not in ("valid_from", "valid_until")}
    try:
        clean_fields(kind, view, _CONTRACT_FLOORS)
    except (ValidationError, UsageError) as exc:
        problems.append(f"{entry_id}: {exc}")
    return problems
