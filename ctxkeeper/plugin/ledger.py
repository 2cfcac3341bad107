"""Per-session delivery ledgers: which constraints a session has already been given.

One append-only file per session under ``.context/cache/delivered/``. Each write is a single
``O_APPEND`` write of whole lines, so two tool calls running in parallel never lose each
other's lines (no read-modify-write). ``d <id>`` marks a delivery; ``r`` re-arms: compaction
dropped what the model had read, so only deliveries after the last ``r`` count.

Import-light on purpose (con-001-5f40): ``os`` only.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

LEDGER_DIR = "delivered"
#: Ledgers of sessions untouched for this long are pruned at session start.
MAX_AGE_S = 7 * 24 * 3600
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _safe_part(text: str) -> str:
    if text and len(text) <= 100 and all(ch in _SAFE for ch in text):
        return text
    # Anything else (slashes, dots, odd bytes) is hashed, so it can never name another path.
    value = 2166136261
    for byte in text.encode("utf-8", "surrogatepass"):
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return f"h{value:08x}"


def ledger_path(cache_dir: str, session_id: str, agent_id: str | None = None) -> str:
    """The ledger of one session; a subagent has its own (it never saw the main context)."""
    name = _safe_part(session_id)
    if agent_id:
        name += "~" + _safe_part(agent_id)
    return os.path.join(cache_dir, LEDGER_DIR, name + ".log")


def delivered(path: str) -> set[str]:
    """Ids delivered since the last re-arm."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return set()
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    ids: set[str] = set()
    for line in b"".join(chunks).decode("ascii", "replace").splitlines():
        if line == "r":
            ids.clear()
        elif line.startswith("d "):
            ids.add(line[2:])
    return ids


# dec-014-f195: append-only (O_APPEND) so parallel hooks never lose a mark.
def _append(path: str, text: str) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    if os.path.islink(directory):  # planted by a cloned repository: never write through it
        raise OSError(f"{directory} is a symbolic link; ctxkeeper never writes through links")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
    try:
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)


def mark(path: str, ids: Iterable[str]) -> None:
    """Record deliveries, in one atomic append."""
    text = "".join(f"d {entry_id}\n" for entry_id in ids)
    if text:
        _append(path, text)


def rearm(path: str) -> None:
    """Forget every delivery so far (the context was compacted)."""
    _append(path, "r\n")


def prune(cache_dir: str, now: float) -> None:
    """Remove ledgers of sessions idle for more than a week."""
    directory = os.path.join(cache_dir, LEDGER_DIR)
    if os.path.islink(directory):
        return
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return
    for name in names:
        path = os.path.join(directory, name)
        try:
            if name.endswith(".log") and now - os.lstat(path).st_mtime > MAX_AGE_S:
                os.unlink(path)
        except OSError:
            continue  # Pruned by a parallel session start.
