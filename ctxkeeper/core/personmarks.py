"""Which of the journal's records that name a person this clone's own writes made.

A journal record counts for a person (it promotes a proposal, changes a rule in force) by the
actor it names. ctxkeeper's write path notes the event identity of each such record here as it
appends it, so a record appended by hand, even one with a correct hash chain or copied from
another clone's journal, is told apart: ``doctor`` names it and SessionStart tells the person.

The file, ``.context/person-writes.jsonl``, is local (the store's ``.gitignore`` keeps it out of
git) and outside ``cache/`` (clearing caches must not clear it). Its first line says from which
journal sequence number it began: records before it were written before this file existed and
are taken as they are. Deleting the file is a deliberate act this cannot see (README, "Trust
model"). Import-light, for the hooks (con-001-5f40): ``os`` and jsonlite.
"""

from __future__ import annotations

import os

from ctxkeeper.core import jsonlite as json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ctxkeeper.core._types import JSONValue

MARKS_FILE = "person-writes.jsonl"
CHECKED_FILE = "person-writes-checked.json"


def _names_a_person(record: Mapping[str, JSONValue]) -> bool:
    actor = record.get("actor")
    return isinstance(actor, dict) and actor.get("origin") == "user"


def _seq(record: Mapping[str, JSONValue]) -> int:
    seq = record.get("seq")
    return seq if isinstance(seq, int) else 0


def note(context_dir: str, records: Iterable[Mapping[str, JSONValue]], seq_before: int) -> None:
    """Before the write path appends ``records`` (the journal holds ``seq_before`` records):
    note the person-naming ones. The first write makes the file."""
    path = os.path.join(context_dir, MARKS_FILE)
    lines = [
        json.dumps({"event": record["event"]}) + "\n"
        for record in records
        if _names_a_person(record) and isinstance(record.get("event"), str)
    ]
    try:
        if not os.path.lexists(path):
            lines.insert(0, json.dumps({"since": seq_before}) + "\n")
        if lines:
            # O_NOFOLLOW: a link planted in its place is not written through.
            flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(path, flags, 0o644)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    lines.insert(0, "\n")  # a line a full disk cut short stays on its own
                os.write(fd, "".join(lines).encode())
                os.fsync(fd)  # as durable as the journal line it vouches for
            finally:
                os.close(fd)
    except OSError:
        pass  # the record stands; the checks below will name it, a false alarm but not a silent one


def marks(context_dir: str) -> tuple[int | None, set[str]]:
    """The sequence number the file began from (None: no file yet) and the noted events."""
    try:
        with open(os.path.join(context_dir, MARKS_FILE), "rb") as handle:
            data = handle.read()
    except OSError:
        return None, set()
    since: int | None = None
    events: set[str] = set()
    for line in data.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        if since is None and isinstance(item.get("since"), int):
            since = int(item["since"])
        elif isinstance(item.get("event"), str):
            events.add(str(item["event"]))
    return (since if since is not None else 0), events


def unmade(
    records: Iterable[Mapping[str, JSONValue]], since: int | None, noted: set[str]
) -> list[Mapping[str, JSONValue]]:
    """The person-naming records after ``since`` that no write here noted; a noted event seen
    a second time is one too (a copy of a genuine record)."""
    if since is None:
        return []
    seen: set[str] = set()
    found = []
    for record in records:
        if not _names_a_person(record) or _seq(record) <= since:
            continue
        event = str(record.get("event"))
        if event not in noted or event in seen:
            found.append(record)
        seen.add(event)
    return found


def describe(record: Mapping[str, JSONValue]) -> str:
    return (
        f"journal seq {_seq(record)} ({record.get('op')} of {record.get('id')}) names a person, "
        "but no ctxkeeper write in this clone made it (appended by hand or copied from "
        "another journal?); review the entry and retire what you did not decide"
    )


def unmade_count(context_dir: str) -> int:
    """How many such records the journal holds, for SessionStart: only the bytes appended since
    the last call are read (``cache/`` keeps where it stopped and what it found)."""
    since, noted = marks(context_dir)
    if since is None:
        return 0
    path = os.path.join(context_dir, "journal.jsonl")
    try:
        info = os.stat(path)
    except OSError:
        return 0
    cache = os.path.join(context_dir, "cache", CHECKED_FILE)
    start, found = _checked(cache, info.st_ino, info.st_size)
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read()
    whole = data.rfind(b"\n") + 1  # a line still being written is read next time
    records = []
    for line in data[:whole].splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # doctor's to report
        if isinstance(record, dict):
            records.append(record)
    found |= {str(r.get("event")) for r in unmade(records, since, noted)}
    # Written to the journal before it is noted here: an event noted since is no longer one.
    found -= noted
    _save(cache, info.st_ino, start + whole, found)
    return len(found)


def _checked(cache: str, inode: int, size: int) -> tuple[int, set[str]]:
    try:
        with open(cache, "rb") as handle:
            doc = json.loads(handle.read())
    except (OSError, ValueError):
        return 0, set()
    if not isinstance(doc, dict) or doc.get("inode") != inode:
        return 0, set()
    end, events = doc.get("bytes"), doc.get("events")
    if not isinstance(end, int) or end > size or not isinstance(events, list):
        return 0, set()
    return end, {str(event) for event in events}


def _save(cache: str, inode: int, end: int, found: set[str]) -> None:
    from ctxkeeper.core.scopeindex import real_dir, write_cache

    doc = {"inode": inode, "bytes": end, "events": sorted(found)}
    try:
        real_dir(os.path.dirname(cache))
        write_cache(cache, json.dumps(doc).encode())
    except OSError:
        pass  # a cache: the next session reads the journal again
