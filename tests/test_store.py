from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ctxkeeper.core import journal
from ctxkeeper.core.errors import CorruptFileError, StoreError, UnsafeStoreError, UsageError
from ctxkeeper.core.model import clean_fields, contract_floors, new_entry
from ctxkeeper.core.store import ENTRIES_FILE, JOURNAL_FILE, Store
from tests.conftest import REPO_ROOT, constraint_fields, snapshot_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject

ACTOR: JSONObject = {"origin": "user", "user": "tester"}
AT = "2026-11-30T09:15:00Z"


def put_constraint(store: Store, rule: str = "Every charge carries an idempotency key") -> str:
    with store.transaction() as tx:
        entry_id = tx.new_id("constraint")
        clean = clean_fields("constraint", constraint_fields(rule=rule), contract_floors())
        entry = new_entry(
            "constraint", clean, entry_id=entry_id, status="active", origin="user", at=AT
        )
        tx.put("record", entry_id, entry, actor=ACTOR, reason=None, at=AT)
    return entry_id


class TestInit:
    def test_init_writes_config_and_gitignore(self, store: Store) -> None:
        config = json.loads(Path(store.path("config.json")).read_text())
        assert config["version"] == 1
        assert config["review"] == "agent"
        ignore = Path(store.path(".gitignore")).read_text().splitlines()
        assert "*" in ignore
        assert "!config.json" in ignore
        assert "!snapshot.jsonl" in ignore
        assert store.init() == []  # idempotent: nothing new the second time
        assert oct(os.stat(store.path("config.json")).st_mode & 0o777) != "0o600"

    def test_missing_store_says_to_init(self, project: Path) -> None:
        store = Store.open(str(project))
        with pytest.raises(StoreError, match="run `ctxkeeper init`"), store.transaction():
            pass

    def test_bad_project_dir(self, tmp_path: Path) -> None:
        with pytest.raises(UsageError, match="does not exist"):
            Store.open(str(tmp_path / "nope"))


class TestRootDiscovery:
    def test_env_then_git_then_cwd(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        repo = tmp_path / "repo"
        (repo / ".git").mkdir(parents=True)
        (repo / "src" / "deep").mkdir(parents=True)
        monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
        monkeypatch.chdir(repo / "src" / "deep")
        assert Store.open().root == os.path.realpath(repo)
        other = tmp_path / "other"
        other.mkdir()
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(other))
        assert Store.open().root == os.path.realpath(other)
        assert Store.open(str(repo)).root == os.path.realpath(repo)
        monkeypatch.delenv("CLAUDE_PROJECT_DIR")
        plain = tmp_path / "plain"
        plain.mkdir()
        monkeypatch.chdir(plain)
        if not any(os.path.exists(os.path.join(p, ".git")) for p in _ancestors(str(plain))):
            assert Store.open().root == os.path.realpath(plain)


def _ancestors(path: str) -> list[str]:
    out = []
    while True:
        out.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            return out
        path = parent


class TestWrites:
    def test_put_writes_journal_then_entries(self, store: Store) -> None:
        entry_id = put_constraint(store)
        state = store.load()
        assert list(state.entries) == [entry_id]
        assert state.seq == 1
        records = store.read_journal()
        assert [r["op"] for r in records] == ["record"]
        assert records[0]["before"] is None
        assert records[0]["after"] == state.entries[entry_id]
        assert journal.verify_chain(records) == []
        doc = json.loads(Path(store.path(ENTRIES_FILE)).read_text())
        assert doc["version"] == 1

    def test_failed_block_writes_nothing(self, store: Store) -> None:
        put_constraint(store)
        before = snapshot_dir(store.dir)

        def stage_then_fail() -> None:
            with store.transaction() as tx:
                entry: JSONObject = {"id": "con-009-abcd"}
                tx.put("record", "con-009-abcd", entry, actor=ACTOR, reason=None, at=AT)
                raise RuntimeError("validation failed after staging")

        with pytest.raises(RuntimeError):
            stage_then_fail()
        assert snapshot_dir(store.dir) == before

    def test_ids_follow_sequence_per_kind(self, store: Store) -> None:
        first = put_constraint(store, "Every charge carries an idempotency key")
        second = put_constraint(store, "Refunds go through the ledger service only")
        assert first.startswith("con-001-")
        assert second.startswith("con-002-")
        with store.transaction() as tx:
            assert tx.new_id("decision").startswith("dec-001-")


