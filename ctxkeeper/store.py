"""The store in ``.context/``: entry files and journal under one lock, with crash recovery.

All entries live in one ``entries.json`` that also records how far into the journal it is
(dec-001-21c5), so one ``stat`` per open tells whether a crash left records to replay.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from dataclasses import dataclass, field
from typing import Final

from ctxkeeper import fsutil, journal, scopeindex
from ctxkeeper.config import Config, default_document, parse_config
from ctxkeeper.documents import parse_document
from ctxkeeper.errors import NotFoundError, StoreError
from ctxkeeper.model import ID_PATTERN, KIND_PREFIX, ordered
from ctxkeeper.project import context_dir, find_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ctxkeeper._types import JSONObject, JSONValue

STORE_VERSION: Final = 1
ENTRIES_FILE: Final = "entries.json"
JOURNAL_FILE: Final = "journal.jsonl"
CONFIG_FILE: Final = "config.json"
LOCK_FILE: Final = ".lock"
CACHE_DIR: Final = "cache"
#: Only the shared settings and the team snapshot are committed; the rest is machine-local.
GITIGNORE: Final = """\
# Written by `ctxkeeper init`: git sees the shared settings and the team snapshot only.
# Everything else here is this machine's working store (entries, journal, caches).
*
!.gitignore
!config.json
!snapshot.jsonl
"""


#: The last parsed ``entries.json`` per path, keyed by its identity on disk.
_PARSED: dict[str, tuple[tuple[str, int, int, int], State]] = {}


@dataclass
class State:
    """The entries as of journal record ``seq``, plus where the journal ends."""

    entries: dict[str, JSONObject] = field(default_factory=dict)
    seq: int = 0
    head: str = journal.GENESIS
    journal_bytes: int = 0


class Store:
    """One project's ``.context/`` directory. Build it with :meth:`Store.open`."""

    def __init__(self, root: str, directory: str) -> None:
        self.root = root
        self.dir = directory

    @classmethod
    def open(cls, project_dir: str | None = None) -> Store:
        """Locate the project root (see :func:`find_root`) and check the store is safe to use."""
        root = find_root(project_dir)
        store = cls(root, context_dir(root))
        for name in (ENTRIES_FILE, JOURNAL_FILE, CONFIG_FILE, LOCK_FILE, CACHE_DIR):
            fsutil.check_not_link(store.path(name))
        return store

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    @property
    def exists(self) -> bool:
        return os.path.isdir(self.dir)

    def require(self) -> None:
        if not self.exists:
            raise StoreError(f"no ctxkeeper store in {self.root}; run `ctxkeeper init` there first")

    # -- set-up -------------------------------------------------------------------------

    def init(self) -> list[str]:
        """Create ``.context/`` with its config and ``.gitignore``; return the files created."""
        created: list[str] = []
        os.makedirs(self.dir, exist_ok=True)
        os.makedirs(self.path(CACHE_DIR), exist_ok=True)
        if fsutil.read_bytes(self.path(CONFIG_FILE)) is None:
            document = json.dumps(default_document(), indent=2) + "\n"
            fsutil.write_atomic(self.path(CONFIG_FILE), document.encode())
            created.append(CONFIG_FILE)
        if fsutil.read_bytes(self.path(".gitignore")) is None:
            fsutil.write_atomic(self.path(".gitignore"), GITIGNORE.encode())
            created.append(".gitignore")
        return created

    def config(self) -> Config:
        return parse_config(fsutil.read_bytes(self.path(CONFIG_FILE)), self.path(CONFIG_FILE))

    # -- reading ------------------------------------------------------------------------

    def load(self) -> State:
        """The current state; replays journal records a crash left unapplied (under the lock).

        The parsed state is reused while ``entries.json`` is the same file (inode, size,
        mtime): a long-running server answers reads without re-parsing 10 MB per call. The
        returned state is shared, so callers must not mutate it (writes go through
        :meth:`transaction`, which always reads afresh).
        """
        state = self._read_entries_cached()
        size = self._journal_size()
        if size == state.journal_bytes:
            return state
        with fsutil.exclusive_lock(self.path(LOCK_FILE)):
            # Re-read under the lock: another process may have recovered in the meantime.
            return self._recovered(self._read_entries())

    def get(self, entry_id: str) -> JSONObject:
        entry = self.load().entries.get(entry_id)
        if entry is None:
            raise NotFoundError(entry_id)
        return entry

    def read_journal(self) -> list[JSONObject]:
        """Every complete journal record (raises :class:`CorruptFileError` on a bad line)."""
        data = fsutil.read_bytes(self.path(JOURNAL_FILE)) or b""
        return journal.parse_lines(data, self.path(JOURNAL_FILE))[0]

    def _journal_size(self) -> int:
        fsutil.check_not_link(self.path(JOURNAL_FILE))
        try:
            return os.stat(self.path(JOURNAL_FILE)).st_size
        except FileNotFoundError:
            return 0

    def _read_entries_cached(self) -> State:
        path = self.path(ENTRIES_FILE)
        fsutil.check_not_link(path)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return State()
        key = (path, info.st_ino, info.st_size, info.st_mtime_ns)
        cached = _PARSED.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        state = self._read_entries()
        _PARSED[path] = (key, state)
        return state

    def _read_entries(self) -> State:
        path = self.path(ENTRIES_FILE)
        data = fsutil.read_bytes(path)
        if data is None:
            return State()
        return parse_entries_document(data, path)

    def _recovered(self, state: State) -> State:
        """Bring ``state`` (read under the lock) up to the journal's last whole transaction.

        The journal is written first (write-ahead), so records past ``journal_bytes`` are
        mutations whose entry write never happened: apply them. A torn final transaction
        never reached the entries either: cut it off, so neither is lost nor invented.
        """
        if self._journal_size() == state.journal_bytes:
            return state
        jpath = self.path(JOURNAL_FILE)
        data = fsutil.read_bytes(jpath) or b""
        if len(data) < state.journal_bytes:
            raise StoreError(
                f"{jpath} is shorter than {ENTRIES_FILE} expects ({len(data)} < "
                f"{state.journal_bytes} bytes): the journal was cut or replaced. "
                "Run `ctxkeeper doctor` to see what is missing."
            )
        tail, ends = journal.parse_lines(data[state.journal_bytes :], jpath)
        whole = journal.complete_transactions(tail)
        problems = journal.verify_chain(whole, seq=state.seq, head=state.head)
        if problems:
            raise StoreError(f"{jpath}: {problems[0]}; run `ctxkeeper doctor`")
        kept = state.journal_bytes + (ends[len(whole) - 1] if whole else 0)
        if kept < len(data):
            fsutil.truncate(jpath, kept)
        if whole:
            journal.fold(whole, state.entries)
            state.seq = int(str(whole[-1]["seq"]))
            state.head = str(whole[-1]["hash"])
        state.journal_bytes = kept
        self._write_entries(state)
        return state

    # -- writing ------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Lock the store, yield a transaction, and commit its events if the block succeeds.

        Nothing is written when the block raises: validation happens inside the block,
        before the journal append, so a refused operation leaves every file untouched.
        """
        self.require()
        # A write under a config that does not parse would apply unknown floors and policy.
        config = self.config()
        with fsutil.exclusive_lock(self.path(LOCK_FILE)):
            state = self._recovered(self._read_entries())
            txn = Transaction(state, config)
            yield txn
            if txn.events:
                self._commit(state, txn.events)

    def _commit(self, state: State, events: list[JSONObject]) -> None:
        records = journal.chain(events, seq=state.seq, head=state.head, tx=journal.new_tx_id())
        data = journal.encode(records)
        start = fsutil.append_durably(self.path(JOURNAL_FILE), data)
        journal.fold(records, state.entries)
        state.seq = int(str(records[-1]["seq"]))
        state.head = str(records[-1]["hash"])
        state.journal_bytes = start + len(data)
        self._write_entries(state)

    def _write_entries(self, state: State) -> None:
        fsutil.write_atomic(self.path(ENTRIES_FILE), render_entries_document(state))
        # The hooks' per-edit index follows every write (they never parse the whole store).
        scopeindex.refresh(self.dir, state.entries.values())


class Transaction:
    """Mutations staged against a locked :class:`State`; the store journals them on exit."""

    def __init__(self, state: State, config: Config) -> None:
        self.state = state
        self.config = config
        self.entries = dict(state.entries)
        self.events: list[JSONObject] = []

    def get(self, entry_id: str) -> JSONObject:
        entry = self.entries.get(entry_id)
        if entry is None:
            raise NotFoundError(entry_id)
        return entry

    def put(
        self,
        op: str,
        entry_id: str,
        after: JSONObject | None,
        *,
        actor: JSONObject,
        reason: str | None,
        at: str,
        before: JSONObject | None = None,
    ) -> None:
        """Stage one mutation; ``after=None`` removes the entry (purge).

        :param before: the value to journal as the before-value when it is not the staged
            one (``doctor`` journals a hand edit against the fold of the journal).
        """
        before = before if before is not None else self.entries.get(entry_id)
        self.events.append(
            journal.make_event(
                op=op,
                entry_id=entry_id,
                before=before,
                after=ordered(after) if after is not None else None,
                actor=actor,
                reason=reason,
                at=at,
            )
        )
        if after is None:
            self.entries.pop(entry_id, None)
        else:
            self.entries[entry_id] = after

    def new_id(self, kind: str) -> str:
        """The next id of ``kind``: prefix, a sequence one past the highest, a random suffix.

        The suffix keeps ids unique when two teammates record the same sequence number.
        """
        prefix = KIND_PREFIX[kind]
        highest = 0
        for entry_id in self.entries:
            match = ID_PATTERN.match(entry_id)
            if match and match.group(1) == prefix:
                highest = max(highest, int(match.group(2)))
        while True:
            candidate = f"{prefix}-{highest + 1:03d}-{secrets.token_hex(2)}"
            if candidate not in self.entries:
                return candidate


def parse_entries_document(data: bytes, path: str) -> State:
    """Parse ``entries.json``; a file that does not parse names its line and column."""
    doc = parse_document(data, path, version=STORE_VERSION)
    meta = doc.get("journal")
    entries = doc.get("entries")
    if not isinstance(meta, dict) or not isinstance(entries, list):
        raise StoreError(f"{path}: needs a 'journal' object and an 'entries' list")
    state = State(
        seq=_int(meta.get("seq"), path),
        head=str(meta.get("head", journal.GENESIS)),
        journal_bytes=_int(meta.get("bytes"), path),
    )
    for position, entry in enumerate(entries):
        entry_id = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not isinstance(entry_id, str):
            raise StoreError(f"{path}: entries[{position}] is not an entry with an 'id'")
        state.entries[entry_id] = entry
    return state


def _int(value: JSONValue, path: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise StoreError(f"{path}: journal seq and bytes must be non-negative integers")
    return value


def render_entries_document(state: State) -> bytes:
    """Pretty, stable JSON: entries sorted by id with fields in model order, for hand edits."""
    document = {
        "version": STORE_VERSION,
        "journal": {"seq": state.seq, "head": state.head, "bytes": state.journal_bytes},
        "entries": [ordered(state.entries[key]) for key in sorted(state.entries)],
    }
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()
