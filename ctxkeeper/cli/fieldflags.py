"""The entry fields as command-line flags: ``--why-chosen TEXT``, a list field by repeating it.

Shared by ``add`` and the person's ``edit``, so both take the same flags and refuse the same
misplaced ones.
"""

from __future__ import annotations

from typing import Final

from ctxkeeper.core.errors import UsageError
from ctxkeeper.core.model import KIND_FIELDS, kind_specs

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

#: The fields every kind takes besides its own.
COMMON_INPUTS: Final = ("scope", "tags", "related_to", "supersedes", "valid_from", "valid_until")
_COMMON_LISTS: Final = ("scope", "tags", "related_to", "supersedes")


def inputs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every field a flag sets, (one-value fields, list fields): every kind's own, then the
    common ones."""
    own = {f.name: f.is_list for spec in kind_specs() for f in spec.fields}
    scalars = [name for name, is_list in own.items() if not is_list]
    lists = [name for name, is_list in own.items() if is_list]
    common = [name for name in COMMON_INPUTS if name not in _COMMON_LISTS]
    return (*scalars, *common), (*lists, *_COMMON_LISTS)


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def add_flags(parser: argparse.ArgumentParser, *, skip: tuple[str, ...] = ()) -> None:
    """One flag per field; a list field's flag repeats (``--scope a/ --scope b/``)."""
    scalar_inputs, list_inputs = inputs()
    for field in scalar_inputs:
        if field not in skip:
            parser.add_argument(flag(field), dest=field, default=None)
    for field in list_inputs:
        if field not in skip:
            parser.add_argument(flag(field), dest=field, action="append", default=None)


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
