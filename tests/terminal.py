"""Run the real CLI on a real pseudo-terminal, as a person would, optionally under an agent."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from ctxkeeper.cli.agentenv import AGENT_ENV_VARS, agent_signs
from tests.conftest import REPO_ROOT


def person_env(**extra: str) -> dict[str, str]:
    """This environment without any agent variable, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in AGENT_ENV_VARS}
    env["PYTHONPATH"] = REPO_ROOT
    env.update(extra)
    return env


def require_person_ancestry() -> None:
    """Skip when the test run itself has a ``claude`` ancestor: every human verb refuses there,
    which is the point, so the control runs cannot succeed."""
    if agent_signs({}):
        pytest.skip("the test run is under a `claude` process; human verbs refuse by design")


def on_terminal(
    project: str,
    argv: list[str],
    answer: bytes,
    *,
    env: dict[str, str] | None = None,
    prefix: list[str] | None = None,
) -> tuple[int, str]:
    """Run ``python -m ctxkeeper ARGV --project-dir PROJECT`` with stdin/stdout/stderr on a
    pseudo-terminal, type ``answer``, and return the exit status and everything it printed.

    :param prefix: a launcher to run the CLI under (e.g. a program named ``claude``).
    """
    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "ctxkeeper", *argv, "--project-dir", project]
    proc = subprocess.Popen(
        [*(prefix or []), *command],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=REPO_ROOT,
        env=env if env is not None else person_env(),
    )
    os.close(follower)
    os.write(leader, answer)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    return proc.wait(timeout=30), output.decode(errors="replace")
