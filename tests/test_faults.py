"""Fault tests: a writer SIGKILLed inside each step of a write, then the store reopened.

Each trial forks a writer child. The child patches, in its own memory only, one function of
the write path (the commit, the journal append, the entry-file write, the scope-index refresh,
the team snapshot refresh, the verified-journal cache) so that it SIGKILLs itself before that
step, in the middle of it (a partial journal transaction, a partial temporary file) or after it.
The child then writes (records, supersessions, updates) and sends each write's id to the
parent over a pipe once the verb has returned: that is an acknowledged write. After the kill
the parent reopens the store with a fresh ``Store`` and checks that no acknowledged write is
lost, no write is invented, no file is partial, the journal chain is valid, the entries equal
the journal's fold, the hooks' index answers what entries.json says, and the team snapshot
parses. Doctor runs in process after every third trial and repairs at the end of each series,
where one more write must leave the entry file equal to the fold and the snapshot equal to a
full export. 15 kill points x 12 trials, one series with a kill at every point followed by the
real ``python -m ctxkeeper doctor`` (and ``--repair``), and 16 random-time kills of concurrent
real CLI processes (``python -m ctxkeeper add``): 211 kills in all.
"""

from __future__ import annotations

import gc
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field

import pytest

from ctxkeeper.cli.doctor import run_doctor
from ctxkeeper.core import fsutil, journal, journalfile, scopeindex
from ctxkeeper.core.store import ENTRIES_FILE, JOURNAL_FILE, State, Store
from ctxkeeper.team import snapshot, teamlog
from ctxkeeper.team.snapshotformat import parse, render
from ctxkeeper.write.verbs import record_entry, update_entry, user_actor
from tests.conftest import REPO_ROOT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

#: Fork trials per kill point (the CLI's random-time kills make up the rest of the 200).
TRIALS_PER_POINT = 12
CLI_TRIALS = 16
CLI_BATCH = 2
WATCHED_PATH = "src/billing/charge.py"
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
]


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _torn_temp(path: str, data: bytes, rng: random.Random) -> None:
    """What ``write_atomic`` leaves when killed mid-write: part of the data in its temp file."""
    fd, _tmp = tempfile.mkstemp(
        dir=os.path.dirname(path), prefix=fsutil.TEMP_PREFIX, suffix=fsutil.TEMP_SUFFIX
    )
    os.write(fd, data[: rng.randrange(1, max(len(data), 2))])
    os.fsync(fd)
    _die()


# -- kill points: each patches one step of the write path in the child --------------------


def _journal_append(phase: str) -> Callable[[Callable[[], bool], random.Random], None]:
    def install(fire: Callable[[], bool], rng: random.Random) -> None:
        real = fsutil.append_durably

        def patched(path: str, data: bytes) -> int:
            if not fire():
                return real(path, data)
            if phase == "before":
                _die()
            if phase == "torn":  # part of the transaction's lines reached the disk
                fd = os.open(path, os.O_WRONLY | os.O_APPEND)
                os.write(fd, data[: rng.randrange(1, len(data))])
                os.fsync(fd)
                _die()
            start = real(path, data)
            _die()
            return start

        fsutil.append_durably = patched

    return install


def _atomic_write(name: str, phase: str) -> Callable[[Callable[[], bool], random.Random], None]:
    """Kill around ``write_atomic`` of the store file ``name`` (entries.json, snapshot.jsonl)."""

    def install(fire: Callable[[], bool], rng: random.Random) -> None:
        real = fsutil.write_atomic

        def patched(path: str, data: bytes | Sequence[bytes], *, durable: bool = True) -> None:
            data = data if isinstance(data, bytes) else b"".join(data)
            if os.path.basename(path) != name or not fire():
                real(path, data, durable=durable)
                return
            if phase == "before":
                _die()
            if phase == "torn":
                _torn_temp(path, data, rng)
            real(path, data, durable=durable)
            _die()

        fsutil.write_atomic = patched

    return install


