"""Terminal output for people: colour and aligned tables on a terminal, plain text in a pipe.

Colour is on only when stdout is a terminal, ``NO_COLOR`` is unset or empty (no-color.org),
``TERM`` is not ``dumb`` and ``--no-color`` was not given. Every styled string has a plain twin
(``strip``), so tests and pipes see the same text without the escape codes.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import unicodedata
from typing import Final

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO

_CODES: Final = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}
#: How each status reads at a glance.
STATUS_STYLE: Final = {
    "active": "green",
    "proposed": "yellow",
    "superseded": "dim",
    "deprecated": "red",
    "rejected": "red",
}
_ESCAPE: Final = re.compile(r"\x1b\[[0-9;]*m")
DEFAULT_WIDTH: Final = 80


class Style:
    """Whether to colour, decided once per command from the stream and the environment."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: TextIO | None = None, *, no_color: bool = False) -> Style:
        stream = stream if stream is not None else sys.stdout
        isatty = getattr(stream, "isatty", None)
        enabled = (
            not no_color
            and not os.environ.get("NO_COLOR")
            and os.environ.get("TERM") != "dumb"
            and callable(isatty)
            and bool(isatty())
        )
        return cls(enabled)

    def __call__(self, text: str, *styles: str) -> str:
        codes = [_CODES[name] for name in styles if name in _CODES]
        if not self.enabled or not codes:
            return text
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m"

    def status(self, status: str) -> str:
        return self(status, STATUS_STYLE.get(status, ""))


def strip(text: str) -> str:
    """``text`` without colour codes."""
    return _ESCAPE.sub("", text)


def width(stream: TextIO | None = None) -> int:
    """Columns to lay out for: the terminal's, else ``COLUMNS``, else 80."""
    stream = stream if stream is not None else sys.stdout
    try:
        if stream.isatty():
            columns = os.get_terminal_size(stream.fileno()).columns
            if columns > 0:  # a fresh pty or `docker exec` may report 0: fall back below
                return max(40, columns)
    except (AttributeError, OSError, ValueError):
        pass
    return max(40, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def cells(text: str) -> int:
    """Terminal columns ``text`` takes (wide East Asian characters take two; codes none)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in strip(text))


def clip(text: str, room: int) -> str:
    """``text`` cut to ``room`` columns with an ellipsis (plain text only)."""
    if cells(text) <= room:
        return text
    out, used = [], 0
    for char in text:
        size = 2 if unicodedata.east_asian_width(char) in "WF" else 1
        if used + size > room - 1:
            break
        out.append(char)
        used += size
    return "".join(out) + "…"


def table(rows: Sequence[Sequence[str]], *, room: int = DEFAULT_WIDTH, header: bool = True) -> str:
    """Rows aligned in columns; the last column is clipped so each line fits ``room``.

    Cells may carry colour codes: alignment counts what shows, not the codes.
    """
    if not rows:
        return ""
    count = max(len(row) for row in rows)
    widths = [max((cells(row[i]) for row in rows if i < len(row)), default=0) for i in range(count)]
    lines = []
    for number, row in enumerate(rows):
        parts = []
        used = 0
        for index, cell in enumerate(row):
            if index == len(row) - 1:
                plain = strip(cell)
                rest = max(8, room - used)
                parts.append(cell if cells(plain) <= rest else clip(plain, rest))
            else:
                parts.append(cell + " " * (widths[index] - cells(cell) + 2))
                used += widths[index] + 2
        line = "".join(parts).rstrip()
        lines.append(line)
        if header and number == 0:
            lines.append("-" * min(room, max(cells(line), 1)))
    return "\n".join(lines)


def _take(text: str, room: int) -> str:
    """The longest start of ``text`` that fits ``room`` columns (at least one character)."""
    used = 0
    for index, char in enumerate(text):
        used += 2 if unicodedata.east_asian_width(char) in "WF" else 1
        if used > room:
            return text[: max(index, 1)]
    return text


def wrap(text: str, room: int) -> list[str]:
    """Plain ``text`` broken at spaces into lines of at most ``room`` columns.

    Runs of whitespace show as one space; a word longer than a line is cut where the line
    ends. Always at least one line (an empty one for empty text).
    """
    room = max(room, 2)
    lines: list[str] = []
    line, used = "", 0
    for word in text.split():
        size = cells(word)
        if line and used + 1 + size <= room:
            line, used = f"{line} {word}", used + 1 + size
            continue
        if line:
            lines.append(line)
        while size > room:
            head = _take(word, room)
            lines.append(head)
            word = word[len(head) :]
            size = cells(word)
        line, used = word, size
    if line or not lines:
        lines.append(line)
    return lines
