"""What each change to the abstention signal gains, held out.

    python evals/signal_study.py [--projects fresh|original|all]

Every variant below is a set of values for the constants of ``ctxkeeper/read/coverage.py``.
For each, the golden cases are ranked again and scored three ways:

- ``in-sample``: the floor picked on all projects, scored on the same projects (what the old
  README reported; optimistic);
- ``LOPO``: leave-one-project-out, the floor picked on the other projects;
- ``AUC``: the chance a random answerable case outranks a random no-answer case (no floor).

Then a nested leave-one-project-out: for each project, the *variant* and its floor are both
picked on the other projects alone (best in-sample true negatives at false abstention <= 0.05
there), and the project left out is scored with them. That is the honest figure for "choosing
every change on calibration projects only".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import run_evals

from ctxkeeper.read import coverage

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject

_SHIPPED = {
    name: getattr(coverage, name)
    for name in (
        "FIELD_CREDIT",
        "VARIANT_CREDIT",
        "FILLER_WEIGHT",
        "MINOR_WEIGHT",
        "UNSEEN_SCALE",
        "FILLER",
        "normalise_query",
    )
}
#: Every text field the index holds, each at full credit: what relevance counted before.
_ALL_FIELDS = dict.fromkeys(
    (
        "summary",
        "rule",
        "name",
        "tags",
        "problem",
        "reason",
        "purpose",
        "why_chosen",
        "steps",
        "scope",
        "alternatives",
    ),
    1.0,
)


def _fields(**credits: float) -> dict[str, float]:
    return {**coverage.FIELD_CREDIT, **credits}


def _identity(query: str) -> str:
    return query


#: name -> overrides of coverage's constants. "before" is the signal issue 13 measured; each
#: other variant changes one thing about the shipped signal.
VARIANTS: dict[str, dict[str, object]] = {
    "before (all fields, no clitics, no filler)": {
        "FIELD_CREDIT": _ALL_FIELDS,
        "normalise_query": _identity,
        "FILLER_WEIGHT": 1.0,
        "MINOR_WEIGHT": 1.0,
    },
    "before + alternatives left out": {
        "FIELD_CREDIT": {k: v for k, v in _ALL_FIELDS.items() if k != "alternatives"},
        "normalise_query": _identity,
        "FILLER_WEIGHT": 1.0,
        "MINOR_WEIGHT": 1.0,
    },
    "before + clitics removed": {
        "FIELD_CREDIT": _ALL_FIELDS,
        "FILLER_WEIGHT": 1.0,
        "MINOR_WEIGHT": 1.0,
    },
    "before + filler x0.5": {
        "FIELD_CREDIT": _ALL_FIELDS,
        "normalise_query": _identity,
        "MINOR_WEIGHT": 1.0,
    },
    "before + statement fields only": {
        "normalise_query": _identity,
        "FILLER_WEIGHT": 1.0,
        "MINOR_WEIGHT": 1.0,
    },
    "shipped": {},
    "shipped, clitics kept": {"normalise_query": _identity},
    "shipped, filler x1": {"FILLER_WEIGHT": 1.0},
    "shipped, filler x0": {"FILLER_WEIGHT": 0.0},
    "shipped, numbers and 1-2 letter words x0.5": {"MINOR_WEIGHT": 0.5},
    "shipped, numbers and 1-2 letter words x0": {"MINOR_WEIGHT": 0.0},
    "shipped, variant credit 0.25": {"VARIANT_CREDIT": 0.25},
    "shipped, variant credit 0.75": {"VARIANT_CREDIT": 0.75},
    "shipped, unseen x0.75": {"UNSEEN_SCALE": 0.75},
    "shipped, unseen x1.25": {"UNSEEN_SCALE": 1.25},
    "shipped, no tags": {"FIELD_CREDIT": _fields(tags=0)},
    "shipped, why_chosen x1": {"FIELD_CREDIT": _fields(why_chosen=1.0)},
    "shipped, why_chosen x0": {"FIELD_CREDIT": _fields(why_chosen=0.0)},
    "shipped, no steps": {"FIELD_CREDIT": _fields(steps=0.0)},
    "shipped, steps x0.5": {"FIELD_CREDIT": _fields(steps=0.5)},
    "shipped, + scope": {"FIELD_CREDIT": _fields(scope=1.0)},
    "shipped, + scope x0.5": {"FIELD_CREDIT": _fields(scope=0.5)},
    "statement fields only (the choice frozen before the new corpora were read)": {
        "FIELD_CREDIT": _fields(why_chosen=0.0, steps=0.0)
    },
    "shipped, + alternatives": {"FIELD_CREDIT": _fields(alternatives=1.0)},
    "shipped, problem/reason/purpose x0.75": {
        "FIELD_CREDIT": _fields(problem=0.75, reason=0.75, purpose=0.75)
    },
    "shipped, headline only": {"FIELD_CREDIT": _fields(problem=0, reason=0, purpose=0)},
}


def _apply(overrides: dict[str, object]) -> None:
    for name, value in {**_SHIPPED, **overrides}.items():
        setattr(coverage, name, value)


def auc(outcomes: list[run_evals.Outcome]) -> float:
    positive = [o.top_relevance for o in run_evals._of(outcomes, "positive")]
    negative = [o.top_relevance for o in run_evals._of(outcomes, *run_evals.NEGATIVE_TYPES)]
    if not positive or not negative:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def in_sample(outcomes: list[run_evals.Outcome]) -> tuple[float, float]:
    """(true negatives, false abstention) at the floor these outcomes pick for themselves."""
    floor = run_evals.choose_floor(outcomes)
    positive = run_evals._of(outcomes, "positive")
    negative = run_evals._of(outcomes, *run_evals.NEGATIVE_TYPES)
    tn = sum(o.top_relevance < floor for o in negative) / max(len(negative), 1)
    fa = sum(o.top_relevance < floor for o in positive) / max(len(positive), 1)
    return tn, fa


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--projects", choices=("all", "fresh", "original"), default="all")
    args = parser.parse_args(argv)
    corpus = run_evals.load_corpus()
    cases: list[JSONObject] = [
        c
        for c in run_evals.load_cases()
        if args.projects == "all" or bool(c.get("fresh")) == (args.projects == "fresh")
    ]
    results: dict[str, list[run_evals.Outcome]] = {}
    print(
        "| variant | in-sample TN | LOPO false abstention | LOPO TN | LOPO hard TN | AUC |\n"
        "|---|---|---|---|---|---|"
    )
    for name, overrides in VARIANTS.items():
        _apply(overrides)
        outcomes = run_evals.run_cases(corpus, cases)
        results[name] = outcomes
        held = run_evals.measure(run_evals.lopo(outcomes)[0]).rows
        tn, _ = in_sample(outcomes)
        print(
            f"| {name} | {tn:.3f} | {held['false_abstention'].text()} | "
            f"{held['abstention_tn'].text()} | {held['hard_negative_tn'].text()} | "
            f"{auc(outcomes):.3f} |"
        )
    _apply({})
    # Nested: the variant is chosen on the calibration projects too.
    projects = sorted({str(c["project"]) for c in cases})
    pooled: list[run_evals.Outcome] = []
    picks = []
    for project in projects:

        def calibration_score(name: str, held_out: str = project) -> tuple[float, float]:
            calib = [o for o in results[name] if o.project != held_out]
            return (in_sample(calib)[0], auc(calib))

        best = max(VARIANTS, key=calibration_score)
        picks.append(f"{project}: {best}")
        calib = [o for o in results[best] if o.project != project]
        floor = run_evals.calibrate(calib)
        for o in results[best]:
            if o.project == project:
                flagged = o.top_relevance < floor
                pooled.append(run_evals.Outcome(o.case, o.ranked, o.top_relevance, flagged))
    rows = run_evals.measure(pooled).rows
    print("\nNested LOPO (variant and floor both picked on the other projects):")
    print("  " + "\n  ".join(picks))
    for key in ("false_abstention", "abstention_tn", "hard_negative_tn"):
        print(f"  {key}: {rows[key].text()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
