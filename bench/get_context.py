"""Benchmark: get_context on a 10,000-entry store, next to a plain json.load of that store.

Run ``python bench/get_context.py``. It builds the store in a temporary folder from the eval
corpus (entries repeated with fresh ids and varied words), then times, in this process:
- ``json.load`` of ``entries.json`` (the floor any store reader pays);
- a cold ``get_context`` (load, index build, ranking) as a fresh CLI process would pay it;
- warm ``get_context`` calls, as the MCP server answers them with its index cached.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxkeeper.core.store import ENTRIES_FILE, State, Store, render_entries_document
from ctxkeeper.read import rank

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject

SIZE = 10_000
QUERIES = [
    "can I retry the charge call in the checkout worker?",
    "how do we deploy a new build of the payments service?",
    "which column type for money amounts?",
    "what is our Postgres backup retention policy?",
    "GPU quota for the training cluster",
]
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
]


def build_store(folder: str) -> Store:
    corpus: list[JSONObject] = []
    for path in sorted((ROOT / "evals" / "corpus").glob("*.jsonl")):
        corpus.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    rng = random.Random(7)
    prefix = {"decision": "dec", "constraint": "con", "pipeline": "pip"}
    entries: dict[str, JSONObject] = {}
    for n in range(SIZE):
        entry = dict(corpus[n % len(corpus)])
        entry_id = f"{prefix[str(entry['kind'])]}-{n + 1:05d}-{rng.randrange(16**4):04x}"
        entry.update(id=entry_id, superseded_by=None, supersedes=[], related_to=[])
        head = (
            "summary"
            if entry["kind"] == "decision"
            else "rule"
            if entry["kind"] == "constraint"
            else "name"
        )
        entry[head] = f"{entry[head]} {rng.choice(WORDS)} {rng.choice(WORDS)} {n}"
        entries[entry_id] = entry
    store = Store.open(folder)
    store.init()
    Path(store.path(ENTRIES_FILE)).write_bytes(render_entries_document(State(entries=entries)))
    return store


def timed(action: object, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        store = build_store(folder)
        path = store.path(ENTRIES_FILE)
        size_mb = Path(path).stat().st_size / 1e6

        def load() -> None:
            with open(path, encoding="utf-8") as handle:
                json.load(handle)

        json_ms = statistics.median(timed(load, 5))

        def cold() -> None:
            rank._CACHE = rank._IndexCache()  # what a fresh process starts with
            rank.get_context(store, {"query": QUERIES[0]})

        cold_ms = statistics.median(timed(cold, 3))
        rank.get_context(store, {"query": QUERIES[0]})  # warm the index
        warm = [
            t for q in QUERIES for t in timed(lambda q=q: rank.get_context(store, {"query": q}), 5)
        ]
        path_only = timed(lambda: rank.get_context(store, {"path": "src/payments/charge.py"}), 5)
        warm_ms = statistics.median(warm)
        print(f"store: {SIZE} entries, entries.json {size_mb:.1f} MB")
        print(f"json.load of entries.json          {json_ms:8.1f} ms   (baseline, 1.00x)")
        print(
            f"get_context warm (server), median  {warm_ms:8.1f} ms   ({warm_ms / json_ms:.2f}x json.load)"
        )
        print(f"get_context warm, worst of {len(warm):2d}      {max(warm):8.1f} ms")
        print(f"get_context path only, median      {statistics.median(path_only):8.1f} ms")
        print(
            f"get_context cold (load+index+rank) {cold_ms:8.1f} ms   ({cold_ms / json_ms:.2f}x json.load)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