def _scope_index(phase: str) -> Callable[[Callable[[], bool], random.Random], None]:
    def install(fire: Callable[[], bool], rng: random.Random) -> None:
        real_index, real_write = scopeindex.write_index, scopeindex.write_cache

        def index(
            context_dir: str, entries: object, stamp: list[int] | None = None
        ) -> scopeindex.Index:
            if phase == "before" and fire():
                _die()
            built = real_index(context_dir, entries, stamp)  # type: ignore[arg-type]
            if phase == "after" and fire():
                _die()
            return built

        def write(path: str, data: bytes) -> None:
            if phase == "torn" and os.path.basename(path) == scopeindex.META_FILE and fire():
                with open(f"{path}.{os.getpid()}.tmp", "wb") as handle:
                    handle.write(data[: rng.randrange(1, len(data))])
                _die()
            real_write(path, data)

        scopeindex.write_index = index
        scopeindex.write_cache = write

    return install


def _snapshot_refresh(phase: str) -> Callable[[Callable[[], bool], random.Random], None]:
    def install(fire: Callable[[], bool], rng: random.Random) -> None:
        real = snapshot.auto_refresh

        def patched(
            context_dir: str,
            entries: Mapping[str, JSONObject],
            committed: list[JSONObject] | None,
            read_journal: Callable[[], list[JSONObject]],
        ) -> None:
            if phase == "before" and fire():
                _die()
            real(context_dir, entries, committed, read_journal)
            if phase == "after" and fire():
                _die()

        snapshot.auto_refresh = patched

    return install


def _verified_cache(fire: Callable[[], bool], rng: random.Random) -> None:
    real = journalfile.remember

    def patched(cache_dir: str, ident: dict[str, int], view: journalfile.View) -> None:
        if fire():
            _die()
        real(cache_dir, ident, view)

    journalfile.remember = patched


def _commit(fire: Callable[[], bool], rng: random.Random) -> None:
    """Killed under the lock, after validation, before anything is appended."""
    real = Store._commit

    def patched(
        self: Store,
        state: State,
        manual: list[JSONObject],
        events: list[JSONObject],
    ) -> list[JSONObject]:
        if fire():
            _die()
        return real(self, state, manual, events)

    Store._commit = patched  # type: ignore[method-assign]


KILL_POINTS: dict[str, Callable[[Callable[[], bool], random.Random], None]] = {
    "commit-before-append": _commit,
    "journal-append-before": _journal_append("before"),
    "journal-append-torn": _journal_append("torn"),
    "journal-append-after": _journal_append("after"),
    "entries-write-before": _atomic_write(ENTRIES_FILE, "before"),
    "entries-write-torn-temp": _atomic_write(ENTRIES_FILE, "torn"),
    "entries-write-after": _atomic_write(ENTRIES_FILE, "after"),
    "scope-index-before": _scope_index("before"),
    "scope-index-torn": _scope_index("torn"),
    "scope-index-after": _scope_index("after"),
    "snapshot-refresh-before": _snapshot_refresh("before"),
    "snapshot-write-torn-temp": _atomic_write("snapshot.jsonl", "torn"),
    "snapshot-write-after": _atomic_write("snapshot.jsonl", "after"),
    "snapshot-refresh-after": _snapshot_refresh("after"),
    "verified-cache": _verified_cache,
}


# -- the writer child and what the parent knows ------------------------------------------------


def _rule(token: str) -> str:
    return f"Rule {token} keeps the billing path pinned"


def _reason(token: str) -> str:
    return f"Incident {token} showed that an unpinned billing path drifted and broke checkout."


def _send(fd: int, message: JSONObject) -> None:
    os.write(fd, json.dumps(message).encode() + b"\n")  # one small write: atomic on a pipe


def _writer(root: str, point: str, fire_at: int, seed: int, out: int) -> None:
    """The child: arm the kill point, then write until it fires (or give up after 12)."""
    rng = random.Random(seed)
    calls = [0]

    def fire() -> bool:
        calls[0] += 1
        return calls[0] == fire_at

    KILL_POINTS[point](fire, rng)
    store = Store.open(root)
    for number in range(12):
        token = f"{seed}-{number} " + " ".join(rng.sample(WORDS, 3))
        live = [
            str(e["id"])
            for e in store.load().entries.values()
            if e.get("status") == "active" and e.get("kind") == "constraint"
        ]
        choice = rng.random()
        if live and choice < 0.3:
            target = rng.choice(live)
            _send(out, {"attempt": "update", "id": target, "token": token})
            update_entry(
                store,
                target,
                {"reason": _reason(token)},
                "the reason names the incident",
                actor=ACTOR,
            )
            _send(out, {"ack": "update", "id": target, "token": token})
            continue
        supersedes = [rng.choice(live)] if live and choice < 0.45 else None
        scope = ["src/billing/"] if rng.random() < 0.6 else ["docs/"]
        fields = {
            "rule": _rule(token),
            "reason": _reason(token),
            "hardness": "hard",
            "scope": scope,
        }
        _send(out, {"attempt": "record", "token": token})
        result = record_entry(store, "constraint", fields, actor=ACTOR, supersedes=supersedes)
        _send(out, {"ack": "record", "id": result["id"], "token": token})


