"""The store in ``.context/``: the journal and ``entries.json`` under one lock, with recovery.

It owns the lock, crash recovery, the journal append, the fold of journal records into
entries, and the commit of a transaction. The entry file's bytes are
:mod:`ctxkeeper.core.entriesfile`'s; every other file (the hooks' index, the team snapshot)
belongs to the layer that derives it, which registers an after-commit listener
(:func:`on_commit`, :meth:`Transaction.after_commit`): the store imports none of them.

One invariant: **the journal is the record.** Every change is appended to the hash-chained
journal durably before anything else is written, and ``entries.json`` is a fold of the journal
up to the point it names (dec-001-21c5). So every state the files can be in is one a reader can
serve, by folding the journal records past that point in memory (con-006-83d3):

- *current*: ``entries.json`` names the journal's last record;
- *behind the journal after a crash*: a writer died between its append and its rewrite of
  ``entries.json`` (a torn final transaction is cut whole, dec-003-6c23); the next write
  applies the tail;
- *behind by checkpoint lag*: a long-running process journaled writes and leaves the
  rewrite for later (dec-025-2cdb); readers in every process fold the tail;
- *hand-edited*: ``entries.json`` no longer carries its writer's digest; the next write
  journals the difference as ``manual_edit`` first (dec-010-0702);
- *rewritten by purge*: a purge replaced values in the journal by their digests and rewrote
  it whole (dec-020-b077); the chain still verifies and ``entries.json`` follows it.

A stored entry is replaced, never changed in place: readers share the parsed entries.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import sys
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from ctxkeeper.core import (
    fsutil,
    handedits,
    journal,
    journalfile,
    personmarks,
    policywatch,
    times,
)
from ctxkeeper.core.config import Config, default_document, parse_config
from ctxkeeper.core.entriesfile import (
    ENTRIES_FILE,
    STORE_VERSION,
    FileKey,
    State,
    file_key,
    parse_entries_document,
    render,
    render_entries_document,
)
from ctxkeeper.core.errors import CorruptFileError, NotFoundError, StoreError
from ctxkeeper.core.model import ID_PATTERN, KIND_PREFIX, KINDS, STATUSES, TEXT_FIELDS, ordered
from ctxkeeper.core.project import context_dir, find_root
from ctxkeeper.core.wording import counted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

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


__all__ = [
    "CACHE_DIR",
    "ENTRIES_FILE",
    "JOURNAL_FILE",
    "STORE_VERSION",
    "Commit",
    "State",
    "Store",
    "Transaction",
    "on_commit",
    "parse_entries_document",
    "render_entries_document",
]

#: The last parsed ``entries.json`` per path, keyed by its identity on disk.
_PARSED: dict[str, tuple[FileKey, State]] = {}
#: The last state a read served per store, keyed by the entries file and the journal view.
_SERVED: dict[str, tuple[tuple[object, ...], State]] = {}
#: Entry-file states already warned about, so a long-running server warns once, not per call.
_WARNED: set[tuple[object, ...]] = set()
#: Who a hand edit of ``entries.json`` is journaled as when a write finds it (DESIGN.md: a hand
#: edit is recorded as ``manual_edit`` by ``user``); the editor's login is not knowable.
HAND_EDIT_ACTOR: Final = MappingProxyType({"origin": "user", "user": None})
_DOCTOR_FOUND: Final = "hand edit of entries.json found by doctor"
#: The checkpoint rule (dec-025-2cdb as issue 24 restated it). A process that may leave the
#: entry file behind the journal (:func:`allow_checkpoint_lag`: a long-running one that
#: checkpoints on close, con-025-8858) journals a plain write and stops there, unless the
#: journal's tail past ``entries.json`` reaches :data:`CHECKPOINT_RECORDS` records or its
#: oldest record is :data:`CHECKPOINT_SECONDS` old: then it checkpoints, rewriting ``entries.json`` and
#: running every after-commit listener (the hooks' index, the team snapshot). Readers fold
#: the tail, so a lagging file loses nothing. Decided from the files alone.
CHECKPOINT_RECORDS: Final = 64
CHECKPOINT_SECONDS: Final = 2.0
_LAG_ALLOWED: list[bool] = [False]
#: The stores this process left behind their journal, by directory (with their root): what
#: :func:`checkpoint_all` brings up to date when the process goes idle or closes.
_LAGGING: dict[str, str] = {}


def allow_checkpoint_lag(enabled: bool) -> None:
    """Let this process's writes leave the entry file behind the journal by the checkpoint
    rule (or stop that). The caller must call :func:`checkpoint_all` before it exits."""
    _LAG_ALLOWED[0] = enabled


def lagging() -> bool:
    """Whether a store this process wrote to is behind its journal."""
    return bool(_LAGGING)


def checkpoint_all() -> list[str]:
    """Checkpoint every store this process left behind its journal; return the problems met
    (each also a notice). A checkpoint that fails leaves the journal as the record: the next
    write or checkpoint of that store applies it."""
    problems: list[str] = []
    for directory, root in list(_LAGGING.items()):
        try:
            Store(root, directory).checkpoint()
        except (OSError, StoreError) as exc:
            _LAGGING.pop(directory, None)
            problem = f"could not checkpoint {directory}: {exc}"
            _notice(problem)
            problems.append(problem)
    return problems


@dataclass
class Commit:
    """What a committed transaction left, for the listeners that bring the files derived from
    the store up to date (the hooks' index, the team snapshot; see :func:`on_commit`)."""

    store: Store
    state: State
    """The entries as committed (shared with readers: never change them in place)."""
    config: Config
    wrote: bool
    """Whether anything reached the journal or the entry file."""
    records: list[JSONObject] | None
    """The records a derived file made at the previous commit lacks (None: unknown, after a
    crash or a purge: rebuild it whole rather than patch it)."""
    done: set[str] = field(default_factory=set)
    """Derived files a transaction's own listener already brought up to date, by name."""


#: Called after every commit, in order of registration, after the transaction's own.
_LISTENERS: list[Callable[[Commit], None]] = []


def on_commit(listener: Callable[[Commit], None]) -> None:
    """Call ``listener`` after every commit in this process, still under the store lock.
    The layer that owns a file derived from the entries registers its refresh here, so the
    store never imports it; registering the same listener twice keeps one."""
    if listener not in _LISTENERS:
        _LISTENERS.append(listener)


class PurgedError(NotFoundError):
    """The entry was purged by a person; the journal still holds its history."""

    def __init__(self, entry_id: str, purge: Mapping[str, JSONValue], records: int) -> None:
        super().__init__(entry_id)
        message = (
            f"{entry_id} was purged from the store on {purge.get('at')} (reason: "
            f"{purge.get('reason')}); the journal keeps its {counted(records, 'record')}: a person can "
            f"read them with `ctxkeeper history {entry_id}`"
        )
        self.args = (message,)


class Store:
    """One project's ``.context/`` directory. Build it with :meth:`Store.open`."""

    def __init__(self, root: str, directory: str, *, writer: JSONObject | None = None) -> None:
        self.root = root
        self.dir = directory
        self.writer = writer
        """Who this process writes as, set by the door (the MCP server and the hooks: the
        agent; the CLI: :func:`ctxkeeper.cli.agentenv.cli_actor`). A hand edit a write finds is
        journaled as this writer's (ctxkeeper.core.handedits); unset, as a person's."""

    @classmethod
    def open(cls, project_dir: str | None = None, *, writer: JSONObject | None = None) -> Store:
        """Locate the project root (see :func:`find_root`) and check the store is safe to use."""
        root = find_root(project_dir)
        store = cls(root, context_dir(root), writer=writer)
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

    # con-006-83d3: readers never lock or write; they fold an unapplied tail in memory.
    def load(self) -> State:
        """The current state, for reading: never locks and never writes the store.

        Journal records a crash (or a writer still at work) left unapplied are folded in
        memory; only writers apply them to disk. The state is reused while ``entries.json``
        and the journal are unchanged, so a long-running server answers reads without
        re-parsing 10 MB per call. It is shared: callers must not mutate it (writes go
        through :meth:`transaction`, which always reads afresh). Malformed entries are left
        out (listed in ``skipped``) so one bad hand edit cannot break every read.
        """
        key, state = self._read_entries_cached()
        view = self.journal_view()
        served = _SERVED.get(self.dir)
        if served is not None and served[0] == (key, view):
            return served[1]
        state, _tail = self._caught_up(state, view)
        readable = _readable(state)
        if readable.skipped and (key, view) not in _WARNED:
            _WARNED.add((key, view))
            _notice(
                f"warning: {counted(len(readable.skipped), 'malformed entry', 'malformed entries')}"
                f" in {self.path(ENTRIES_FILE)} "
                f"left out of reads ({', '.join(sorted(readable.skipped))}); "
                "run `ctxkeeper doctor`"
            )
        _SERVED[self.dir] = ((key, view), readable)
        return readable

    def get(self, entry_id: str) -> JSONObject:
        entry = self.load().entries.get(entry_id)
        if entry is None:
            history = self.history(entry_id)
            if history and history[-1].get("op") == "purge":
                raise PurgedError(entry_id, history[-1], len(history))
            raise NotFoundError(entry_id)
        return entry

    def history(self, entry_id: str) -> list[JSONObject]:
        """Every journal record of ``entry_id``, oldest first (a purged id keeps its records)."""
        return [record for record in self.read_journal() if record.get("id") == entry_id]

    def read_journal(self) -> list[JSONObject]:
        """Every record of the journal's whole transactions, after checking the chain.

        :raise StoreError: a line does not parse, or the chain is broken (naming the line).
        """
        view = self.journal_view()
        if not view.size:
            return []
        data = journalfile.read_from(self.path(JOURNAL_FILE), 0, view.size)
        return journal.parse_lines(data, self.path(JOURNAL_FILE))[0]

    def journal_view(self) -> journalfile.View:
        """Where the verified journal ends (cheap while it is unchanged; see journalfile)."""
        return journalfile.verified_view(self.path(JOURNAL_FILE), self.path(CACHE_DIR))

    def _read_entries_cached(self) -> tuple[FileKey | None, State]:
        path = self.path(ENTRIES_FILE)
        fsutil.check_not_link(path)
        key = file_key(path)
        if key is None:
            return None, State()
        cached = _PARSED.get(path)
        if cached is not None and cached[0] == key:
            return key, cached[1]
        state = self._read_entries()
        _PARSED[path] = (key, state)
        return key, state

    def _entries_for_write(self) -> tuple[FileKey | None, State]:
        """The entry file's identity and its state for a writer to change: the parse readers
        share while the file is unchanged on disk (see :meth:`_remember_written`), copied so
        the write cannot touch theirs."""
        key, shared = self._read_entries_cached()
        return key, _copied(shared)

    def _remember_written(
        self, state: State, digest: str, lines: Mapping[str, tuple[JSONObject, bytes]]
    ) -> None:
        """Cache the state just written as the parse of the file it wrote, so neither the next
        write nor the next read parses the whole store again: the entries are the values a
        parse of their lines gives (see :func:`render_entries_document`)."""
        path = self.path(ENTRIES_FILE)
        key = file_key(path)
        if key is None:
            return
        if len(lines) != len(state.entries):
            _PARSED.pop(path, None)
            return
        written = State(
            entries={key: value for key, (value, _) in lines.items()},
            seq=state.seq,
            head=state.head,
            journal_bytes=state.journal_bytes,
            purged={key: state.purged[key] for key in sorted(state.purged)},
            source=digest,
            servable=state.servable,  # the same entries, as a parse of their lines gives them
            sequences=dict(state.sequences) if state.sequences is not None else None,
        )
        _PARSED[path] = (key, written)

    def _read_entries(self) -> State:
        path = self.path(ENTRIES_FILE)
        data = fsutil.read_bytes(path)
        if data is None:
            return State()
        return parse_entries_document(data, path)

    def _caught_up(self, state: State, view: journalfile.View) -> tuple[State, list[JSONObject]]:
        """``state`` with the verified journal records past it folded in (a new object when
        there are any), and those records; raises when ``entries.json`` and the journal do
        not belong together."""
        jpath = self.path(JOURNAL_FILE)
        if state.journal_bytes > view.size:
            raise StoreError(
                f"{self.path(ENTRIES_FILE)} was written after journal record {state.seq} "
                f"(byte {state.journal_bytes}), but {jpath} has only {view.size} verified "
                f"bytes (record {view.seq}): the journal was cut, replaced or removed. The "
                f"entries are intact; `ctxkeeper doctor --repair` journals them again from "
                f"{ENTRIES_FILE} without losing any."
            )
        if state.journal_bytes == view.size:
            if (state.seq, state.head) != (view.seq, view.head):
                raise StoreError(
                    f"{self.path(ENTRIES_FILE)} expects journal record {state.seq} at byte "
                    f"{state.journal_bytes}, but {jpath} holds record {view.seq} there: one of "
                    "them was replaced. Run `ctxkeeper doctor` to compare them."
                )
            return state, []
        tail = journalfile.read_from(jpath, state.journal_bytes, view.size)
        try:
            records, _ = journal.parse_lines(tail, jpath)
        except CorruptFileError:
            records = []
        problems = journal.check_chain(
            records, seq=state.seq, head=state.head, first_line=state.seq + 1
        )
        if not records or problems:
            raise StoreError(
                f"{self.path(ENTRIES_FILE)} expects journal record {state.seq} to end at byte "
                f"{state.journal_bytes}, but {jpath} does not continue from there: one of them "
                "was replaced or edited. Run `ctxkeeper doctor` to compare them."
            )
        caught = replace(state, entries=dict(state.entries), skipped={}, purged=dict(state.purged))
        caught.sequences = dict(state.sequences) if state.sequences is not None else None
        caught.servable = False  # records read from disk may hold anything
        _fold(records, caught)
        caught.seq = int(str(records[-1]["seq"]))
        caught.head = str(records[-1]["hash"])
        caught.journal_bytes = view.size
        return caught, records

    # -- writing ------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(
        self, *, audit_actor: JSONObject | None = None, checkpoint: bool = False
    ) -> Iterator[Transaction]:
        """Lock the store, yield a transaction, and commit its events if the block succeeds.

        Nothing is written when the block raises: validation happens inside the block,
        before the journal append, so a refused operation leaves every file untouched.
        A hand edit of ``entries.json`` (its digest no longer matches) is journaled as
        ``manual_edit`` by ``user`` ahead of the block's own events, so no write absorbs it
        (dec-010-0702).

        :param audit_actor: compare the entries with the journal's fold even when the
            digest matches, and journal any difference as this actor (doctor).
        :param checkpoint: bring the entry file and the derived files up to the journal
            whatever the checkpoint rule says (see :data:`CHECKPOINT_RECORDS`).
        """
        self.require()
        # A write under a config that does not parse would apply unknown floors and policy.
        config = self.config()
        with fsutil.exclusive_lock(self.path(LOCK_FILE)):
            state, tail = self._recovered()
            manual: list[JSONObject] = []
            held: dict[str, tuple[JSONObject, dict[str, JSONValue]]] = {}
            if state.hand_edited or audit_actor is not None:
                manual, held = self._hand_edit_events(state, audit_actor, config.review)
            unrecorded = self._policy_change(config)
            observed = unrecorded or []
            txn = Transaction(state, config, manual, read_journal=self.read_journal)
            if held:
                _hold_for_review(txn, held, dict(audit_actor or self.writer or HAND_EDIT_ACTOR))
            yield txn
            plain = not (manual or observed or txn.listeners or audit_actor or checkpoint)
            if plain and txn.events and not self._checkpoint_due(tail, len(txn.events)):
                self._append(state, [], txn.events)
                _LAGGING[self.dir] = self.root
                if unrecorded is not None:
                    policywatch.journaled(self.dir, config)
                return
            _LAGGING.pop(self.dir, None)
            wrote = bool(txn.events or manual or observed or tail)
            committed = self._commit(state, [*observed, *manual], txn.events) if wrote else []
            if unrecorded is not None:
                # Once committed (a refused write leaves no file behind): the journal holds
                # this policy now, so no later write looks again.
                policywatch.journaled(self.dir, config)
            # The derived files lack the journal's tail past the entry file too (checkpoint
            # lag, or a crash): they are patched with it where they were written just before
            # it, and rebuilt otherwise (con-022-8d85).
            commit = Commit(self, state, config, wrote, [*tail, *committed])
            for listener in [*txn.listeners, *_LISTENERS]:
                listener(commit)

    def checkpoint(self) -> None:
        """Bring ``entries.json`` and the derived files up to the journal (on close)."""
        with self.transaction(checkpoint=True):
            pass  # No events: the commit applies what the journal holds past the entry file.

    @staticmethod
    def _checkpoint_due(tail: list[JSONObject], adding: int) -> bool:
        """The checkpoint rule, for a plain write adding ``adding`` records to the journal's
        ``tail`` past the entry file (see :data:`CHECKPOINT_RECORDS`)."""
        if not _LAG_ALLOWED[0] or len(tail) + adding >= CHECKPOINT_RECORDS:
            return True
        if not tail:
            return False
        # The tail's oldest record says how long the files have lagged (a plain write's
        # records carry the time they were made).
        since = times.parse_stored_bound(tail[0].get("at"), end_of_day=False)
        return since is None or (times.now() - since).total_seconds() >= CHECKPOINT_SECONDS

    def redact(self, state: State, ids: set[str]) -> None:
        """Replace the values and reasons of every journal record of ``ids`` by their digests
        (a purge: honest forgetting). Version-2 records hash through those digests, so their
        hashes stand; a version-1 record hashed its text, so the chain is resealed from the
        first one changed. The journal is rewritten atomically."""
        jpath = self.path(JOURNAL_FILE)
        records = self.read_journal()
        reseal_from: int | None = None
        for index, record in enumerate(records):
            if record.get("id") not in ids:
                continue
            keep_reason = record.get("op") == "purge"  # the person's own words for the purge
            fields = [f for f in journal.DIGESTED_FIELDS if not (keep_reason and f == "reason")]
            clean = {**record, **{f: journal.redacted(record.get(f)) for f in fields}}
            if clean == record:
                continue
            records[index] = clean
            if journal.record_hash(clean) != record.get("hash") and reseal_from is None:
                reseal_from = index
        if reseal_from is not None:
            records = journal.reseal(records, start=reseal_from)
        data = journal.encode(records)
        fsutil.write_atomic(jpath, data)
        journalfile.forget(self.path(CACHE_DIR))
        state.head = str(records[-1]["hash"]) if records else journal.GENESIS
        state.journal_bytes = len(data)
        journalfile.remember_file(
            jpath,
            self.path(CACHE_DIR),
            journalfile.View(state.journal_bytes, state.seq, state.head, state.journal_bytes),
        )
        self._write_entries(state)

    def _recovered(self) -> tuple[State, list[JSONObject]]:
        """The state under the lock, caught up with the journal, and the journal's records
        past the entry file (checkpoint lag, or a crash). A torn final transaction never
        reached the entries: it is cut off, so neither is lost nor invented (dec-003-6c23)."""
        _key, state = self._entries_for_write()
        if state.duplicates:
            raise StoreError(
                f"{self.path(ENTRIES_FILE)}: id {state.duplicates[0]} appears more than once; a "
                "write would keep only one copy. Delete the copy you do not want by hand "
                "(`ctxkeeper doctor` lists them), then retry."
            )
        jpath = self.path(JOURNAL_FILE)
        view = self.journal_view()
        if view.file_size > view.size:
            fsutil.truncate(jpath, view.size)
            journalfile.remember_file(jpath, self.path(CACHE_DIR), view)
        return self._caught_up(state, view)

    def _policy_change(self, config: Config) -> list[JSONObject] | None:
        """A change of ``review`` or ``hard_delivery`` not journaled yet, journaled ahead of
        this write (so the history shows under which policy the write applied); None when the
        journal already records this policy."""
        if not policywatch.needs_journal(self.dir, config):
            return None
        event = policywatch.change_event(self.dir, config, self.read_journal, at=times.now_iso())
        return [] if event is None else [event]

    def _hand_edit_events(
        self, state: State, actor: JSONObject | None, policy: str
    ) -> tuple[list[JSONObject], dict[str, tuple[JSONObject, dict[str, JSONValue]]]]:
        """One ``manual_edit`` per entry that differs from the journal's fold and applies as
        found; and the entries whose edit waits for a person (their fold, the edited fields)."""
        folded: dict[str, JSONObject] = {}
        journal.fold(self.read_journal(), folded)
        changed = sorted(
            entry_id
            for entry_id in set(state.entries) | set(folded)
            if state.entries.get(entry_id) != folded.get(entry_id)
        )
        editor = dict(actor or self.writer or HAND_EDIT_ACTOR)
        sorted_out = handedits.plan(
            state.entries, folded, changed, by_agent=editor.get("origin") == "agent", policy=policy
        )
        at = times.now_iso()
        manual = [
            journal.make_event(
                op="manual_edit",
                entry_id=entry_id,
                before=folded.get(entry_id),
                after=after,
                actor=editor,
                reason=_DOCTOR_FOUND if actor and reason == handedits.FOUND_REASON else reason,
                at=at,
            )
            for entry_id, (after, reason) in sorted_out.applied.items()
        ]
        held = {
            entry_id: (folded[entry_id], fields) for entry_id, fields in sorted_out.held.items()
        }
        return manual, held

    def _commit(
        self,
        state: State,
        manual: list[JSONObject],
        events: list[JSONObject],
    ) -> list[JSONObject]:
        """Append the records to the journal, then write the entries; return the records."""
        records = self._append(state, manual, events)
        try:
            self._write_entries(state)
        except (OSError, StoreError) as exc:
            if not records:
                raise
            # The journal is the record (write-ahead): the change happened, and the next
            # read folds it in memory and the next write rewrites the entry file.
            _notice(
                f"recorded; the entry file will be rebuilt from the journal "
                f"({ENTRIES_FILE} could not be written: {getattr(exc, 'strerror', None) or exc})"
            )
        return records

    def _append(
        self,
        state: State,
        manual: list[JSONObject],
        events: list[JSONObject],
    ) -> list[JSONObject]:
        """Append the records to the journal durably and fold them into ``state``."""
        jpath = self.path(JOURNAL_FILE)
        records: list[JSONObject] = []
        lines: list[bytes] = []
        seq, head = state.seq, state.head
        seq_before = seq
        for group in (manual, events):
            if group:
                chained = journal.sealed(group, seq=seq, head=head, tx=journal.new_tx_id())
                seq, head = int(str(chained[-1][0]["seq"])), str(chained[-1][0]["hash"])
                records.extend(record for record, _line in chained)
                lines.extend(line for _record, line in chained)
        if records:
            data = b"".join(lines)
            size = journalfile.identity(jpath)
            if (size["size"] if size else 0) != state.journal_bytes:
                raise StoreError(f"{jpath} changed while the store was locked; retry")
            # Made by ctxkeeper's own write: a record naming a person is told apart from one
            # appended by hand (ctxkeeper.core.personmarks). Noted first, so a kill between
            # the two leaves a mark for nothing, never a record of ours without its mark.
            personmarks.note(self.dir, records, seq_before)
            start = fsutil.append_durably(jpath, data)
            _fold(records, state)
            state.seq, state.head = seq, head
            state.journal_bytes = start + len(data)
            journalfile.remember_file(
                jpath,
                self.path(CACHE_DIR),
                journalfile.View(state.journal_bytes, seq, head, state.journal_bytes),
            )
        return records

    def _write_entries(self, state: State) -> None:
        path = self.path(ENTRIES_FILE)
        parts, lines, digest = render(state, _PARSED.get(path))
        fsutil.write_atomic(path, parts)  # the parts, not one join: no second copy of the store
        self._remember_written(state, digest, lines)


