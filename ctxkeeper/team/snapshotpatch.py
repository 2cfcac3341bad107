"""Refreshing the team snapshot after a write without rebuilding it from the whole journal.

The snapshot this clone last wrote is sorted, and every line's place is in its first bytes (an
entry line starts with its id; an event line with its entry id, time and identity). A write
touches a few entries, so the refresh replaces their entry lines and inserts the new events'
lines in place, giving exactly the bytes a full export would give (a test holds the two
together), at the cost of reading and writing the file rather than re-reading the journal,
re-rendering every line and re-checking every line.
"""

from __future__ import annotations

import bisect
import json
from typing import Final

from ctxkeeper.team import teamlog
from ctxkeeper.team.snapshotformat import (
    ENTRY_KEY,
    EVENT_KEY,
    HEADER_LINE,
    entry_line,
    event_line,
    parse,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

_ENTRY_PREFIX: Final = b'{"' + ENTRY_KEY.encode() + b'":{"id":"'
_EVENT_PREFIX: Final = b'{"' + EVENT_KEY.encode() + b'":{"id":"'


class CannotPatchError(Exception):
    """The file is not laid out as this code writes it; the caller exports in full."""


def line_key(line: bytes) -> tuple[int, bytes, bytes, bytes]:
    """Where a line sorts: the header, then entries by id, then events by (id, at, event)."""
    if line == HEADER_LINE:
        return (0, b"", b"", b"")
    if line.startswith(_ENTRY_PREFIX):
        end = line.find(b'"', len(_ENTRY_PREFIX))
        if end > 0:
            return (1, line[len(_ENTRY_PREFIX) : end], b"", b"")
    elif line.startswith(_EVENT_PREFIX):
        # ID","at":"AT","event":"EVENT",...
        parts = line[len(_EVENT_PREFIX) :].split(b'"', 9)
        if len(parts) == 10 and parts[2] == b"at" and parts[6] == b"event":
            return (2, parts[0], parts[4], parts[8])
    raise CannotPatchError(line[:80].decode("utf-8", "replace"))


Key = tuple[int, bytes, bytes, bytes]


def patched(
    old: bytes,
    records: Iterable[Mapping[str, JSONValue]],
    entries: Mapping[str, JSONObject],
) -> bytes:
    """``old`` with the entry lines of the entries ``records`` touched replaced (or removed,
    for a purge) and the records' events inserted; raise CannotPatchError when unsure."""
    return patch(old, records, entries)[0]


def patch(
    old: bytes,
    records: Iterable[Mapping[str, JSONValue]],
    entries: Mapping[str, JSONObject],
    *,
    keys: list[Key] | None = None,
) -> tuple[bytes, list[Key]]:
    """:func:`patched`, and the sort key of every line of the result.

    :param keys: the sort keys of ``old``'s lines as a previous patch returned them, when
        ``old`` is the very file that patch wrote (the caller checks): then its lines are
        not keyed and checked for order again, which is most of a patch's work.
    """
    lines = old.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    patched_lines, keys = patch_lines(lines, records, entries, keys=keys)
    return b"\n".join([*patched_lines, b""]), keys


def patch_lines(
    lines: list[bytes],
    records: Iterable[Mapping[str, JSONValue]],
    entries: Mapping[str, JSONObject],
    *,
    keys: list[Key] | None = None,
) -> tuple[list[bytes], list[Key]]:
    """:func:`patch` on the file's lines (without their newlines), changed in place and
    returned: a caller that writes them out line by line never holds a second copy of the
    file."""
    if not lines or lines[0] != HEADER_LINE:
        raise CannotPatchError("no header line")
    if keys is not None and len(keys) == len(lines):
        keys = list(keys)
    else:
        keys = [line_key(line) for line in lines]
        if keys != sorted(keys):
            raise CannotPatchError("lines out of order")
    current: dict[str, list[str]] = {}
    new_events: list[JSONObject] = []
    for record in records:
        if teamlog.is_local(record):
            continue  # this clone's own bookkeeping (teamlog.LOCAL_IDS)
        entry_id = str(record.get("id"))
        if entry_id not in current:
            current[entry_id] = _tips(lines, keys, entry_id)
        if teamlog.is_resolution(record):
            resolved = record.get(teamlog.RESOLVES)
            current[entry_id] = [str(p) for p in resolved] if isinstance(resolved, list) else []
            continue
        event = teamlog.shared_fields(record)
        explicit = record.get("parents")
        followed = explicit if isinstance(explicit, list) else current[entry_id]
        event["parents"] = [*sorted(str(p) for p in followed)]
        new_events.append(event)
        current[entry_id] = [str(record.get("event"))]
    added = [entry_line(entries[i]) for i in current if i in entries]
    added += [event_line(event) for event in new_events]
    # The new lines pass the checks a teammate's import applies; the old ones already did.
    parse(b"\n".join([HEADER_LINE, *added]) + b"\n", "snapshot.jsonl")
    for entry_id in current:
        at = bisect.bisect_left(keys, (1, entry_id.encode(), b"", b""))
        if at < len(keys) and keys[at][:2] == (1, entry_id.encode()):
            del lines[at], keys[at]
    for line in added:
        key = line_key(line)
        at = bisect.bisect_left(keys, key)
        lines.insert(at, line)
        keys.insert(at, key)
    return lines, keys


def _tips(lines: list[bytes], keys: list[Key], entry_id: str) -> list[str]:
    """The tips of ``entry_id``'s events in the file: the versions its next event follows."""
    start = bisect.bisect_left(keys, (2, entry_id.encode(), b"", b""))
    events: list[JSONObject] = []
    for index in range(start, len(keys)):
        if keys[index][:2] != (2, entry_id.encode()):
            break
        value = json.loads(lines[index])[EVENT_KEY]
        events.append(value)
    return sorted(str(event.get("event")) for event in teamlog.heads(events)) if events else []
