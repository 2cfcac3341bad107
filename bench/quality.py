"""Benchmark: the quality scan (``ctxkeeper doctor --quality``) and the PreCompact hook.

Run ``.venv/bin/python bench/quality.py [--entries 1000 10000] [--hook-entries 1000]
[--runs 5] [--check-pairs 2000]`` from the repository root.

Each store is written directly in the store's format (an ``entries.json``, as
bench/get_context.py does) from varied text: every entry's fields are words drawn, with their
corpus frequencies, from the retrieval corpus under ``evals/corpus/`` (so common words are
common and the duplicate check meets realistic term overlap), plus one deliberate restatement
per hundred entries. Timed, each the median of ``--runs``:

- scan: :func:`ctxkeeper.read.quality.scan` over the loaded entries, in this process;
- cli: ``python -m ctxkeeper doctor --quality --json`` as a person runs it (a fresh process);
- hook: the real ``hooks/pre_compact.py`` on a PreCompact payload, as Claude Code starts it,
  beside ``python -I -S -c pass`` (the interpreter's own start).

``--check-pairs N`` also compares the duplicate finding against every pair of the first N
entries, scored with :func:`ctxkeeper.write.similarity.similarity` (the prefix filter must
find the same pairs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxkeeper.core import times
from ctxkeeper.core.store import ENTRIES_FILE, State, Store, render_entries_document
from ctxkeeper.read.quality import DUPLICATE_TERM_DICE, count_by_code, scan
from ctxkeeper.write.similarity import RESTATEMENT_THRESHOLD, classify, similarity, statement

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject

PREFIX = {"decision": "dec", "constraint": "con", "pipeline": "pip"}


def _vocabulary() -> list[str]:
    words: list[str] = []
    for path in sorted((ROOT / "evals" / "corpus").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            for key in ("summary", "problem", "why_chosen", "rule", "reason", "purpose"):
                value = entry.get(key)
                if isinstance(value, str):
                    words += [w.strip(".,;:()\"'") for w in value.split()]
    return [w for w in words if w.isalpha()]


def build_entries(size: int, seed: int = 7) -> list[JSONObject]:
    rng = random.Random(seed)
    words = _vocabulary()

    def text(count: int) -> str:
        return " ".join(rng.choice(words) for _ in range(count))

    entries: list[JSONObject] = []
    for n in range(size):
        kind = ("decision", "constraint", "pipeline")[n % 3]
        entry: JSONObject = {
            "id": f"{PREFIX[kind]}-{n + 1:05d}-{rng.randrange(16**4):04x}",
            "kind": kind,
            "status": "proposed" if n % 10 == 0 else "active",
            "origin": "user",
            "scope": [f"src/module{rng.randrange(400)}/"] if n % 4 else [],
            "tags": [f"t{rng.randrange(2000)}"] if n % 5 else [],
            "related_to": [],
            "supersedes": [],
            "superseded_by": None,
            "valid_from": None,
            "valid_until": "2025-01-31" if n % 97 == 0 else "soon" if n % 89 == 0 else None,
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "verified_at": None,
            "verified_sha": None,
            "revision": 1,
        }
        if kind == "decision":
            entry.update(
                summary=text(rng.randrange(6, 14)),
                problem=text(rng.randrange(10, 25)),
                why_chosen=text(rng.randrange(8, 30)),
                alternatives=[],
            )
        elif kind == "constraint":
            entry.update(
                rule=text(rng.randrange(5, 12)) + (" in settings.py" if n % 50 == 0 else ""),
                reason=text(rng.randrange(8, 25)),
                hardness="hard" if n % 2 else "soft",
            )
        else:
            entry.update(
                name=text(rng.randrange(2, 5)),
                purpose=text(rng.randrange(8, 25)),
                steps=[text(4), text(5)],
            )
        if n % 100 == 99 and entries[-3]["kind"] == kind:
            # A restatement of the entry three before (same kind): a few words changed.
            source = entries[-3]
            for key in ("summary", "rule", "name", "problem", "reason", "purpose"):
                if key in source:
                    parts = str(source[key]).split()
                    parts[rng.randrange(len(parts))] = rng.choice(words)
                    entry[key] = " ".join(parts)
        entries.append(entry)
    return entries


def write_store(folder: str, entries: list[JSONObject]) -> Store:
    store = Store.open(folder)
    store.init()
    state = State(entries={str(e["id"]): e for e in entries})
    Path(store.path(ENTRIES_FILE)).write_bytes(render_entries_document(state))
    return store


def median_ms(action: object, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def run(args: list[str], stdin: bytes = b"", env: dict[str, str] | None = None) -> None:
    subprocess.run(args, input=stdin, capture_output=True, check=True, env=env, timeout=600)


def brute_force_pairs(entries: list[JSONObject]) -> set[tuple[str, ...]]:
    live = [e for e in entries if e["status"] in ("active", "proposed")]
    from ctxkeeper.core.text import terms

    found: set[tuple[str, ...]] = set()
    for i, a in enumerate(live):
        ta = frozenset(terms(statement(a)))
        for b in live[i + 1 :]:
            tb = frozenset(terms(statement(b)))
            if not ta or not tb or 2 * len(ta & tb) / (len(ta) + len(tb)) < DUPLICATE_TERM_DICE:
                continue
            score = similarity(a, b)
            if score >= RESTATEMENT_THRESHOLD and classify(a, b, score) == "likely_restatement":
                found.add(tuple(sorted((str(a["id"]), str(b["id"])))))
    return found


def measure(size: int, runs: int, env: dict[str, str]) -> None:
    from ctxkeeper.core.model import contract_floors

    with tempfile.TemporaryDirectory() as folder:
        store = write_store(folder, build_entries(size))
        loaded = list(store.load().entries.values())
        instant = times.now()
        findings = scan(loaded, floors=contract_floors(), instant=instant)
        scan_ms = median_ms(lambda: scan(loaded, floors=contract_floors(), instant=instant), runs)
        cli = [sys.executable, "-m", "ctxkeeper", "doctor", "--quality", "--json"]
        cli_env = {**env, "PYTHONPATH": str(ROOT)}
        cli_ms = median_ms(lambda: run([*cli, "--project-dir", folder], env=cli_env), runs)
        print(
            f"{size:>6} entries: scan {scan_ms:8.1f} ms, `doctor --quality --json` "
            f"{cli_ms:8.1f} ms; findings {json.dumps(count_by_code(findings))}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--hook-entries", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--check-pairs", type=int, default=0)
    args = parser.parse_args()
    from ctxkeeper.core.model import contract_floors

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PYTHON"))}
    print(f"python {sys.version.split()[0]}, runs {args.runs} (median)")
    for size in args.entries:
        measure(size, args.runs, env)
    if args.check_pairs:
        entries = build_entries(args.check_pairs)
        found = {
            tuple(f["ids"])
            for f in scan(entries, floors=contract_floors(), instant=times.now())
            if f["code"] == "likely_duplicate"
        }
        expected = brute_force_pairs(entries)
        print(
            f"duplicates at {args.check_pairs} entries: scan {len(found)}, every pair "
            f"{len(expected)}, same: {found == expected}"
        )
    with tempfile.TemporaryDirectory() as folder:
        write_store(folder, build_entries(args.hook_entries))
        hook = [sys.executable, "-I", "-S", str(ROOT / "hooks" / "pre_compact.py")]
        payload = json.dumps({"session_id": "bench", "trigger": "auto", "cwd": folder}).encode()
        hook_env = {**env, "CLAUDE_PROJECT_DIR": folder, "CLAUDE_PLUGIN_ROOT": str(ROOT)}
        base_ms = median_ms(
            lambda: run([sys.executable, "-I", "-S", "-c", "pass"], env=hook_env), args.runs
        )
        hook_ms = median_ms(lambda: run(hook, payload, hook_env), args.runs)
        print(
            f"PreCompact hook at {args.hook_entries} entries: {hook_ms:.1f} ms "
            f"(python -I -S -c pass: {base_ms:.1f} ms)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