def _hold_for_review(
    txn: Transaction, held: dict[str, tuple[JSONObject, dict[str, JSONValue]]], actor: JSONObject
) -> None:
    """Stage each held hand edit as the agent's pending update of the entry's journaled value
    (what ``update_entry`` would have proposed), ahead of the write's own events."""
    from ctxkeeper.core.changes import propose  # changes imports this module's Transaction

    at = times.now_iso()
    for entry_id, (folded, fields) in sorted(held.items()):
        txn.entries[entry_id] = folded
        propose(
            txn,
            entry_id,
            "update",
            {"fields": fields},
            actor=dict(actor),
            reason=handedits.HELD_REASON,
            at=at,
        )


def _fold(records: list[JSONObject], state: State) -> None:
    """Fold journal records into ``state``, keeping what it knows about its entries true."""
    journal.fold(records, state.entries)
    note_purges(records, state.purged)
    touched = {str(record.get("id")) for record in records}  # an import's are 5 records each
    if state.servable:
        # What is served is each entry's last version, not the history before it.
        entries = state.entries
        state.servable = all(
            entry_shape_problem(entries[entry_id]) is None
            for entry_id in touched
            if entry_id in entries
        )
    if state.sequences is not None:
        _note_sequences(state.sequences, touched)


def _note_sequences(sequences: dict[str, int], ids: Iterable[str]) -> None:
    for entry_id in ids:
        parts = _id_parts(entry_id)
        if parts is not None and parts[1] > sequences.get(parts[0], 0):
            sequences[parts[0]] = parts[1]


