"""The checkpoint rule (dec-025-2cdb, restated by issue 24): a write is journaled before it
returns; in a process that may lag, the entry file, the hooks' index and the team snapshot
follow at a checkpoint (the journal's tail past the entry file passes N records or T seconds,
the process goes quiet, or it closes), and nobody reads stale.

The lag is driven in-process (the server's switch, turned on here) so it can be looked at
before the checkpoint; every reader is a separate process (the CLI, the real edit hook), and
the server tests run the real ``ctxkeeper serve``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ctxkeeper.core import journal
from ctxkeeper.core import store as store_module
from ctxkeeper.core.errors import BelowFloorError
from ctxkeeper.core.store import ENTRIES_FILE, JOURNAL_FILE, Store
from ctxkeeper.mcp import checkpoints
from ctxkeeper.team import snapshot, teamlog
from ctxkeeper.team.snapshotformat import render
from ctxkeeper.write.verbs import record_entry, update_entry, user_actor
from tests.conftest import REPO_ROOT, constraint_fields
from tests.hook_harness import edit, run_hook
from tests.mcp_wire import McpSession
from tests.test_storage_faults import record_args

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

ENV = {**os.environ, "PYTHONPATH": REPO_ROOT}
RULES = [
    "Every charge request carries an idempotency key",
    "Refunds go through the ledger service only",
    "Payouts are batched once per business day",
    "Card numbers never reach the application logs",
    "Currency amounts are integers of minor units",
]


def cli(root: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *args, "--project-dir", root],
        capture_output=True,
        text=True,
        env={**ENV, "HOME": root},
        cwd=root,
        timeout=60,
        check=False,
    )


def person_adds(root: str, rule: str) -> subprocess.CompletedProcess[str]:
    """A person's ``ctxkeeper add`` of a soft rule, in its own process."""
    reason = str(constraint_fields()["reason"])
    return cli(root, "add", "constraint", "--rule", rule, "--reason", reason, "--hardness", "soft")


def listed(root: str) -> set[str]:
    done = cli(root, "--json", "list")
    assert done.returncode == 0, done.stderr
    return {str(row["id"]) for row in json.loads(done.stdout)["results"]}


def file_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def ids_in_entries_file(store: Store) -> set[str]:
    data = file_bytes(store.path(ENTRIES_FILE))
    return {str(entry["id"]) for entry in json.loads(data)["entries"]} if data else set()


def full_export(store: Store) -> bytes:
    """The snapshot a full export of the store writes now."""
    state = store.load()
    return render(list(state.entries.values()), teamlog.team_events(store.read_journal()))


def constraint(rule: str) -> dict[str, object]:
    return constraint_fields(rule=rule, hardness="hard", scope=["src/billing/"])


def record(store: Store, rule: str) -> str:
    return str(record_entry(store, "constraint", constraint(rule), actor=user_actor())["id"])


def gate_ids(project: Path, session: str) -> str:
    """What the real edit hook tells the agent before an edit of a billing file."""
    answer = run_hook("PreToolUse", edit(project / "src/billing/pay.py", session=session), project)
    assert answer.returncode == 0, answer.stderr
    return answer.stdout


def lag(store: Store) -> int:
    """How many journal records the entry file on disk is behind by."""
    data = file_bytes(store.path(ENTRIES_FILE))
    written = int(json.loads(data)["journal"]["seq"]) if data else 0
    return store.journal_view().seq - written


