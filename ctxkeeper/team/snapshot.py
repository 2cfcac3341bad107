"""Writing the team snapshot, and remembering which snapshot this clone last wrote or read.

The snapshot is refreshed under the store lock after a write (``auto_export``), so it rides in
the same commit as the code. It is never written over a snapshot this clone has not seen: after
``git pull`` the file holds teammates' events, and overwriting it before importing them would
drop their work from the next commit (con-014-3998).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from typing import Final

from ctxkeeper.core import fsutil, journal
from ctxkeeper.core.errors import SnapshotError, StoreError
from ctxkeeper.team import teamlog
from ctxkeeper.team.snapshotformat import HEADER_LINE, SNAPSHOT_FILE, event_line, parse, render
from ctxkeeper.team.snapshotpatch import CannotPatchError, Key, patch_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

#: Under ``.context/cache/``: the digest of each snapshot path as this clone last wrote or read it.
SEEN_FILE: Final = "snapshot-seen.json"
#: The sort keys of the lines of the snapshot this process last patched, with the file's
#: identity right after: while the file is unchanged the next patch need not key it again.
_LAYOUT: dict[str, tuple[list[JSONValue] | None, list[Key]]] = {}


def default_path(context_dir: str) -> str:
    return os.path.join(context_dir, SNAPSHOT_FILE)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: A file's ``stat`` proves it unchanged only when its mtime was at least this much older than
#: the moment its identity was recorded. A rewrite within the same timestamp tick (coarse on many
#: file systems, two seconds on some) keeps size, mtime and, in place, the inode: such a "racy"
#: record is settled by the content's digest instead, as git treats a racily clean index entry.
RACY_NS: Final = 2_000_000_000  # dec-034-36a2


def _identity(path: str) -> list[JSONValue] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns, info.st_ino]


def _seen_path(context_dir: str) -> str:
    return os.path.join(context_dir, "cache", SEEN_FILE)


def _read_seen(context_dir: str) -> dict[str, JSONValue]:
    try:
        data = fsutil.read_bytes(_seen_path(context_dir))
        value = json.loads(data) if data else {}
    except (StoreError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def remember(context_dir: str, path: str, sha256: str, *, head: str | None = None) -> None:
    """Record that this clone holds everything in the file of this :func:`digest` (it wrote
    or imported it).

    :param head: the hash of the last journal record ``data`` was written from, when it was
        written from this clone's journal: only a snapshot known to be that current is patched.
    """
    seen = _read_seen(context_dir)
    record: dict[str, JSONValue] = {
        "sha256": sha256,
        "identity": _identity(path),
        "recorded_ns": time.time_ns(),
    }
    if head is not None:
        record["journal_head"] = head
    seen[os.path.abspath(path)] = record
    os.makedirs(os.path.dirname(_seen_path(context_dir)), exist_ok=True)
    _write_seen(context_dir, seen)


def _head(records: list[JSONObject]) -> str:
    return str(records[-1].get("hash")) if records else journal.GENESIS


def _written_at(context_dir: str, path: str) -> JSONValue:
    """The journal head the file at ``path`` was last written from here (None: unknown)."""
    record = _read_seen(context_dir).get(os.path.abspath(path))
    return record.get("journal_head") if isinstance(record, dict) else None


def unseen(context_dir: str, path: str) -> bool:
    """True when the file at ``path`` holds something this clone has not imported or written.

    A ``stat`` answers while the file is untouched; a changed one is hashed, since git rewrites
    files with the same content on checkout.
    """
    identity = _identity(path)
    if identity is None:
        return False
    record = _record(context_dir, path)
    if record is None:
        return True
    if _stat_proves(record, identity):
        return False
    data = fsutil.read_bytes(path)
    if data is None:
        return False
    return not _settle(context_dir, path, record, digest(data))


def _stat_proves(record: Mapping[str, JSONValue], identity: list[JSONValue]) -> bool:
    """True when the file's ``stat`` alone shows it is the one ``record`` was taken of."""
    if record.get("identity") != identity:
        return False
    mtime, recorded = identity[1], record.get("recorded_ns")
    return isinstance(mtime, int) and isinstance(recorded, int) and mtime + RACY_NS <= recorded


def _rerecord(context_dir: str, path: str, record: Mapping[str, JSONValue]) -> None:
    seen = _read_seen(context_dir)
    seen[os.path.abspath(path)] = {**record, "recorded_ns": time.time_ns()}
    with contextlib.suppress(OSError):  # a cache: the next check hashes the file again
        _write_seen(context_dir, seen)


