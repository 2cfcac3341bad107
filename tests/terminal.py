"""Run the real CLI on a real pseudo-terminal, as a person would, optionally under an agent."""

from __future__ import annotations

import os
import pty
import re
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


class Session:
    """The real CLI on a pseudo-terminal of 80x24, driven step by step as a person would:
    wait for what it shows (``expect``), then type (``type``)."""

    def __init__(
        self,
        project: str,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        command: list[str] | None = None,
    ) -> None:
        """Run ``python -m ctxkeeper ARGV --project-dir PROJECT``, or, given ``command``, that
        command as written in ``project`` (a README line a person types)."""
        import fcntl
        import struct
        import termios

        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.leader = leader
        self.raw = b""
        self.seen = 0
        self.proc = subprocess.Popen(
            command or [sys.executable, "-m", "ctxkeeper", *argv, "--project-dir", project],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            cwd=project if command else REPO_ROOT,
            env=env if env is not None else person_env(COLUMNS="80", TERM="xterm"),
        )
        os.close(follower)

    @property
    def text(self) -> str:
        """Everything shown so far, colour codes stripped, lines ended by \\n."""
        plain = _COLOUR.sub("", self.raw.decode("utf-8", errors="replace"))
        return plain.replace("\r\n", "\n")

    def _read(self, deadline: float) -> bool:
        import select
        import time

        ready, _, _ = select.select([self.leader], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return False
        try:
            chunk = os.read(self.leader, 65536)
        except OSError:  # the child closed the terminal
            chunk = b""
        self.raw += chunk
        return bool(chunk)

    def expect(self, marker: str, timeout: float = 30.0) -> str:
        """Wait for ``marker`` after what was already consumed; return the text up to it."""
        import time

        deadline = time.monotonic() + timeout
        while marker not in self.text[self.seen :]:
            if not self._read(deadline):
                raise AssertionError(f"no {marker!r} within {timeout}s; the screen:\n{self.text}")
        end = self.text.index(marker, self.seen) + len(marker)
        shown, self.seen = self.text[self.seen : end], end
        return shown

    def type(self, keys: str) -> None:
        os.write(self.leader, keys.encode())

    def finish(self, timeout: float = 30.0) -> tuple[int, str]:
        """Read to the end; the exit status and everything shown."""
        import time

        deadline = time.monotonic() + timeout
        while self._read(deadline):
            pass
        os.close(self.leader)
        return self.proc.wait(timeout=timeout), self.text


_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
