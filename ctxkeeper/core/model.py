"""The entry model: the kind table, fields, floors, statuses and origins (knows nothing of files).

Each kind is one frozen :class:`KindSpec` in a registry: its id prefix, its fields with their
floors, the field that names an entry (headline) and the one that says why (rationale), the
fields similarity compares, its CLI prompts, its line of the ``record_entry`` description and
its search weights. The id pattern, the MCP schemas, the CLI flags and prompts, doctor,
rendering, quality, similarity, the text index, coverage and the projections read the table,
so adding a kind is adding a spec (ARCHITECTURE.md, "adding an entry kind"). The tables below
(:data:`KINDS`, :data:`TEXT_FIELDS`, ...) are live views of the registry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Final, Literal, TypeVar, get_args, overload

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
    from collections.abc import Callable, Iterator

    from ctxkeeper.core._types import JSONObject, JSONValue

Status = Literal["proposed", "active", "superseded", "deprecated", "rejected"]
Origin = Literal["agent", "user", "import"]
Hardness = Literal["hard", "soft"]

STATUSES: Final[tuple[str, ...]] = get_args(Status)
ORIGINS: Final[tuple[str, ...]] = get_args(Origin)
HARDNESS: Final[tuple[str, ...]] = get_args(Hardness)

#: Entries a hook may deliver and a default read returns.
LIVE_STATUSES: Final = frozenset({"active", "proposed"})
#: Retired entries that later writes and imports consult (DESIGN.md promise 2).
TOMBSTONE_STATUSES: Final = frozenset({"deprecated", "rejected"})

#: The largest revision: every JSON reader holds it exactly, and no entry is edited that often.
MAX_REVISION: Final = 2**53 - 1


@dataclass(frozen=True)
class FieldSpec:
    """One field of a kind: its shape, floor, prompt and how much search counts it."""

    name: str
    #: What the CLI asks a person for (a list field with a floor is asked item by item).
    prompt: str
    #: The contract's floor: readable characters of a text, or items of a list.
    floor: int = 0
    #: A list field: each item's floor, under the floor name :attr:`item_key`.
    item_floor: int = 0
    item_key: str = ""
    is_list: bool = False
    #: A list whose order is its meaning (steps): kept as given, shown numbered.
    sequence: bool = False
    #: A choice field: the values, and what each means (said when the value is wrong).
    choices: tuple[str, ...] = ()
    choices_help: str = ""
    #: Prose that may hold several lines (newline and tab); every other field is one line.
    multiline: bool = False
    #: How much a term found here counts in the text index (read/textindex.py).
    search_weight: float = 0.0
    #: How much a query word found here counts towards covering it (read/coverage.py).
    coverage_credit: float = 0.0
    #: The label projections and views show.
    label: str = ""
    #: What it holds, in the words of the CLI's ``--help`` (floors are added from the spec).
    help: str = ""

    @property
    def shown_as(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()


@dataclass(frozen=True)
class KindSpec:
    """One entry kind: everything the doors, checks, search and projections know of it."""

    name: str
    #: The id prefix: ``dec`` in ``dec-021-b607``.
    prefix: str
    #: Its section title in DECISIONS.md and the rules files ("Decisions").
    title: str
    fields: tuple[FieldSpec, ...]
    #: The field that names an entry in one line.
    headline: str
    #: The field that says why.
    rationale: str
    #: The rationale's label in a rules file, where one line is all there is room for.
    rationale_label: str
    #: What similarity compares: what an entry is (primary) and why (secondary).
    similar_primary: tuple[str, ...]
    similar_secondary: tuple[str, ...]
    #: Its line of the ``record_entry`` description (MCP): fields and floors, briefly.
    mcp_line: str
    #: Listed in the Claude Code rules files (``export rules``).
    in_rules: bool = False
    #: A field whose words all name a choice (a pipeline's name), for similarity's slots.
    named_by: str = ""
    #: Where its section sits in DECISIONS.md and the rules files (lower first).
    projection_rank: int = 9
    #: What ``ctxkeeper add KIND --help`` says first, and the example it ends with.
    about: str = ""
    example: str = ""

    @cached_property
    def field_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.fields)

    @cached_property
    def text_fields(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields if not f.is_list and not f.choices)

    @cached_property
    def required_fields(self) -> tuple[str, ...]:
        """What a writer must give: the texts, the choices and the lists with a floor."""
        return tuple(f.name for f in self.fields if not f.is_list or f.floor)

    @cached_property
    def floors(self) -> Mapping[str, int]:
        out: dict[str, int] = {}
        for spec in self.fields:
            if spec.floor or not (spec.is_list or spec.choices):
                out[spec.name] = spec.floor
            if spec.item_key:
                out[spec.item_key] = spec.item_floor
        return out

    def field(self, name: str) -> FieldSpec | None:
        return next((spec for spec in self.fields if spec.name == name), None)

    def choice(self) -> FieldSpec | None:
        """The kind's choice field (a constraint's hardness), shown before its headline."""
        return next((spec for spec in self.fields if spec.choices), None)


DECISION: Final = KindSpec(
    name="decision",
    prefix="dec",
    title="Decisions",
    fields=(
        FieldSpec(
            "summary",
            "summary: what was decided, in one line",
            help="what was decided, in one line",
            floor=20,
            search_weight=3.0,
            coverage_credit=1.0,
        ),
        FieldSpec(
            "problem",
            "problem: what forced a choice",
            help="what forced a choice",
            floor=40,
            multiline=True,
            search_weight=1.5,
            coverage_credit=1.0,
        ),
        FieldSpec(
            "why_chosen",
            "why chosen: why this option won",
            help="why this option won",
            floor=60,
            multiline=True,
            search_weight=1.0,
            coverage_credit=0.5,
        ),
        FieldSpec(
            "alternatives",
            "alternative",
            is_list=True,
            search_weight=0.6,
            help="an option not chosen and why it lost; repeat the flag for each",
        ),
    ),
    headline="summary",
    rationale="why_chosen",
    rationale_label="Why",
    similar_primary=("summary",),
    similar_secondary=("problem",),
    mcp_line="decision: summary 20+ chars, problem 40+, why_chosen 60+, alternatives.",
    in_rules=True,
    projection_rank=1,
    about=(
        "Record a decision: what was chosen, the problem that forced a choice, why this "
        "option won, and the alternatives that lost."
    ),
    example=(
        'ctxkeeper add decision --summary "Queue jobs in SQLite in WAL mode" --problem '
        '"The job queue needs durable local storage without running another server" '
        '--why-chosen "SQLite ships with Python and WAL lets readers run beside the single '
        'writer we have" --alternatives "Redis: one more service to run and fail over"'
    ),
)
CONSTRAINT: Final = KindSpec(
    name="constraint",
    prefix="con",
    title="Constraints",
    fields=(
        FieldSpec(
            "rule",
            "rule: what must (or must not) be done",
            help="what must (or must not) be done",
            floor=15,
            search_weight=3.0,
            coverage_credit=1.0,
        ),
        FieldSpec(
            "reason",
            "reason: the incident or cost behind the rule",
            help="why: the incident or cost behind the rule",
            floor=40,
            multiline=True,
            search_weight=1.0,
            coverage_credit=1.0,
        ),
        FieldSpec(
            "hardness",
            "hardness: hard (stops the first edit until read) or soft",
            help=(
                "hard: the agent's first edit of a file in its scope is held back until it has "
                "read the rule; soft: the rule rides along with that edit"
            ),
            choices=HARDNESS,
            choices_help=(
                "'hard' (the first edit of a covered file is stopped until the rule is read) "
                "or 'soft' (the rule rides along)"
            ),
        ),
    ),
    headline="rule",
    rationale="reason",
    rationale_label="Reason",
    similar_primary=("rule",),
    similar_secondary=("reason",),
    mcp_line="constraint: rule 15+, reason 40+ (the incident), hardness.",
    in_rules=True,
    projection_rank=0,
    about=(
        "Record a constraint: a rule and the reason behind it. A hard constraint holds "
        "back the agent's first edit of each file in its scope in a session, with the rule "
        "as the reason, so the agent reads it before the change lands; a soft one rides "
        "along with that edit. Without --scope it covers the whole project."
    ),
    example=(
        'ctxkeeper add constraint --rule "Never edit a migration that has been applied" '
        '--reason "In March an edited migration left staging and production with '
        'different schemas" --hardness hard --scope db/migrations/'
    ),
)
PIPELINE: Final = KindSpec(
    name="pipeline",
    prefix="pip",
    title="Pipelines",
    fields=(
        FieldSpec(
            "name",
            "name",
            floor=3,
            search_weight=3.0,
            coverage_credit=1.0,
            help="the procedure's name",
        ),
        FieldSpec(
            "purpose",
            "purpose: what the procedure achieves and when to run it",
            help="what the procedure achieves and when to run it",
            floor=40,
            multiline=True,
            search_weight=1.5,
            coverage_credit=1.0,
        ),
        FieldSpec(
            "steps",
            "step",
            floor=1,
            item_floor=10,
            item_key="step",
            is_list=True,
            sequence=True,
            search_weight=0.8,
            coverage_credit=1.0,
            help="one step, in order; repeat the flag for each",
        ),
    ),
    headline="name",
    rationale="purpose",
    rationale_label="Purpose",
    similar_primary=("name", "purpose"),
    similar_secondary=(),
    mcp_line="pipeline: name, purpose 40+, steps 10+ each.",
    named_by="name",
    projection_rank=2,
    about="Record a pipeline: a named procedure and its steps, in order.",
    example=(
        'ctxkeeper add pipeline --name Release --purpose "Ship a tagged build to '
        'production with a rollback point ready" --steps "Tag the release commit on main" '
        '--steps "Run the smoke suite against staging"'
    ),
)

#: The kinds by name, in display order. Change it only through :func:`register_kind`.
_REGISTRY: dict[str, KindSpec] = {spec.name: spec for spec in (DECISION, CONSTRAINT, PIPELINE)}


def kind_specs() -> tuple[KindSpec, ...]:
    """Every kind, in display order."""
    return tuple(_REGISTRY.values())


def kind_spec(kind: str) -> KindSpec:
    """The spec of ``kind``; a ``KeyError`` for a name that is not a kind."""
    return _REGISTRY[kind]


def register_kind(spec: KindSpec) -> None:
    """Add a kind (its name and prefix unused) to every door, check and projection."""
    if spec.name in _REGISTRY or spec.prefix in PREFIX_KIND:
        raise ValueError(f"kind {spec.name!r} or prefix {spec.prefix!r} is taken")
    if not re.fullmatch(r"[a-z]{3}", spec.prefix):
        raise ValueError(f"an id prefix is three lowercase letters, not {spec.prefix!r}")
    _REGISTRY[spec.name] = spec
    _kinds_changed()


def unregister_kind(name: str) -> None:
    """Remove a kind :func:`register_kind` added (tests that add one take it away)."""
    del _REGISTRY[name]
    _kinds_changed()


_T = TypeVar("_T")


def _is_kind(value: object) -> bool:
    # A value from a hand-edited or hostile file may be a list or an object: not hashable.
    return isinstance(value, str) and value in _REGISTRY


class KindTable(Mapping[str, _T]):
    """A read-only mapping of kind name to one thing its spec says, current with the registry."""

    def __init__(self, pick: Callable[[KindSpec], _T]) -> None:
        self._pick = pick

    def __getitem__(self, kind: str) -> _T:
        if not _is_kind(kind):
            raise KeyError(kind)
        return self._pick(_REGISTRY[kind])

    def __contains__(self, kind: object) -> bool:
        return _is_kind(kind)

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(_REGISTRY))

    def __len__(self) -> int:
        return len(_REGISTRY)


class _KindNames(Sequence[str]):
    """The kind names in display order, current with the registry."""

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return tuple(_REGISTRY)[index]

    def __len__(self) -> int:
        return len(_REGISTRY)

    def __contains__(self, kind: object) -> bool:
        return _is_kind(kind)

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(_REGISTRY))


class _PrefixKinds(Mapping[str, str]):
    """Kind names by id prefix, current with the registry."""

    def __getitem__(self, prefix: str) -> str:
        for spec in _REGISTRY.values():
            if spec.prefix == prefix:
                return spec.name
        raise KeyError(prefix)

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(spec.prefix for spec in _REGISTRY.values()))

    def __len__(self) -> int:
        return len(_REGISTRY)


class _IdPattern:
    """The id pattern (``dec-021-b607``) over the registered prefixes: ``match`` and
    ``fullmatch`` as a compiled pattern has them, groups prefix, sequence and suffix."""

    def __init__(self) -> None:
        self._compiled = self._compile()

    @staticmethod
    def _compile() -> re.Pattern[str]:
        prefixes = "|".join(sorted(re.escape(spec.prefix) for spec in _REGISTRY.values()))
        return re.compile(rf"^({prefixes})-(\d{{3,}})-([0-9a-f]{{4}})$")

    def refresh(self) -> None:
        self._compiled = self._compile()

    @property
    def pattern(self) -> str:
        return self._compiled.pattern

    def match(self, text: str) -> re.Match[str] | None:
        return self._compiled.match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self._compiled.fullmatch(text)


KINDS: Final[Sequence[str]] = _KindNames()
KIND_PREFIX: Final[Mapping[str, str]] = KindTable(lambda spec: spec.prefix)
PREFIX_KIND: Final[Mapping[str, str]] = _PrefixKinds()
ID_PATTERN: Final = _IdPattern()
#: The text fields each kind must fill, in display order.
TEXT_FIELDS: Final[Mapping[str, tuple[str, ...]]] = KindTable(lambda spec: spec.text_fields)
#: Fields holding a list of strings, per kind.
LIST_FIELDS: Final[Mapping[str, tuple[str, ...]]] = KindTable(
    lambda spec: tuple(f.name for f in spec.fields if f.is_list)
)
#: Fields of each kind beyond the common ones, in display order.
KIND_FIELDS: Final[Mapping[str, tuple[str, ...]]] = KindTable(lambda spec: spec.field_names)
#: The contract's floors in characters; ``steps`` counts items and ``step`` is each step's floor.
CONTRACT_FLOORS: Final[Mapping[str, Mapping[str, int]]] = KindTable(lambda spec: spec.floors)
#: Common fields a writer may set.
COMMON_INPUT_FIELDS: Final = (
    "asked_as",
    "scope",
    "tags",
    "related_to",
    "valid_from",
    "valid_until",
)
#: Common fields an entry holds only when they say something: omitted when empty, so an entry
#: without them (every entry written before they existed) keeps its bytes.
OPTIONAL_FIELDS: Final = frozenset({"asked_as"})
#: Fields that change no rule (how an entry is asked for): an agent sets them directly under
#: any review policy, journaled as its update (DESIGN.md, "Entry").
RULE_FREE_FIELDS: Final = frozenset({"asked_as"})
#: Fields ``update_entry`` may change; identity, status and provenance are not among them.
EDITABLE_FIELDS: Final[Mapping[str, tuple[str, ...]]] = KindTable(
    lambda spec: (*spec.field_names, *COMMON_INPUT_FIELDS)
)
_HEAD_FIELDS: Final = ("id", "kind", "status", "origin")
_TAIL_FIELDS: Final = (
    "asked_as",
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
#: The order fields are written in, so files diff cleanly and read top-down: an entry of a
#: known kind has its kind's fields in spec order between these (see :func:`ordered`).
FIELD_ORDER: Final = (
    *_HEAD_FIELDS,
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
    *_TAIL_FIELDS,
)


def multiline_fields() -> frozenset[str]:
    """Prose fields that may hold several lines, of every kind."""
    return frozenset(f.name for spec in _REGISTRY.values() for f in spec.fields if f.multiline)


class FieldWeights(Mapping[str, float]):
    """A weight per field name over every kind (``pick`` reads it from a field's spec) and the
    ``common`` fields, current with the registry. Heaviest first (ties: the common fields, then
    the kinds in order), so a sum over an entry's fields always runs in the same order."""

    def __init__(self, pick: Callable[[FieldSpec], float], common: Mapping[str, float]) -> None:
        self._pick = pick
        self._common = dict(common)
        self._made_at = -1
        self._weights: dict[str, float] = {}

    def _current(self) -> dict[str, float]:
        if self._made_at != _generation:
            weights = dict(self._common)
            for spec in _REGISTRY.values():
                for field_spec in spec.fields:
                    weight = self._pick(field_spec)
                    if weight and field_spec.name not in weights:
                        weights[field_spec.name] = weight
            self._weights = dict(sorted(weights.items(), key=lambda item: -item[1]))
            self._made_at = _generation
        return self._weights

    def __getitem__(self, name: str) -> float:
        return self._current()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())


