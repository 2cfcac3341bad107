"""Does a fitted model beat the single coverage floor, held out?

    python evals/fitted_study.py

A logistic regression (standard library, gradient descent, L2) over lexical features of each
``get_context`` answer, trained leave-one-project-out: for each project, the weights *and* the
threshold are fitted on the other projects (the threshold the way run_evals.py picks a floor),
and the project left out is scored. Compared with the shipped single floor on ``top_relevance``
under the same protocol. Issue 13: "a fitted model is welcome only if it wins
leave-one-project-out".
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import run_evals

from ctxkeeper.read import rank
from ctxkeeper.read.rank import ContextQuery
from ctxkeeper.read.textindex import TextIndex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject

FEATURES = (
    "top relevance",
    "relevance of the first-ranked entry",
    "second-best relevance",
    "distinctive words the best entry leaves out",
    "words no entry holds",
)
# Query length is left out on purpose: answerable questions run a little longer than no-answer
# ones in the eval (evals/check_balance.py), a phrasing artefact a model would learn.


def features(result: JSONObject) -> list[float]:
    items = [i for i in result["results"] if isinstance(i, dict)]  # type: ignore[union-attr]
    relevances = sorted((float(str(i["relevance"])) for i in items), reverse=True)
    missing = result.get("missing")
    unmentioned = result.get("unmentioned")
    return [
        float(str(result["top_relevance"])),
        float(str(items[0]["relevance"])) if items else 0.0,
        relevances[1] if len(relevances) > 1 else 0.0,
        float(len(missing)) if isinstance(missing, list) else 0.0,
        float(len(unmentioned)) if isinstance(unmentioned, list) else 0.0,
    ]


def fit(rows: list[list[float]], labels: list[int], l2: float = 0.01) -> list[float]:
    """Weights (bias last) of a logistic regression on standardised features."""
    width = len(rows[0])
    weights = [0.0] * (width + 1)
    for _ in range(400):
        grad = [0.0] * (width + 1)
        for x, y in zip(rows, labels, strict=True):
            z = sum(
                w * v for w, v in zip(weights, x, strict=False)
            )  # the bias is last + weights[-1]
            p = 1 / (1 + math.exp(-max(min(z, 30), -30)))
            for k in range(width):
                grad[k] += (p - y) * x[k]
            grad[-1] += p - y
        for k in range(width + 1):
            penalty = l2 * weights[k] if k < width else 0.0
            weights[k] -= 0.5 * (grad[k] / len(rows) + penalty)
    return weights


def main(argv: list[str] | None = None) -> int:
    # --relevance-only: the three coverage features alone (no word counts).
    keep = 3 if "--relevance-only" in (argv if argv is not None else sys.argv[1:]) else None
    corpus = run_evals.load_corpus()
    cases = [c for c in run_evals.load_cases() if c["type"] != "history"]
    indexes = {name: TextIndex.build(entries) for name, entries in corpus.items()}
    raw: list[tuple[JSONObject, list[float]]] = []
    for case in cases:
        request = ContextQuery(
            query=str(case["query"]),
            path=str(case["path"]) if case.get("path") else None,
            as_of=run_evals.EVAL_INSTANT,
            token_budget=100_000,
        )
        project = str(case["project"])
        result = rank.rank(corpus[project], indexes[project], request, root=run_evals.ROOT)
        raw.append((case, features(result)[:keep]))
    pooled: list[run_evals.Outcome] = []
    for project in sorted(corpus):
        train = [(c, f) for c, f in raw if c["project"] != project]
        width = len(train[0][1])
        means = [sum(f[k] for _, f in train) / len(train) for k in range(width)]
        spread = [
            math.sqrt(sum((f[k] - means[k]) ** 2 for _, f in train) / len(train)) or 1.0
            for k in range(width)
        ]

        def scale(f: list[float], m: list[float] = means, s: list[float] = spread) -> list[float]:
            return [(v - mk) / sk for v, mk, sk in zip(f, m, s, strict=True)]

        weights = fit(
            [scale(f) for _, f in train], [int(c["type"] == "positive") for c, _ in train]
        )
        print(f"  {project}: weights " + ", ".join(f"{w:+.2f}" for w in weights))

        def score(f: list[float], w: list[float] = weights) -> float:
            z = sum(wk * v for wk, v in zip(w, scale(f), strict=False))  # the bias is last + w[-1]
            return 1 / (1 + math.exp(-max(min(z, 30), -30)))

        calib = [run_evals.Outcome(c, [], score(f), False) for c, f in train]
        threshold = run_evals.calibrate(calib)
        for case, f in raw:
            if case["project"] == project:
                value = score(f)
                pooled.append(run_evals.Outcome(case, [], value, value < threshold))
    rows = run_evals.measure(pooled).rows
    print("Fitted logistic regression, leave-one-project-out (weights and threshold per fold):")
    print("  features: " + "; ".join(FEATURES[:keep]))
    for key in ("false_abstention", "abstention_tn", "hard_negative_tn"):
        print(f"  {key}: {rows[key].text()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
