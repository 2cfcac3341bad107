"""Per-write cost of the similarity checks (``capture.check_candidate``) in a warm process.

Each size gets a store-shaped ``{id: entry}`` dict of varied entries (``_common.Varied``; every
seventh one deprecated, so the tombstone check has tombstones to look at). The first check
builds the process-wide similarity index (cold); each timed write then does what
``record_entry`` does to the entries: copies the dict (the store's transaction copy, not
timed), checks a fresh candidate against its values (timed), and adds the new entry. The
baseline, measured in the same run, is one plain Python walk of the same dict (reading every
entry's id): a ratio near or below 1 means the check costs no more than looking at every
entry once, and a ratio that falls as the store grows means the check is sub-linear.

``--scan`` times the same writes with the candidate index off (every entry scanned), the
figure that sets ``candidates.INDEX_MIN_ENTRIES``; ``--memory`` reports how much memory the
warm writes left allocated (tracemalloc; the new entries are made before it starts), per write.

    python bench/similarity.py --sizes 1000 5000 --writes 20 --scan
    python bench/similarity.py --sizes 5000 --writes 60 --memory
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common

from ctxkeeper.core import times
from ctxkeeper.core.model import clean_fields, contract_floors, new_entry
from ctxkeeper.write import candidates
from ctxkeeper.write.capture import check_candidate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ctxkeeper.core._types import JSONObject


def _entries(items: Sequence[tuple[str, JSONObject]], start: int) -> dict[str, JSONObject]:
    floors = contract_floors()
    at = times.now_iso()
    out: dict[str, JSONObject] = {}
    for n, (kind, fields) in enumerate(items, start=start):
        entry_id = f"{_common.PREFIX[kind]}-{n + 1:03d}-{n % 65536:04x}"
        out[entry_id] = new_entry(
            kind,
            clean_fields(kind, fields, floors),
            entry_id=entry_id,
            status="deprecated" if n % 7 == 3 else "active",
            origin="user",
            at=at,
        )
    return out


def _walk(entries: dict[str, JSONObject]) -> float:
    start = time.perf_counter()
    for entry in entries.values():
        entry.get("id")
    return time.perf_counter() - start


def measure(size: int, writes: int, *, memory: bool = False) -> tuple[float, ...]:
    """Cold check, median warm check and median plain walk, in seconds, at ``size`` entries;
    with ``memory``, also the bytes the cold check left allocated (the index and caches it
    built) and the bytes each warm write added, on average."""
    varied = _common.Varied()
    items = [varied.fields(n) for n in range(size + writes + 1)]
    stored = _entries(items[:size], 0)
    floors = contract_floors()
    extra = _entries(items[size:], size)
    checks: list[float] = []
    walks: list[float] = []
    cold = 0.0
    held: list[int] = []
    if memory:
        tracemalloc.start()  # the entries are made already: what grows is the checks' own
    for number, (entry_id, entry) in enumerate(extra.items()):
        view = dict(stored)
        fields = {k: v for k, v in entry.items() if k in items[size + number][1]}
        if memory and number <= 1:
            held.append(tracemalloc.get_traced_memory()[0])
        start = time.perf_counter()
        check_candidate(str(entry["kind"]), fields, view.values(), floors=floors)
        took = time.perf_counter() - start
        if number == 0:
            cold = took
        else:
            checks.append(took)
            walks.append(_walk(view))
        del view
        stored[entry_id] = entry
    timings = (cold, statistics.median(checks), statistics.median(walks))
    if not memory:
        return timings
    end = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (*timings, held[1] - held[0], (end - held[1]) / max(1, len(checks)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--scan", action="store_true", help="also time a scan of every entry")
    parser.add_argument("--memory", action="store_true", help="memory each write leaves held")
    args = parser.parse_args(argv)
    head = "| entries | cold check ms | warm check ms | dict walk ms | check / walk |"
    rule = "|---|---|---|---|---|"
    if args.scan:
        head, rule = head + " scan ms | scan / index |", rule + "---|---|"
    if args.memory:
        head, rule = (
            head + " MiB held after the cold check | KiB added per write |",
            rule + "---|---|",
        )
    print(head)
    print(rule)
    for size in args.sizes:
        # Memory first: the process-wide index is then built by this size's entries alone
        # (run one size per process for figures free of the sizes before it).
        memory = measure(size, max(2, args.writes), memory=True)[3:] if args.memory else ()
        cold, check, walk = measure(size, max(2, args.writes))
        row = f"| {size} | {cold * 1000:.1f} | {check * 1000:.2f} | {walk * 1000:.3f} | "
        row += f"{check / walk:.1f}x |"
        if args.scan:
            saved = candidates.INDEX_MIN_ENTRIES
            candidates.INDEX_MIN_ENTRIES = size + 10 * args.writes  # type: ignore[misc]
            try:
                scan = measure(size, max(2, args.writes))[1]
            finally:
                candidates.INDEX_MIN_ENTRIES = saved  # type: ignore[misc]
            row += f" {scan * 1000:.2f} | {scan / check:.1f}x |"
        if memory:
            built, added = memory
            row += f" {built / 2**20:.1f} | {added / 1024:.0f} |"
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