def _kinds_changed() -> None:
    global _CONTRACT_FLOORS, _MULTILINE, _MULTILINE_NAMES, _generation
    _generation += 1
    ID_PATTERN.refresh()
    _CONTRACT_FLOORS = contract_floors()
    _MULTILINE = multiline_fields()
    _MULTILINE_NAMES = ", ".join(sorted(_MULTILINE))
    global _ORDER
    # A registered kind's own fields go after the built-in kinds' ones.
    own = [f for spec in _REGISTRY.values() for f in spec.field_names if f not in FIELD_ORDER]
    middle = FIELD_ORDER[len(_HEAD_FIELDS) : -len(_TAIL_FIELDS)]
    _ORDER = (*_HEAD_FIELDS, *middle, *dict.fromkeys(own), *_TAIL_FIELDS)


#: The longest text field, in characters, for every door: the MCP schema's ``maxLength``
#: (tools.py imports it), so the CLI cannot store what MCP could not return.
TEXT_MAX: Final = 20_000
#: The longest item of a list field (a step, an alternative, a scope, a tag) and the most items.
ITEM_MAX: Final = 2_000
LIST_MAX: Final = 50

Floors = dict[str, dict[str, int]]
_TAG_MAX = 40
#: ``asked_as``: each phrasing is a question or a symptom in a few words, not prose (a long
#: one would drown the entry's own fields in the text index); a handful of them is the point.
ASKED_MIN: Final = 3
ASKED_MAX: Final = 120
ASKED_ITEMS: Final = 8


