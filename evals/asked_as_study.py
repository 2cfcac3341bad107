"""How ``asked_as`` should count: the variants issue 26 weighed, scored leave-one-project-out on
the ten calibration projects only (never on evals/heldout/).

Run ``python evals/asked_as_study.py``. Each variant is the shipped code with one setting
changed for the run: the text-index weight of ``asked_as`` (1, 2 or 3) and how coverage counts
the phrasings (``best``: the entry covers the query as well as its own fields or its best single
phrasing do; ``union``: the phrasings' words join the entry's own, the shipped rule). The rule
fixed before the held-out corpus was opened: ship the variant with the highest LOPO true
negatives among those whose LOPO false abstention is at most 0.05 and whose recall@5 is at least
the no-phrasings baseline's minus 0.005; a tie goes to the higher MRR. That picked ``union``
with weight 3 (``textindex.ASKED_AS_WEIGHT``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run_evals

from ctxkeeper.read import coverage, textindex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ctxkeeper.core._types import JSONValue

SHOWN = ("false_abstention", "abstention_tn", "hard_negative_tn", "recall@5", "mrr")


def _best_phrasing_match(
    entry: Mapping[str, JSONValue], query: list[coverage.QueryTerm], index: textindex.TextIndex
) -> coverage.Match:
    """The variant not shipped: the entry's own fields or its best single phrasing."""
    phrasings = entry.get("asked_as")
    own = {k: v for k, v in entry.items() if k != "asked_as"}
    best = shipped_match(own, query, index)
    for phrasing in phrasings if isinstance(phrasings, list) else []:
        alone = shipped_match({"kind": own.get("kind"), "asked_as": [phrasing]}, query, index)
        if alone.relevance > best.relevance:
            best = alone
    return best


shipped_match: Callable[..., coverage.Match] = coverage.match


def _set_weight(weight: float) -> None:
    # A study-only switch: FieldWeights keeps the common weights in ``_common``.
    textindex.FIELD_WEIGHTS._common["asked_as"] = weight
    textindex.FIELD_WEIGHTS._made_at = -1


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__).parse_args(argv)
    ten = run_evals.load_corpus()
    cases = run_evals.load_cases()
    rows: list[tuple[str, float, dict[str, run_evals.Figure]]] = []
    baseline = run_evals.run_cases(ten, cases)
    rows.append(("no asked_as", run_evals.calibrate(baseline), _held(baseline)))
    blind = run_evals.with_asked_as(ten)
    for mode, match in (("best", _best_phrasing_match), ("union", shipped_match)):
        for weight in (1.0, 2.0, 3.0):
            _set_weight(weight)
            coverage.match = match
            try:
                outcomes = run_evals.run_cases(blind, cases)
            finally:
                coverage.match = shipped_match
            rows.append(
                (f"{mode}, weight {weight:g}", run_evals.calibrate(outcomes), _held(outcomes))
            )
    _set_weight(textindex.ASKED_AS_WEIGHT)
    print("| variant | floor (all ten) | " + " | ".join(SHOWN) + " |")
    print("|---|---|" + "---|" * len(SHOWN))
    for name, floor, figures in rows:
        print(f"| {name} | {floor:.3f} | " + " | ".join(figures[k].text() for k in SHOWN) + " |")
    return 0


def _held(outcomes: list[run_evals.Outcome]) -> dict[str, run_evals.Figure]:
    return run_evals.measure(run_evals.lopo(outcomes)[0]).rows


if __name__ == "__main__":
    raise SystemExit(main())
