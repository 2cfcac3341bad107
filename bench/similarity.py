"""Per-write cost of the similarity checks (``capture.check_candidate``) in a warm process.

Each size gets a store-shaped ``{id: entry}`` dict of varied entries (``_common.Varied``; every
seventh one deprecated, so the tombstone check has tombstones to look at). The first check
builds the process-wide similarity index (cold); each timed write then does what
``record_entry`` does to the entries: copies the dict (the store's transaction copy, not
timed), checks a fresh candidate against its values (timed), and adds the new entry. The
baseline, measured in the same run, is one plain Python walk of the same dict (reading every
entry's id): a ratio near or below 1 means the check costs no more than looking at every
entry once, and a ratio that falls as the store grows means the check is sub-linear.

    python bench/similarity.py --sizes 1000 10000 100000 --writes 20
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common

from ctxkeeper.core import times
from ctxkeeper.core.model import clean_fields, contract_floors, new_entry
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


def measure(size: int, writes: int) -> tuple[float, float, float]:
    """Cold check, median warm check and median plain walk, in seconds, at ``size`` entries."""
    varied = _common.Varied()
    items = [varied.fields(n) for n in range(size + writes + 1)]
    stored = _entries(items[:size], 0)
    floors = contract_floors()
    extra = _entries(items[size:], size)
    checks: list[float] = []
    walks: list[float] = []
    cold = 0.0
    for number, (entry_id, entry) in enumerate(extra.items()):
        view = dict(stored)
        fields = {k: v for k, v in entry.items() if k in items[size + number][1]}
        start = time.perf_counter()
        check_candidate(str(entry["kind"]), fields, view.values(), floors=floors)
        took = time.perf_counter() - start
        if number == 0:
            cold = took
        else:
            checks.append(took)
            walks.append(_walk(view))
        stored[entry_id] = entry
    return cold, statistics.median(checks), statistics.median(walks)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--writes", type=int, default=20)
    args = parser.parse_args(argv)
    print("| entries | cold check ms | warm check ms | dict walk ms | check / walk |")
    print("|---|---|---|---|---|")
    for size in args.sizes:
        cold, check, walk = measure(size, max(2, args.writes))
        print(
            f"| {size} | {cold * 1000:.1f} | {check * 1000:.2f} | {walk * 1000:.3f} | "
            f"{check / walk:.1f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
