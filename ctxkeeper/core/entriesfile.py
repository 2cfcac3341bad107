"""``entries.json``: the store's entries as one document, parsed, rendered and digested.

The document holds every entry, one per line and sorted by id (dec-024-d431), with where in
the journal it stands (``seq``, ``head``, ``bytes``) and the digest of everything after its
``"entries":`` key, which its writer put there: a file whose digest no longer matches was
edited by hand (dec-010-0702). What to do about that, and every lock and journal matter, is
the store's (:mod:`ctxkeeper.core.store`); this module only reads and writes the bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Final

from ctxkeeper.core import fsutil, journal
from ctxkeeper.core.documents import parse_document
from ctxkeeper.core.errors import StoreError
from ctxkeeper.core.model import ordered

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject, JSONValue

STORE_VERSION: Final = 1
ENTRIES_FILE: Final = "entries.json"
#: The identity of an entry file on disk: path, inode, size, modification time.
FileKey = tuple[str, int, int, int]
_ENTRIES_MARKER: Final = b'\n  "entries": '
_DIGEST_PLACEHOLDER: Final = "?" * 64
_SEPARATORS: Final = (", ", ": ")
_LINE_START: Final = b'    {"id": '


def file_key(path: str) -> FileKey | None:
    """The identity of the file at ``path`` (None: there is none)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (path, info.st_ino, info.st_size, info.st_mtime_ns)


@dataclass
class State:
    """The entries as of journal record ``seq``, plus where the journal ends."""

    entries: dict[str, JSONObject] = field(default_factory=dict)
    seq: int = 0
    head: str = journal.GENESIS
    journal_bytes: int = 0
    hand_edited: bool = False
    """``entries.json`` no longer matches the digest its last writer put in it."""
    duplicates: list[str] = field(default_factory=list)
    """Ids that appear more than once in ``entries.json`` (reads see the last copy)."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Malformed entries left out of reads, with why (``load`` only; doctor reports them)."""
    purged: dict[str, JSONObject] = field(default_factory=dict)
    """Purged ids, each with the digest of its value, so a re-record of it is still refused."""
    source: str = ""
    """SHA-256 of ``entries.json`` after its ``"entries":`` key (empty: not read from a file),
    which keys the caches derived from the entries."""
    servable: bool = field(default=False, compare=False, repr=False)
    """Every entry is known to be servable (see :func:`_readable`): no check needed."""
    sequences: dict[str, int] | None = field(default=None, compare=False, repr=False)
    """The highest id sequence per kind prefix among the entries seen, once asked for."""


def parse_entries_document(data: bytes, path: str) -> State:
    """Parse ``entries.json``; a file that does not parse names its line and column."""
    doc = parse_document(data, path, version=STORE_VERSION)
    meta = doc.get("journal")
    entries = doc.get("entries")
    if not isinstance(meta, dict) or not isinstance(entries, list):
        raise StoreError(f"{path}: needs a 'journal' object and an 'entries' list")
    state = State(
        seq=_int(meta.get("seq"), path),
        head=str(meta.get("head", journal.GENESIS)),
        journal_bytes=_int(meta.get("bytes"), path),
    )
    digest = _entries_digest(data)
    state.source = digest or ""
    state.hand_edited = meta.get("entries_sha256") != digest
    purged = doc.get("purged", {})
    if not isinstance(purged, dict):
        raise StoreError(f"{path}: 'purged' must be an object of purged ids")
    state.purged = {str(k): v for k, v in purged.items() if isinstance(v, dict)}
    for position, entry in enumerate(entries):
        entry_id = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not isinstance(entry_id, str):
            raise StoreError(f"{path}: entries[{position}] is not an entry with an 'id'")
        if entry_id in state.entries:
            # Every reader keeps the first copy, as the hooks' scope index does, so what
            # `show` prints is what the gate delivers until doctor's report is acted on.
            state.duplicates.append(entry_id)
            continue
        state.entries[entry_id] = entry
    return state


def _entries_digest(data: bytes) -> str | None:
    """SHA-256 of the bytes after the top-level ``"entries":`` key, as the writer laid them out.

    Hashing the raw bytes costs milliseconds for 10 MB, where re-serialising would cost a full
    JSON dump; any change (even reformatting) just sends the next write to the exact comparison.
    """
    at = data.find(_ENTRIES_MARKER)
    if at < 0:
        return None
    with memoryview(data) as view:  # no copy of a 10 MB tail
        return hashlib.sha256(view[at + len(_ENTRIES_MARKER) :]).hexdigest()


