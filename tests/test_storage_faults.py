"""A full disk, a read-only ``.context/`` and files of a newer version, met through the real
CLI and the real MCP server (subprocesses).

The full disk is injected (a helper started with ``python -c`` makes every write or fsync of a
file under ``.context/`` fail with ENOSPC, the way a full disk fails them) and, where this runs
as root and may mount, also real: a small tmpfs filled to the last byte. The read-only store is
a read-only bind mount as root (chmod does not stop root) and ``chmod a-w`` otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

from ctxkeeper.core import journal
from ctxkeeper.core.store import ENTRIES_FILE, JOURNAL_FILE, Store
from ctxkeeper.team import snapshot, teamlog
from ctxkeeper.team.snapshotformat import SNAPSHOT_VERSION, render
from ctxkeeper.write.verbs import record_entry, user_actor
from tests.conftest import REPO_ROOT, constraint_fields
from tests.mcp_wire import McpSession
from tests.terminal import on_terminal, require_person_ancestry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject, JSONValue

STORE_FILES = (ENTRIES_FILE, JOURNAL_FILE, "config.json", "snapshot.jsonl")
ENV = {**os.environ, "PYTHONPATH": REPO_ROOT}

#: Runs the CLI with every write and fsync of a file under the store failing with ENOSPC
#: (``all``), or the first journal write landing half its bytes before the disk fills
#: (``short``; writes before it land whole).
FULL_DISK = textwrap.dedent(
    """
    import errno, os, sys
    mode, store_dir, argv = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3:]
    real_open, real_write, real_fsync, real_close = os.open, os.write, os.fsync, os.close
    watched, landed = set(), []

    journal_fds = set()

    def opener(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        if os.path.realpath(os.fsdecode(path)).startswith(store_dir + os.sep):
            watched.add(fd)
            if os.path.basename(os.fsdecode(path)) == "journal.jsonl":
                journal_fds.add(fd)
        return fd

    def full(fd):
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def writer(fd, data):
        if fd not in watched:
            return real_write(fd, data)
        if mode == "short" and not landed:
            if fd not in journal_fds:
                return real_write(fd, data)  # the disk fills at the journal line
            landed.append(fd)
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise full(fd)

    def syncer(fd):
        if fd in watched:
            raise full(fd)
        return real_fsync(fd)

    def closer(fd):
        watched.discard(fd)
        journal_fds.discard(fd)
        return real_close(fd)

    os.open, os.write, os.fsync, os.close = opener, writer, syncer, closer
    from ctxkeeper.cli.app import main
    sys.exit(main(argv))
    """
)


#: A purge on a pseudo-terminal whose store writes start failing with ENOSPC after the first
#: ``sys.argv[1]`` writes: the disk fills part way through the purge.
FULL_DISK_AFTER = textwrap.dedent(
    """
    import errno, os, sys
    after, store_dir = int(sys.argv[1]), os.path.realpath(sys.argv[2])
    argv = sys.argv[6:]  # after the `python -m ctxkeeper` the terminal helper appends
    real_open, real_write, real_fsync, real_close = os.open, os.write, os.fsync, os.close
    watched, landed = set(), []

    def opener(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        if os.path.realpath(os.fsdecode(path)).startswith(store_dir + os.sep):
            watched.add(fd)
        return fd

    def writer(fd, data):
        if fd in watched:
            if len(landed) >= after:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            landed.append(fd)
        return real_write(fd, data)

    def syncer(fd):
        if fd in watched and len(landed) >= after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    def closer(fd):
        watched.discard(fd)
        return real_close(fd)

    os.open, os.write, os.fsync, os.close = opener, writer, syncer, closer
    from ctxkeeper.cli.app import main
    sys.exit(main(argv))
    """
)


def cli(root: str, *args: str, full_disk: str | None = None) -> subprocess.CompletedProcess[str]:
    prefix = [sys.executable, "-m", "ctxkeeper"]
    if full_disk is not None:
        prefix = [sys.executable, "-c", FULL_DISK, full_disk, os.path.join(root, ".context")]
    return subprocess.run(
        [*prefix, "--project-dir", root, *args],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )


def add_args(rule: str) -> list[str]:
    fields = constraint_fields(rule=rule)
    return [
        "--json",
        "add",
        "constraint",
        "--rule",
        rule,
        "--reason",
        str(fields["reason"]),
        "--hardness",
        "hard",
    ]


def listed_ids(root: str) -> set[str]:
    done = cli(root, "--json", "list")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    rows = data["results"]
    return {str(row["id"]) for row in rows}


def store_bytes(store: Store) -> dict[str, bytes | None]:
    files: dict[str, bytes | None] = {}
    for name in STORE_FILES:
        try:
            with open(store.path(name), "rb") as handle:
                files[name] = handle.read()
        except FileNotFoundError:
            files[name] = None
    return files


def assert_consistent(store: Store) -> None:
    """Nothing corrupted: the chain verifies, entries.json is the fold, the snapshot is a
    full export (once the last write succeeded)."""
    fresh = Store.open(store.root)
    records = fresh.read_journal()
    assert journal.verify_chain(records) == []
    folded: dict[str, JSONObject] = {}
    journal.fold(records, folded)
    with open(fresh.path(ENTRIES_FILE), "rb") as handle:
        on_disk = json.loads(handle.read())
    assert {e["id"]: e for e in on_disk["entries"]} == folded
    with open(snapshot.default_path(fresh.dir), "rb") as handle:
        written = handle.read()
    assert written == render(folded.values(), teamlog.team_events(records))


def record(store: Store, rule: str) -> str:
    return str(record_entry(store, "constraint", constraint_fields(rule=rule), actor=ACTOR)["id"])


ACTOR = user_actor()
RULES = [
    "Every charge request carries an idempotency key",
    "Refunds go through the ledger service only",
    "Payouts are batched once per business day",
    "Card numbers never reach the application logs",
]


@contextlib.contextmanager
def mcp(root: str, *, full_disk: str | None = None) -> Iterator[McpSession]:
    command = [sys.executable, "-m", "ctxkeeper", "serve", "--project-dir", root]
    if full_disk is not None:
        command = [sys.executable, "-c", FULL_DISK, full_disk, os.path.join(root, ".context")]
        command += ["serve", "--project-dir", root]
    session = McpSession(command, env=ENV)
    try:
        yield session
    finally:
        session.close()


def record_args(rule: str) -> JSONObject:
    """``record_entry`` arguments for a constraint with this rule."""
    fields = constraint_fields(rule=rule)
    return {
        "kind": "constraint",
        "rule": rule,
        "reason": str(fields["reason"]),
        "hardness": "hard",
        "scope": ["src/billing/"],
    }


def text_of(result: JSONObject) -> str:
    content = result["content"]
    assert isinstance(content, list)
    first = content[0]
    assert isinstance(first, dict)
    return str(first["text"])


def ids_in(value: JSONValue) -> set[str]:
    assert isinstance(value, list)
    return {str(item["id"]) for item in value if isinstance(item, dict)}


def check_reads(root: str, present: set[str], absent: set[str]) -> None:
    """The CLI and the MCP server read the store: what is there, and not what is not."""
    ids = listed_ids(root)
    assert present <= ids
    assert not ids & absent
    done = cli(root, "--json", "search", "idempotency key on every charge request")
    assert done.returncode == 0, done.stderr
    with mcp(root) as session:
        context = session.call("get_context", {"query": RULES[0]})
        assert not context["isError"], context
        structured = context["structuredContent"]
        assert isinstance(structured, dict)
        assert present & ids_in(structured["results"])
        listing = session.call("query_entries", {})
        assert not listing["isError"], listing
        listed = listing["structuredContent"]
        assert isinstance(listed, dict)
        assert present <= ids_in(listed["results"])
        assert not ids_in(listed["results"]) & absent
        one = session.call("get_entry", {"id": min(present)})
        assert not one["isError"], one


# -- full disk ---------------------------------------------------------------------------------


class TestFullDiskInjected:
    def test_cli_write_fails_clearly_and_changes_nothing(self, store: Store) -> None:
        first = record(store, RULES[0])
        before = store_bytes(store)
        done = cli(store.root, *add_args(RULES[1]), full_disk="all")
        assert done.returncode == 1, done.stderr
        assert "No space left on device" in done.stderr
        assert "free some disk space" in done.stderr
        assert store_bytes(store) == before
        check_reads(store.root, {first}, set())
        # Control: the same write with room on the disk goes through.
        again = cli(store.root, *add_args(RULES[1]))
        assert again.returncode == 0, again.stderr
        assert listed_ids(store.root) == {first, json.loads(again.stdout)["id"]}
        assert_consistent(store)

    def test_a_half_written_journal_line_is_never_read_and_is_cut(self, store: Store) -> None:
        first = record(store, RULES[0])
        size = os.path.getsize(store.path(JOURNAL_FILE))
        done = cli(store.root, *add_args(RULES[1]), full_disk="short")
        assert done.returncode == 1, done.stderr
        assert "No space left on device" in done.stderr
        assert os.path.getsize(store.path(JOURNAL_FILE)) > size  # half a line reached the disk
        assert listed_ids(store.root) == {first}  # and no reader takes it for a record
        doctor = cli(store.root, "--json", "doctor")
        assert doctor.returncode == 0, doctor.stdout
        assert json.loads(doctor.stdout)["ok"] is True
        again = cli(store.root, *add_args(RULES[1]))
        assert again.returncode == 0, again.stderr
        assert listed_ids(store.root) == {first, json.loads(again.stdout)["id"]}
        assert len(Store.open(store.root).read_journal()) == 2  # the torn tail was cut
        assert_consistent(store)

    def test_mcp_write_fails_clearly_and_reads_go_on(self, store: Store) -> None:
        first = record(store, RULES[0])
        before = store_bytes(store)
        with mcp(store.root, full_disk="all") as session:
            refused = session.call("record_entry", record_args(RULES[1]))
            assert refused["isError"] is True
            text = text_of(refused)
            assert text.startswith("storage_error: record_entry could not use the store")
            assert "No space left on device" in text
            assert "the disk is full" in text
            context = session.call("get_context", {"query": "idempotency key"})
            assert not context["isError"]
            results = context["structuredContent"]
            assert isinstance(results, dict)
            assert ids_in(results["results"]) == {first}
        assert store_bytes(store) == before


MOUNT_SKIP = "mounting a filesystem needs root (CI as a user uses the injected faults)"


class TestPurgeOnAFullDisk:
    def test_a_purge_the_disk_cuts_short_says_one_thing_and_how_to_finish(
        self, tmp_path: Path
    ) -> None:
        """Whatever write the disk fills at, the purge either did not happen (and says so) or
        happened (and says which file still holds the text, and how to finish), never both."""
        require_person_ancestry()
        outcomes = set()
        for after in range(12):
            project = tmp_path / f"project-{after}"
            project.mkdir()
            store = Store.open(str(project))
            store.init()
            rule = record(store, RULES[0])
            code, out = on_terminal(
                store.root,
                ["purge", rule, "--reason", "it names customer data"],
                b"y\n",
                prefix=[sys.executable, "-c", FULL_DISK_AFTER, str(after), store.dir],
            )
            if code == 1:
                assert "cannot purge: No space left on device" in out, out
                assert "run the command again" in out, out
                assert f"purge: {rule}" not in out, out
                assert "removed:" not in out, out
                # Run again with room, as it says, the purge finishes whatever had landed.
                code, out = on_terminal(
                    store.root, ["purge", rule, "--reason", "it names customer data"], b"y\n"
                )
                assert code == 0, out
                assert "removed: no file under .context/ holds its text" in out, out
                outcomes.add("refused")
                continue
            assert code == 0, out
            assert "cannot purge" not in out, out
            assert rule not in listed_ids(store.root)
            if "the team snapshot was not refreshed" in out:
                assert "`ctxkeeper export snapshot` rewrites it" in out, out
                assert "delete or edit these files by hand" not in out, out
                assert cli(store.root, "export", "snapshot").returncode == 0
                with open(store.path("snapshot.jsonl"), encoding="utf-8") as handle:
                    assert RULES[0] not in handle.read()
                outcomes.add("snapshot left")
            else:
                assert "removed: no file under .context/ holds its text" in out, out
                outcomes.add("done")
        # Each way it can end was met, so no branch above passed for want of a case.
        assert outcomes == {"refused", "snapshot left", "done"}


@contextlib.contextmanager
def mounted(target: str, *args: str) -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip(MOUNT_SKIP)
    done = subprocess.run(["mount", *args, target], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", target], check=True, timeout=30)


class TestFullDiskReal:
    def test_a_full_tmpfs(self, tmp_path: Path) -> None:
        disk = tmp_path / "disk"
        disk.mkdir()
        with mounted(str(disk), "-t", "tmpfs", "-o", "size=1m", "tmpfs"):
            root = str(disk)
            assert cli(root, "init").returncode == 0
            store = Store.open(root)
            acked = [record(store, rule) for rule in RULES[:2]]
            filler = disk / "filler"
            with open(filler, "wb", buffering=0) as handle, contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * 4096)
            failed: list[str] = []
            for number in range(12):
                rule = f"Rule {number} written on a full disk stays out"
                done = cli(root, *add_args(rule))
                if done.returncode == 0:
                    # The journal had room (a page's slack): the write is recorded.
                    acked.append(json.loads(done.stdout)["id"])
                    continue
                assert done.returncode == 1, done.stderr
                assert "No space left on device" in done.stderr, done.stderr
                assert "free some disk space" in done.stderr
                failed.append(rule)
                # Reads go on, with every acknowledged write.
                assert set(acked) <= listed_ids(root)
                if len(failed) == 2:
                    break
            assert failed, "the disk never filled"
            entries = Store.open(root).load().entries
            assert set(entries) == set(acked)
            assert not {e["rule"] for e in entries.values()} & set(failed)
            filler.unlink()
            done = cli(root, *add_args(failed[0]))
            assert done.returncode == 0, done.stderr
            assert set(acked) | {json.loads(done.stdout)["id"]} == listed_ids(root)
            doctor = cli(root, "--json", "doctor")
            assert json.loads(doctor.stdout)["ok"] is True, doctor.stdout
            assert_consistent(store)


# -- read-only store ---------------------------------------------------------------------------


@contextlib.contextmanager
def read_only(store: Store, how: str) -> Iterator[str]:
    """Make ``.context/`` read-only; yield the error text a write meets."""
    if how == "mount":
        with mounted(store.dir, "--bind", store.dir):
            done = subprocess.run(
                ["mount", "-o", "remount,bind,ro", store.dir], capture_output=True, check=False
            )
            if done.returncode != 0:
                pytest.skip("cannot remount read-only here")
            yield "Read-only file system"
        return
    if os.geteuid() == 0:
        pytest.skip("chmod does not stop root from writing (the mount variant covers root)")
    paths = [store.dir]
    for folder, dirs, files in os.walk(store.dir):
        paths += [os.path.join(folder, name) for name in dirs + files]
    modes = {path: os.stat(path).st_mode for path in paths}
    for path in paths:
        os.chmod(path, modes[path] & ~0o222)
    try:
        yield "Permission denied"
    finally:
        for path in reversed(paths):
            os.chmod(path, modes[path])


class TestReadOnlyStore:
    @pytest.mark.parametrize("how", ["mount", "chmod"])
    def test_reads_work_and_writes_fail_clearly(self, store: Store, how: str) -> None:
        ids = {record(store, rule) for rule in RULES[:3]}
        before = store_bytes(store)
        with read_only(store, how) as reason:
            check_reads(store.root, ids, set())
            done = cli(store.root, *add_args(RULES[3]))
            assert done.returncode == 1
            assert reason in done.stderr, done.stderr
            assert "cannot add" in done.stderr
            with mcp(store.root) as session:
                refused = session.call("record_entry", record_args(RULES[3]))
                assert refused["isError"] is True
                text = text_of(refused)
                assert text.startswith("storage_error: record_entry could not use the store")
                assert reason in text
                update = session.call(
                    "update_entry",
                    {"id": min(ids), "updates": {"hardness": "soft"}, "reason": "softer now"},
                )
                assert update["isError"] is True
                assert text_of(update).startswith("storage_error: update_entry")
                still = session.call("query_entries", {})
                assert not still["isError"]
                listed = still["structuredContent"]
                assert isinstance(listed, dict)
                assert ids_in(listed["results"]) == ids
            assert store_bytes(store) == before
        # Writable again: the refused write goes through.
        assert cli(store.root, *add_args(RULES[3])).returncode == 0
        assert len(listed_ids(store.root)) == 4


# -- a store written by a newer version --------------------------------------------------------


def _future_entries(store: Store) -> tuple[str, str]:
    path = store.path(ENTRIES_FILE)
    with open(path, encoding="utf-8") as handle:
        doc = json.load(handle)
    doc["version"] = 99
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle)
    return "version 99", "this one reads 1"


def _future_config(store: Store) -> tuple[str, str]:
    path = store.path("config.json")
    with open(path, encoding="utf-8") as handle:
        doc = json.load(handle)
    doc["version"] = 99
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle)
    return "version 99", "this one reads 1"


def _future_journal(store: Store) -> tuple[str, str]:
    records = store.read_journal()
    last = {**records[-1], "version": 99}
    last["hash"] = journal.record_hash(last)  # a newer writer's record, sealed by it
    with open(store.path(JOURNAL_FILE), "wb") as handle:
        handle.write(journal.encode([*records[:-1], last]))
    return "version 99", f"this one reads {journal.JOURNAL_VERSION}"


#: The file made newer, and whether reads refuse it too (the entries do not depend on the
#: settings, so a newer config.json stops writes and doctor, not reads).
FUTURE = {
    "entries": (_future_entries, True),
    "config": (_future_config, False),
    "journal": (_future_journal, True),
}


class TestNewerVersion:
    @pytest.mark.parametrize("which", sorted(FUTURE))
    def test_refused_naming_both_versions(self, store: Store, which: str) -> None:
        record(store, RULES[0])
        record(store, RULES[1])
        make_newer, reads_refused = FUTURE[which]
        found, ours = make_newer(store)
        before = store_bytes(store)
        refused = [add_args(RULES[2]), ["doctor", "--repair"]]
        for args in [["list"]] * reads_refused + refused:
            done = cli(store.root, *args)
            assert done.returncode == 1, (args, done.stdout, done.stderr)
            shown = done.stdout + done.stderr
            assert found in shown, (args, shown)
            assert ours in shown, (args, shown)
            assert "newer ctxkeeper" in shown
        with mcp(store.root) as session:
            if reads_refused:
                result = session.call("get_context", {"query": RULES[0]})
            else:
                result = session.call("record_entry", record_args(RULES[2]))
            assert result["isError"] is True
            assert found in text_of(result)
            assert ours in text_of(result)
        assert store_bytes(store) == before  # nothing rewritten, nothing repaired
        if not reads_refused:
            assert len(listed_ids(store.root)) == 2

    def test_newer_snapshot_is_refused_and_never_overwritten(self, store: Store) -> None:
        first = record(store, RULES[0])
        path = snapshot.default_path(store.dir)
        with open(path, "rb") as handle:
            lines = handle.read().split(b"\n")
        newer = b"\n".join([b'{"ctxkeeper_snapshot":99}', *lines[1:]])
        with open(path, "wb") as handle:
            handle.write(newer)
        entries_before = store_bytes(store)[ENTRIES_FILE]
        done = cli(store.root, "import")
        assert done.returncode == 1
        assert "snapshot version 99" in done.stderr
        assert f"this one reads version {SNAPSHOT_VERSION}" in done.stderr
        assert store_bytes(store)[ENTRIES_FILE] == entries_before
        # A write still works; its auto-export leaves the newer file alone and says so.
        added = cli(store.root, *add_args(RULES[1]))
        assert added.returncode == 0, added.stderr
        assert "the team snapshot was not refreshed" in added.stderr
        with open(path, "rb") as handle:
            assert handle.read() == newer
        assert listed_ids(store.root) == {first, json.loads(added.stdout)["id"]}