class TestCorruptStore:
    @pytest.mark.parametrize(
        ("name", "garbage", "line", "column"),
        [
            pytest.param(
                ENTRIES_FILE, b'{\n  "version": 1,\n  "entries": [,]\n}\n', 3, 15, id="entries"
            ),
            pytest.param("config.json", b'{"version": 1,\n"review": agent}\n', 2, 11, id="config"),
        ],
    )
    def test_refuses_and_leaves_file_byte_identical(
        self, store: Store, name: str, garbage: bytes, line: int, column: int
    ) -> None:
        put_constraint(store)
        with open(store.path(name), "wb") as handle:
            handle.write(garbage)
        before = snapshot_dir(store.dir)
        with pytest.raises(CorruptFileError) as info:
            put_constraint(store, "Refunds go through the ledger service only")
        assert f"{name}:{line}:{column}" in str(info.value)
        assert snapshot_dir(store.dir) == before

    def test_corrupt_journal_line_is_refused(self, store: Store) -> None:
        put_constraint(store)
        with open(store.path(JOURNAL_FILE), "ab") as handle:
            handle.write(b'{"seq": 2, oops}\n')
        before = snapshot_dir(store.dir)
        with pytest.raises(CorruptFileError, match=r"journal.jsonl:2:12: "):
            put_constraint(store, "Refunds go through the ledger service only")
        assert snapshot_dir(store.dir) == before

    def test_future_version_is_refused(self, store: Store) -> None:
        put_constraint(store)
        path = store.path(ENTRIES_FILE)
        doc = json.loads(Path(path).read_text())
        doc["version"] = 99
        Path(path).write_text(json.dumps(doc))
        with pytest.raises(StoreError, match="newer ctxkeeper"):
            store.load()

    def test_shortened_journal_is_refused(self, store: Store) -> None:
        put_constraint(store)
        put_constraint(store, "Refunds go through the ledger service only")
        path = store.path(JOURNAL_FILE)
        first_line = Path(path).read_bytes().splitlines(keepends=True)[0]
        Path(path).write_bytes(first_line)
        with pytest.raises(StoreError, match="the journal was cut, replaced or removed"):
            store.load()


class TestUntrustedLayout:
    def test_symlinked_context_dir(self, tmp_path: Path) -> None:
        outside = tmp_path / "outside"
        outside.mkdir()
        project = tmp_path / "p"
        project.mkdir()
        os.symlink(outside, project / ".context")
        with pytest.raises(UnsafeStoreError, match="symbolic link"):
            Store.open(str(project))

    @pytest.mark.parametrize("name", [ENTRIES_FILE, JOURNAL_FILE, "config.json"])
    def test_symlinked_store_file(self, store: Store, tmp_path: Path, name: str) -> None:
        victim = tmp_path / "victim.txt"
        victim.write_text("precious\n")
        target = store.path(name)
        if os.path.exists(target):
            os.unlink(target)
        os.symlink(victim, target)
        with pytest.raises(UnsafeStoreError, match="symbolic link"):
            put_constraint(Store(store.root, store.dir))
        assert victim.read_text() == "precious\n"
        with pytest.raises(UnsafeStoreError):
            Store.open(store.root)

    def test_hard_linked_journal(self, store: Store, tmp_path: Path) -> None:
        put_constraint(store)
        victim = tmp_path / "victim.txt"
        os.link(store.path(JOURNAL_FILE), victim)
        size = victim.stat().st_size
        with pytest.raises(UnsafeStoreError, match="hard links"):
            put_constraint(store, "Refunds go through the ledger service only")
        assert victim.stat().st_size == size


