"""Events an import held back (they claim a person and nothing vouches for them), kept here
until the team's history does.

An import leaves a held-back event out of the journal and out of this clone's snapshot, so it
may not come back through the working tree (``git pull`` that brings nothing new leaves the
file as this clone rewrote it). They are kept in ``.context/held.jsonl``, machine-local, in the
snapshot's own format, with the upstream snapshot's blob they were checked against; when that
blob moves (a fetch brought the team's newer history), SessionStart imports the file again, and
what the team's history now holds comes in and voids its stand-in.
"""

from __future__ import annotations

import json
import os
from typing import Final

from ctxkeeper.core import fsutil, gitlog
from ctxkeeper.team import upstream
from ctxkeeper.team.snapshotformat import HEADER_LINE, event_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.store import Store

HELD_FILE: Final = "held.jsonl"
#: The upstream blob the held events were last checked against (machine-local).
CHECKED_FILE: Final = os.path.join("cache", "held-checked.json")
#: A forger must not grow this file without bound: the oldest are let go past this.
MAX_HELD: Final = 1000


def held_path(store: Store) -> str:
    return store.path(HELD_FILE)


def read_held(store: Store) -> dict[str, JSONObject]:
    """The held events by identity (none when the file is missing or unreadable)."""
    data = fsutil.read_bytes(held_path(store))
    out: dict[str, JSONObject] = {}
    for raw in (data or b"").split(b"\n")[1:]:
        try:
            value = json.loads(raw) if raw.strip() else None
        except ValueError:
            continue
        event = value.get("journal") if isinstance(value, dict) else None
        if isinstance(event, dict) and isinstance(event.get("event"), str):
            out[str(event["event"])] = event
    return out


def keep(store: Store, held: Iterable[JSONObject], arrived: Iterable[str]) -> None:
    """Add ``held`` to the file and drop the events that ``arrived`` in the journal."""
    events = read_held(store)
    for event_id in arrived:
        events.pop(event_id, None)
    for event in held:
        events[str(event["event"])] = event
    path = held_path(store)
    if not events:
        if os.path.exists(path):
            os.unlink(path)
        return
    kept = sorted(events.values(), key=lambda e: (str(e.get("at")), str(e.get("event"))))
    lines = [HEADER_LINE, *sorted(event_line(e) for e in kept[-MAX_HELD:])]
    fsutil.write_atomic(path, b"\n".join(lines) + b"\n")
    _remember(store, _upstream_blob(store))


def _upstream_blob(store: Store) -> str:
    """The blob id of the upstream snapshot ("" when there is none): one cheap git call."""
    from ctxkeeper.team.snapshot import default_path

    relative = os.path.relpath(default_path(store.dir), store.root).replace(os.sep, "/")
    names = "".join(f"{ref}:./{relative}\n" for ref in upstream.UPSTREAM_REFS)
    try:
        status, out = gitlog.run_git(
            store.root, ["cat-file", "--batch-check"], stdin=names.encode()
        )
    except gitlog.GitError:
        return ""
    for line in out.decode("ascii", "replace").splitlines() if status == 0 else []:
        parts = line.split(" ")
        if len(parts) == 3 and parts[1] == "blob":
            return parts[0]
    return ""


def _remember(store: Store, blob: str) -> None:
    path = store.path(CHECKED_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fsutil.write_atomic(path, json.dumps({"version": 1, "blob": blob}).encode(), durable=False)


def recheck_due(store: Store) -> bool:
    """Whether held events wait and the upstream snapshot moved since they were checked."""
    if not os.path.isfile(held_path(store)):
        return False
    data = fsutil.read_bytes(store.path(CHECKED_FILE))
    try:
        checked = json.loads(data) if data else {}
    except ValueError:
        checked = {}
    blob = checked.get("blob") if isinstance(checked, dict) else None
    return _upstream_blob(store) != blob