@pytest.fixture
def deferring(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """A store with one person's rule written normally, then this process lagging (the time
    rule pushed out of reach, so a slow machine cannot checkpoint mid-test)."""
    record(store, RULES[0])
    monkeypatch.setattr(store_module, "CHECKPOINT_SECONDS", 3600.0)
    store_module.allow_checkpoint_lag(True)
    try:
        yield store
    finally:
        store_module.allow_checkpoint_lag(False)
        store_module.checkpoint_all()


class TestLagInProcess:
    def test_readers_see_a_write_the_files_do_not_show_yet(
        self, deferring: Store, project: Path
    ) -> None:
        store = deferring
        [old] = listed(store.root)
        entries_before = file_bytes(store.path(ENTRIES_FILE))
        snapshot_before = file_bytes(snapshot.default_path(store.dir))
        journal_before = file_bytes(store.path(JOURNAL_FILE))
        new = record(store, RULES[1])
        # Journaled durably; the whole-store files wait.
        assert file_bytes(store.path(JOURNAL_FILE)) != journal_before
        assert file_bytes(store.path(ENTRIES_FILE)) == entries_before
        assert file_bytes(snapshot.default_path(store.dir)) == snapshot_before
        assert lag(store) == 1
        assert store_module.lagging()
        # Another process reads the journal's fold: the new rule beside the old one.
        assert listed(store.root) == {old, new}
        # The real edit hook (its own process, its own index) gates on both.
        said = gate_ids(project, "s-deferred")
        assert new in said
        assert old in said
        store_module.checkpoint_all()
        assert lag(store) == 0
        assert not store_module.lagging()
        assert ids_in_entries_file(store) == {old, new}
        assert file_bytes(snapshot.default_path(store.dir)) == full_export(store)
        assert cli(store.root, "doctor").returncode == 0

    def test_a_burst_patches_the_snapshot_once_with_every_write(self, deferring: Store) -> None:
        store = deferring
        entries_before = file_bytes(store.path(ENTRIES_FILE))
        ids = [record(store, rule) for rule in RULES[1:]]
        clearer = "Charges retried without a key were taken twice in the March outage."
        update_entry(store, ids[0], {"reason": clearer}, "a clearer reason", actor=user_actor())
        with pytest.raises(BelowFloorError):  # refused: nothing written, the lag kept
            record_entry(
                store, "constraint", {**constraint(RULES[0]), "rule": "x"}, actor=user_actor()
            )
        assert file_bytes(store.path(ENTRIES_FILE)) == entries_before
        assert lag(store) == len(ids) + 1
        store_module.checkpoint_all()
        assert set(ids) < ids_in_entries_file(store)
        assert store.load().entries[ids[0]]["reason"] == clearer
        # Patched from the journal's tail alone, the file is what a full export writes.
        assert file_bytes(snapshot.default_path(store.dir)) == full_export(store)
        records = store.read_journal()
        assert journal.verify_chain(records) == []

    def test_another_writer_applies_the_deferred_records_and_nothing_is_lost(
        self, deferring: Store
    ) -> None:
        store = deferring
        ours = record(store, RULES[1])
        theirs = person_adds(store.root, RULES[2])
        assert theirs.returncode == 0, theirs.stderr
        # The other process found our journaled record past the entry file and wrote it.
        on_disk = ids_in_entries_file(store)
        assert ours in on_disk
        later = record(store, RULES[3])  # this write reads the files afresh
        store_module.checkpoint_all()
        assert {ours, later} < ids_in_entries_file(store)
        assert len(ids_in_entries_file(store)) == 4
        assert file_bytes(snapshot.default_path(store.dir)) == full_export(store)
        assert cli(store.root, "doctor").returncode == 0


# -- the real server -------------------------------------------------------------------------


def serve(root: str) -> McpSession:
    command = [sys.executable, "-m", "ctxkeeper", "serve", "--project-dir", root]
    return McpSession(command, env={**ENV, "HOME": root})


def recorded_id(result: JSONObject) -> str:
    structured = result.get("structuredContent")
    assert isinstance(structured, dict), result
    return str(structured["id"])


def wait_for(check: object, seconds: float = 20.0) -> bool:
    assert callable(check)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return bool(check())


@pytest.fixture
def review_off(store: Store) -> Store:
    """Agent writes are active at once, so the gate has something to deliver."""
    path = store.path("config.json")
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    config["review"] = "off"
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    return store


class TestServer:
    def test_an_idle_server_brings_the_files_up_to_date(self, review_off: Store) -> None:
        store = review_off
        session = serve(store.root)
        try:
            ids = [recorded_id(session.call("record_entry", record_args(r))) for r in RULES[:3]]
            # While the server lives and is idle, the files catch up without any exit.
            assert wait_for(lambda: set(ids) <= ids_in_entries_file(store))
            assert wait_for(
                lambda: file_bytes(snapshot.default_path(store.dir)) == full_export(store)
            )
        finally:
            session.close()
        assert cli(store.root, "doctor").returncode == 0

    def test_sigterm_checkpoints_on_the_way_out(self, review_off: Store) -> None:
        store = review_off
        session = serve(store.root)
        new = recorded_id(session.call("record_entry", record_args(RULES[0])))
        session.proc.send_signal(signal.SIGTERM)  # at once: inside the idle wait
        assert session.proc.wait(timeout=30) == 128 + signal.SIGTERM
        assert new in ids_in_entries_file(store)
        assert file_bytes(snapshot.default_path(store.dir)) == full_export(store)
        for stream in (session.proc.stdin, session.proc.stdout, session.proc.stderr):
            assert stream is not None
            stream.close()

    def test_sigkill_before_the_checkpoint_loses_nothing(
        self, review_off: Store, project: Path
    ) -> None:
        store = review_off
        session = serve(store.root)
        first = recorded_id(session.call("record_entry", record_args(RULES[0])))
        session.proc.kill()  # at once: the acknowledged write is in the journal only
        session.proc.wait(timeout=30)
        for stream in (session.proc.stdin, session.proc.stdout, session.proc.stderr):
            assert stream is not None
            stream.close()
        assert first in listed(store.root)
        assert first in gate_ids(project, "s-killed")
        second = person_adds(store.root, RULES[1])
        assert second.returncode == 0, second.stderr
        assert first in ids_in_entries_file(store)
        assert file_bytes(snapshot.default_path(store.dir)) == full_export(store)
        assert cli(store.root, "doctor").returncode == 0


class TestCheckpointRule:
    """The rule in the store, and ctxkeeper.mcp.checkpoints.settle driven with a stand-in
    stdin probe."""

    def test_input_soon_waits_and_quiet_checkpoints(self, deferring: Store) -> None:
        store = deferring
        new = record(store, RULES[1])
        asked: list[float] = []

        def more_coming(timeout: float) -> bool:
            asked.append(timeout)
            return True

        checkpoints.settle(more_coming)
        assert asked == [store_module.CHECKPOINT_SECONDS]
        assert lag(store) == 1  # a burst goes on: still lagging
        assert new not in ids_in_entries_file(store)
        checkpoints.settle(lambda _timeout: False)  # quiet: written now
        assert lag(store) == 0
        assert new in ids_in_entries_file(store)

    def test_an_old_tail_is_checkpointed_by_the_next_write(
        self, deferring: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        store = deferring
        young = record(store, RULES[1])
        assert young not in ids_in_entries_file(store)  # the control: a young tail lags
        monkeypatch.setattr(store_module, "CHECKPOINT_SECONDS", 0.0)
        later = record(store, RULES[2])  # the tail is now old enough: this write checkpoints
        assert {young, later} <= ids_in_entries_file(store)
        assert lag(store) == 0
        assert file_bytes(snapshot.default_path(store.dir)) == full_export(store)

    def test_a_long_tail_is_checkpointed_by_the_write_that_reaches_n(
        self, deferring: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        store = deferring
        monkeypatch.setattr(store_module, "CHECKPOINT_RECORDS", 3)
        first, second = record(store, RULES[1]), record(store, RULES[2])
        assert lag(store) == 2  # the control: under N records, the files wait
        assert not {first, second} & ids_in_entries_file(store)
        third = record(store, RULES[3])
        assert {first, second, third} <= ids_in_entries_file(store)
        assert lag(store) == 0
