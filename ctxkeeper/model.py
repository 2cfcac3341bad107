"""The entry model: kinds, fields, floors, statuses and origins (knows nothing of files)."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Final, Literal, get_args

from ctxkeeper.errors import BelowFloorError, UsageError, ValidationError
from ctxkeeper.scope import normalize_scope
from ctxkeeper.times import check_window, normalize_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper._types import JSONObject, JSONValue

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

Floors = dict[str, dict[str, int]]
_TAG_MAX = 40


def contract_floors() -> Floors:
    """A mutable copy of the contract's floors, for config to raise."""
    return {kind: dict(fields) for kind, fields in CONTRACT_FLOORS.items()}


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


def _text(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string, got {type(value).__name__}", field=field)
    return value.strip()


def _string_list(field: str, value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError(f"{field} must be a list of strings", field=field)
    return [item.strip() for item in value if item.strip()]


def _unique(items: list[str]) -> list[JSONValue]:
    """Deduplicate keeping first occurrences, typed as a JSON list (lists are invariant)."""
    out: list[JSONValue] = []
    out.extend(dict.fromkeys(items))
    return out


def _check_floor(kind: str, field: str, text: str, floors: Floors, *, label: str = "") -> None:
    minimum = floors[kind].get(field, 0)
    if len(text) < minimum:
        raise BelowFloorError(kind, label or field, len(text), minimum)


def _clean_common(field: str, value: object) -> JSONValue:
    if field in ("valid_from", "valid_until"):
        if value is None:
            return None
        return normalize_time(_text(field, value), field=field)
    items = _string_list(field, value)
    if field == "scope":
        return _unique([normalize_scope(item) for item in items])
    if field == "tags":
        tags = [item.lower() for item in items]
        for tag in tags:
            if len(tag) > _TAG_MAX or any(ch.isspace() for ch in tag):
                raise ValidationError(
                    f"tag {tag!r} must be one word of at most {_TAG_MAX} characters", field="tags"
                )
        return _unique(tags)
    return _unique([check_id(item) for item in items])


def clean_fields(kind: str, fields: Mapping[str, object], floors: Floors) -> JSONObject:
    """Validate and normalise a writer's fields for ``kind``; floors apply to every text field.

    :raise ValidationError: an unknown or mistyped field, or a field below its floor
        (:class:`BelowFloorError` names the field, its length and the minimum).
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
        clean[field] = _clean_common(field, fields.get(field, default))
    check_window(clean["valid_from"], clean["valid_until"])
    return clean


def ordered(entry: Mapping[str, JSONValue]) -> JSONObject:
    """The entry with its fields in :data:`FIELD_ORDER` (unknown fields kept, at the end)."""
    out: JSONObject = {key: entry[key] for key in FIELD_ORDER if key in entry}
    out.update({key: value for key, value in entry.items() if key not in out})
    return out


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
    if not isinstance(entry.get("revision"), int):
        problems.append(f"{entry_id}: revision must be an integer")
    kind = str(entry["kind"])
    # A validity bound that does not parse is treated as absent; doctor notes it separately.
    view = {k: v for k, v in editable_view(entry).items() if k not in ("valid_from", "valid_until")}
    try:
        clean_fields(kind, view, contract_floors())
    except (ValidationError, UsageError) as exc:
        problems.append(f"{entry_id}: {exc}")
    return problems
