"""The checks every human verb passes first: a person, at an interactive terminal, who said yes.

The one place the CLI decides "is this a person?" (with :func:`ctxkeeper.cli.agentenv.agent_signs`),
so ``approve``, ``reject``, ``lift``, ``purge``, ``review``, ``edit`` and ``deprecate`` refuse alike.
"""

from __future__ import annotations

import sys

from ctxkeeper.core.errors import CancelledError, PersonOnlyError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def refuse_under_agent(verb: str) -> None:
    """Raise :class:`PersonOnlyError` when any sign of a coding agent is found."""
    from ctxkeeper.cli.agentenv import agent_signs

    signs = agent_signs()
    if signs:
        raise PersonOnlyError(
            f"`ctxkeeper {verb}` is for a person: run it in your own terminal, not through a "
            f"coding agent ({'; '.join(signs)}). An agent proposes; a person decides."
        )


def require_terminal(verb: str) -> None:
    """Raise :class:`PersonOnlyError` unless stdin is an interactive terminal."""
    if not sys.stdin.isatty():
        raise PersonOnlyError(
            "this verb needs a person at an interactive terminal; it cannot run from a script or "
            f"an agent: run `ctxkeeper {verb} ...` in your own terminal "
            "(`ctxkeeper review --json` lists what awaits a decision without one)"
        )


def confirm(question: str, ask: Callable[[str], str] = input) -> None:
    """An explicit yes, asked once everything was validated; anything else changes nothing."""
    answer = ask(f"{question} [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        raise CancelledError("cancelled; nothing was changed")