ACTOR = user_actor()


@dataclass
class Ledger:
    """What the parent learned over the pipes: attempts, and acknowledged writes."""

    attempted: set[str] = field(default_factory=set)
    acked_records: dict[str, str] = field(default_factory=dict)
    """id -> the token of its rule."""
    reason_options: dict[str, set[str]] = field(default_factory=dict)
    """id -> the reasons it may hold: the last acknowledged one, or one attempted after it."""

    def take(self, message: JSONObject) -> None:
        token = str(message["token"])
        if message.get("attempt") == "record":
            self.attempted.add(token)
        elif message.get("attempt") == "update":
            self.reason_options.setdefault(str(message["id"]), set()).add(_reason(token))
        elif message.get("ack") == "record":
            self.acked_records[str(message["id"])] = token
            self.reason_options[str(message["id"])] = {_reason(token)}
        elif message.get("ack") == "update":
            self.reason_options[str(message["id"])] = {_reason(token)}


def _fork_trial(root: str, point: str, fire_at: int, seed: int, ledger: Ledger) -> bool:
    """Run one writer child to its kill; True when the kill point was reached."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns into pytest
        code = 0
        gc.disable()  # a collection would touch (copy) every page of the parent's heap
        try:
            os.close(read_end)
            _writer(root, point, fire_at, seed, write_end)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails
            _send(write_end, {"error": repr(exc), "token": ""})
            code = 3
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        lines = pipe.read().splitlines()
    _, status = os.waitpid(pid, 0)
    for raw in lines:
        message = json.loads(raw)
        assert "error" not in message, f"{point}: the writer failed: {message['error']}"
        ledger.take(message)
    if os.WIFEXITED(status):
        assert os.WEXITSTATUS(status) == 0, f"{point}: writer exited {os.WEXITSTATUS(status)}"
        return False
    assert os.WTERMSIG(status) == signal.SIGKILL
    return True


# -- checks after a kill ---------------------------------------------------------------------


def _covers(entry: JSONObject) -> bool:
    scopes = entry.get("scope")
    if not isinstance(scopes, list) or not scopes:
        return True  # project-wide
    return any(WATCHED_PATH.startswith(str(s).rstrip("/") + "/") for s in scopes)


def _bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def check_store(root: str, ledger: Ledger, *, where: str) -> dict[str, JSONObject]:
    """Reopen with a fresh Store and check everything a crash must not break."""
    store = Store.open(root)
    entries_doc = json.loads(_bytes(store.path(ENTRIES_FILE)))  # never half a file
    assert entries_doc["version"] == 1, where
    data = _bytes(store.path(JOURNAL_FILE))
    lines = data.split(b"\n")
    for line in lines[:-1]:
        json.loads(line)  # every whole line parses; only a torn final line may not
    records = store.read_journal()
    assert journal.verify_chain(records) == [], where
    state = store.load()
    folded: dict[str, JSONObject] = {}
    journal.fold(records, folded)
    assert state.entries == folded, f"{where}: the entries are not the journal's fold"
    for entry_id, token in ledger.acked_records.items():
        assert entry_id in state.entries, f"{where}: acknowledged record {entry_id} was lost"
        assert state.entries[entry_id]["rule"] == _rule(token), where
    for entry in state.entries.values():
        rule = str(entry["rule"])
        assert any(rule == _rule(t) for t in ledger.attempted), f"{where}: invented {rule}"
    for entry_id, options in ledger.reason_options.items():
        held = state.entries[entry_id]["reason"]
        assert held in options, f"{where}: {entry_id} holds {held!r}, not one of {options}"
    for entry_id, entry in state.entries.items():
        ledger.reason_options[entry_id] = {str(entry["reason"])}  # the store has now decided
    # The hooks' index answers what every read answers, the journal's fold (a stale one is
    # rebuilt, never served): records a kill left out of entries.json reach the gate too.
    covering = {
        str(e["id"])
        for e in state.entries.values()
        if e.get("kind") == "constraint" and e.get("status") == "active" and _covers(e)
    }
    _, found = scopeindex.lookup(store.dir, WATCHED_PATH)
    assert {record[0] for record in found} == covering, f"{where}: the hook index disagrees"
    snap = fsutil.read_bytes(snapshot.default_path(store.dir))
    if snap is not None:
        parse(snap, "snapshot.jsonl")  # never a partial snapshot
    return state.entries


def full_export(store: Store) -> bytes:
    state = store.load()
    return render(list(state.entries.values()), teamlog.team_events(store.read_journal()))


def age_orphans(directory: str) -> list[str]:
    """Date the killed writers' temporary files back past doctor's safety margin."""
    names = fsutil.orphaned_temp_files(directory)
    old = time.time() - 3600
    for name in names:
        os.utime(os.path.join(directory, name), (old, old))
    return names


def doctor_cli(root: str, *extra: str) -> tuple[int, JSONObject, str]:
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeeper", "doctor", "--json", "--project-dir", root, *extra],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )
    report: JSONObject = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def _only_orphans(problems: list[str]) -> bool:
    return all("left by an interrupted write" in p for p in problems)


def _seed_store(store: Store, ledger: Ledger) -> None:
    fields = {
        "rule": _rule("seed"),
        "reason": _reason("seed"),
        "hardness": "hard",
        "scope": ["src/billing/"],
    }
    result = record_entry(store, "constraint", fields, actor=ACTOR)
    ledger.attempted.add("seed")
    ledger.acked_records[str(result["id"])] = "seed"


@pytest.fixture
def kill_store(tmp_path: Path) -> Iterator[Store]:
    """A store for the fork series, on a tmpfs when the machine has one: SIGKILL ends the
    process, not the machine, so whatever reached the kernel survives and fsync plays no part;
    a tmpfs keeps 180 trials fast. The CLI series and the doctor run use tmp_path."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        base = tempfile.mkdtemp(prefix="ctxkeeper-faults-", dir=shm)
    else:
        base = str(tmp_path / "shm")
        os.makedirs(base)
    try:
        store = Store.open(base)
        store.init()
        yield store
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _series(store: Store, points: list[str], trials: int, ledger: Ledger) -> None:
    """Fork-and-kill ``trials`` writers cycling through ``points``, checking after each."""
    for trial in range(trials):
        point = points[trial % len(points)]
        seed = zlib.crc32(f"{point} {trial}".encode())
        where = f"{point} trial {trial}"
        assert _fork_trial(store.root, point, 1 + trial % 3, seed, ledger), (
            f"{where}: the writer finished without reaching its kill point"
        )
        check_store(store.root, ledger, where=where)
        if trial % 3 == 2:
            # doctor as a person runs it: any unapplied record is applied, nothing else
            report = run_doctor(Store.open(store.root), actor=ACTOR)
            assert _only_orphans(report.problems), f"{where}: {report.problems}"
            check_store(store.root, ledger, where=f"{where}, after doctor")


