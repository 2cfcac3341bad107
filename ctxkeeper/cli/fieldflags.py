"""The entry fields as command-line flags: ``--why-chosen TEXT``, a list field by repeating it.

Shared by ``add`` and the person's ``edit``, so both take the same flags and refuse the same
misplaced ones.
"""

from __future__ import annotations

from typing import Final

from ctxkeeper.core.errors import UsageError
from ctxkeeper.core.model import CONTRACT_FLOORS, KIND_FIELDS, kind_spec, kind_specs

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


#: What each field holds, in the words of ``--help``; floors are added from the model.
_FIELD_HELP: Final = {
    "summary": "what was decided, in one line",
    "problem": "what forced a choice",
    "why_chosen": "why this option won",
    "alternatives": "an option not chosen and why it lost; repeat the flag for each",
    "rule": "what must (or must not) be done",
    "reason": "why: the incident or cost behind the rule",
    "hardness": (
        "hard: the agent's first edit of a file in its scope is held back until it has read "
        "the rule; soft: the rule rides along with that edit"
    ),
    "name": "the procedure's name",
    "purpose": "what the procedure achieves and when to run it",
    "steps": "one step, in order; repeat the flag for each",
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
    owner = next((k for k, fields in KIND_FIELDS.items() if field in fields), None)
    text = _FIELD_HELP.get(field) or _prompt(owner, field)
    floors: Mapping[str, int] = CONTRACT_FLOORS.get(owner or "", {})
    if field == "steps":
        floor = f"at least {floors['steps']}, each at least {floors['step']} characters"
    elif field in floors:
        floor = f"at least {floors[field]} characters"
    else:
        floor = ""
    if kind is None:
        prefix = f"{owner}: " if owner else ""
        return prefix + text + (f" ({floor})" if floor else "")
    required = owner == kind and field != "alternatives"
    state = "required" if required else "optional"
    return f"{text} ({state}{'; ' + floor if floor else ''})"


def _prompt(owner: str | None, field: str) -> str:
    """What the kind's spec asks a person for: the help of a field this table does not word."""
    if owner is None:
        return field.replace("_", " ")
    return next(f.prompt for f in kind_spec(owner).fields if f.name == field)


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


#: What ``add KIND --help`` says first, and the example it ends with.
KIND_HELP: Final = {
    "decision": (
        (
            "Record a decision: what was chosen, the problem that forced a choice, why this "
            "option won, and the alternatives that lost."
        ),
        (
            'ctxkeeper add decision --summary "Queue jobs in SQLite in WAL mode" --problem '
            '"The job queue needs durable local storage without running another server" '
            '--why-chosen "SQLite ships with Python and WAL lets readers run beside the single '
            'writer we have" --alternatives "Redis: one more service to run and fail over"'
        ),
    ),
    "constraint": (
        (
            "Record a constraint: a rule and the reason behind it. A hard constraint holds "
            "back the agent's first edit of each file in its scope in a session, with the rule "
            "as the reason, so the agent reads it before the change lands; a soft one rides "
            "along with that edit. Without --scope it covers the whole project."
        ),
        (
            'ctxkeeper add constraint --rule "Never edit a migration that has been applied" '
            '--reason "In March an edited migration left staging and production with '
            'different schemas" --hardness hard --scope db/migrations/'
        ),
    ),
    "pipeline": (
        "Record a pipeline: a named procedure and its steps, in order.",
        (
            'ctxkeeper add pipeline --name Release --purpose "Ship a tagged build to '
            'production with a rollback point ready" --steps "Tag the release commit on main" '
            '--steps "Run the smoke suite against staging"'
        ),
    ),
}
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
