"""Whether this process runs under a coding agent: the one check every CLI door asks.

Claude Code sets ``CLAUDECODE``, ``AI_AGENT`` and ``CLAUDE_CODE_SESSION_ID`` in every command
its Bash tool runs, and the ``claude`` process is among that command's ancestors. Either sign
is enough. Under an agent the human verbs refuse, and every other CLI write acts as the agent
(:func:`cli_actor`), exactly as an MCP write does. This stops an agent deciding its own
proposals, or writing in a person's name, by accident or habit; it cannot stop one that sets
out to defeat it from a shell running as the same user (README, "Trust model").
"""

from __future__ import annotations

import os
from typing import Final

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from ctxkeeper.core._types import JSONObject

AGENT_ENV_VARS: Final = ("CLAUDECODE", "AI_AGENT", "CLAUDE_CODE_SESSION_ID")
AGENT_PROCESS_NAMES: Final = frozenset({"claude"})
#: A process tree deeper than this is a loop in what /proc told us, not a real ancestry.
_MAX_DEPTH: Final = 128


def agent_signs(
    environ: Mapping[str, str] | None = None, *, pid: int | None = None, proc: str = "/proc"
) -> list[str]:
    """Every sign that an agent runs this process, worded for the refusal message.

    :param pid: the process whose ancestors are checked (default: this one's parent).
    :param proc: where the process table is mounted; without it only the environment counts.
    """
    env = os.environ if environ is None else environ
    signs = [f"{name} is set" for name in AGENT_ENV_VARS if name in env]
    start = os.getppid() if pid is None else pid
    signs.extend(
        f"process {name!r} (pid {ancestor}) is an ancestor"
        for ancestor, name in ancestors(start, proc=proc)
        if name in AGENT_PROCESS_NAMES
    )
    return signs


def cli_actor(environ: Mapping[str, str] | None = None, *, proc: str = "/proc") -> JSONObject:
    """Who a CLI write acts as: the agent when :func:`agent_signs` finds one (its session id
    where Claude Code gave it), else the person at the terminal.

    The same check the human verbs refuse on, so no CLI verb writes in a person's name from an
    agent's shell: ``add`` there records a proposal, and a change to an entry in force waits
    for a person, as through MCP.
    """
    from ctxkeeper.write.verbs import agent_actor, user_actor

    env = os.environ if environ is None else environ
    if agent_signs(env, proc=proc):
        session = env.get("CLAUDE_CODE_SESSION_ID")
        return agent_actor(session[:255] if session else None)
    return user_actor()


def ancestors(pid: int, *, proc: str = "/proc") -> Iterator[tuple[int, str]]:
    """``pid`` and each parent up to init, with its name: the kernel's ``comm`` and the base
    name of ``argv[0]`` (a node program that set its title shows it in either)."""
    seen: set[int] = set()
    while pid > 0 and pid not in seen and len(seen) < _MAX_DEPTH:
        seen.add(pid)
        stat = _read(os.path.join(proc, str(pid), "stat"))
        if stat is None:
            return
        # comm is in parentheses and may itself hold spaces or ")"; the last ")" ends it.
        open_at, close_at = stat.find("("), stat.rfind(")")
        fields = stat[close_at + 1 :].split()
        if open_at < 0 or close_at < open_at or len(fields) < 2 or not fields[1].isdigit():
            return
        names = {stat[open_at + 1 : close_at]}
        cmdline = _read(os.path.join(proc, str(pid), "cmdline"))
        if cmdline:
            names.add(os.path.basename(cmdline.split("\0", 1)[0]))
        for name in sorted(names):
            yield pid, name
        pid = int(fields[1])


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(65536).decode("utf-8", errors="replace")
    except OSError:  # The process ended, or /proc is absent (macOS): env signs only.
        return None
