"""Benchmark: the team snapshot's export, import into a fresh clone and re-import, on stores of
1,000 and 10,000 entries with 5 journal events each on average (a record and four updates).

Run ``.venv/bin/python bench/snapshot.py [--entries 1000 10000] [--repeat N] [--profile]``
from the repository root. Each store is written directly in the store's format (a hash-chained
journal, one transaction per event as real writes make them, and the ``entries.json`` it folds
to), checked by ``doctor``, then timed beside a baseline measured in the same run on the same
file: a plain ``json.loads`` of every line of the snapshot.

- export: ``export_snapshot`` of the store in this process (its journal already verified, as
  in the server after a write);
- import: ``import_snapshot`` into a fresh clone (``.context/`` holding only ``config.json``
  and the pulled ``snapshot.jsonl``), which adopts every event and rewrites the snapshot. It
  runs in a fresh process, as the SessionStart hook and ``ctxkeeper import`` run it: in the
  process that built the store, the checks' caches already hold every text and time;
- re-import: the same import again, in that process (idempotent: nothing new).

Targets (issue): the import of 10,000 entries / 50,000 events under 5 s on this machine, and
every time growing about linearly (10x entries, about 10x time). ``--profile`` prints where
the largest import spends its time in this process (its caches warm from the build).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxkeeper.cli.doctor import run_doctor
from ctxkeeper.core import journal
from ctxkeeper.core.model import clean_fields, contract_floors, new_entry, ordered
from ctxkeeper.core.store import ENTRIES_FILE, JOURNAL_FILE, State, Store, render_entries_document
from ctxkeeper.team.snapshot import default_path
from ctxkeeper.write.exchange import export_snapshot, import_snapshot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxkeeper.core._types import JSONObject

USER: JSONObject = {"origin": "user", "user": "bench"}
AGENT: JSONObject = {"origin": "agent", "session_id": None}
#: Updates per entry cycle through 0..8: four on average, so five events per entry.
UPDATE_CYCLE = 9
FLOORS = contract_floors()


def fields_for(n: int) -> tuple[str, dict[str, object]]:
    """Entry ``n``'s kind and fields, over the contract's floors and free of secret shapes."""
    module = f"src/module{n % 50}/"
    if n % 3 == 0:
        return "constraint", {
            "rule": f"Rule {n}: every charge request in module {n % 50} carries an idempotency key",
            "reason": f"Incident {n}: a retry storm double-charged customers at checkout twice.",
            "hardness": "hard" if n % 6 == 0 else "soft",
            "scope": [module],
            "tags": ["billing", f"team{n % 7}"],
        }
    if n % 3 == 1:
        return "decision", {
            "summary": f"Decision {n}: use advisory locks for scheduler {n % 40}",
            "problem": f"Two replicas of scheduler {n % 40} ran the nightly invoice job at once.",
            "why_chosen": (
                f"Advisory locks live in the database we already run (case {n}), release on "
                "disconnect and need no new infrastructure."
            ),
            "alternatives": ["Redis locks: another service to run and fail over"],
            "scope": [module],
        }
    return "pipeline", {
        "name": f"Release train {n}",
        "purpose": f"Ship tagged build {n} to production with a rollback point ready.",
        "steps": ["Tag the release commit on main", f"Run smoke suite {n % 9} against staging"],
    }


def _at(minutes: int) -> str:
    day, minute = divmod(minutes, 24 * 60)
    return (
        f"2026-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}T{minute // 60:02d}:{minute % 60:02d}:00Z"
    )


def build(root: str, size: int) -> tuple[Store, int]:
    """A store of ``size`` entries and its journal, written directly; returns it and the
    number of journal events."""
    os.makedirs(root, exist_ok=True)
    store = Store.open(root)
    store.init()
    entries: dict[str, JSONObject] = {}
    events: list[JSONObject] = []
    for n in range(1, size + 1):
        kind, fields = fields_for(n)
        # Every tenth entry is an agent's proposal (review policy "agent"), the rest a person's.
        agent = n % 10 == 0
        actor = AGENT if agent else USER
        entry_id = f"{kind[:3]}-{n:05d}-{n * 2654435761 % 65536:04x}"
        minute = n * 3
        clean = clean_fields(kind, fields, FLOORS)
        entry = new_entry(
            kind,
            clean,
            entry_id=entry_id,
            status="proposed" if agent else "active",
            origin=str(actor["origin"]),
            at=_at(minute),
            supersedes=[],
        )
        events.append(
            journal.make_event(
                op="record",
                entry_id=entry_id,
                before=None,
                after=entry,
                actor=actor,
                reason=None,
                at=_at(minute),
            )
        )
        for update in range(1, n % UPDATE_CYCLE + 1):
            text_field = next(iter(clean))
            after = ordered(
                {
                    **entry,
                    text_field: f"{clean[text_field]} (revised {update})",
                    "updated_at": _at(minute + update),
                    "revision": update + 1,
                }
            )
            events.append(
                journal.make_event(
                    op="update",
                    entry_id=entry_id,
                    before=entry,
                    after=after,
                    actor=actor,
                    reason=f"revision {update}: wording agreed in review",
                    at=_at(minute + update),
                )
            )
            entry = after
        entries[entry_id] = entry
    records: list[JSONObject] = []
    head, seq = journal.GENESIS, 0
    for event in events:  # one transaction per event, as real writes make them
        [record] = journal.chain([event], seq=seq, head=head, tx=journal.new_tx_id())
        records.append(record)
        head, seq = str(record["hash"]), seq + 1
    data = journal.encode(records)
    Path(store.path(JOURNAL_FILE)).write_bytes(data)
    state = State(entries=entries, seq=seq, head=head, journal_bytes=len(data))
    Path(store.path(ENTRIES_FILE)).write_bytes(render_entries_document(state))
    return store, len(events)


def fresh_clone(folder: str, snapshot: bytes) -> Store:
    """What ``git clone`` of the project gives a teammate: config.json and the snapshot."""
    os.makedirs(folder)
    clone = Store.open(folder)
    clone.init()
    Path(default_path(clone.dir)).write_bytes(snapshot)
    return clone


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def baseline(path: str) -> None:
    with open(path, "rb") as handle:
        for line in handle.read().split(b"\n"):
            if line:
                json.loads(line)


def import_in_child(clone: str, *, events: int, size: int) -> dict[str, float]:
    """Import into ``clone`` and import again, in a fresh process; the times in ms and the
    peak memory of that process and of any it started (in MB)."""
    # The benchmark has written hundreds of megabytes (the stores, every export): flushed
    # first, so the kernel's write-back of them does not take a processor from the import.
    if hasattr(os, "sync"):
        os.sync()
    run = subprocess.run(
        [sys.executable, __file__, "--import-into", clone, "--expect", str(events), str(size)],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise SystemExit(f"the import process failed:\n{run.stdout}{run.stderr}")
    timings: dict[str, float] = json.loads(run.stdout.splitlines()[-1])
    return timings


def _import_here(clone_dir: str, events: int, size: int) -> None:
    """The child side of :func:`import_in_child`: print its figures as one JSON line."""
    clone = Store.open(clone_dir)
    started = time.perf_counter()
    first = import_snapshot(clone, actor=USER)
    import_ms = (time.perf_counter() - started) * 1000
    assert first["events_added"] == events, first["events_added"]
    assert first["total_entries"] == size
    started = time.perf_counter()
    again = import_snapshot(clone, actor=USER)
    reimport_ms = (time.perf_counter() - started) * 1000
    assert again["unchanged"] is True
    assert again["events_added"] == 0
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, else KiB
    # ru_maxrss keeps the pages a forked child shared with its parent before exec (the whole
    # benchmark's store): Linux's VmHWM is this process's own peak.
    peak = _own_peak() or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1e6
    figures = {"import": import_ms, "reimport": reimport_ms, "rss": peak}
    print(json.dumps(figures))


def _own_peak() -> float | None:
    """This process's peak resident memory in MB since it started (Linux), else None."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except (OSError, ValueError):
        pass
    return None


