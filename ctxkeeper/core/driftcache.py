"""The drift cache (``.context/cache/drift.json``): what the last drift check found, for the
per-edit hook, which never runs git.

It is written whenever drift is computed for the whole store (``ctxkeeper drift``,
``check_drift``, SessionStart) and holds for one HEAD commit and one ``entries.json``: a commit,
a checkout, a verify or any other write makes it stale, and a stale cache says nothing, so the
hook never reports drift that may have been cleared.

Import-light on purpose (con-001-5f40): ``os``, ``ctxkeeper.core.jsonlite``, ``githead``.
"""

from __future__ import annotations

import os

from ctxkeeper.core import githead
from ctxkeeper.core import jsonlite as json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

CACHE_VERSION = 1
CACHE_FILE = "drift.json"


def entries_stamp(context_dir: str) -> list[int]:
    """The identity (inode, size, mtime) of ``entries.json``: any write changes it."""
    try:
        info = os.stat(os.path.join(context_dir, "entries.json"))
    except OSError:
        return [0, -1, 0]
    return [info.st_ino, info.st_size, info.st_mtime_ns]


def cache_path(context_dir: str) -> str:
    return os.path.join(context_dir, "cache", CACHE_FILE)


def render(
    head: str, stamp: Sequence[int], drifted: Mapping[str, int], orphaned: Sequence[str]
) -> bytes:
    document = {
        "version": CACHE_VERSION,
        "head": head,
        "entries": list(stamp),
        "drifted": {key: drifted[key] for key in sorted(drifted)},
        "orphaned": sorted(orphaned),
    }
    return (json.dumps(document) + "\n").encode()


def read(context_dir: str, root: str) -> tuple[dict[str, int], set[str]]:
    """The drifted entries (id: commits) and orphaned ids, if the cache is current; else empty.

    Current means: written at the HEAD ``root`` has now (read from ``.git`` as data) and for
    the ``entries.json`` on disk now. Anything unreadable counts as stale.
    """
    try:
        with open(cache_path(context_dir), "rb") as handle:
            document = json.loads(handle.read(1 << 20).decode("utf-8"))
    except (OSError, ValueError):
        return {}, set()
    if not isinstance(document, dict) or document.get("version") != CACHE_VERSION:
        return {}, set()
    head = githead.read_head(root)
    if head is None or head != document.get("head"):
        return {}, set()
    if document.get("entries") != entries_stamp(context_dir):
        return {}, set()
    drifted = document.get("drifted")
    orphaned = document.get("orphaned")
    counts = {
        str(key): value
        for key, value in (drifted.items() if isinstance(drifted, dict) else ())
        if isinstance(value, int) and not isinstance(value, bool)
    }
    ids = {str(item) for item in orphaned} if isinstance(orphaned, list) else set()
    return counts, ids