def contract_floors() -> Floors:
    """A mutable copy of the contract's floors, for config to raise."""
    return {kind: dict(fields) for kind, fields in CONTRACT_FLOORS.items()}


#: Built once per registry change: an import checks thousands of entries against the floors,
#: and every text against the multiline fields.
_CONTRACT_FLOORS: Floors = {}
_MULTILINE: frozenset[str] = frozenset()
_MULTILINE_NAMES = ""
#: Counts registry changes, for what is derived from it lazily (:class:`FieldWeights`).
_generation = 0
#: :data:`FIELD_ORDER` with the fields of registered kinds (see :func:`ordered`).
_ORDER: tuple[str, ...] = FIELD_ORDER
_kinds_changed()


def check_kind(kind: object) -> str:
    if not _is_kind(kind):
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
    return _checked_string(field, value, TEXT_MAX, multiline=field in _MULTILINE)


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
    if field == "asked_as":
        return _phrasings(items)
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


def _phrasings(items: list[str]) -> JSONValue:
    """``asked_as``: each at least 3 characters as read and at most 120 as stored, at most
    eight (no floor: config raises none of this); a phrasing given twice is kept once."""
    phrasings = _unique(items)
    if len(phrasings) > ASKED_ITEMS:
        raise ValidationError(
            f"asked_as has {len(phrasings)} phrasings; keep the {ASKED_ITEMS} most likely",
            field="asked_as",
        )
    for number, item in enumerate(phrasings):
        # Short is measured as read (dots or one letter repeated say nothing); long as stored.
        length = readable_length(str(item)) if len(str(item)) <= ASKED_MAX else len(str(item))
        if not ASKED_MIN <= length <= ASKED_MAX:
            raise ValidationError(
                f"asked_as[{number}] has {length} characters; a phrasing is a question or "
                f"symptom of {ASKED_MIN}-{ASKED_MAX} characters",
                field=f"asked_as[{number}]",
            )
    return phrasings


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
    for spec in _REGISTRY[kind].fields:
        clean[spec.name] = _clean_own(kind, spec, fields, floors)
    for field in COMMON_INPUT_FIELDS:
        default: object = None if field.startswith("valid_") else []
        clean[field] = _clean_common(field, fields.get(field, default), root, notes)
        if field in OPTIONAL_FIELDS and not clean[field]:
            del clean[field]
    check_window(clean["valid_from"], clean["valid_until"])
    return clean