def _int(value: JSONValue, path: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise StoreError(f"{path}: journal seq and bytes must be non-negative integers")
    return value


def _line(value: JSONValue) -> bytes:
    """One value on one line with readable separators, by the C encoder (``indent`` would
    send ``json.dumps`` to the pure-Python one, which cost most of a write at 10,000 entries)."""
    return json.dumps(value, ensure_ascii=False, separators=_SEPARATORS).encode()


def render_entries_document(state: State) -> bytes:
    """Stable JSON for hand edits: one entry per line (dec-024-d431), sorted by id, fields in
    model order, carrying the digest that lets the next write notice a hand edit."""
    return b"".join(render(state, None)[0])


def render(
    state: State, previous: tuple[FileKey, State] | None
) -> tuple[list[bytes], dict[str, tuple[JSONObject, bytes]], str]:
    """The document's parts, each entry's line with the value a parse of that line gives, and
    the digest the document carries.

    :param previous: the file this replaces (its identity) and its parse. The lines of the
        entries it already holds are reused (see :func:`_lines_on_disk`), so a write encodes
        only the entries it changed:
        stored entries are never changed in place (readers share them), so an entry that is
        the same object as the one parsed from that file has the same line.
    """
    lines = _encoded(state, previous)
    meta: JSONObject = {
        "seq": state.seq,
        "head": state.head,
        "bytes": state.journal_bytes,
        "entries_sha256": _DIGEST_PLACEHOLDER,
    }
    tail = _block(b"[", b"]", [line for _, line in lines.values()])
    if state.purged:
        # After the entries, so the digest that notices hand edits covers it too.
        purged = [_line(key) + b": " + _line(state.purged[key]) for key in sorted(state.purged)]
        tail.append(b',\n  "purged": ')
        tail.extend(_block(b"{", b"}", purged))
    tail.append(b"\n}\n")
    # The digest of what follows the marker, hashed part by part (no copy of the whole file).
    hashed = hashlib.sha256()
    for part in tail:
        hashed.update(part)
    meta["entries_sha256"] = hashed.hexdigest()
    head = b'{\n  "version": %d,\n  "journal": ' % STORE_VERSION + _line(meta) + b","
    return [head, _ENTRIES_MARKER, *tail], lines, str(meta["entries_sha256"])


def _encoded(
    state: State, previous: tuple[FileKey, State] | None
) -> dict[str, tuple[JSONObject, bytes]]:
    """Each entry, sorted by id, as a parse of its line gives it (the *canonical* value), with
    the line; lines are reused from the ``previous`` file for unchanged entries."""
    # Read back from the file, not kept in memory between writes: a second copy of every
    # entry's text would cost a long-running server 8 MB at 10,000 entries.
    reused = _lines_on_disk(*previous) if previous is not None else {}
    lines: dict[str, tuple[JSONObject, bytes]] = {}
    fresh: list[str] = []
    for key in sorted(state.entries):
        entry = state.entries[key]
        cached = reused.get(key)
        if cached is None or cached[0] is not entry:
            fresh.append(key)
            cached = (entry, _line(ordered(entry)))
        lines[key] = cached
    if fresh:
        # One decode for all the new lines: what a reader parsing the file will hold.
        values = json.loads(b"[" + b",".join(lines[key][1] for key in fresh) + b"]")
        for key, value in zip(fresh, values, strict=True):
            lines[key] = (value, lines[key][1])
    return lines


def _lines_on_disk(key: FileKey, parsed: State) -> dict[str, tuple[JSONObject, bytes]]:
    """The lines of the entry file ``key`` names as its writer left them, each with the entry
    ``parsed`` holds for it, while the file is still that one, laid out one entry per line and
    not hand-edited; else nothing. A write then encodes only what it changes, and no second
    copy of every entry is kept between writes."""
    if parsed.hand_edited or parsed.duplicates:
        return {}
    path = key[0]
    try:
        if file_key(path) != key:
            return {}
        data = fsutil.read_bytes(path)
    except (OSError, StoreError):
        return {}
    entries = parsed.entries
    if data is None:
        return {}
    lines: dict[str, tuple[JSONObject, bytes]] = {}
    expected = iter(entries.items())
    marker = b"\n" + _LINE_START
    at = data.find(marker)
    while at >= 0:  # each entry's line sliced out once: no list of every line beside the file
        start = at + 1 + 4
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        body = data[start : end - 1] if data[end - 1 : end] == b"," else data[start:end]
        item = next(expected, None)
        if item is None or not body.startswith(_LINE_START[4:] + _line(item[0]) + b", "):
            return {}
        lines[item[0]] = (item[1], body)
        at = data.find(marker, end)
    return lines if len(lines) == len(entries) else {}


def _block(opening: bytes, closing: bytes, items: list[bytes]) -> list[bytes]:
    """The parts of a bracketed block of one item per line, for one join of the file."""
    if not items:
        return [opening + closing]
    parts = [opening + b"\n    "]
    for item in items:
        parts.append(item)
        parts.append(b",\n    ")
    parts[-1] = b"\n  " + closing
    return parts