def _write_seen(context_dir: str, seen: Mapping[str, JSONValue]) -> None:
    # A derived cache: if a crash loses it, the next session start imports again (idempotent).
    document = json.dumps(seen, sort_keys=True).encode()
    fsutil.write_atomic(_seen_path(context_dir), document, durable=False)


def forget(context_dir: str, path: str) -> None:
    """Stop counting the file at ``path`` as held: the store lost what it held (a repair kept
    less), so the next import must read it and the next refresh must wait for that import."""
    seen = _read_seen(context_dir)
    if seen.pop(os.path.abspath(path), None) is not None:
        _write_seen(context_dir, seen)


def untouched(context_dir: str, path: str) -> bool:
    """True when the file at ``path`` is, by its ``stat``, the one this clone last wrote or
    imported there (so it holds nothing new, and need not be read)."""
    identity = _identity(path)
    record = _record(context_dir, path)
    return identity is not None and record is not None and _stat_proves(record, identity)


def holds(context_dir: str, path: str, sha256: str) -> bool:
    """True when this clone wrote or imported bytes of this :func:`digest` at ``path``; a
    racy record of the same file is taken again, so the next check answers by ``stat``."""
    return _settle(context_dir, path, _record(context_dir, path), sha256)


def _settle(context_dir: str, path: str, record: dict[str, JSONValue] | None, sha256: str) -> bool:
    """:func:`holds`, given the file's record as read."""
    if record is None or not _holds(record, sha256):
        return False
    identity = _identity(path)
    racy = identity is not None and not _stat_proves(record, identity)
    if racy and record.get("identity") == identity:
        _rerecord(context_dir, path, record)
    return True


def _holds(record: dict[str, JSONValue] | None, sha256: str) -> bool:
    return record is not None and sha256 in (record.get("sha256"), record.get("pending_sha256"))


def _record(context_dir: str, path: str) -> dict[str, JSONValue] | None:
    record = _read_seen(context_dir).get(os.path.abspath(path))
    return record if isinstance(record, dict) else None


def _expect(context_dir: str, path: str, sha256: str) -> None:
    """Before replacing the file at ``path`` by bytes of this digest: count them as seen too, so
    a kill between the replace and :func:`remember` does not leave this clone's own file
    looking like a teammate's (every later refresh would refuse it until an import)."""
    seen = _read_seen(context_dir)
    record = seen.get(os.path.abspath(path))
    seen[os.path.abspath(path)] = {
        **(record if isinstance(record, dict) else {}),
        "pending_sha256": sha256,
    }
    os.makedirs(os.path.dirname(_seen_path(context_dir)), exist_ok=True)
    _write_seen(context_dir, seen)


def write(
    context_dir: str,
    entries: Iterable[JSONObject],
    records: Iterable[JSONObject],
    *,
    path: str | None = None,
    force: bool = False,
) -> JSONObject:
    """Write the snapshot of ``entries`` and the journal ``records``; return what was written.

    :param force: write even over a snapshot this clone has not seen (the caller has just
        imported it).
    :raise SnapshotError: a secret-shaped string is in the store, or the file holds events
        this clone has not imported; nothing is written.
    """
    target = path or default_path(context_dir)
    record_list = list(records)
    entry_list, events = list(entries), teamlog.team_events(record_list)
    if not force and unseen(context_dir, target):
        raise SnapshotError(
            target,
            None,
            "the file holds changes this clone has not imported (after `git pull`?); run "
            "`ctxkeeper import` first, which merges them, so no teammate's work is dropped",
        )
    data = render(entry_list, events)
    old = fsutil.read_bytes(target)
    # Lines already checked need no second look: those of the file this clone wrote or just
    # imported (``force``), which passed the same checks on their way in.
    checked = set(old.split(b"\n")) if old is not None else set()
    try:
        # What a teammate's import would refuse must not leave this clone: the same checks
        # (the model, the secret scan) run on the bytes before they are written.
        fresh = [line for line in data.split(b"\n") if line and line not in checked]
        parse(b"\n".join([HEADER_LINE, *fresh]) + b"\n", target)
    except SnapshotError as exc:
        raise SnapshotError(
            target,
            None,
            f"the store holds something a snapshot must not carry ({exc.detail}); "
            "`ctxkeeper doctor` shows the entry",
        ) from None
    fsutil.check_not_link(target)
    changed = old != data
    sha256 = digest(data)
    if changed:
        _expect(context_dir, target, sha256)
        fsutil.write_atomic(target, data)
    remember(context_dir, target, sha256, head=_head(record_list))
    return {
        "path": target,
        "entries": len(entry_list),
        "events": len(events),
        "bytes": len(data),
        "changed": changed,
    }


