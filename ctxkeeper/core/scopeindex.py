"""The hooks' scope index: active constraints sharded by scope key under ``.context/cache/``.

A hook runs before every edit, so it must not parse the whole store. The index keeps each
active constraint under each of its scope keys ("" for project-wide), in one of many small
shard files chosen by a stable hash of the key. A file's candidate scopes are exactly its
ancestors plus itself, so a lookup reads only those few shards. ``meta.json`` records the
identity (inode, size, mtime) of ``entries.json`` and ``config.json`` the index was built from,
and the journal's size; any difference means stale, and the reader rebuilds. It also records the
digest of every shard and of the records it holds (``built_from``): a lookup checks the digest
of each shard it reads, so a shard overwritten by hand is rebuilt rather than trusted, and
``ctxkeeper doctor`` rebuilds the records from the store and compares the whole index
(:func:`verify`). A symbolic link where the index's directories belong (a cloned repository can
ship one) is never followed: the rebuild replaces the link by a real directory. A journal longer
than ``entries.json`` records holds writes the entry file does not show yet (a writer that
defers it, dec-025-2cdb, or one killed between the two): that rebuild folds them in through the
store, so the gate never misses a journaled rule.

Import-light on purpose (con-001-5f40): ``json`` and ``os`` only, plus ``ctxkeeper.core.scope``
and the interpreter's built-in BLAKE2 (``_blake2``, a fraction of a millisecond to import; all of
``hashlib`` would cost ten).
"""

from __future__ import annotations

import os

from ctxkeeper.core import jsonlite as json
from ctxkeeper.core import provenance
from ctxkeeper.core.scope import normalize_scope

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ctxkeeper.core._types import JSONObject, JSONValue

    #: id, hardness, rule, reason, valid_from, valid_until, provenance code, scope key
    Record = list[str]

#: 3: the shard digests and ``built_from``, and records carry the provenance code
#: (``ctxkeeper.core.provenance``) before the scope key; an older index is rebuilt.
INDEX_VERSION = 3
INDEX_DIR = "scope-index"
META_FILE = "meta.json"
#: Text longer than this is cut in the index: a hook's output is capped at 10,000 characters.
TEXT_CAP = 1000
_PER_SHARD = 32
_MIN_SHARDS = 8
_MAX_SHARDS = 4096
_ID_MAX = 64


def content_digest(data: bytes) -> str:
    """BLAKE2b-128 of ``data``, hex: what the index records of each shard and checks on read."""
    try:
        from _blake2 import blake2b
    except ImportError:  # an interpreter built without it: hashlib's copy, slower to import
        from hashlib import blake2b
    return blake2b(data, digest_size=16).hexdigest()


# dec-013-9ff0: sharded by scope key; a lookup reads only the target's ancestors.
def shard_of(key: str, shards: int) -> int:
    """FNV-1a of the key's UTF-8 bytes: stable across processes, unlike ``hash()``."""
    value = 2166136261
    for byte in key.encode("utf-8", "surrogatepass"):
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return value & (shards - 1)


def candidate_keys(rel_path: str) -> list[str]:
    """The scope keys that can cover a repo-relative path: "" and every ancestor, then itself."""
    keys = [""]
    if not rel_path:
        return keys
    parts = rel_path.split("/")
    keys.extend("/".join(parts[:end]) for end in range(1, len(parts) + 1))
    return keys


def _identity(path: str) -> list[int]:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return [0, -1, 0]
    return [info.st_ino, info.st_size, info.st_mtime_ns]


def source_stamp(context_dir: str) -> list[int]:
    """What the index must have been built from: the identity of entries.json and config.json,
    and the size of the journal."""
    return [
        *_identity(os.path.join(context_dir, "entries.json")),
        *_identity(os.path.join(context_dir, "config.json")),
        _identity(os.path.join(context_dir, "journal.jsonl"))[1],
    ]


def _shard_count(records: int) -> int:
    count = _MIN_SHARDS
    while count < _MAX_SHARDS and count * _PER_SHARD < records:
        count *= 2
    return count


def _bound(value: JSONValue) -> str:
    """A stored validity bound in canonical form, or "" (absent or unparseable: no bound).

    The same rule as the read path (``times.parse_stored_bound``, con-013-5aa4): a bound the rest of
    ctxkeeper ignores must not hide a constraint from the gate. This runs when the index is
    built, never per edit, so the datetime parsing is paid once per store write.
    """
    if not isinstance(value, str) or not value:
        return ""
    from ctxkeeper.core import times

    try:
        return times.normalize_time(value, field="valid")
    except ValueError:
        return ""


def _cut(value: JSONValue) -> str:
    text = value if isinstance(value, str) else ""
    return text if len(text) <= TEXT_CAP else text[: TEXT_CAP - 3] + "..."