def _clean_own(
    kind: str, spec: FieldSpec, fields: Mapping[str, object], floors: Floors
) -> JSONValue:
    """One of the kind's own fields, checked against its spec and floor."""
    name = spec.name
    if spec.choices:
        value = fields.get(name)
        if value not in spec.choices:
            raise ValidationError(
                f"{kind} needs {name} {spec.choices_help}; got {value!r}", field=name
            )
        return str(value)
    if spec.is_list:
        items = _string_list(name, fields.get(name, []))
        minimum = floors[kind].get(name, 0)
        if len(items) < minimum:
            raise BelowFloorError(kind, name, len(items), minimum, unit=name)
        if spec.item_key:
            for index, item in enumerate(items):
                _check_floor(kind, spec.item_key, item, floors, label=f"{name}[{index}]")
        return [*items] if spec.sequence else _unique(items)
    if name not in fields:
        raise ValidationError(f"{kind} needs {name!r}", field=name)
    text = _text(name, fields[name])
    _check_floor(kind, name, text, floors)
    return text


def ordered(entry: Mapping[str, JSONValue]) -> JSONObject:
    """The entry with its fields in :data:`FIELD_ORDER` (unknown fields kept, at the end)."""
    out: JSONObject = {key: entry[key] for key in _ORDER if key in entry}
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


