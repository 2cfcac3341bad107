"""The entry fields as command-line flags: ``--why-chosen TEXT``, a list field by repeating it.

Shared by ``add`` and the person's ``edit``, so both take the same flags and refuse the same
misplaced ones.
"""

from __future__ import annotations

from typing import Final

from ctxkeeper.core.errors import UsageError
from ctxkeeper.core.model import KIND_FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

LIST_INPUTS: Final = ("alternatives", "steps", "scope", "tags", "related_to", "supersedes")
SCALAR_INPUTS: Final = (
    "summary",
    "problem",
    "why_chosen",
    "rule",
    "reason",
    "hardness",
    "name",
    "purpose",
    "valid_from",
    "valid_until",
)
#: The fields every kind takes besides its own.
COMMON_INPUTS: Final = ("scope", "tags", "related_to", "supersedes", "valid_from", "valid_until")


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def add_flags(parser: argparse.ArgumentParser, *, skip: tuple[str, ...] = ()) -> None:
    """One flag per field; a list field's flag repeats (``--scope a/ --scope b/``)."""
    for field in SCALAR_INPUTS:
        if field not in skip:
            parser.add_argument(flag(field), dest=field, default=None)
    for field in LIST_INPUTS:
        if field not in skip:
            parser.add_argument(flag(field), dest=field, action="append", default=None)


def given_fields(
    given: Mapping[str, object], kind: str, verb: str, *, extra: tuple[str, ...] = COMMON_INPUTS
) -> dict[str, object]:
    """The fields the flags set; a flag of another kind's field is a usage error."""
    allowed = {*KIND_FIELDS[kind], *extra}
    fields: dict[str, object] = {}
    for field in (*SCALAR_INPUTS, *LIST_INPUTS):
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