CRASH_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from ctxkeeper.core import store as store_module
    from ctxkeeper.core.store import Store
    from tests.test_store import put_constraint

    def die(self, state):
        os.kill(os.getpid(), signal.SIGKILL)

    store_module.Store._write_entries = die
    put_constraint(Store.open({project!r}), "Refunds go through the ledger service only")
    """
)


class TestCrashRecovery:
    def test_kill_between_journal_append_and_entry_write(self, store: Store) -> None:
        first = put_constraint(store)
        script = CRASH_SCRIPT.format(root=REPO_ROOT, project=store.root)
        proc = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, check=False)
        assert proc.returncode == -9
        # The journal has the mutation; the entries file does not yet.
        assert len(store.read_journal()) == 2
        on_disk = json.loads(Path(store.path(ENTRIES_FILE)).read_text())
        assert [e["id"] for e in on_disk["entries"]] == [first]
        # Reopening applies it: no lost mutation, and no phantom one.
        state = Store.open(store.root).load()
        assert len(state.entries) == 2
        assert state.seq == 2
        rules = sorted(str(e["rule"]) for e in state.entries.values())
        assert rules == [
            "Every charge carries an idempotency key",
            "Refunds go through the ledger service only",
        ]
        assert journal.verify_chain(store.read_journal()) == []
        third = put_constraint(store, "Payouts are batched once per business day")
        assert third.startswith("con-003-")

    def test_torn_journal_tail_is_dropped(self, store: Store) -> None:
        put_constraint(store)
        size = os.path.getsize(store.path(JOURNAL_FILE))
        with open(store.path(JOURNAL_FILE), "ab") as handle:
            handle.write(b'{"seq": 2, "op": "record", "id": "con-0')  # crash mid-append
        state = store.load()
        assert len(state.entries) == 1
        assert os.path.getsize(store.path(JOURNAL_FILE)) > size  # a reader never writes
        with store.transaction():
            pass  # a writer cuts the torn tail off
        assert os.path.getsize(store.path(JOURNAL_FILE)) == size
        put_constraint(store, "Refunds go through the ledger service only")
        assert journal.verify_chain(store.read_journal()) == []

    def test_torn_multi_record_transaction_is_dropped_whole(self, store: Store) -> None:
        put_constraint(store)
        state = store.load()
        events = [
            journal.make_event(
                op="record",
                entry_id=f"con-00{n}-abcd",
                before=None,
                after={"id": f"con-00{n}-abcd"},
                actor=ACTOR,
                reason=None,
                at=AT,
            )
            for n in (5, 6)
        ]
        records = journal.chain(events, seq=state.seq, head=state.head, tx="t1")
        with open(store.path(JOURNAL_FILE), "ab") as handle:
            handle.write(journal.encode(records[:1]))  # the crash cut the second record
        recovered = store.load()
        assert sorted(recovered.entries) == sorted(state.entries)
        assert len(store.read_journal()) == 1


CONCURRENT_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from ctxkeeper.core.store import Store
    from ctxkeeper.write.verbs import record_entry, user_actor

    worker = int(sys.argv[1])
    store = Store.open({project!r})
    for n in range(50):
        record_entry(store, "pipeline", {{
            "name": f"worker {{worker}} job {{n}}",
            "purpose": f"Procedure number {{n}} of worker {{worker}}, unique text for the lock test.",
            "steps": [f"Step one of job {{n}} in worker {{worker}}"],
        }}, actor=user_actor())
    """
)


class TestConcurrency:
    @pytest.mark.slow
    def test_four_processes_record_fifty_each(self, store: Store) -> None:
        script = CONCURRENT_SCRIPT.format(root=REPO_ROOT, project=store.root)
        procs = [
            subprocess.Popen([sys.executable, "-c", script, str(worker)], cwd=REPO_ROOT)
            for worker in range(4)
        ]
        assert [proc.wait(timeout=300) for proc in procs] == [0, 0, 0, 0]
        state = store.load()
        records = store.read_journal()
        assert len(state.entries) == 200
        assert len(records) == 200
        assert [r["seq"] for r in records] == list(range(1, 201))
        assert journal.verify_chain(records) == []
        folded: dict[str, JSONObject] = {}
        journal.fold(records, folded)
        assert folded == state.entries


HOLD_LOCK_SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from ctxkeeper.core import fsutil
    from ctxkeeper.core.store import Store
    store = Store.open({project!r})
    with fsutil.exclusive_lock(store.path(".lock")):
        print("locked", flush=True)
        time.sleep(30)
    """
)

READ_SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from ctxkeeper.core.store import Store
    started = time.monotonic()
    state = Store.open({project!r}).load()
    print(len(state.entries), round(time.monotonic() - started, 3))
    """
)


