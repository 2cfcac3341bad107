"""A large snapshot's checks, run in a second process while this one merges it.

Most of a large import's time goes to the checks an untrusted file needs (floors on every
entry line, every time, the secret scan) and to sealing the events into the journal: work
that does not depend on each other. So the checks run in another interpreter, on the same
bytes, while this process merges and seals without them; nothing is written until that
process's verdict is in (dec-028-9044). The verdict is the one :func:`parse` gives here, by
the same code: the first bad line and what is wrong with it. When no verdict arrives (the
process could not start, died, or read other bytes than these), the checks run here instead,
so the answer never depends on the second process.

The second process runs this package's own code by its path, with ``-I -S``: neither the
project directory nor any environment variable can put other code in its way.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Final

from ctxkeeper.core.errors import SnapshotError
from ctxkeeper.core.snapshotformat import MAX_BYTES, parse

#: Files smaller than this are checked here: starting an interpreter costs more than the
#: checks of a few hundred entries save. (1,000 entries with 5,000 events take 4.7 MB.)
CHECK_ELSEWHERE_BYTES: Final = 8 * 1024 * 1024
#: How long the checks may take elsewhere before they are run here instead: far beyond the
#: few seconds the largest file takes.
_PATIENCE_SECONDS: Final = 600.0
_PACKAGE_ROOT: Final = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BOOT: Final = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from ctxkeeper.write.importcheck import main; main(sys.argv[2])"
)


def _processors() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0))
    return os.cpu_count() or 1


class Checker:
    """The checks of one snapshot file, running in another process."""

    def __init__(
        self, path: str, data: bytes, sha256: str, process: subprocess.Popen[bytes]
    ) -> None:
        self._path = path
        self._data = data
        self._sha256 = sha256
        self._process = process
        self._waited = False
        self._error: SnapshotError | None = None

    @classmethod
    def start(cls, path: str, data: bytes, sha256: str) -> Checker | None:
        """Start checking the file at ``path``, whose bytes are ``data`` (of this SHA-256);
        None when it is better checked here (small, one processor, no interpreter to start)."""
        if len(data) < CHECK_ELSEWHERE_BYTES or _processors() < 2 or not sys.executable:
            return None
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOT, _PACKAGE_ROOT, path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            return None
        return cls(path, data, sha256, process)

    def verdict(self) -> None:
        """Wait for the checks; raise the :class:`SnapshotError` they found (each call
        raises the same one)."""
        if not self._waited:
            self._error, self._waited = self._wait(), True
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        """Stop the other process if it is still running (an import that failed early)."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.communicate()

    def _wait(self) -> SnapshotError | None:
        try:
            out, _ = self._process.communicate(timeout=_PATIENCE_SECONDS)
        except subprocess.TimeoutExpired:
            self.close()
            out = b""
        answer = _answer(out)
        if answer is None or answer.get("sha256") != self._sha256:
            return _checked_here(self._path, self._data)  # no verdict on these bytes
        line, detail = answer.get("line"), answer.get("detail")
        if isinstance(detail, str):
            return SnapshotError(self._path, line if isinstance(line, int) else None, detail)
        return None


def _answer(out: bytes) -> dict[str, object] | None:
    try:
        answer = json.loads(out)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def _checked_here(path: str, data: bytes) -> SnapshotError | None:
    try:
        parse(data, path)
    except SnapshotError as exc:
        return exc
    return None


def main(path: str) -> None:
    """The second process: check the file and print the verdict as one JSON line."""
    import gc

    gc.disable()  # as the import does: parse builds objects that form no cycles
    with open(path, "rb") as handle:
        data = handle.read(MAX_BYTES + 1)  # a larger file is not the one the import read
    answer: dict[str, object] = {"sha256": hashlib.sha256(data).hexdigest()}
    error = _checked_here(path, data)
    if error is not None:
        answer.update(line=error.line, detail=error.detail)
    sys.stdout.write(json.dumps(answer) + "\n")