def _final_write(store: Store, ledger: Ledger, where: str) -> None:
    """One more write: the entry file equals the fold, and the team snapshot equals a full
    export (a refresh a kill interrupted must not leave it missing events)."""
    fresh = Store.open(store.root)
    fields = {"rule": _rule("final"), "reason": _reason("final"), "hardness": "soft"}
    result = record_entry(fresh, "constraint", fields, actor=ACTOR)
    ledger.take({"attempt": "record", "token": "final"})
    ledger.take({"ack": "record", "id": result["id"], "token": "final"})
    entries = check_store(store.root, ledger, where=f"{where} final")
    on_disk = json.loads(_bytes(fresh.path(ENTRIES_FILE)))
    assert {e["id"]: e for e in on_disk["entries"]} == entries
    assert on_disk["journal"]["seq"] == len(fresh.read_journal())
    assert _bytes(snapshot.default_path(fresh.dir)) == full_export(fresh)


class TestKilledWriter:
    @pytest.mark.parametrize("point", sorted(KILL_POINTS))
    def test_kill_point(self, point: str, kill_store: Store) -> None:
        ledger = Ledger()
        _seed_store(kill_store, ledger)
        acked = len(ledger.acked_records)
        _series(kill_store, [point], TRIALS_PER_POINT, ledger)
        assert len(ledger.acked_records) > acked, f"{point}: no child write was acknowledged"
        # What the kills left (temporary files, records not yet in entries.json) is repaired;
        # a temporary file is left alone for a minute in case its writer is still at work.
        age_orphans(kill_store.dir)
        report = run_doctor(Store.open(kill_store.root), actor=ACTOR, repair=True)
        assert report.ok, report.problems
        assert fsutil.orphaned_temp_files(kill_store.dir) == []
        _final_write(kill_store, ledger, point)

    def test_real_doctor_after_a_kill_at_every_point(self, store: Store) -> None:
        ledger = Ledger()
        _seed_store(store, ledger)
        _series(store, sorted(KILL_POINTS), len(KILL_POINTS), ledger)
        code, report, err = doctor_cli(store.root)
        listed = report.get("problems")
        problems = [str(p) for p in listed] if isinstance(listed, list) else []
        assert _only_orphans(problems), problems
        assert code == (1 if problems else 0), err
        assert problems, "no kill left a temporary file (the torn-temp points should)"
        assert age_orphans(store.dir)
        code, report, err = doctor_cli(store.root, "--repair")
        assert (code, report["ok"], report["repaired"]) == (0, True, True), (report, err)
        assert fsutil.orphaned_temp_files(store.dir) == []
        _final_write(store, ledger, "every point")