def note_purges(records: Iterable[Mapping[str, JSONValue]], purged: dict[str, JSONObject]) -> None:
    """Remember the value digest each purge record keeps (its ``blocks``)."""
    for record in records:
        blocks = record.get("blocks")
        if record.get("op") == "purge" and isinstance(blocks, dict):
            purged[str(record["id"])] = blocks


def _notice(message: str) -> None:
    """One line on stderr: the CLI's person sees it, the MCP server logs it."""
    print(f"ctxkeeper: {message}", file=sys.stderr)


def entry_shape_problem(entry: Mapping[str, JSONValue]) -> str | None:
    """Why a stored entry cannot be served to readers at all (None: it can)."""
    kind = entry.get("kind")
    if kind not in KINDS:
        return f"kind {kind!r} is not one of {', '.join(KINDS)}"
    if entry.get("status") not in STATUSES:
        return f"status {entry.get('status')!r} is not one of {', '.join(STATUSES)}"
    needed = (*TEXT_FIELDS[str(kind)], *(("hardness",) if kind == "constraint" else ()))
    missing = [name for name in needed if not isinstance(entry.get(name), str)]
    return f"missing {', '.join(missing)}" if missing else None


#: The entries last found servable, by id, so a long-running process does not re-check every
#: entry on every read and write (an entry is replaced on change, never changed in place).
_SERVABLE: dict[str, JSONObject] = {}


