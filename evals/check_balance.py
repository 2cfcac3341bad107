"""Check that answerable and no-answer golden cases are phrased alike.

A signal that abstains on "looks like a question" would look good on a golden set whose no-answer
cases are all questions and whose answerable ones are not. This script counts, per class
(answerable: ``positive``; no-answer: ``no_answer`` and ``hard_negative``), how many cases take
each phrasing ``form`` and how long they are, and fails when a class of the new corpora has a form
share outside 20-30% or the two classes' median lengths differ by more than two words.

    python evals/check_balance.py            # report; exit 1 on an imbalance in the new corpora
    python evals/check_balance.py --label    # add a `form` to cases of golden.jsonl lacking one

Forms:
- ``question``: ends with a question mark.
- ``question_no_mark``: reads as a question (starts with a question word or an auxiliary verb)
  but has no question mark.
- ``fragment``: a short search fragment: at most six words and no personal pronoun.
- ``problem``: anything else, a statement of the problem ("dashboards show garbage after the
  load").

Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden.jsonl"
#: Cases of the corpora written for issue 13 (never tuned on); the balance gate applies to them.
FRESH = HERE / "golden_fresh.jsonl"
FORMS = ("question", "question_no_mark", "problem", "fragment")
SHARE_RANGE = (0.20, 0.30)
MAX_MEDIAN_GAP = 2.0

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_QUESTION_WORDS = frozenset(
    [
        "what",
        "what's",
        "whats",
        "how",
        "how's",
        "which",
        "who",
        "who's",
        "whom",
        "whose",
        "why",
        "when",
        "where",
        "where's",
        "can",
        "could",
        "should",
        "shall",
        "do",
        "does",
        "did",
        "is",
        "are",
        "was",
        "were",
        "will",
        "would",
        "has",
        "have",
        "any",
        "may",
        "must",
        "am",
        "isn't",
        "aren't",
        "doesn't",
        "don't",
        "didn't",
        "can't",
        "won't",
        "wouldn't",
        "shouldn't",
    ]
)
_PRONOUNS = frozenset(
    [
        "i",
        "i'm",
        "i've",
        "i'd",
        "me",
        "my",
        "we",
        "we're",
        "we've",
        "we'd",
        "us",
        "our",
        "you",
        "you're",
        "your",
        "they",
        "they're",
        "their",
    ]
)


def words(query: str) -> list[str]:
    return [w.replace("\u2019", "'") for w in _WORD.findall(query.lower())]


def classify_form(query: str) -> str:
    """The phrasing of a query, by the rules in the module docstring."""
    text = query.strip()
    if text.endswith("?"):
        return "question"
    found = words(text)
    if found and found[0] in _QUESTION_WORDS:
        return "question_no_mark"
    if len(found) <= 6 and not any(w in _PRONOUNS for w in found):
        return "fragment"
    return "problem"


def case_class(case: dict[str, object]) -> str | None:
    if case.get("type") == "positive":
        return "answerable"
    if case.get("type") in ("no_answer", "hard_negative"):
        return "no_answer"
    return None


def read(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summarise(cases: list[dict[str, object]], title: str) -> tuple[list[str], list[str]]:
    """(report lines, problems): form counts and shares per class, and median lengths."""
    lines = [f"{title}: {len(cases)} cases"]
    problems: list[str] = []
    medians: dict[str, float] = {}
    for klass in ("answerable", "no_answer"):
        members = [c for c in cases if case_class(c) == klass]
        if not members:
            continue
        forms = Counter(str(c.get("form") or classify_form(str(c["query"]))) for c in members)
        lengths = [len(words(str(c["query"]))) for c in members]
        medians[klass] = statistics.median(lengths)
        shares = {f: forms[f] / len(members) for f in FORMS}
        lines.append(
            f"  {klass:<11} n={len(members):>4}  median words {medians[klass]:>4.1f}  "
            + "  ".join(f"{f} {forms[f]:>3} ({shares[f]:.0%})" for f in FORMS)
        )
        low, high = SHARE_RANGE
        problems += [
            f"{title}: {klass} {f} share {shares[f]:.0%} is outside {low:.0%}-{high:.0%}"
            for f in FORMS
            if not low <= shares[f] <= high
        ]
    if len(medians) == 2 and abs(medians["answerable"] - medians["no_answer"]) > MAX_MEDIAN_GAP:
        problems.append(
            f"{title}: median lengths differ by more than {MAX_MEDIAN_GAP:g} words "
            f"({medians['answerable']:g} vs {medians['no_answer']:g})"
        )
    return lines, problems


def label(path: Path) -> int:
    """Add a ``form`` (right after ``type``) to every case of path that lacks one."""
    out = []
    changed = 0
    for case in read(path):
        if "form" not in case:
            rebuilt: dict[str, object] = {}
            for key, value in case.items():
                rebuilt[key] = value
                if key == "type":
                    rebuilt["form"] = classify_form(str(case["query"]))
            case = rebuilt
            changed += 1
        out.append(json.dumps(case, ensure_ascii=False))
    path.write_text("\n".join(out) + "\n")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--label", action="store_true", help="add missing forms to golden.jsonl")
    args = parser.parse_args(argv)
    if args.label:
        print(f"labelled {label(GOLDEN)} case(s) of {GOLDEN.name}")
    original, fresh = read(GOLDEN), read(FRESH)
    report, _ = summarise(original, "original six projects (not gated)")
    problems: list[str] = []
    if fresh:
        lines, problems = summarise(fresh, "new corpora")
        report += lines
        report += summarise(original + fresh, "all projects")[0]
    mismatched = [c["id"] for c in fresh if c.get("form") != classify_form(str(c["query"]))]
    if mismatched:
        report.append(
            f"  note: {len(mismatched)} new case(s) whose author's form differs from the rule "
            "classifier (the author's label is used)"
        )
    print("\n".join(report))
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