#: Each entry's records as the last index build made them, by id with the entry object: a
#: long-running writer rebuilds the index after every write, and stored entries are replaced
#: on change, never changed in place, so an entry seen before has the same records.
_MEMO: dict[str, tuple[JSONObject, str, list[Record]]] = {}
#: shard_of per (key, shard count), for the writer that rebuilds the index after every write.
_SHARDS: dict[tuple[str, int], int] = {}


def _records(entries: Iterable[JSONObject], approvals: dict[str, str]) -> dict[str, list[Record]]:
    by_key: dict[str, list[Record]] = {}
    memo: dict[str, tuple[JSONObject, str, list[Record]]] = {}
    for entry in entries:
        if entry.get("kind") != "constraint" or entry.get("status") != "active":
            continue  # no records (see _entry_records), and most entries are these
        entry_id = entry.get("id")
        made = provenance.code(entry.get("origin"), approvals.get(str(entry_id), ""))
        known = _MEMO.get(entry_id) if isinstance(entry_id, str) else None
        if known is not None and known[0] is entry and known[1] == made:
            records = known[2]
        else:
            records = _entry_records(entry, made)
        if isinstance(entry_id, str):
            memo[entry_id] = (entry, made, records)
        for record in records:
            by_key.setdefault(record[-1], []).append(record)
    _MEMO.clear()
    _MEMO.update(memo)
    return by_key


def _entry_records(entry: JSONObject, made: str = "in") -> list[Record]:
    """The records of one entry, one per scope key (none unless an active constraint).

    :param made: its provenance code (``ctxkeeper.core.provenance.code``).
    """
    if entry.get("kind") != "constraint" or entry.get("status") != "active":
        return []
    entry_id = entry.get("id")
    # Ids go into ledger lines and hook output: refuse anything a hand edit made odd.
    if not isinstance(entry_id, str) or not entry_id or len(entry_id) > _ID_MAX:
        return []
    if not entry_id.replace("-", "").isalnum() or not entry_id.isascii():
        return []
    hardness = "hard" if entry.get("hardness") == "hard" else "soft"
    scopes = entry.get("scope")
    keys: set[str] = set()
    for scope in scopes if isinstance(scopes, list) and scopes else [""]:
        if not isinstance(scope, str):
            continue
        try:
            keys.add(normalize_scope(scope))
        except ValueError:
            continue  # An escaping scope covers nothing (doctor reports it).
    base = [
        entry_id,
        hardness,
        _cut(entry.get("rule")),
        _cut(entry.get("reason")),
        _bound(entry.get("valid_from")),
        _bound(entry.get("valid_until")),
        made,
    ]
    return [[*base, key] for key in sorted(keys)]


def _hard_delivery(context_dir: str) -> str:
    # Read the one setting directly: ctxkeeper.core.config pulls in dataclasses and the model.
    try:
        with open(os.path.join(context_dir, "config.json"), "rb") as handle:
            doc = json.loads(handle.read())
    except (OSError, ValueError):
        return "gate"  # The default; a broken config is doctor's to report.
    value = doc.get("hard_delivery") if isinstance(doc, dict) else None
    return "context" if value == "context" else "gate"


def _index_dir(path: str) -> str:
    """Create one of the index's own directories; a symbolic link there is removed (only the
    link: whatever it points at is left as it is) and a real directory made in its place. The
    index is derived, so nothing of ctxkeeper's is lost, and nothing is written through it."""
    if os.path.islink(path):
        os.unlink(path)
    return real_dir(path)


def real_dir(path: str) -> str:
    """Create ``path`` if needed and refuse a symlink there: a cloned repository could plant
    one under ``.context/cache/`` to redirect the hooks' writes and prunes elsewhere."""
    os.makedirs(path, exist_ok=True)
    if os.path.islink(path):
        raise OSError(f"{path} is a symbolic link; ctxkeeper never writes through links")
    return path


def write_cache(path: str, data: bytes) -> None:
    """Write a derived cache file whole, never through a link planted at ``path``."""
    # A derived cache: temp file plus os.replace so readers never see half a shard. No fsync:
    # a shard lost in a crash fails to parse or mismatches, and the reader rebuilds.
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError:
        if os.path.islink(path):
            return None  # a planted link is never read through: as if absent (rebuilt)
        raise
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def valid_at(record: Record, now: str) -> bool:
    """Whether ``now`` (``%Y-%m-%dT%H:%M:%SZ``) lies in the record's validity window.

    Canonical strings compare in time order, so no datetime parsing happens per edit; a bare
    date bound covers its whole UTC day.
    """
    start, end = record[4], record[5]
    if start and (now[:10] < start if len(start) == 10 else now < start):
        return False
    return not end or (now[:10] <= end if len(end) == 10 else now < end)


