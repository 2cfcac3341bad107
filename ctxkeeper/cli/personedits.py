"""The person's own ``edit`` and ``deprecate``: change or retire an entry from a terminal.

The agent changes entries through MCP (``update_entry``, ``deprecate_entry``), where a change to
an entry in force waits for a person. A person needs the same verbs without that wait and
without hand-editing ``entries.json`` (which, found by any process but theirs, is the agent's):
these run only at an interactive terminal, never under an agent, with the same floors, secret
scan and tombstone checks as the agent's, and ask ``[y/N]`` after showing what changes.
"""

from __future__ import annotations

import sys
from typing import cast

from ctxkeeper.cli import fieldflags, persongate, views
from ctxkeeper.core.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.store import Store

#: ``edit`` takes every field but ``supersedes`` (a successor is recorded with ``add``).
_EDIT_EXTRA = tuple(f for f in fieldflags.COMMON_INPUTS if f != "supersedes")


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    edit = sub.add_parser(
        "edit",
        parents=[common],
        help="change fields of an entry, as the person you are (terminal only)",
        description="Change an entry's fields: each flag replaces that field (a list field takes "
        "the flag once per item; --scope . makes it project-wide). Floors and the secret scan "
        "apply as for `add`. Shows the change and asks [y/N].",
    )
    edit.add_argument("id")
    # Not --reason: that flag is a constraint's own field, as in `add`.
    edit.add_argument(
        "--why", dest="why", required=True, metavar="TEXT", help="why it changes (journaled)"
    )
    fieldflags.add_flags(edit, skip=("supersedes",))
    deprecate = sub.add_parser(
        "deprecate",
        parents=[common],
        help="retire an entry with a reason; it becomes a tombstone (terminal only)",
    )
    deprecate.add_argument("id")
    deprecate.add_argument("--reason", dest="why", required=True, metavar="TEXT")
    deprecate.add_argument("--superseded-by", dest="superseded_by", metavar="ID")


def _person_store(args: argparse.Namespace, verb: str) -> Store:
    from ctxkeeper.core.store import Store
    from ctxkeeper.write.verbs import user_actor

    persongate.refuse_under_agent(verb)
    persongate.require_terminal(verb)
    store = Store.open(args.project_dir, writer=user_actor())
    store.require()
    return store


def _asker(args: argparse.Namespace) -> Callable[[str], str]:
    """``input``; with ``--json`` the prompt goes to stderr, so stdout holds only the JSON."""

    def ask(prompt: str) -> str:
        print(prompt, end="", file=sys.stderr if args.json else sys.stdout, flush=True)
        return input()

    return ask


def edit(args: argparse.Namespace) -> int:
    from ctxkeeper.core.model import check_id
    from ctxkeeper.read import render
    from ctxkeeper.write.verbs import UPDATE_REASON_FLOOR, require_reason, update_entry, user_actor

    store = _person_store(args, "edit")
    entry_id = check_id(args.id)
    current = store.get(entry_id)
    updates = fieldflags.given_fields(vars(args), str(current["kind"]), "edit", extra=_EDIT_EXTRA)
    if not updates:
        raise UsageError(f"give the fields to change, e.g. `ctxkeeper edit {entry_id} --tags x`")
    why = require_reason(args.why, UPDATE_REASON_FLOOR, "edit")
    diff = render.field_diff(current, {**current, **cast("JSONObject", updates)})
    out = sys.stderr if args.json else sys.stdout
    print("\n".join([f"edit {render.one_line(current)}", *diff]), file=out)
    persongate.confirm("apply this edit?", _asker(args))
    result = update_entry(store, entry_id, updates, why, actor=user_actor())
    changed = result["changed"]
    named = ", ".join(map(str, changed)) if isinstance(changed, list) else ""
    return views.emit(args, result, f"edited {entry_id}: {named}")


def deprecate(args: argparse.Namespace) -> int:
    from ctxkeeper.core.model import check_id
    from ctxkeeper.read import render
    from ctxkeeper.write.verbs import (
        DEPRECATE_REASON_FLOOR,
        deprecate_entry,
        require_reason,
        user_actor,
    )

    store = _person_store(args, "deprecate")
    entry_id = check_id(args.id)
    current = store.get(entry_id)
    why = require_reason(args.why, DEPRECATE_REASON_FLOOR, "deprecate")
    out = sys.stderr if args.json else sys.stdout
    print(f"deprecate (retire as a tombstone): {render.one_line(current)}", file=out)
    persongate.confirm("deprecate it?", _asker(args))
    result = deprecate_entry(
        store, entry_id, why, actor=user_actor(), superseded_by=args.superseded_by
    )
    return views.emit(args, result, f"deprecated {entry_id}: later writes are checked against it")


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"edit": edit, "deprecate": deprecate}
