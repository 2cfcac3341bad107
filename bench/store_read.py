"""Time the store's read path on a 5,000-entry store: cold (a CLI run), warm (a server), after
an append, after a hand edit of the journal, and one write.

Run: ``python bench/store_read.py [N]`` from the repository root (PYTHONPATH picks the copy).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from ctxkeeper.core import journal
from ctxkeeper.core._types import JSONObject
from ctxkeeper.core.store import ENTRIES_FILE, JOURNAL_FILE, State, Store, render_entries_document
from ctxkeeper.write import derived  # noqa: F401  # a write refreshes the index, as every door's does

N = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
ACTOR: JSONObject = {"origin": "user", "user": "bench"}


def build(root: str) -> Store:
    store = Store.open(root)
    store.init()
    events = []
    entries: dict[str, JSONObject] = {}
    for n in range(1, N + 1):
        entry_id = f"con-{n:03d}-abcd"
        entry: JSONObject = {
            "id": entry_id,
            "kind": "constraint",
            "status": "active",
            "origin": "user",
            "rule": f"Rule {n}: every charge request carries an idempotency key",
            "reason": f"Incident {n}: a retry storm double-charged customers at checkout. " * 3,
            "hardness": "soft",
            "scope": [f"src/module{n % 50}/"],
            "tags": ["billing"],
            "revision": 1,
        }
        entries[entry_id] = entry
        events.append(
            journal.make_event(
                op="record",
                entry_id=entry_id,
                before=None,
                after=entry,
                actor=ACTOR,
                reason=None,
                at="2026-11-30T09:15:00Z",
            )
        )
    records = []
    head, seq = journal.GENESIS, 0
    for event in events:  # one transaction per record, as real writes make them
        [record] = journal.chain([event], seq=seq, head=head, tx=journal.new_tx_id())
        records.append(record)
        head, seq = str(record["hash"]), seq + 1
    data = journal.encode(records)
    with open(store.path(JOURNAL_FILE), "wb") as handle:
        handle.write(data)
    state = State(entries=entries, seq=seq, head=head, journal_bytes=len(data))
    with open(store.path(ENTRIES_FILE), "wb") as handle:
        handle.write(render_entries_document(state))
    return store


def timed(label: str, action, repeat: int = 1) -> None:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    for _ in range(repeat):
        action()
    per = (time.perf_counter() - started) / repeat * 1000
    print(f"{label:<44} {per:8.2f} ms")


def main() -> None:
    root = tempfile.mkdtemp(prefix="ctxkeeper-bench-")
    store = build(root)
    size = os.path.getsize(store.path(JOURNAL_FILE)) / 1e6
    print(
        f"{N} entries, journal {size:.1f} MB, entries.json "
        f"{os.path.getsize(store.path(ENTRIES_FILE)) / 1e6:.1f} MB"
    )
    cold = [
        sys.executable,
        "-c",
        f"from ctxkeeper.core.store import Store; Store.open({root!r}).load()",
    ]
    subprocess.run(cold, check=True)  # first run: no verified prefix yet
    timed("cold load in a new process (CLI), x5", lambda: subprocess.run(cold, check=True), 5)
    store.load()
    timed("warm load, unchanged store (server), x100", store.load, 100)
    with store.transaction() as tx:
        entry = dict(tx.get("con-001-abcd"), rule="Rule 1 changed: keys are per charge attempt")
        tx.put(
            "update", "con-001-abcd", entry, actor=ACTOR, reason="bench", at="2026-11-30T10:00:00Z"
        )
    timed("load after one write (re-parse entries.json)", store.load)
    timed("one write (update one entry)", lambda: _write(store))
    os.utime(store.path(JOURNAL_FILE))  # touched outside ctxkeeper: checked whole once
    timed("load after the journal was touched (full check)", store.load)


def _write(store: Store) -> None:
    with store.transaction() as tx:
        entry = dict(tx.get("con-002-abcd"), rule=f"Rule 2 changed at {time.time()}")
        tx.put(
            "update", "con-002-abcd", entry, actor=ACTOR, reason="bench", at="2026-11-30T10:00:00Z"
        )


if __name__ == "__main__":
    main()
