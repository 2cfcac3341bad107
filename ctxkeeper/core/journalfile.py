"""The journal file on disk, verified incrementally: a remembered verified prefix keeps reads cheap.

Hashing a 10 MB journal on every read is too slow, and not hashing it lets a hand edit go
unnoticed. The cache ``.context/cache/journal-verified.json`` remembers the file's identity
(inode, size, mtime and ctime in nanoseconds) when its whole chain last verified. While the
file still has that identity it is trusted without reading it; when it only grew in place (a
writer's append) just the new tail is checked; anything else (a hand edit, a replaced or
shortened file, a missing cache) re-verifies the whole chain once. ctime cannot be set back by
a user, and the inode is machine-local, so a cache committed into a repository never matches.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from typing import Final

from ctxkeeper.core import fsutil, journal
from ctxkeeper.core.errors import CorruptFileError, StoreError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject

CACHE_NAME: Final = "journal-verified.json"
_CACHE_VERSION: Final = 1
_IDENTITY: Final = ("ino", "size", "mtime_ns", "ctime_ns")


@dataclass(frozen=True)
class View:
    """The verified journal: its whole transactions end at byte ``size`` after record ``seq``."""

    size: int = 0
    seq: int = 0
    head: str = journal.GENESIS
    file_size: int = 0
    """The file's size, larger than ``size`` when a torn transaction trails it."""


@dataclass
class Scan:
    """A whole-file read: every parsed record and where it ends, and the chain's problems."""

    records: list[JSONObject]
    ends: list[int]
    whole: int
    """How many records form whole transactions (the rest is a torn tail)."""
    problems: list[journal.ChainProblem]
    file_size: int

    @property
    def view(self) -> View:
        if not self.whole:
            return View(file_size=self.file_size)
        last = self.records[self.whole - 1]
        return View(
            size=self.ends[self.whole - 1],
            seq=int(str(last["seq"])),
            head=str(last["hash"]),
            file_size=self.file_size,
        )


def identity(path: str) -> dict[str, int] | None:
    """What tells one state of the file from another without reading it (None: absent)."""
    fsutil.check_not_link(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return {
        "ino": info.st_ino,
        "size": info.st_size,
        "mtime_ns": info.st_mtime_ns,
        "ctime_ns": info.st_ctime_ns,
    }


def scan(path: str) -> Scan:
    """Read and check the whole journal (raises :class:`CorruptFileError` on a bad line)."""
    data = fsutil.read_bytes(path) or b""
    records, ends = journal.parse_lines(data, path)
    whole = len(journal.complete_transactions(records))
    problems = journal.check_chain(records[:whole])
    return Scan(records, ends, whole, problems, len(data))


def raise_problem(path: str, problem: journal.ChainProblem) -> None:
    raise StoreError(
        f"{path}:{problem.line}: {problem.message}. Reads and writes stop here so nothing is "
        "built on a history that changed; run `ctxkeeper doctor` to see what changed and how "
        "to repair it."
    )


def verified_view(path: str, cache_dir: str) -> View:
    """The verified end of the journal; raises :class:`StoreError` naming the line of a break.

    Costs one ``stat`` and one small read while the journal is as last verified.
    """
    now = identity(path)
    if now is None:
        return View()
    cached = _read_cache(cache_dir)
    if cached is not None and all(cached.get(k) == now[k] for k in _IDENTITY):
        return View(int(cached["size"]), int(cached["seq"]), str(cached["head"]), now["size"])
    if cached is not None and cached.get("ino") == now["ino"] and now["size"] > int(cached["size"]):
        grown = _grown(path, cached)
        if grown is not None:
            if grown.size == grown.file_size and identity(path) == now:
                remember(cache_dir, now, grown)
            return grown
    full = scan(path)
    if full.problems:
        raise_problem(path, full.problems[0])
    view = full.view
    if view.size == full.file_size and identity(path) == now:
        remember(cache_dir, now, view)
    return view


def _grown(path: str, cached: dict[str, int | str]) -> View | None:
    """Check only the bytes appended since the cached verification (None: check it all)."""
    start, seq, head = int(cached["size"]), int(cached["seq"]), str(cached["head"])
    try:
        tail_data = read_from(path, start)
        records, ends = journal.parse_lines(tail_data, path)
    except CorruptFileError:
        return None
    whole = len(journal.complete_transactions(records))
    if journal.check_chain(records[:whole], seq=seq, head=head):
        return None
    if not whole:
        return View(start, seq, head, start + len(tail_data))
    last = records[whole - 1]
    return View(
        start + ends[whole - 1], int(str(last["seq"])), str(last["hash"]), start + len(tail_data)
    )


def read_from(path: str, offset: int, end: int | None = None) -> bytes:
    """The journal's bytes from ``offset`` (to ``end``), without reading what comes before."""
    fsutil.check_not_link(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        handle.seek(offset)
        return handle.read() if end is None else handle.read(max(end - offset, 0))


def remember(cache_dir: str, ident: dict[str, int], view: View) -> None:
    """Record that the journal with identity ``ident`` verified up to ``view`` (best effort:
    a cache that cannot be written only costs the next read a full check)."""
    document = {"version": _CACHE_VERSION, **ident, "seq": view.seq, "head": view.head}
    document["size"] = view.size
    with contextlib.suppress(OSError, StoreError):
        os.makedirs(cache_dir, exist_ok=True)
        data = json.dumps(document).encode()
        fsutil.write_atomic(os.path.join(cache_dir, CACHE_NAME), data, durable=False)


def remember_file(path: str, cache_dir: str, view: View) -> None:
    ident = identity(path)
    if ident is not None and ident["size"] == view.size:
        remember(cache_dir, ident, view)


def forget(cache_dir: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(cache_dir, CACHE_NAME))


def _read_cache(cache_dir: str) -> dict[str, int | str] | None:
    try:
        data = fsutil.read_bytes(os.path.join(cache_dir, CACHE_NAME))
        doc = json.loads(data) if data is not None else None
    except (OSError, StoreError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("version") != _CACHE_VERSION:
        return None
    ints = all(isinstance(doc.get(k), int) for k in (*_IDENTITY, "seq"))
    if not ints or not isinstance(doc.get("head"), str):
        return None
    return {k: doc[k] for k in (*_IDENTITY, "seq", "head")}