class Index:
    """An open index: the delivery setting and a lookup of covering records."""

    def __init__(
        self, directory: str, shards: int, hard_delivery: str, digests: list[str] | None = None
    ) -> None:
        self.dir = directory
        self.shards = shards
        self.hard_delivery = hard_delivery
        self.digests = digests
        """Each shard's :func:`content_digest` as built; a shard read that differs is stale."""

    def covering(self, rel_path: str) -> list[Record] | None:
        """Records whose scope covers the path, one per id; None when a shard is missing or
        is not the one the index was built with (its digest differs)."""
        wanted = candidate_keys(rel_path)
        by_shard: dict[int, list[str]] = {}
        for key in wanted:
            by_shard.setdefault(shard_of(key, self.shards), []).append(key)
        found: dict[str, Record] = {}
        for shard, keys in sorted(by_shard.items()):
            data = _read(os.path.join(self.dir, f"{shard}.json"))
            if data is None:
                return None
            if self.digests is not None and content_digest(data) != self.digests[shard]:
                return None
            doc = json.loads(data)
            for key in keys:
                for record in doc.get(key, ()):
                    found.setdefault(record[0], record)
        return list(found.values())


def write_index(
    context_dir: str, entries: Iterable[JSONObject], stamp: list[int] | None = None
) -> Index:
    """Write the index for these entries (the current content of entries.json).

    :param stamp: the source identity taken *before* the entries were read, when they came
        from disk; a write that raced with ours then leaves the index stale, never wrong.
    """
    cache = real_dir(os.path.join(context_dir, "cache"))
    root = _index_dir(os.path.join(cache, INDEX_DIR))
    stamp = stamp if stamp is not None else source_stamp(context_dir)
    buckets = _buckets(context_dir, entries)
    shards = len(buckets)
    directory = _index_dir(os.path.join(root, f"n{shards}"))
    digests: list[str] = []
    for number, data in enumerate(shard_bytes(buckets)):
        path = os.path.join(directory, f"{number}.json")
        digests.append(content_digest(data))
        # Most writes change one constraint: leave unchanged shards alone.
        if _read(path) != data:
            write_cache(path, data)
    hard_delivery = _hard_delivery(context_dir)
    meta = {
        "version": INDEX_VERSION,
        "stamp": stamp,
        "shards": shards,
        "hard": hard_delivery,
        "digests": digests,
        "built_from": built_from(digests, hard_delivery),
    }
    write_cache(os.path.join(root, META_FILE), json.dumps(meta).encode())
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if name.startswith("n") and name != f"n{shards}" and not os.path.islink(path):
            _remove_tree(path)
    return Index(directory, shards, hard_delivery, digests)


def _buckets(context_dir: str, entries: Iterable[JSONObject]) -> list[dict[str, list[Record]]]:
    """The records of these entries, by shard, then by scope key."""
    by_key = _records(entries, provenance.approvals(context_dir))
    shards = _shard_count(sum(len(records) for records in by_key.values()))
    buckets: list[dict[str, list[Record]]] = [{} for _ in range(shards)]
    for key in sorted(by_key):
        shard = _SHARDS.get((key, shards))
        if shard is None:
            if len(_SHARDS) >= 65536:
                _SHARDS.clear()
            shard = _SHARDS[key, shards] = shard_of(key, shards)
        # In id order, whatever order the store's entries came in (a write folds an import's
        # entries in after the rest; a read lists them by id): the index is one function of the
        # store, which is what doctor checks it against.
        buckets[shard][key] = sorted(by_key[key], key=lambda record: record[0])
    return buckets


def shard_bytes(buckets: list[dict[str, list[Record]]]) -> list[bytes]:
    """Each shard file's bytes, as written."""
    return [json.dumps(bucket, ensure_ascii=False).encode() for bucket in buckets]


def built_from(digests: list[str], hard_delivery: str) -> str:
    """The digest of what the index holds: the records derived from the store (through each
    shard's digest) and the delivery setting. :func:`verify` derives it again from the store."""
    return content_digest(" ".join([hard_delivery, *digests]).encode())


def _remove_tree(directory: str) -> None:
    try:
        for name in os.listdir(directory):
            os.unlink(os.path.join(directory, name))
        os.rmdir(directory)
    except OSError:
        pass  # A concurrent reader or writer; the next rebuild tries again.


def rebuild(context_dir: str) -> Index:
    """Rebuild from entries.json on disk (a hook found the index missing or stale), through
    the store when the journal holds records past the entry file."""
    stamp = source_stamp(context_dir)
    data = _read(os.path.join(context_dir, "entries.json"))
    doc = json.loads(data) if data else {}
    entries = doc.get("entries") if isinstance(doc, dict) else None
    if data and not isinstance(entries, list):
        raise ValueError("entries.json has no 'entries' list")
    meta = doc.get("journal") if isinstance(doc, dict) else None
    written = meta.get("bytes") if isinstance(meta, dict) else 0
    if stamp[-1] > max(written if isinstance(written, int) else 0, 0):
        return write_index(context_dir, _folded(context_dir), stamp)
    return write_index(context_dir, [e for e in entries or () if isinstance(e, dict)], stamp)