class TestReadersNeverLock:
    @pytest.mark.slow
    def test_reader_folds_the_unapplied_tail_while_a_writer_holds_the_lock(
        self, store: Store
    ) -> None:
        put_constraint(store)
        # A second write whose entry-file write never happened: the journal is ahead.
        state = store.load()
        with store.transaction() as tx:
            tx.put(
                "record",
                "con-002-abcd",
                {**state.entries[next(iter(state.entries))], "id": "con-002-abcd"},
                actor=ACTOR,
                reason=None,
                at=AT,
            )
            behind = Path(store.path(ENTRIES_FILE)).read_bytes()
        Path(store.path(ENTRIES_FILE)).write_bytes(behind)
        entries_before = Path(store.path(ENTRIES_FILE)).read_bytes()
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK_SCRIPT.format(root=REPO_ROOT, project=store.root)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == "locked"
            read = subprocess.run(
                [sys.executable, "-c", READ_SCRIPT.format(root=REPO_ROOT, project=store.root)],
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            )
        finally:
            holder.kill()
            holder.wait()
            if holder.stdout is not None:
                holder.stdout.close()
        count, seconds = read.stdout.split()
        assert count == "2"  # the unapplied record is seen
        assert float(seconds) < 2.0  # and the reader did not wait for the lock
        assert Path(store.path(ENTRIES_FILE)).read_bytes() == entries_before  # nor write
        with store.transaction():
            pass  # a writer applies it
        assert json.loads(Path(store.path(ENTRIES_FILE)).read_text())["journal"]["seq"] == 2


class TestEntryWriteFailsAfterAppend:
    def test_says_recorded_and_the_next_read_has_it(
        self, store: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        first = put_constraint(store)

        def disk_full(self: Store, state: object) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        with monkeypatch.context() as patch:
            patch.setattr(Store, "_write_entries", disk_full)
            second = put_constraint(store, "Refunds go through the ledger service only")
        err = capsys.readouterr().err
        assert "recorded; the entry file will be rebuilt from the journal" in err
        assert "No space left on device" in err
        assert sorted(store.load().entries) == sorted([first, second])
        put_constraint(store, "Payouts are batched once per business day")
        on_disk = json.loads(Path(store.path(ENTRIES_FILE)).read_text())
        assert len(on_disk["entries"]) == 3


class TestOddFiles:
    def test_entries_json_is_a_directory(self, store: Store) -> None:
        os.mkdir(store.path(ENTRIES_FILE))
        with pytest.raises(StoreError, match="is a directory where ctxkeeper expects a file"):
            store.load()
        with pytest.raises(StoreError, match="is a directory"):
            put_constraint(store)

    def test_purged_id_keeps_its_history(self, store: Store) -> None:
        from ctxkeeper.cli.review import purge
        from ctxkeeper.core.store import PurgedError

        gone = put_constraint(store)
        kept = put_constraint(store, "Refunds go through the ledger service only")
        purge(store, gone, "recorded by mistake today", actor=ACTOR)
        with pytest.raises(PurgedError, match=f"ctxkeeper history {gone}"):
            store.get(gone)
        assert [r["op"] for r in store.history(gone)] == ["record", "purge"]
        assert [r["op"] for r in store.history(kept)] == ["record"]
        assert store.get(kept)["id"] == kept


class TestVerifiedPrefix:
    def test_unchanged_journal_is_not_reread(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from ctxkeeper.core import journalfile

        put_constraint(store)
        put_constraint(store, "Refunds go through the ledger service only")
        scans: list[str] = []
        real_scan = journalfile.scan

        def counted_scan(path: str) -> journalfile.Scan:
            scans.append(path)
            return real_scan(path)

        monkeypatch.setattr(journalfile, "scan", counted_scan)
        store.load()
        assert scans == []  # the writer remembered what it verified
        lines = Path(store.path(JOURNAL_FILE)).read_bytes()
        Path(store.path(JOURNAL_FILE)).write_bytes(lines)  # same bytes, new mtime/ctime
        store.load()
        assert len(scans) == 1  # a file touched outside ctxkeeper is checked whole, once
        store.load()
        assert len(scans) == 1
