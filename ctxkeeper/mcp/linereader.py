"""stdin read through its file descriptor, so the server can ask whether a message is waiting.

``select`` on the descriptor cannot see bytes a ``BufferedReader`` already holds, so asking
"is another request coming?" needs the buffer to be ours. The server asks it after each reply
while it holds deferred writes (dec-025-2cdb): input soon means a burst, which pays the
whole-store rewrites once at its end.
"""

from __future__ import annotations

import os
import select

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, Final

_CHUNK: Final = 64 * 1024


class LineReader:
    """``readline(limit)`` over a file descriptor, plus :meth:`waiting`."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._eof = False

    def readline(self, limit: int = -1) -> bytes:
        """The next line with its newline, at most ``limit`` bytes of it; b"" at EOF."""
        while True:
            end = self._buffer.find(b"\n", 0, limit if limit >= 0 else len(self._buffer))
            if end >= 0:
                return self._take(end + 1)
            if self._eof or 0 <= limit <= len(self._buffer):
                return self._take(len(self._buffer) if limit < 0 else limit)
            chunk = os.read(self._fd, _CHUNK)
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True

    def _take(self, count: int) -> bytes:
        line = bytes(self._buffer[:count])
        del self._buffer[:count]
        return line

    def waiting(self, timeout: float) -> bool:
        """Whether input (or EOF) is there now or arrives within ``timeout`` seconds."""
        if self._buffer or self._eof:
            return True
        ready, _, _ = select.select([self._fd], [], [], timeout)
        return bool(ready)


def line_reader(stream: BinaryIO) -> LineReader | None:
    """A reader of ``stream``'s descriptor when it has one that ``select`` can watch (a pipe
    or a file, on POSIX), before anything was read from it; else None."""
    if os.name != "posix":
        return None
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None  # an in-memory stream (io.BytesIO raises io.UnsupportedOperation)
    return LineReader(fd)