def with_fields(current: Mapping[str, JSONValue], clean: Mapping[str, JSONValue]) -> JSONObject:
    """``current`` with cleaned fields applied: an optional field :func:`clean_fields` left
    out (emptied) goes, rather than keeping its old value."""
    out: JSONObject = {
        key: value for key, value in current.items() if key not in OPTIONAL_FIELDS or key in clean
    }
    out.update(clean)
    return out


def changed_fields(current: Mapping[str, JSONValue], clean: Mapping[str, JSONValue]) -> list[str]:
    """The names whose value ``clean`` changes, an emptied optional field among them."""
    names = {*clean, *(key for key in OPTIONAL_FIELDS if key in current)}
    return sorted(name for name in names if current.get(name) != clean.get(name))


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
    if not _is_kind(entry.get("kind")):
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
    # Every writer leaves an empty optional field out; kept, it would change the entry's bytes.
    problems.extend(
        f"{entry_id}: {name} is empty; leave it out instead"
        for name in sorted(OPTIONAL_FIELDS)
        if entry.get(name) == []
    )
    kind = str(entry["kind"])
    # A validity bound that does not parse is treated as absent; doctor notes it separately.
    view = {k: v for k, v in editable_view(entry).items() if k not in ("valid_from", "valid_until")}
    try:
        clean_fields(kind, view, _CONTRACT_FLOORS)
    except (ValidationError, UsageError) as exc:
        problems.append(f"{entry_id}: {exc}")
    return problems