def _copied(state: State) -> State:
    """A copy a writer may change; entry values are shared (replaced, never changed)."""
    return replace(
        state,
        entries=dict(state.entries),
        purged=dict(state.purged),
        duplicates=list(state.duplicates),
        skipped=dict(state.skipped),
        sequences=dict(state.sequences) if state.sequences is not None else None,
    )


def _readable(state: State) -> State:
    """``state`` without the entries a read cannot serve (each listed in ``skipped``)."""
    if state.servable:
        return state
    known = _SERVABLE
    skipped: dict[str, str] = {}
    servable: dict[str, JSONObject] = {}
    for entry_id, entry in state.entries.items():
        if known.get(entry_id) is entry:
            servable[entry_id] = entry
        elif (problem := entry_shape_problem(entry)) is not None:
            skipped[entry_id] = problem
        else:
            servable[entry_id] = entry
    known.clear()
    known.update(servable)
    if not skipped:
        state.servable = True  # a fact about entries that are never changed in place
        return state
    kept = {k: v for k, v in state.entries.items() if k not in skipped}
    return replace(state, entries=kept, skipped=skipped)


class Transaction:
    """Mutations staged against a locked :class:`State`; the store journals them on exit."""

    def __init__(
        self,
        state: State,
        config: Config,
        manual_edits: list[JSONObject] | None = None,
        *,
        read_journal: Callable[[], list[JSONObject]] | None = None,
    ) -> None:
        self.state = state
        self.config = config
        self.read_journal = read_journal or list
        """The store's journal records as committed so far (for verbs that read history)."""
        # Malformed entries stay in the file untouched but out of the write's view.
        self.entries = _readable(state).entries.copy()
        self._staged: dict[str, int] = {}
        """The highest id sequence per prefix among the entries this transaction staged."""
        self.events: list[JSONObject] = []
        self.manual_edits = list(manual_edits or [])
        """Hand edits this transaction journals ahead of its own events."""
        self.listeners: list[Callable[[Commit], None]] = []
        """Called once this transaction is committed, before the listeners every commit has
        (a purge's redaction, an import's record of the file it read)."""

    def after_commit(self, listener: Callable[[Commit], None]) -> None:
        """Call ``listener`` once this transaction is committed (once, however often asked)."""
        if listener not in self.listeners:
            self.listeners.append(listener)

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
        extra: Mapping[str, JSONValue] | None = None,
    ) -> None:
        """Stage one mutation; ``after=None`` removes the entry (purge).

        :param before: the value to journal as the before-value when it is not the staged
            one (``doctor`` journals a hand edit against the fold of the journal).
        :param extra: fields the op carries beside the common ones (an import's ``resolves``,
            a purge's ``blocks``).
        """
        before = before if before is not None else self.entries.get(entry_id)
        event = journal.make_event(
            op=op,
            entry_id=entry_id,
            before=before,
            after=ordered(after) if after is not None else None,
            actor=actor,
            reason=reason,
            at=at,
        )
        event.update(extra or {})
        self.events.append(event)
        self._stage(entry_id, after)

    def adopt(self, event: Mapping[str, JSONValue], before: JSONObject | None) -> None:
        """Stage a teammate's event as it was born (identity, time, actor, parents): ``event``
        holds the fields the team shares and no others (the caller's to make sure)."""
        adopted = dict(event)
        adopted["before"] = before
        self.events.append(adopted)
        after = event.get("after")
        self._stage(str(event["id"]), after if isinstance(after, dict) else None)

    def _stage(self, entry_id: str, after: JSONObject | None) -> None:
        if after is None:
            self.entries.pop(entry_id, None)
            return
        if entry_id not in self.entries:
            # An id already here is counted: staged before, or in the state's sequences.
            _note_sequences(self._staged, (entry_id,))
        self.entries[entry_id] = after

    def new_id(self, kind: str) -> str:
        """The next id of ``kind``: prefix, a sequence one past the highest, a random suffix.

        The suffix keeps ids unique when two teammates record the same sequence number.
        """
        prefix = KIND_PREFIX[kind]
        if self.state.sequences is None:
            # Once per state lineage: the writes after it keep the table up to date.
            self.state.sequences = {}
            _note_sequences(self.state.sequences, self.state.entries)
        highest = max(self.state.sequences.get(prefix, 0), self._staged.get(prefix, 0))
        while True:
            candidate = f"{prefix}-{highest + 1:03d}-{secrets.token_hex(2)}"
            if candidate not in self.entries and candidate not in self.state.entries:
                return candidate


@functools.lru_cache(maxsize=1 << 18)
def _id_parts(entry_id: str) -> tuple[str, int] | None:
    match = ID_PATTERN.match(entry_id)
    return (match.group(1), int(match.group(2))) if match else None