# -- random-time kills of the real CLI ---------------------------------------------------------


class TestKilledCli:
    def test_random_time_kills(self, store: Store) -> None:
        """Batches of concurrent ``ctxkeeper add`` processes, each SIGKILLed at a random time
        (or finishing first); a process that exited 0 with its id is acknowledged."""
        rng = random.Random(14)
        ledger = Ledger()
        _seed_store(store, ledger)
        env = {**os.environ, "PYTHONPATH": REPO_ROOT}

        def start(token: str) -> subprocess.Popen[bytes]:
            ledger.attempted.add(token)
            command = [sys.executable, "-m", "ctxkeeper", "--json", "--project-dir", store.root]
            command += ["add", "constraint", "--rule", _rule(token), "--reason", _reason(token)]
            command += ["--hardness", "hard", "--scope", "src/billing/"]
            return subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO_ROOT
            )

        # How long one add takes on this machine now, so the kills spread over its whole run
        # (start-up, the write, the refreshes) however loaded the machine is.
        clock = time.monotonic()
        baseline = start("cli baseline")
        out, err = baseline.communicate(timeout=60)
        assert baseline.returncode == 0, err
        span = time.monotonic() - clock
        ledger.take({"ack": "record", "id": json.loads(out)["id"], "token": "cli baseline"})
        killed = finished = 0
        for batch in range(CLI_TRIALS // CLI_BATCH):
            procs: list[tuple[str, float, subprocess.Popen[bytes]]] = []
            started = time.monotonic()
            for slot in range(CLI_BATCH):
                token = f"cli-{batch}-{slot} " + " ".join(rng.sample(WORDS, 3))
                procs.append((token, rng.uniform(0.2, 1.6) * span, start(token)))
            for token, delay, proc in procs:
                try:
                    proc.wait(timeout=max(started + delay - time.monotonic(), 0.001))
                except subprocess.TimeoutExpired:
                    proc.send_signal(signal.SIGKILL)
                out, err = proc.communicate(timeout=60)
                if proc.returncode == 0:
                    finished += 1
                    ledger.take({"ack": "record", "id": json.loads(out)["id"], "token": token})
                else:
                    assert proc.returncode == -signal.SIGKILL, err
                    killed += 1
            check_store(store.root, ledger, where=f"cli batch {batch}")
        assert killed, f"no process was killed ({finished} finished)"
        age_orphans(store.dir)
        code, report, doctor_err = doctor_cli(store.root, "--repair")
        assert (code, report["ok"]) == (0, True), (report, doctor_err)
        assert len(store.read_journal()) >= finished + 1
