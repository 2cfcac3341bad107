"""The team's reviewed history: which events the upstream default branch's snapshot holds.

A person's event that arrives in a snapshot is taken as a person's only when this clone made
it, or when the team's reviewed history carries it: the version of ``.context/snapshot.jsonl``
on the remote's default branch (see :data:`UPSTREAM_REFS`). What reaches that branch
passed the repository's own review; a working-tree file, a local commit or another branch did
not. A snapshot holds every event its branch ever carried (events are added, never dropped), so
the tip's version answers for the whole history, in one ``git cat-file`` call that reads one
blob and no history.
"""

from __future__ import annotations

import json
import os
from typing import Final

from ctxkeeper.core import gitlog
from ctxkeeper.team import snapshotformat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ctxkeeper.core._types import JSONValue

#: The upstream default branch, in the order asked: the remote's default branch as ``git clone``
#: records it, else its ``main`` or ``master`` (a clone whose remote was added by hand, as by the
#: person who created the repository and pushed it first, has no ``origin/HEAD``). Never the
#: current branch's upstream: a feature branch's history is not the reviewed one.
UPSTREAM_REFS: Final = (
    "refs/remotes/origin/HEAD",
    "refs/remotes/origin/main",
    "refs/remotes/origin/master",
)
UPSTREAM_REF: Final = UPSTREAM_REFS[0]


def team_snapshot(root: str, snapshot_path: str) -> bytes | None:
    """The bytes of the team snapshot on the upstream default branch (the first of
    :data:`UPSTREAM_REFS` that exists; None: no such branch, no such file there, no git, or a
    file over the snapshot size limit). One ``git cat-file --batch`` call asks for them all."""
    relative = os.path.relpath(snapshot_path, root)
    if relative.startswith(".."):
        return None
    # "./" makes the path relative to the directory git runs in (the project root), which
    # may be a subdirectory of the repository.
    path = relative.replace(os.sep, "/")
    names = "".join(f"{ref}:./{path}\n" for ref in UPSTREAM_REFS)
    try:
        status, out = gitlog.run_git(root, ["cat-file", "--batch"], stdin=names.encode())
    except gitlog.GitError:
        return None
    if status != 0:
        return None
    rest = out
    for _ in UPSTREAM_REFS:
        head, _, rest = rest.partition(b"\n")
        parts = head.split(b" ")
        if len(parts) != 3 or not parts[2].isdigit():
            continue  # "<name> missing": the next ref, whose answer follows at once
        size = int(parts[2])
        if parts[1] != b"blob" or size > snapshotformat.MAX_BYTES or len(rest) < size:
            return None
        return rest[:size]
    return None


def vouched(root: str, snapshot_path: str, events: Iterable[Mapping[str, JSONValue]]) -> set[str]:
    """The identities of ``events`` the upstream default branch's snapshot holds, each with the
    same content (a purge there may have replaced values by their digests). None is read from
    git when ``events`` is empty."""
    wanted = {str(event.get("event")): event for event in events}
    if not wanted:
        return set()
    data = team_snapshot(root, snapshot_path)
    if data is None:
        return set()
    found: set[str] = set()
    for event_id, event in wanted.items():
        theirs = _event_line(data, event_id)
        if theirs is not None and snapshotformat.same_event(theirs, event):
            found.add(event_id)
    return found


def _event_line(data: bytes, event_id: str) -> Mapping[str, JSONValue] | None:
    """The event ``event_id`` names in snapshot ``data``, found by its identity's bytes (the
    identity may also stand in other events' parents: each line holding it is looked at)."""
    needle = f'"{event_id}"'.encode()
    at = data.find(needle)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end
        try:
            value = json.loads(data[start:end])
        except ValueError:
            value = None
        event = value.get(snapshotformat.EVENT_KEY) if isinstance(value, dict) else None
        if isinstance(event, dict) and event.get("event") == event_id:
            return event
        at = data.find(needle, end)
    return None