def _folded(context_dir: str) -> list[JSONObject]:
    """The entries with the journal's records past ``entries.json`` folded in, as every read
    sees them (the slow path: it loads the whole store, which a hook otherwise never does)."""
    from ctxkeeper.core.errors import StoreError
    from ctxkeeper.core.store import Store

    try:
        return list(Store(os.path.dirname(context_dir), context_dir).load().entries.values())
    except StoreError as exc:
        raise ValueError(str(exc)) from None


def open_index(context_dir: str) -> Index:
    """The current index, rebuilt first when missing or stale."""
    root = os.path.join(context_dir, "cache", INDEX_DIR)
    # A link in the index's place is never read through (one lstat per call): rebuilt instead.
    data = None if os.path.islink(root) else _read(os.path.join(root, META_FILE))
    if data is not None:
        try:
            meta = json.loads(data)
        except ValueError:
            meta = None
        if (
            isinstance(meta, dict)
            and meta.get("version") == INDEX_VERSION
            and meta.get("stamp") == source_stamp(context_dir)
            and isinstance(meta.get("shards"), int)
            and _digest_list(meta.get("digests"), meta["shards"])
            # The setting and the digests vouch for each other: a hand edit of either alone
            # (say "hard": "context", which would turn the gate off) is stale, not trusted.
            and meta.get("built_from") == built_from(meta["digests"], str(meta.get("hard")))
        ):
            shards = meta["shards"]
            directory = os.path.join(root, f"n{shards}")
            return Index(directory, shards, str(meta.get("hard")), meta["digests"])
    return rebuild(context_dir)


def _digest_list(value: object, shards: int) -> bool:
    return (
        isinstance(value, list)
        and len(value) == shards
        and all(isinstance(item, str) for item in value)
    )


def lookup(context_dir: str, rel_path: str) -> tuple[Index, list[Record]]:
    """The index and the records covering ``rel_path``; one rebuild if a shard went missing."""
    index = open_index(context_dir)
    try:
        records = index.covering(rel_path)
    except ValueError:
        records = None  # A torn or hand-edited shard: rebuild it.
    if records is None:
        index = rebuild(context_dir)
        records = index.covering(rel_path) or []
    return index, records


def refresh(context_dir: str, entries: Iterable[JSONObject]) -> None:
    """Keep the index current after a store write; a cache failure never fails the write."""
    try:  # noqa: SIM105 - contextlib is an import the per-edit path does not otherwise pay
        write_index(context_dir, entries)
    except (OSError, ValueError, TypeError):
        pass  # Hooks find the index stale and rebuild it themselves.


def verify(context_dir: str, entries: Iterable[JSONObject]) -> list[str]:
    """What differs between the index on disk and the one these entries (the store as it reads
    now) derive: empty when it is theirs, or stale (a stale index is rebuilt before any use).

    ``doctor`` runs this: a lookup checks only the shards it reads, and only against the
    index's own record of them; this derives every shard from the store.
    """
    root = os.path.join(context_dir, "cache", INDEX_DIR)
    for path in (os.path.join(context_dir, "cache"), root):
        if os.path.islink(path):
            return [f"{path} is a symbolic link (never followed; the index is rebuilt)"]
    data = _read(os.path.join(root, META_FILE))
    try:
        meta = json.loads(data) if data is not None else None
    except ValueError:
        return [f"{os.path.join(root, META_FILE)} does not parse"]
    if not isinstance(meta, dict) or meta.get("stamp") != source_stamp(context_dir):
        return []  # absent or stale: every reader rebuilds it before use
    buckets = _buckets(context_dir, entries)
    expected = shard_bytes(buckets)
    digests = [content_digest(shard) for shard in expected]
    hard = _hard_delivery(context_dir)
    problems: list[str] = []
    if meta.get("shards") != len(buckets) or meta.get("version") != INDEX_VERSION:
        return [f"{os.path.join(root, META_FILE)} does not describe the store's index"]
    if meta.get("hard") != hard or meta.get("built_from") != built_from(digests, hard):
        problems.append(f"{os.path.join(root, META_FILE)} does not match the store")
    directory = os.path.join(root, f"n{len(buckets)}")
    if os.path.islink(directory):
        return [f"{directory} is a symbolic link (never followed; the index is rebuilt)"]
    for number, shard in enumerate(expected):
        path = os.path.join(directory, f"{number}.json")
        if _read(path) != shard:
            problems.append(f"{path} differs from what the store derives")
    return problems
