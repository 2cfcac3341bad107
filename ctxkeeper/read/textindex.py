"""An in-memory inverted index over entries: weighted field terms, IDF, prefix lookup."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Final

from ctxkeeper.core.text import NEGATION, terms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ctxkeeper.core._types import JSONValue

#: How much a term counts by the field it appears in: the field that states what the entry is
#: (summary, rule, name) and its tags outweigh the rationale (DESIGN.md, issue 4).
FIELD_WEIGHTS: Final = {
    "summary": 3.0,
    "rule": 3.0,
    "name": 3.0,
    "tags": 2.5,
    "problem": 1.5,
    "purpose": 1.5,
    "scope": 1.0,
    "why_chosen": 1.0,
    "reason": 1.0,
    "steps": 0.8,
    "alternatives": 0.6,
}
#: Fields a query term must hit for the entry to count as *about* that term.
HEADLINE_FIELDS: Final = frozenset({"summary", "rule", "name", "tags"})
_K1: Final = 1.2
_B: Final = 0.6
_MIN_PREFIX: Final = 4
#: A prefix or stem-variant hit counts for less than an exact term hit.
PREFIX_CREDIT: Final = 0.5


def field_text(value: JSONValue) -> str:
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    return "" if value is None else str(value)


@dataclass
class TextIndex:
    """Postings of weighted term frequencies per entry, built once per store state."""

    ids: list[str] = field(default_factory=list)
    postings: dict[str, dict[int, float]] = field(default_factory=dict)
    headline_terms: list[frozenset[str]] = field(default_factory=list)
    lengths: list[float] = field(default_factory=list)
    vocabulary: list[str] = field(default_factory=list)
    average_length: float = 1.0

    @classmethod
    def build(cls, entries: Iterable[Mapping[str, JSONValue]]) -> TextIndex:
        index = cls()
        for doc, entry in enumerate(entries):
            index.ids.append(str(entry.get("id")))
            length = 0.0
            headline: set[str] = set()
            for name, weight in FIELD_WEIGHTS.items():
                text = field_text(entry.get(name))
                if name == "scope":
                    text = text.replace("/", " ").replace(".", " ")
                for term in terms(text):
                    if term == NEGATION:
                        continue
                    bucket = index.postings.setdefault(term, {})
                    bucket[doc] = bucket.get(doc, 0.0) + weight
                    length += weight
                    if name in HEADLINE_FIELDS:
                        headline.add(term)
            index.lengths.append(length)
            index.headline_terms.append(frozenset(headline))
        index.vocabulary = sorted(index.postings)
        index.average_length = (sum(index.lengths) / len(index.lengths)) if index.lengths else 1.0
        return index

    def idf(self, term: str) -> float:
        n = len(self.ids)
        df = len(self.postings.get(term, ()))
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def expansions(self, term: str) -> list[tuple[str, float]]:
        """Index terms a query term matches: itself, and terms it is a prefix of (or that are a
        prefix of it) at reduced credit, so "deploy" meets "deployer" and "idempot" meets
        "idempotency" whichever side the stemmer cut shorter."""
        found: list[tuple[str, float]] = []
        if term in self.postings:
            found.append((term, 1.0))
        if len(term) < _MIN_PREFIX:
            return found
        start = bisect.bisect_left(self.vocabulary, term)
        for candidate in self.vocabulary[start : start + 50]:
            if not candidate.startswith(term):
                break
            if candidate != term:
                found.append((candidate, PREFIX_CREDIT))
        for cut in range(len(term) - 1, _MIN_PREFIX - 1, -1):
            if term[:cut] in self.postings:
                found.append((term[:cut], PREFIX_CREDIT))
                break
        return found

    def score_terms(self, query_terms: list[str]) -> tuple[dict[int, float], dict[int, float]]:
        """BM25F scores per entry, and each entry's *relevance*: the IDF-weighted share of
        the query's terms it contains (prefix hits at reduced credit).

        Relevance looks only at the match between the query and the entry, never at scope,
        recency or status, so it can say "nothing here answers this" (abstention).
        """
        scores: dict[int, float] = {}
        covered: dict[int, float] = {}
        unique = list(dict.fromkeys(t for t in query_terms if t != NEGATION))
        total_idf = 0.0
        for term in unique:
            weight = self.idf(term) if term in self.postings else self._unseen_idf()
            total_idf += weight
            best_credit: dict[int, float] = {}
            for matched, credit in self.expansions(term):
                idf = self.idf(matched)
                for doc, tf in self.postings[matched].items():
                    norm = (
                        tf
                        * (_K1 + 1)
                        / (tf + _K1 * (1 - _B + _B * self.lengths[doc] / self.average_length))
                    )
                    scores[doc] = scores.get(doc, 0.0) + credit * idf * norm
                    if credit > best_credit.get(doc, 0.0):
                        best_credit[doc] = credit
            for doc, credit in best_credit.items():
                covered[doc] = covered.get(doc, 0.0) + credit * weight
        if total_idf <= 0:
            return scores, {}
        return scores, {doc: share / total_idf for doc, share in covered.items()}

    def _unseen_idf(self) -> float:
        # A query word no entry contains is as informative as the rarest word there is:
        # "what is our backup retention policy" should not be answered by "policy" alone.
        n = len(self.ids)
        return math.log(1.0 + (n + 0.5) / 0.5)
