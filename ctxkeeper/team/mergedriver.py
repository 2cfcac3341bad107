"""The snapshot merge driver git runs as ``%O %A %B`` (registered by ``ctxkeeper init --git``).

It writes into ``%A`` the normalised snapshot of both sides: every event of either, once, and
the entries they fold to, so the merged file is itself a deterministic snapshot. A side it
cannot read is merged as git's union merge would (every line of both, once) and the import
names the bad line; the driver never leaves conflict markers.
"""

from __future__ import annotations

import os
import sys

from ctxkeeper.core import fsutil
from ctxkeeper.core.config import parse_config
from ctxkeeper.core.errors import CtxkeeperError
from ctxkeeper.team import teamlog
from ctxkeeper.team.snapshotformat import normal_entry, parse, render, same_event

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ctxkeeper.core._types import JSONObject


def merged(ours: bytes, theirs: bytes, review: str) -> bytes:
    """The normalised snapshot of two sides; raises CtxkeeperError when one cannot be read."""
    events: dict[str, JSONObject] = {}
    loose: dict[str, JSONObject] = {}
    for data, name in ((ours, "ours"), (theirs, "theirs")):
        side = parse(data, name)
        for event_id, (line, event) in side.events.items():
            kept = events.setdefault(event_id, event)
            if not same_event(kept, event):
                raise CtxkeeperError(f"{name}:{line}: event {event_id} differs between the sides")
        for _, entry in side.entries:
            loose.setdefault(str(normal_entry(entry)), entry)
    entries = teamlog.fold(events.values(), review)
    with_events = {str(event["id"]) for event in events.values()}
    extra = [entry for entry in loose.values() if str(entry["id"]) not in with_events]
    return render([*entries.values(), *extra], list(events.values()))


def _union(ours: bytes, theirs: bytes) -> bytes:
    lines = dict.fromkeys(line for line in (ours + b"\n" + theirs).split(b"\n") if line.strip())
    return b"".join(line + b"\n" for line in lines)


def main(argv: Sequence[str]) -> int:
    if len(argv) != 3:
        print("usage: mergedriver BASE OURS THEIRS", file=sys.stderr)
        return 2
    _, ours_path, theirs_path = argv
    ours = fsutil.read_bytes(ours_path) or b""
    theirs = fsutil.read_bytes(theirs_path) or b""
    try:
        config = parse_config(fsutil.read_bytes(os.path.join(".context", "config.json")), "config")
        review = config.review
    except CtxkeeperError:
        review = "agent"
    try:
        result = merged(ours, theirs, review)
    except CtxkeeperError as exc:
        print(f"ctxkeeper merge: {exc}; merged line by line instead", file=sys.stderr)
        result = _union(ours, theirs)
    fsutil.write_atomic(ours_path, result)
    return 0
