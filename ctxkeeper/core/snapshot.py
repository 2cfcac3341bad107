"""Writing the team snapshot, and remembering which snapshot this clone last wrote or read.

The snapshot is refreshed under the store lock after a write (``auto_export``), so it rides in
the same commit as the code. It is never written over a snapshot this clone has not seen: after
``git pull`` the file holds teammates' events, and overwriting it before importing them would
drop their work from the next commit (con-014-3998).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Final

from ctxkeeper.core import fsutil, teamlog
from ctxkeeper.core.errors import SnapshotError, StoreError
from ctxkeeper.core.snapshotformat import HEADER_LINE, SNAPSHOT_FILE, parse, render
from ctxkeeper.core.snapshotpatch import CannotPatchError, Key, patch_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

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


def remember(context_dir: str, path: str, data: bytes) -> None:
    """Record that this clone holds everything in ``data`` (it wrote or imported it)."""
    seen = _read_seen(context_dir)
    seen[os.path.abspath(path)] = {"sha256": digest(data), "identity": _identity(path)}
    os.makedirs(os.path.dirname(_seen_path(context_dir)), exist_ok=True)
    # A derived cache: if a crash loses it, the next session start imports again (idempotent).
    document = json.dumps(seen, sort_keys=True).encode()
    fsutil.write_atomic(_seen_path(context_dir), document, durable=False)


def unseen(context_dir: str, path: str) -> bool:
    """True when the file at ``path`` holds something this clone has not imported or written.

    A ``stat`` answers while the file is untouched; a changed one is hashed, since git rewrites
    files with the same content on checkout.
    """
    identity = _identity(path)
    if identity is None:
        return False
    record = _read_seen(context_dir).get(os.path.abspath(path))
    if not isinstance(record, dict):
        return True
    if record.get("identity") == identity:
        return False
    data = fsutil.read_bytes(path)
    return data is not None and digest(data) != record.get("sha256")


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
    entry_list, events = list(entries), teamlog.team_events(records)
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
    if changed:
        fsutil.write_atomic(target, data)
    remember(context_dir, target, data)
    return {
        "path": target,
        "entries": len(entry_list),
        "events": len(events),
        "bytes": len(data),
        "changed": changed,
    }


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
        old = fsutil.read_bytes(target)
        if committed is not None and old is not None and not unseen(context_dir, target):
            known = _LAYOUT.get(target)
            keys = known[1] if known is not None and known[0] == identity else None
            lines = old.split(b"\n")
            del old  # the lines are the file now: one copy of a 50 MB snapshot, not two
            try:
                data, keys = patch_lines(lines, committed, entries, keys=keys)
            except CannotPatchError:
                pass  # not laid out as written here (an older version): rebuild it
            else:
                fsutil.write_atomic(target, data)
                remember(context_dir, target, data)
                _LAYOUT.clear()
                _LAYOUT[target] = (_identity(target), keys)
                return
        write(context_dir, entries.values(), read_journal())
    except (SnapshotError, OSError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) else str(exc)
        print(f"ctxkeeper: the team snapshot was not refreshed: {detail}", file=sys.stderr)