def measure(folder: str, size: int, repeat: int, profile: bool) -> dict[str, float]:
    store, events = build(os.path.join(folder, f"team-{size}"), size)
    report = run_doctor(store, actor=USER)
    if not report.ok:
        raise SystemExit(f"doctor refused the built store: {report.problems[:3]}")
    store.load()  # verify the journal once, as every write leaves it verified
    export_ms = statistics.median(timed(lambda: export_snapshot(store)) for _ in range(repeat))
    path = default_path(store.dir)
    snapshot = Path(path).read_bytes()
    base_ms = statistics.median(timed(lambda: baseline(path)) for _ in range(repeat))
    imports, reimports, peaks = [], [], []
    for attempt in range(repeat):
        clone = fresh_clone(os.path.join(folder, f"clone-{size}-{attempt}"), snapshot)
        figures = import_in_child(clone.root, events=events, size=size)
        imports.append(figures["import"])
        reimports.append(figures["reimport"])
        peaks.append(figures["rss"])
        assert Path(default_path(clone.dir)).read_bytes() == snapshot  # every clone alike
        if attempt == repeat - 1 and not run_doctor(clone, actor=USER).ok:
            raise SystemExit("doctor refused the clone after the import")
    if profile:  # one more clone, outside the timings: the profiler slows everything down
        clone = fresh_clone(os.path.join(folder, f"clone-{size}-profiled"), snapshot)
        profiler = cProfile.Profile()
        profiler.runcall(import_snapshot, clone, actor=USER)
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
        print(f"profile of the import of {size} entries (cumulative):\n{out.getvalue()}")
    return {
        "size": size,
        "events": events,
        "bytes": len(snapshot),
        "baseline": base_ms,
        "export": export_ms,
        "import": statistics.median(imports),
        "reimport": statistics.median(reimports),
        "rss": max(peaks),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--entries", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--repeat", type=int, default=1, help="runs per size (median shown)")
    parser.add_argument("--profile", action="store_true", help="cProfile the largest import")
    parser.add_argument("--import-into", help=argparse.SUPPRESS)  # the child of import_in_child
    parser.add_argument("--expect", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.import_into:
        _import_here(args.import_into, *args.expect)
        return 0
    sizes = sorted(args.entries)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ctxkeeper-bench-") as folder:
        rows = [
            measure(folder, size, args.repeat, args.profile and size == sizes[-1]) for size in sizes
        ]
    # Other work on the machine slows every column alike: compare the ratios, not the ms.
    print(
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, {os.cpu_count()} CPUs"
    )
    header = (
        f"{'entries':>8} {'events':>7} {'snapshot':>9} {'baseline':>9} {'export':>9} "
        f"{'import':>9} {'re-import':>9}   ratio to baseline (export / import / re-import)"
    )
    print(header)
    for row in rows:
        base = row["baseline"]
        print(
            f"{row['size']:>8} {row['events']:>7} {row['bytes'] / 1e6:>7.1f}MB "
            f"{base:>7.0f}ms {row['export']:>7.0f}ms {row['import']:>7.0f}ms "
            f"{row['reimport']:>7.1f}ms   {row['export'] / base:5.1f}x / "
            f"{row['import'] / base:5.1f}x / {row['reimport'] / base:5.1f}x"
        )
    for row in rows:
        print(f"peak memory of the import of {row['size']} entries: {row['rss']:.0f} MB")
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        scale = large["size"] / small["size"]
        growth = ", ".join(
            f"{name} {large[name] / small[name]:.1f}x"
            for name in ("bytes", "baseline", "export", "import", "reimport")
        )
        print(f"growth {small['size']} -> {large['size']} entries ({scale:.0f}x): {growth}")
    largest = rows[-1]
    verdict = "meets" if largest["import"] < 5000 else "MISSES"
    print(
        f"import of {largest['size']} entries / {largest['events']} events: "
        f"{largest['import'] / 1000:.2f} s ({verdict} the 5 s target)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
