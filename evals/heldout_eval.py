"""Score the sealed held-out corpus (evals/heldout/) with the shipped method, with and without
``asked_as``, beside the leave-one-project-out figures of the ten calibration projects.

Run ``python evals/heldout_eval.py``. Nothing here picks a floor on the held-out data: the
shipped ``RELEVANCE_FLOOR`` and ``WEAK_FLOOR`` score it as they would score a repository
ctxkeeper has never seen. The calibration projects are scored as CI scores them (LOPO), with
their blind ``asked_as`` phrasings (evals/asked_as/) and without, so the gap between the
estimate and the fresh figure is printed, not hidden.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run_evals

from ctxkeeper.read import rank

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject

HELDOUT = HERE / "heldout"
#: The issue's targets on the fresh data.
FRESH_TARGETS = {
    "false_abstention": ("<=", 0.05),
    "abstention_tn": (">=", 0.35),
    "recall@5": (">=", 0.95),
}
SHOWN = (
    "false_abstention",
    "abstention_tn",
    "hard_negative_tn",
    "recall@5",
    "mrr",
    "history_recall@5",
    "weak_or_abstained_answerable",
)


def load_heldout() -> tuple[dict[str, list[JSONObject]], list[JSONObject]]:
    corpus = {
        path.stem: [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for path in sorted((HELDOUT / "corpus").glob("*.jsonl"))
    }
    cases = [
        json.loads(line)
        for line in (HELDOUT / "golden.jsonl").read_text().splitlines()
        if line.strip()
    ]
    return corpus, cases


def without_asked_as(corpus: dict[str, list[JSONObject]]) -> dict[str, list[JSONObject]]:
    return {
        name: [{k: v for k, v in entry.items() if k != "asked_as"} for entry in entries]
        for name, entries in corpus.items()
    }


def table(columns: list[tuple[str, run_evals.Metrics]]) -> list[str]:
    lines = [
        "| metric | " + " | ".join(name for name, _ in columns) + " | fresh target |",
        "|---|" + "---|" * (len(columns) + 1),
    ]
    for name in SHOWN:
        target = FRESH_TARGETS.get(name)
        cells = " | ".join(m.rows[name].text() if name in m.rows else "" for _, m in columns)
        lines.append(f"| {name} | {cells} | {f'{target[0]} {target[1]:g}' if target else ''} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__).parse_args(argv)
    ten = run_evals.load_corpus()
    ten_cases = run_evals.load_cases()
    fresh_corpus, fresh_cases = load_heldout()
    columns: list[tuple[str, run_evals.Metrics]] = []
    for label, blind in (("with asked_as", True), ("without asked_as", False)):
        calibration = run_evals.with_asked_as(ten) if blind else ten
        held, _ = run_evals.lopo(run_evals.run_cases(calibration, ten_cases))
        columns.append((f"LOPO ten, {label}", run_evals.measure(held)))
        corpus = fresh_corpus if blind else without_asked_as(fresh_corpus)
        columns.append(
            (f"fresh, {label}", run_evals.measure(run_evals.run_cases(corpus, fresh_cases)))
        )
    counts = run_evals.measure(run_evals.run_cases(fresh_corpus, fresh_cases)).counts
    print(
        f"Held-out corpus: {sum(len(v) for v in fresh_corpus.values())} entries in "
        f"{len(fresh_corpus)} projects; cases: " + ", ".join(f"{n} {k}" for k, n in counts.items())
    )
    print(
        f"Shipped floors: RELEVANCE_FLOOR = {rank.RELEVANCE_FLOOR}, ASKED_AS_FLOOR = "
        f"{rank.ASKED_AS_FLOOR}, WEAK_FLOOR = {rank.WEAK_FLOOR}\n"
    )
    print("\n".join(table(columns)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