def unshareable(records: list[JSONObject]) -> list[tuple[int, str]]:
    """The journal records a snapshot must not carry, each as (its position in ``records``,
    what is wrong), by the checks :func:`write` and a teammate's import apply. One such
    record stops every refresh of the snapshot; ``ctxkeeper doctor`` names it."""
    events = teamlog.team_events(records)
    try:
        parse(render([], events), "journal")
    except SnapshotError:
        pass
    else:
        return []
    positions = [
        index
        for index, record in enumerate(records)
        if not teamlog.is_local(record) and not teamlog.is_resolution(record)
    ]
    found: list[tuple[int, str]] = []
    for position, event in zip(positions, events, strict=True):
        try:
            parse(HEADER_LINE + b"\n" + event_line(event) + b"\n", "journal")
        except SnapshotError as exc:
            found.append((position, exc.detail))
    return found


#: In a path's record in :data:`SEEN_FILE`: why the last refresh of that snapshot failed
#: (cleared by the next write of it, see :func:`remember`).
_FAILED: Final = "refresh_failed"


def refresh_failure(context_dir: str, path: str) -> str | None:
    """Why the last automatic refresh of the snapshot at ``path`` failed; None when the last
    one succeeded (or none failed): then the snapshot is as current as the last write left it."""
    record = _record(context_dir, path)
    failed = record.get(_FAILED) if record is not None else None
    return failed if isinstance(failed, str) else None


def _note_failure(context_dir: str, path: str, detail: str) -> None:
    """Remember why a refresh failed, for ``ctxkeeper status`` (best effort: a cache)."""
    try:
        seen = _read_seen(context_dir)
        record = seen.get(os.path.abspath(path))
        seen[os.path.abspath(path)] = {
            **(record if isinstance(record, dict) else {}),
            _FAILED: detail[:1000],
        }
        os.makedirs(os.path.dirname(_seen_path(context_dir)), exist_ok=True)
        _write_seen(context_dir, seen)
    except (OSError, StoreError):
        pass


def _with_newlines(lines: list[bytes]) -> Iterator[bytes]:
    for line in lines:
        yield line
        yield b"\n"


def auto_refresh(
    context_dir: str,
    entries: Mapping[str, JSONObject],
    committed: list[JSONObject] | None,
    read_journal: Callable[[], list[JSONObject]],
) -> None:
    """Refresh the default snapshot after a write; a problem is a notice, never a failure (the
    write itself is recorded).

    :param committed: the journal records the write appended, when they are all that changed
        since the snapshot was last written: the file is then patched, not rebuilt.
    """
    target = default_path(context_dir)
    try:
        identity = _identity(target)
        # Patch only a file written just before these records (con-022-8d85): one a failed or
        # killed refresh left behind would otherwise miss that write's events for good.
        if (
            committed
            and identity is not None
            and not unseen(context_dir, target)
            and _written_at(context_dir, target) == committed[0].get("prev")
            and (lines := fsutil.read_lines(target)) is not None
        ):
            known = _LAYOUT.get(target)
            keys = known[1] if known is not None and known[0] == identity else None
            try:
                lines, keys = patch_lines(lines, committed, entries, keys=keys)
            except CannotPatchError:
                pass  # not laid out as written here (an older version): rebuild it
            else:
                # Hashed and written line by line: a 50 MB snapshot is held once, as lines.
                parts = list(_with_newlines(lines))
                hashed = hashlib.sha256()
                for part in parts:
                    hashed.update(part)
                sha256 = hashed.hexdigest()
                _expect(context_dir, target, sha256)
                fsutil.write_atomic(target, parts)
                remember(context_dir, target, sha256, head=_head(committed))
                _LAYOUT.clear()
                _LAYOUT[target] = (_identity(target), keys)
                return
        write(context_dir, entries.values(), read_journal())
    except (SnapshotError, OSError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) else str(exc)
        print(f"ctxkeeper: the team snapshot was not refreshed: {detail}", file=sys.stderr)
        _note_failure(
            context_dir, target, exc.detail if isinstance(exc, SnapshotError) else str(detail)
        )
