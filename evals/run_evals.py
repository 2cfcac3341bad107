"""Retrieval evals: recall/MRR, abstention and history questions, scored leave-one-project-out.

Run ``python evals/run_evals.py`` for the report, ``--gate`` to exit 1 when a CI gate is missed,
and ``--write`` to refresh the generated section of evals/README.md.

The honest estimate for a new repository is leave-one-project-out (LOPO): for each project, the
abstention floor is picked on all the *other* projects (the highest floor whose false abstention
there stays within ``CALIBRATION_FA``) and that floor scores the project left out. The held-out
results of every project are pooled, and every figure is printed with its 95% interval. CI gates
on the LOPO figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

# The checkout's package, not an installed copy.
from ctxkeeper.core.times import parse_time
from ctxkeeper.read import rank
from ctxkeeper.read.rank import ContextQuery
from ctxkeeper.read.textindex import TextIndex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ctxkeeper.core._types import JSONObject

#: The instant every case is asked at, so validity windows give the same answer every run.
EVAL_INSTANT = parse_time("2026-11-30T12:00:00Z", field="eval")
ROOT = "/eval-project"
GOLDEN_FILES = ("golden.jsonl", "golden_fresh.jsonl")
#: The false abstention allowed on a project the floor was not picked on.
CALIBRATION_FA = 0.05
#: The in-sample false abstention levels a floor may be picked at, most permissive first; see
#: :func:`calibrate`.
CALIBRATION_LEVELS = (0.05, 0.045, 0.04, 0.035, 0.03, 0.025, 0.02)
#: The weak band: below this share of answerable questions (flagged weak or no match) the
#: ``WEAK_FLOOR`` is picked, on all projects.
WEAK_LEVEL = 0.25
#: The issue's targets for the LOPO figures (reported as met or not on every run). History:
#: "not below today's", and today's ranker scores 0.9186 on these cases (0.960 on the original
#: 25); ranking is unchanged by issue 13.
TARGETS = {
    "recall@5": (">=", 0.93),
    "mrr": (">=", 0.85),
    "history_recall@5": (">=", 0.918),
    "false_abstention": ("<=", 0.05),
    "abstention_tn": (">=", 0.30),
    "hard_negative_tn": (">=", 0.20),
}
#: What CI enforces on the LOPO figures: the levels achieved (rounded down), so none can
#: regress. The one place gate thresholds live. Calibration never sees the project it scores
#: (con-020-7620).
GATES = {
    "recall@5": (">=", 0.95),
    "mrr": (">=", 0.89),
    "history_recall@5": (">=", 0.91),
    "false_abstention": ("<=", 0.045),
    "abstention_tn": (">=", 0.32),
    "hard_negative_tn": (">=", 0.23),
}
#: The same, on the ten projects with their blind ``asked_as`` phrasings (issue 26).
GATES_ASKED_AS = {
    "recall@5": (">=", 0.96),
    "mrr": (">=", 0.93),
    "history_recall@5": (">=", 0.94),
    "false_abstention": ("<=", 0.045),
    "abstention_tn": (">=", 0.38),
    "hard_negative_tn": (">=", 0.29),
}
BEGIN = "<!-- BEGIN GENERATED: run_evals.py -->"
END = "<!-- END GENERATED: run_evals.py -->"
NEGATIVE_TYPES = ("no_answer", "hard_negative")


@dataclass
class Outcome:
    case: JSONObject
    ranked: list[str]
    top_relevance: float
    abstained: bool
    weak: bool = False
    missing: list[str] = field(default_factory=list)

    @property
    def project(self) -> str:
        return str(self.case["project"])


@dataclass
class Figure:
    """A measured share or mean, with what its 95% interval is computed from."""

    value: float
    low: float
    high: float
    n: int

    def text(self) -> str:
        return f"{self.value:.3f} [{self.low:.2f}, {self.high:.2f}]"


@dataclass
class Metrics:
    rows: dict[str, Figure] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def share(flags: Iterable[bool]) -> Figure:
    values = list(flags)
    low, high = wilson(sum(values), len(values))
    return Figure(sum(values) / len(values) if values else 0.0, low, high, len(values))


def mean(values: list[float]) -> Figure:
    """A mean of per-case scores in [0, 1] (recall, reciprocal rank): a normal interval."""
    n = len(values)
    centre = sum(values) / n if n else 0.0
    spread = math.sqrt(sum((v - centre) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = 1.96 * spread / math.sqrt(n) if n else 1.0
    return Figure(centre, max(0.0, centre - half), min(1.0, centre + half), n)


def load_corpus() -> dict[str, list[JSONObject]]:
    return {
        path.stem: [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for path in sorted((HERE / "corpus").glob("*.jsonl"))
    }


def with_asked_as(corpus: dict[str, list[JSONObject]]) -> dict[str, list[JSONObject]]:
    """The corpus with each entry's ``asked_as`` phrasings, written for issue 26 by an author who
    saw the entries and never the questions (evals/asked_as/BRIEF.md)."""
    out: dict[str, list[JSONObject]] = {}
    for name, entries in corpus.items():
        path = HERE / "asked_as" / f"{name}.jsonl"
        phrasings = {}
        if path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    phrasings[str(row["id"])] = row["asked_as"]
        out[name] = [
            {**entry, "asked_as": phrasings[str(entry["id"])]}
            if str(entry["id"]) in phrasings
            else entry
            for entry in entries
        ]
    return out


def load_cases() -> list[JSONObject]:
    """Every golden case; those of the corpora written for issue 13 are marked ``fresh``."""
    cases: list[JSONObject] = []
    for name in GOLDEN_FILES:
        path = HERE / name
        if path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    case = json.loads(line)
                    case["fresh"] = name != GOLDEN_FILES[0]
                    cases.append(case)
    return cases


def run_cases(corpus: dict[str, list[JSONObject]], cases: list[JSONObject]) -> list[Outcome]:
    indexes = {name: TextIndex.build(entries) for name, entries in corpus.items()}
    outcomes = []
    for case in cases:
        project = str(case["project"])
        request = ContextQuery(
            query=str(case.get("query") or ""),
            path=str(case["path"]) if case.get("path") else None,
            as_of=EVAL_INSTANT,
            include_history=case["type"] == "history",
            token_budget=100_000,
        )
        result = rank.rank(corpus[project], indexes[project], request, root=ROOT)
        items = result["results"]
        assert isinstance(items, list)
        ranked = [str(item["id"]) for item in items if isinstance(item, dict)]
        missing = result.get("missing")
        outcomes.append(
            Outcome(
                case,
                ranked,
                float(str(result["top_relevance"])),
                bool(result["no_confident_match"]),
                bool(result.get("weak_match")),
                [str(m) for m in missing] if isinstance(missing, list) else [],
            )
        )
    return outcomes


def _first_rank(outcome: Outcome) -> int | None:
    expected = {str(e) for e in _list(outcome.case["expected"])}
    for position, entry_id in enumerate(outcome.ranked, start=1):
        if entry_id in expected:
            return position
    return None


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _recall(outcome: Outcome, k: int) -> float:
    expected = [str(e) for e in _list(outcome.case["expected"])]
    return sum(1 for e in expected if e in outcome.ranked[:k]) / len(expected)


def _of(outcomes: list[Outcome], *types: str) -> list[Outcome]:
    return [o for o in outcomes if o.case["type"] in types]


def measure(outcomes: list[Outcome]) -> Metrics:
    """Every figure of a set of outcomes, each with its 95% interval; abstention as flagged."""
    metrics = Metrics()
    positive = _of(outcomes, "positive")
    negative = _of(outcomes, *NEGATIVE_TYPES)
    hard = _of(outcomes, "hard_negative")
    history = _of(outcomes, "history")
    metrics.counts = {
        "positive": len(positive),
        "no-answer (hard negatives included)": len(negative),
        "hard_negative": len(hard),
        "history": len(history),
    }
    if positive:
        for k in (1, 3, 5):
            metrics.rows[f"recall@{k}"] = mean([_recall(o, k) for o in positive])
        metrics.rows["hit@5"] = share((_first_rank(o) or 99) <= 5 for o in positive)
        metrics.rows["mrr"] = mean([1 / r if (r := _first_rank(o)) else 0.0 for o in positive])
        metrics.rows["false_abstention"] = share(o.abstained for o in positive)
        metrics.rows["weak_or_abstained_answerable"] = share(
            o.abstained or o.weak for o in positive
        )
    if negative:
        metrics.rows["abstention_tn"] = share(o.abstained for o in negative)
        metrics.rows["weak_or_abstained_no_answer"] = share(o.abstained or o.weak for o in negative)
    if hard:
        metrics.rows["hard_negative_tn"] = share(o.abstained for o in hard)
    if history:
        metrics.rows["history_recall@5"] = mean([_recall(o, 5) for o in history])
    return metrics


def sweep(outcomes: list[Outcome], steps: int = 20) -> list[tuple[float, float, float]]:
    """(floor, true-negative rate, false-abstention rate) for floors 0.00 to 1.00."""
    positive = [o.top_relevance for o in _of(outcomes, "positive")]
    negative = [o.top_relevance for o in _of(outcomes, *NEGATIVE_TYPES)]
    rows = []
    for step in range(steps + 1):
        floor = step / steps
        tn = sum(r < floor for r in negative) / max(len(negative), 1)
        fa = sum(r < floor for r in positive) / max(len(positive), 1)
        rows.append((floor, tn, fa))
    return rows


def choose_floor(outcomes: list[Outcome], limit: float = CALIBRATION_FA) -> float:
    """The highest floor (in steps of 0.005) whose false abstention on these outcomes stays
    within ``limit``: a wrong "nothing here" costs more than a weak answer flagged."""
    positive = sorted(o.top_relevance for o in _of(outcomes, "positive"))
    allowed = math.floor(limit * len(positive) + 1e-9)
    if allowed >= len(positive):
        return 1.0
    # Abstaining below the (allowed+1)-th lowest relevance flags exactly `allowed` of them.
    ceiling = positive[allowed]
    return math.floor(ceiling * 200 + 1e-9) / 200


def _held_out_fa(outcomes: list[Outcome], level: float) -> float:
    """The pooled false abstention when each project is scored with the floor the others pick
    at calibration level ``level``."""
    flagged = total = 0
    for project in {o.project for o in outcomes}:
        floor = choose_floor([o for o in outcomes if o.project != project], level)
        mine = _of([o for o in outcomes if o.project == project], "positive")
        flagged += sum(o.top_relevance < floor for o in mine)
        total += len(mine)
    return flagged / max(total, 1)


def calibration_level(outcomes: list[Outcome]) -> float:
    """The calibration level to pick a floor at on these outcomes: the highest in
    ``CALIBRATION_LEVELS`` whose leave-one-project-out false abstention *within them* stays
    within ``CALIBRATION_FA``. A floor picked at exactly 5% on some projects abstains on a little
    more than 5% of a new one; this margin is itself measured held out, never on the project
    being scored."""
    for level in CALIBRATION_LEVELS:
        if _held_out_fa(outcomes, level) <= CALIBRATION_FA + 1e-9:
            return level
    return CALIBRATION_LEVELS[-1]


def calibrate(outcomes: list[Outcome]) -> float:
    """The floor these outcomes pick: at the calibration level they pick for themselves."""
    return choose_floor(outcomes, calibration_level(outcomes))


def lopo(
    outcomes: list[Outcome], signal: Callable[[Outcome], float] | None = None
) -> tuple[list[Outcome], dict[str, float]]:
    """Leave-one-project-out: each project scored with the floor its complement picks (the
    calibration level included, see :func:`calibrate`).

    Returns the pooled held-out outcomes (``abstained`` recomputed) and the floor per project.
    ``signal`` replaces ``top_relevance`` for studying other signals (evals/signal_study.py).
    """
    value = signal or (lambda o: o.top_relevance)
    scored = [Outcome(o.case, o.ranked, value(o), o.abstained, o.weak, o.missing) for o in outcomes]
    floors: dict[str, float] = {}
    pooled: list[Outcome] = []
    for project in sorted({o.project for o in scored}):
        floor = calibrate([o for o in scored if o.project != project])
        floors[project] = floor
        for o in scored:
            if o.project == project:
                held = o.top_relevance < floor
                pooled.append(
                    Outcome(o.case, o.ranked, o.top_relevance, held, o.weak and not held, o.missing)
                )
    return pooled, floors


def stale_floors(outcomes: list[Outcome], asked_as: list[Outcome]) -> list[str]:
    """The shipped floors that differ from what calibration on all projects picks now
    (``asked_as``: the same cases on the projects with their phrasings)."""
    picked = {
        "RELEVANCE_FLOOR": calibrate(outcomes),
        "ASKED_AS_FLOOR": calibrate(asked_as),
        "WEAK_FLOOR": choose_floor(outcomes, WEAK_LEVEL),
    }
    return [
        f"rank.{name} = {getattr(rank, name)}, calibration picks {value:.3f}"
        for name, value in picked.items()
        if abs(float(getattr(rank, name)) - value) > 1e-9
    ]


def _meets(value: float | None, op: str, target: float) -> bool:
    return value is not None and (value >= target - 1e-9 if op == ">=" else value <= target + 1e-9)


def gate_failures(
    metrics: Metrics, gates: dict[str, tuple[str, float]] = GATES
) -> tuple[list[str], list[str]]:
    """(gates CI stops on, issue targets not met) for the LOPO metrics."""
    failures = [
        f"{name} = {metrics.rows[name].text()} (gate {op} {target})"
        for name, (op, target) in gates.items()
        if name in metrics.rows and not _meets(metrics.rows[name].value, op, target)
    ]
    unmet = [
        f"{name} = {metrics.rows[name].text()}: target {op} {target} not met"
        for name, (op, target) in TARGETS.items()
        if name in metrics.rows and not _meets(metrics.rows[name].value, op, target)
    ]
    return failures, unmet


def _is_fresh(outcome: Outcome) -> bool:
    return bool(outcome.case.get("fresh"))


def report(
    corpus: dict[str, list[JSONObject]], outcomes: list[Outcome], asked_as: list[Outcome]
) -> str:
    pooled, floors = lopo(outcomes)
    held = measure(pooled)
    shipped = measure(outcomes)
    fresh = [o for o in pooled if _is_fresh(o)]
    original = [o for o in pooled if not _is_fresh(o)]
    columns: list[tuple[str, Metrics]] = [("LOPO, all projects", held)]
    if fresh:
        columns += [
            ("LOPO, new corpora", measure(fresh)),
            ("LOPO, original six", measure(original)),
        ]
    columns += [
        ("shipped floor, all", shipped),
        ("LOPO, all, with asked_as", measure(lopo(asked_as)[0])),
    ]
    all_level = calibration_level(outcomes)
    all_floor = choose_floor(outcomes, all_level)
    lines = [
        f"Corpus: {sum(len(v) for v in corpus.values())} entries in {len(corpus)} projects; "
        f"cases: " + ", ".join(f"{n} {k}" for k, n in held.counts.items()) + ".",
        (
            f"Weak band: the floor below which at most {WEAK_LEVEL:.0%} of answerable cases (all "
            f"projects) fall: {choose_floor(outcomes, WEAK_LEVEL):.3f}."
        ),
        (
            f"Abstention floor in use: `RELEVANCE_FLOOR = {rank.RELEVANCE_FLOOR}` (a best match "
            f"with asked_as phrasings: `ASKED_AS_FLOOR = {rank.ASKED_AS_FLOOR}`, which the "
            f"projects with their phrasings pick: {calibrate(asked_as):.3f}; weak match "
            f"below `WEAK_FLOOR = {getattr(rank, 'WEAK_FLOOR', None)}`); the floor all projects pick: "
            f"{all_floor:.3f} (the highest with in-sample false abstention <= {all_level}, the "
            f"level whose leave-one-project-out false abstention stays <= {CALIBRATION_FA}). "
            "Leave-one-project-out floors: "
            + ", ".join(f"{p} {f:.3f}" for p, f in floors.items())
            + "."
        ),
        "",
        "Each figure with its 95% interval (Wilson for shares, normal for means).",
        "",
        "| metric | " + " | ".join(name for name, _ in columns) + " | target | CI gate (LOPO) |",
        "|---|" + "---|" * (len(columns) + 2),
    ]
    for name in held.rows:
        target = TARGETS.get(name)
        gate = GATES.get(name)
        cells = " | ".join(m.rows[name].text() if name in m.rows else "" for _, m in columns)
        lines.append(
            f"| {name} | {cells} | {f'{target[0]} {target[1]:g}' if target else ''} | "
            f"{f'{gate[0]} {gate[1]:g}' if gate else ''} |"
        )
    lines += [
        "",
        "Per project, held out (floor picked on the other projects):",
        "",
        "| project | floor | answerable | false abstention | no-answer | true negatives |",
        "|---|---|---|---|---|---|",
    ]
    for project, floor in floors.items():
        mine = [o for o in pooled if o.project == project]
        pos, neg = _of(mine, "positive"), _of(mine, *NEGATIVE_TYPES)
        lines.append(
            f"| {project} | {floor:.3f} | {len(pos)} | {share(o.abstained for o in pos).text()} "
            f"| {len(neg)} | {share(o.abstained for o in neg).text()} |"
        )
    lines += [
        "",
        "Abstention floor sweep, all projects (no-answer true-negative rate vs false abstention):",
        "",
        "| floor | true negatives | false abstention |",
        "|---|---|---|",
    ]
    lines += [f"| {floor:.2f} | {tn:.3f} | {fa:.3f} |" for floor, tn, fa in sweep(outcomes)]
    misses = [o for o in _of(outcomes, "positive") if (_first_rank(o) or 99) > 5]
    if misses:
        lines += [
            "",
            "Positive cases missed at 5: " + ", ".join(str(o.case["id"]) for o in misses) + ".",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gate", action="store_true", help="exit 1 when a CI gate is missed")
    parser.add_argument(
        "--write", action="store_true", help="refresh the generated section of evals/README.md"
    )
    args = parser.parse_args(argv)
    corpus = load_corpus()
    cases = load_cases()
    outcomes = run_cases(corpus, cases)
    asked_as = run_cases(with_asked_as(corpus), cases)
    text = report(corpus, outcomes, asked_as)
    print(text)
    if args.write:
        readme = HERE / "README.md"
        current = readme.read_text()
        start, stop = current.index(BEGIN) + len(BEGIN), current.index(END)
        readme.write_text(current[:start] + "\n" + text + "\n" + current[stop:])
    failures, unmet = gate_failures(measure(lopo(outcomes)[0]))
    with_phrasings, _ = gate_failures(measure(lopo(asked_as)[0]), GATES_ASKED_AS)
    failures += [f"with asked_as: {line}" for line in with_phrasings]
    failures += stale_floors(outcomes, asked_as)
    for line in unmet:
        print(f"UNMET TARGET (LOPO): {line}")
    if failures:
        print("\nGATE FAILURES (LOPO):\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1 if args.gate else 0
    print("\nCI gates passed (LOPO)" + (" (with unmet targets above)" if unmet else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
