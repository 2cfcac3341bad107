"""Measure ctxkeeper.write.similarity on labelled pairs and sweep its thresholds."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    # Runnable from a plain checkout, like the plugin itself: `python3 evals/similarity_eval.py`.
    sys.path.insert(0, str(ROOT))

from ctxkeeper.write import candidates as candidates_index
from ctxkeeper.write import similarity as sim
from ctxkeeper.write.polarity import polarity_conflict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ctxkeeper.core._types import JSONObject

PAIRS = Path(__file__).resolve().parent / "similarity" / "pairs.jsonl"
LABELS = ("same", "reworded", "contradiction", "related", "unrelated")
SWEEP = tuple(round(0.30 + 0.05 * step, 2) for step in range(11))


class Pair:
    """One labelled pair with everything the sweeps need computed once."""

    def __init__(self, row: JSONObject) -> None:
        a, b, label = row["a"], row["b"], row["label"]
        assert isinstance(a, dict)
        assert isinstance(b, dict)
        assert isinstance(label, str)
        assert label in LABELS, label
        self.a, self.b, self.label = a, b, label
        self.split = str(row.get("split", "dev"))
        self.score = sim.similarity(a, b)
        # classify()'s rule: opposite polarity or a different choice in the same slot.
        self.conflict = polarity_conflict(
            sim.statement(a), sim.statement(b)
        ) or sim.different_choice(a, b)
        # matching_tombstone()'s rule, threshold left to the sweep (typos read as meant).
        self.tomb_score = sim.tombstone_score(b, a)

    def tombstoned(self, threshold: float) -> bool:
        """Would ``b`` be refused if ``a`` were a tombstone (matching_tombstone's rule)?"""
        return self.tomb_score is not None and self.tomb_score >= threshold

    def label_at(self, similar: float, restatement: float) -> str | None:
        """classify()'s rule with the thresholds as parameters."""
        if self.score < similar:
            return None
        if self.conflict:
            return "likely_contradiction"
        return "likely_restatement" if self.score >= restatement else None


def load(path: Path = PAIRS) -> list[Pair]:
    """Read the labelled pairs, one JSON object per line."""
    with path.open(encoding="utf-8") as file:
        return [Pair(json.loads(line)) for line in file if line.strip()]


def _rate(hits: Iterable[bool]) -> str:
    flags = list(hits)
    return f"{sum(flags) / len(flags):.0%}" if flags else "-"


def _of(pairs: Sequence[Pair], *labels: str) -> list[Pair]:
    return [pair for pair in pairs if pair.label in labels]


def tombstone_table(pairs: Sequence[Pair]) -> list[str]:
    """Rows: per threshold, the share of each label that would be refused as a tombstone."""
    lines = [
        (
            "| threshold | same | reworded | same+reworded caught | related wrongly caught "
            "| unrelated wrongly caught | contradiction refused |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for t in SWEEP:
        mark = " **(chosen)**" if t == sim.TOMBSTONE_THRESHOLD else ""
        cells = [
            _rate(p.tombstoned(t) for p in _of(pairs, "same")),
            _rate(p.tombstoned(t) for p in _of(pairs, "reworded")),
            _rate(p.tombstoned(t) for p in _of(pairs, "same", "reworded")),
            _rate(p.tombstoned(t) for p in _of(pairs, "related")),
            _rate(p.tombstoned(t) for p in _of(pairs, "unrelated")),
            _rate(p.tombstoned(t) for p in _of(pairs, "contradiction")),
        ]
        lines.append(f"| {t:.2f}{mark} | " + " | ".join(cells) + " |")
    return lines


def contradiction_table(pairs: Sequence[Pair]) -> list[str]:
    """Rows: per similar threshold, precision and recall of the likely_contradiction label."""
    lines = [
        (
            "| similar threshold | contradiction precision | contradiction recall "
            "| restatement precision | restatement recall | related labelled |"
        ),
        "|---|---|---|---|---|---|",
    ]
    restatement = sim.RESTATEMENT_THRESHOLD
    for t in SWEEP:
        mark = " **(chosen)**" if t == sim.SIMILAR_THRESHOLD else ""
        labelled = [(p, p.label_at(t, max(t, restatement))) for p in pairs]
        cells = []
        for name, truth in (
            ("likely_contradiction", {"contradiction"}),
            ("likely_restatement", {"same", "reworded"}),
        ):
            flagged = [p for p, label in labelled if label == name]
            relevant = [p for p in pairs if p.label in truth]
            hits = sum(p.label in truth for p in flagged)
            cells.append(f"{hits / len(flagged):.0%}" if flagged else "-")
            cells.append(f"{hits / len(relevant):.0%}" if relevant else "-")
        related = [label is not None for p, label in labelled if p.label == "related"]
        cells.append(_rate(related))
        lines.append(f"| {t:.2f}{mark} | " + " | ".join(cells) + " |")
    return lines


def supersession_table(pairs: Sequence[Pair]) -> list[str]:
    """Rows: per threshold, how often a same-place pair is offered as a supersession."""
    lines = [
        (
            "| threshold | same+reworded offered | contradiction offered | related offered "
            "| unrelated offered |"
        ),
        "|---|---|---|---|---|",
    ]
    for t in SWEEP:
        mark = " **(chosen)**" if t == sim.SUPERSESSION_THRESHOLD else ""
        cells = [
            _rate(p.score >= t for p in _of(pairs, *labels))
            for labels in (("same", "reworded"), ("contradiction",), ("related",), ("unrelated",))
        ]
        lines.append(f"| {t:.2f}{mark} | " + " | ".join(cells) + " |")
    return lines


def misses(pairs: Sequence[Pair]) -> list[str]:
    """The pairs the chosen thresholds get wrong, for reading."""
    out = []
    for p in pairs:
        caught = p.tombstoned(sim.TOMBSTONE_THRESHOLD)
        label = p.label_at(sim.SIMILAR_THRESHOLD, sim.RESTATEMENT_THRESHOLD)
        wrong = (
            (p.label in ("same", "reworded") and not caught)
            or (p.label in ("related", "unrelated", "contradiction") and caught)
            or (p.label == "contradiction" and label != "likely_contradiction")
            or (p.label != "contradiction" and label == "likely_contradiction")
        )
        if wrong:
            lines = (sim.statement(p.a), sim.statement(p.b))
            out.append(
                f"- {p.label} ({p.split}), score {p.score:.3f}, label {label}: "
                f"{lines[0]!r} / {lines[1]!r}"
            )
    return out


def bench(pairs: Sequence[Pair], size: int = 10_000) -> str:
    """Time one candidate against ``size`` distinct stored entries as a write does (the
    candidate index's shortlist, then the checks), cold then warm."""
    pool = [entry for p in pairs for entry in (p.a, p.b)]
    stored = []
    for i in range(size):
        entry = dict(pool[i % len(pool)])
        field = {"decision": "summary", "constraint": "rule", "pipeline": "purpose"}
        key = field[str(entry["kind"])]
        entry.update(id=f"con-{i:05d}-0000", status="active", **{key: f"{entry[key]} rev {i}"})
        stored.append(entry)
    candidate = pairs[0].b
    start = time.perf_counter()
    sim.similar_entries(candidate, candidates_index.shortlist(candidate, stored))
    cold = time.perf_counter() - start
    start = time.perf_counter()
    short = candidates_index.shortlist(candidate, stored)
    sim.similar_entries(candidate, short)
    sim.matching_tombstone(candidate, short)
    warm = time.perf_counter() - start
    return (
        f"similar_entries over {size:,} entries: {cold * 1000:.0f} ms cold (index built), "
        f"{warm * 1000:.0f} ms warm for the shortlist, similar_entries and matching_tombstone"
    )


def report(pairs: Sequence[Pair], *, with_bench: bool) -> str:
    """Render every table as Markdown."""
    counts = ", ".join(f"{label} {len(_of(pairs, label))}" for label in LABELS)
    splits = sorted({p.split for p in pairs})
    out = [f"{len(pairs)} pairs ({counts}); splits: {', '.join(splits)}", ""]
    subsets = [("all pairs", list(pairs))]
    subsets += [(f"split {name}", [p for p in pairs if p.split == name]) for name in splits]
    for title, subset in subsets:
        out += [f"### Tombstone matching, {title}", "", *tombstone_table(subset), ""]
    out += ["### Labels in similar_entries, all pairs", "", *contradiction_table(pairs), ""]
    out += ["### Supersession offers, all pairs", "", *supersession_table(pairs), ""]
    out += ["### Pairs the chosen thresholds get wrong", "", *(misses(pairs) or ["(none)"]), ""]
    if with_bench:
        out += [bench(pairs), ""]
    return "\n".join(out)


TOMBSTONE_DEV = Path(__file__).resolve().parent / "similarity" / "tombstones_dev.jsonl"
HELDOUT = Path(__file__).resolve().parent / "similarity" / "heldout_tombstones.jsonl"


def tombstone_report(path: Path) -> str:
    """Both directions on ``{"tombstone", "candidate", "expected", "category"}`` lines.

    Each tombstone is stored as a deprecated entry and the candidate is checked against it with
    :func:`ctxkeeper.write.similarity.matching_tombstone`, the function ``record_entry`` uses.
    """
    rows: list[tuple[str, str, bool, str]] = []
    with path.open(encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            tombstone = {**row["tombstone"], "id": "con-001-aaaa", "status": "deprecated"}
            refused = sim.matching_tombstone(row["candidate"], [tombstone]) is not None
            note = str(row.get("note", ""))
            rows.append((str(row["expected"]), str(row.get("category", "?")), refused, note))
            rows[-1] = (*rows[-1][:3], f"line {number}: {note}")
    out = [f"{len(rows)} pairs from {path.name}", ""]
    for expected, verb in (("refuse", "refused"), ("accept", "accepted")):
        mine = [r for r in rows if r[0] == expected]
        good = [r for r in mine if r[2] == (expected == "refuse")]
        out.append(
            f"- expected {expected}: {len(good)}/{len(mine)} {verb} ({_rate(r in good for r in mine)})"
        )
    out += ["", "| expected | category | pairs | right | rate |", "|---|---|---|---|---|"]
    for expected, category in sorted({(r[0], r[1]) for r in rows}):
        mine = [r for r in rows if r[0] == expected and r[1] == category]
        right = [r for r in mine if r[2] == (expected == "refuse")]
        out.append(
            f"| {expected} | {category} | {len(mine)} | {len(right)} | "
            f"{_rate(r in right for r in mine)} |"
        )
    wrong = [r for r in rows if r[2] != (r[0] == "refuse")]
    out += ["", "Wrong:", *(f"- {r[0]} {r[1]}, {r[3]}" for r in wrong), ""]
    return "\n".join(out)


_STATUSES = ("active", "deprecated", "proposed", "rejected", "superseded")


def index_agreement(
    pairs: Sequence[Pair], tombstone_files: Sequence[Path], *, every: int = 1
) -> str:
    """Check that the write path's candidate generation changes no finding.

    ``record_entry`` scores only the entries :func:`ctxkeeper.write.candidates.shortlist`
    proposes (an inverted index once a store holds
    :data:`~ctxkeeper.write.candidates.INDEX_MIN_ENTRIES` entries or more). Every labelled entry
    (both sides of every pair, and every tombstone of the tombstone files) goes into one store,
    statuses in turn, so it is well past that size; each candidate's ``similar_entries``,
    ``matching_tombstone`` and ``possible_supersession`` over the whole store must equal the
    same over the shortlist. ``every``: check only every n-th candidate (the store is whole).
    """
    stored: list[JSONObject] = []
    candidates: list[JSONObject] = []
    rows = [(p.a, p.b) for p in pairs]
    for path in tombstone_files:
        with path.open(encoding="utf-8") as file:
            rows += [
                (row["tombstone"], row["candidate"])
                for row in map(json.loads, filter(str.strip, file))
            ]
    for number, (a, b) in enumerate(rows):
        for side, entry in (("a", a), ("b", b)):
            status = _STATUSES[(2 * number + (side == "b")) % len(_STATUSES)]
            stored.append({**entry, "id": f"con-{number:04d}-{side}", "status": status})
        candidates.append({k: v for k, v in b.items() if k != "id"})
    candidates = candidates[::every]
    agree = 0
    wrong: list[str] = []
    for number, candidate in enumerate(candidates):
        short = candidates_index.shortlist(candidate, stored)
        full = (
            sim.similar_entries(candidate, stored),
            sim.matching_tombstone(candidate, stored),
            sim.possible_supersession(candidate, stored),
        )
        fast = (
            sim.similar_entries(candidate, short),
            sim.matching_tombstone(candidate, short),
            sim.possible_supersession(candidate, short),
        )
        if full == fast:
            agree += 1
        else:
            wrong.append(f"- candidate {number}: {full!r} != {fast!r}")
    assert len(stored) >= candidates_index.INDEX_MIN_ENTRIES, len(stored)
    out = [
        (
            f"index agreement: {agree}/{len(candidates)} candidates get the same findings from the "
            f"shortlist as from all {len(stored)} entries"
        ),
        *wrong,
    ]
    return "\n".join(out)


class _Args(argparse.Namespace):
    pairs: Path
    no_bench: bool
    tombstones: Path | None
    index_check: bool
    every: int


def main(argv: Sequence[str] | None = None) -> int:
    """Print the tables; ``--no-bench`` skips the timing line (it varies between machines)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument(
        "--tombstones",
        type=Path,
        help="measure refusals and acceptances on tombstone/candidate pairs instead, e.g. "
        f"{TOMBSTONE_DEV.relative_to(ROOT)} or {HELDOUT.relative_to(ROOT)}",
    )
    parser.add_argument(
        "--index-check",
        action="store_true",
        help="check instead that the write path's candidate generation changes no finding",
    )
    parser.add_argument("--every", type=int, default=1, help="with --index-check: every n-th")
    args = parser.parse_args(argv, _Args())
    if args.index_check:
        report_text = index_agreement(load(args.pairs), [TOMBSTONE_DEV, HELDOUT], every=args.every)
        print(report_text)
        return 0 if "\n- candidate" not in report_text else 1
    if args.tombstones is not None:
        print(tombstone_report(args.tombstones))
        return 0
    print(report(load(args.pairs), with_bench=not args.no_bench))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
