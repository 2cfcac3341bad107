"""Where an entry's word comes from: who recorded it, and whether a person stood behind it in
this clone or in the team's history that arrived by import.

What the hooks and tools deliver carries this next to each entry (DESIGN.md), so the model can
weigh a rule by its source instead of by how imperative its text sounds. One function,
:func:`provenance`, decides it from the entry's ``origin`` and its journal records; the rest
caches its inputs for the per-edit index. Import-light (con-001-5f40): ``os`` and jsonlite.
"""

from __future__ import annotations

import os

from ctxkeeper.core import jsonlite as json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ctxkeeper.core._types import JSONValue

#: The ops by which a person stands behind an entry's content (a hand edit found by doctor,
#: ``manual_edit``, is not one: nobody reviewed it).
PERSON_OPS = frozenset({"record", "approve", "update", "lift"})
#: A person stood behind it in this clone's own journal, or in an event that arrived by import.
HERE, TEAM, NONE = "here", "team", ""
_ORIGIN_CODES = {"user": "p", "agent": "a", "import": "i"}
_APPROVAL_CODES = {HERE: "h", TEAM: "t", NONE: "n"}
_RECORDED = {"p": "recorded by a person", "a": "recorded by the agent", "i": "imported"}
_APPROVED = {
    "h": "approved by a person in this clone",
    "t": "approved by a person in the team's history (arrived by import)",
    "n": "no person has approved it",
}


def arrived_by_import(record: Mapping[str, JSONValue]) -> bool:
    """Whether a journal record was adopted from a snapshot rather than written here: an
    adopted event keeps the ``parents`` it was born with, a record written here names none
    (``teamlog.team_events``)."""
    return "parents" in record


def approval(records: Iterable[Mapping[str, JSONValue]]) -> str:
    """:data:`HERE`, :data:`TEAM` or :data:`NONE`: the strongest person's event among an
    entry's journal records."""
    found = NONE
    for record in records:
        actor = record.get("actor")
        if record.get("op") not in PERSON_OPS or not isinstance(actor, dict):
            continue
        if actor.get("origin") != "user":
            continue
        if not arrived_by_import(record):
            return HERE
        found = TEAM
    return found


def code(origin: JSONValue, approved: str) -> str:
    """The two-letter form the scope index keeps: who recorded it, how it was approved."""
    return _ORIGIN_CODES.get(str(origin), "i") + _APPROVAL_CODES.get(approved, "n")


def provenance(origin: JSONValue, records: Iterable[Mapping[str, JSONValue]]) -> str:
    """The provenance code of an entry from its ``origin`` and its journal records."""
    return code(origin, approval(records))


def describe(provenance_code: str) -> str:
    """The words for a provenance code, e.g. "recorded by the agent; approved by a person in
    this clone"; a person who recorded it in this clone is said once."""
    recorded = _RECORDED.get(provenance_code[:1], _RECORDED["i"])
    approved = provenance_code[1:2] or "n"
    if provenance_code == "ph":
        return "recorded by a person in this clone"
    if provenance_code == "pt":
        return "recorded by a person in the team's history (arrived by import)"
    if provenance_code == "pn":
        return "claims a person as author, but no person's record or approval is in its history"
    return f"{recorded}; {_APPROVED.get(approved, _APPROVED['n'])}"


CACHE_FILE = "provenance.json"
_CACHE_VERSION = 1
#: Approvals per journal file as last read in this process: (inode, bytes read, by id).
_MEMO: dict[str, tuple[int, int, dict[str, str]]] = {}


def approvals(context_dir: str) -> dict[str, str]:
    """Every entry's :func:`approval` other than :data:`NONE`, by id, from the journal.

    A person's event is never taken back, so the answer only grows as the journal does: while
    the file is the same one (its inode) only the bytes appended since the last read are read,
    here or in ``.context/cache/provenance.json``; a journal replaced or cut is read whole.
    """
    path = os.path.join(context_dir, "journal.jsonl")
    try:
        info = os.stat(path)
    except OSError:
        return {}
    known = _MEMO.get(path) or _load_cache(context_dir)
    start, found = 0, {}
    if known is not None and known[0] == info.st_ino and known[1] <= info.st_size:
        start, found = known[1], known[2]
    if start == info.st_size and known is not None:
        _MEMO[path] = known
        return found
    found = dict(found)
    end = _fold_tail(path, start, found)
    _MEMO[path] = (info.st_ino, end, found)
    if end - start > 1 << 16 or found != (known[2] if known else {}):
        _save_cache(context_dir, info.st_ino, end, found)
    return found


def _fold_tail(path: str, start: int, found: dict[str, str]) -> int:
    """Fold the whole lines from byte ``start`` into ``found``; where the read stopped."""
    from ctxkeeper.core import personmarks

    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read()
    whole = data.rfind(b"\n") + 1  # a line still being written is read next time
    since, noted = personmarks.marks(os.path.dirname(path))
    for line in data[:whole].splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # doctor's to report; it says nothing of a person
        if not isinstance(record, dict):
            continue
        if personmarks.unmade((record,), since, noted):
            continue  # names a person, but no write here made it: nobody stood behind it
        verdict = approval((record,))
        entry_id = str(record.get("id"))
        if verdict == HERE or (verdict == TEAM and found.get(entry_id) != HERE):
            found[entry_id] = verdict
    return start + whole


def _load_cache(context_dir: str) -> tuple[int, int, dict[str, str]] | None:
    try:
        with open(os.path.join(context_dir, "cache", CACHE_FILE), "rb") as handle:
            doc = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("version") != _CACHE_VERSION:
        return None
    inode, size, by_id = doc.get("inode"), doc.get("bytes"), doc.get("approvals")
    if not (isinstance(inode, int) and isinstance(size, int) and isinstance(by_id, dict)):
        return None
    return inode, size, {str(k): str(v) for k, v in by_id.items() if v in (HERE, TEAM)}


def _save_cache(context_dir: str, inode: int, size: int, found: dict[str, str]) -> None:
    from ctxkeeper.core.scopeindex import real_dir, write_cache

    doc = {"version": _CACHE_VERSION, "inode": inode, "bytes": size, "approvals": found}
    try:
        cache = real_dir(os.path.join(context_dir, "cache"))
        write_cache(os.path.join(cache, CACHE_FILE), json.dumps(doc).encode())
    except OSError:
        pass  # a cache: the next reader reads the journal again
