"""The entry fields as command-line flags: ``--why-chosen TEXT``, a list field by repeating it.

Shared by ``add`` and the person's ``edit``, so both take the same flags and refuse the same
misplaced ones.
"""

from __future__ import annotations

from typing import Final

from ctxkeeper.core.errors import UsageError
from ctxkeeper.core.model import KIND_FIELDS, kind_spec, kind_specs

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

#: The fields every kind takes besides its own.
COMMON_INPUTS: Final = (
    "asked_as",
    "scope",
    "tags",
    "related_to",
    "supersedes",
    "valid_from",
    "valid_until",
)
_COMMON_LISTS: Final = ("asked_as", "scope", "tags", "related_to", "supersedes")


def inputs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every field a flag sets, (one-value fields, list fields): every kind's own, then the
    common ones."""
    own = {f.name: f.is_list for spec in kind_specs() for f in spec.fields}
    scalars = [name for name, is_list in own.items() if not is_list]
    lists = [name for name, is_list in own.items() if is_list]
    common = [name for name in COMMON_INPUTS if name not in _COMMON_LISTS]
    return (*scalars, *common), (*lists, *_COMMON_LISTS)


#: What each common field holds, in the words of ``--help``; a kind's own fields say theirs in
#: their spec (``FieldSpec.help``).
_COMMON_HELP: Final = {
    "scope": (
        "a repository-relative file or directory the entry governs (src/billing/ or "
        "db/schema.sql); repeat for more; none means the whole project"
    ),
    "asked_as": (
        "a way a teammate or agent would ask for this or describe its symptom, in their words "
        "(3-120 characters); repeat for each, up to 8"
    ),
    "tags": "a tag to find it by; repeat for more",
    "related_to": "the id of a related entry (dec-021-b607); repeat for more",
    "supersedes": "the id of an entry this one replaces; repeat for more",
    "valid_from": "in force from this ISO-8601 UTC time; a bare date (2026-01-31) is that day",
    "valid_until": "in force until this ISO-8601 UTC time; a bare date is through that day",
}
_METAVARS: Final = {
    "hardness": "hard|soft",
    "related_to": "ID",
    "supersedes": "ID",
    "valid_from": "TIME",
    "valid_until": "TIME",
    "scope": "PATH",
    "tags": "TAG",
}


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def field_help(field: str, kind: str | None = None) -> str:
    """A field's ``--help`` line: what it holds, whether ``kind`` requires it, its floor.

    Without ``kind`` (``edit``, which takes any kind's fields) it names the kind it belongs
    to instead of requiring it.
    """
    owner = next((spec for spec in kind_specs() if field in spec.field_names), None)
    own = next((f for f in owner.fields if f.name == field), None) if owner else None
    if own is None:
        text, floor = _COMMON_HELP.get(field, field.replace("_", " ")), ""
    else:
        text = own.help or own.prompt
        if own.item_key:
            floor = f"at least {own.floor}, each at least {own.item_floor} characters"
        else:
            floor = f"at least {own.floor} characters" if own.floor else ""
    if kind is None:
        prefix = f"{owner.name}: " if owner else ""
        return prefix + text + (f" ({floor})" if floor else "")
    state = "required" if field in kind_spec(kind).required_fields else "optional"
    return f"{text} ({state}{'; ' + floor if floor else ''})"


def add_flags(
    parser: argparse.ArgumentParser, *, skip: tuple[str, ...] = (), kind: str | None = None
) -> None:
    """One flag per field; a list field's flag repeats (``--scope a/ --scope b/``).

    :param kind: only that kind's own fields and the common ones, each saying whether it is
        required; otherwise every kind's fields, each naming its kind.
    """
    wanted = None if kind is None else {*KIND_FIELDS[kind], *COMMON_INPUTS}
    scalar_inputs, list_inputs = inputs()
    for field in (*scalar_inputs, *list_inputs):
        if field in skip or (wanted is not None and field not in wanted):
            continue
        parser.add_argument(
            flag(field),
            dest=field,
            default=None,
            action="append" if field in list_inputs else "store",
            metavar=_METAVARS.get(field, "TEXT"),
            help=field_help(field, kind),
        )


FLOORS_NOTE: Final = (
    "Floors count characters as read; .context/config.json may raise them. A person's entry "
    "is active at once; run under an agent, it is a proposal awaiting a person's review."
)


def given_fields(
    given: Mapping[str, object], kind: str, verb: str, *, extra: tuple[str, ...] = COMMON_INPUTS
) -> dict[str, object]:
    """The fields the flags set; a flag of another kind's field is a usage error."""
    allowed = {*KIND_FIELDS[kind], *extra}
    fields: dict[str, object] = {}
    for field in (*inputs()[0], *inputs()[1]):
        value = given.get(field)
        if value is None:
            continue
        if field not in allowed:
            takes = ", ".join(KIND_FIELDS[kind])
            raise UsageError(
                f"{flag(field)} is not a {kind} field; {kind} takes {takes} "
                f"(see `ctxkeeper {verb} --help`)"
            )
        fields[field] = value
    return fields
