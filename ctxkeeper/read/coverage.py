"""How much of a query an entry covers, and which of the query's distinctive words it leaves out.

This is the abstention signal of ``get_context`` (issue 13, dec-022-0644): ``relevance`` is the
IDF-weighted share of the query's terms an entry contains. It looks at the query and the entry
and nothing else, so scope, recency and status never make an entry look relevant. The same
computation names the words: ``matched`` (query words the entry contains) and ``missing`` (the
*distinctive* query words it does not), so the agent can judge a near miss the floor cannot.

What counts, and why (each choice measured leave-one-project-out, evals/README.md):
- A word found only among the options a decision rejected (``alternatives``) or in a path does
  not make the entry about it (con-019-a3d2); one found only in ``why_chosen`` counts half
  (see FIELD_CREDIT).
- Contractions lose their clitic ("what's" is "what", "we're" is "we"), so they do not turn
  into rare words no entry contains.
- A query word no entry contains weighs as much as the rarest word there is: "what is our backup
  retention policy" is not answered by "policy" alone.
- A prefix or stem variant ("deploy" / "deployer") earns part credit.
- Filler, words that say how a question is asked rather than what it is about ("safe", "just",
  "way", "currently"), weighs less and is never distinctive.
- An entry's ``asked_as`` phrasings (how people ask for it, written when it was recorded)
  count in full, like its headline: a question in a teammate's words is covered by the words
  the recorder expected them to use (issue 26). Counting the phrasings' words with the entry's
  own beat counting each phrasing on its own, leave-one-project-out (evals/asked_as_study.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ctxkeeper.core.model import FieldWeights
from ctxkeeper.core.text import NEGATION, terms, tokenize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONValue
    from ctxkeeper.read.textindex import TextIndex

#: How much a query term found in each field counts towards covering it (the best field an
#: entry holds the term in wins; each kind's field says its own, ``FieldSpec.coverage_credit``). The fields that state what an entry is about (headline, tags,
#: problem, reason, purpose) and a pipeline's steps count in full; ``why_chosen``, which also
#: compares the options turned down, counts half. ``alternatives`` (the options a decision
#: rejected) and ``scope`` (paths) do not count: a word found only there does not make the
#: entry about it. Chosen leave-one-project-out (evals/README.md, evals/signal_study.py).
FIELD_CREDIT: Final[Mapping[str, float]] = FieldWeights(
    lambda spec: spec.coverage_credit, {"tags": 1.0, "asked_as": 1.0}
)
#: Credit for a query term the entry holds only as a prefix or stem variant.
VARIANT_CREDIT: Final = 0.5
#: How much a query word no entry contains weighs, relative to the rarest word there is.
UNSEEN_SCALE: Final = 1.0
#: How much a filler word weighs relative to its IDF.
FILLER_WEIGHT: Final = 0.5
#: How much a number or a one- or two-letter word ("10:30", "re-plan", "e-signature") weighs
#: relative to its IDF (down-weighting it gained nothing held out); like filler, it is never
#: distinctive, so the agent is not told "nothing stored mentions 30".
MINOR_WEIGHT: Final = 1.0
#: A query term is distinctive when at most this share of the store's entries contain it (or
#: none does) and it is not filler.
DISTINCTIVE_SHARE: Final = 0.15
#: Words (as terms, i.e. stemmed) that say how a question is asked, not what it is about. They
#: are not stop words for the ranking, but they never make a query distinctive.
FILLER: Final = frozenset(
    terms(
        """anything something thing things way ways ok okay fine right now just still
        actually really currently again get gets getting got make makes let like want wants
        wanted going go know tell think safe allowed supposed able best good happen happens
        happened sure fix fixing help work works working problem issue question someone somebody
        people person guy team today tonight here there else one ones lot lots kind sort many
        much often"""
    )
)
_CLITIC: Final = re.compile(r"(?<=[^\W_])['\u2019\u2018\u02bc`](?:s|re|ll|ve|d|m)\b", re.IGNORECASE)


def normalise_query(query: str) -> str:
    """The query with contraction clitics removed ("what's" -> "what"; "don't" is kept, it
    is a negation)."""
    return _CLITIC.sub("", query)


@dataclass(frozen=True)
class QueryTerm:
    term: str
    word: str
    weight: float
    distinctive: bool


@dataclass(frozen=True)
class Match:
    relevance: float
    matched: tuple[str, ...]
    missing: tuple[str, ...]


def query_terms(query: str, index: TextIndex) -> list[QueryTerm]:
    """The unique terms of a query, each with the word it came from, its weight and whether
    it is distinctive in this store."""
    found: dict[str, str] = {}
    for token in tokenize(normalise_query(query)):
        for term in terms(token):
            if term != NEGATION and term not in found:
                found[term] = token
    count = index.size
    unseen = UNSEEN_SCALE * math.log(1.0 + (count + 0.5) / 0.5)
    out = []
    for term, word in found.items():
        frequency = index.doc_frequency(term)
        weight = index.idf(term) if frequency else unseen
        filler = term in FILLER
        minor = len(word) <= 2 or word.isdigit()
        if filler:
            weight *= FILLER_WEIGHT
        elif minor:
            weight *= MINOR_WEIGHT
        distinctive = not filler and not minor and frequency <= max(1.0, DISTINCTIVE_SHARE * count)
        out.append(QueryTerm(term, word, weight, distinctive))
    return out


def entry_terms(entry: Mapping[str, JSONValue]) -> dict[str, float]:
    """The terms of the fields that count as covering a query term, each with its best
    field's credit."""
    found: dict[str, float] = {}
    for name, credit in FIELD_CREDIT.items():
        value = entry.get(name)
        if credit <= 0 or not value:
            continue
        text = " ".join(str(v) for v in value) if isinstance(value, list) else str(value)
        if name == "scope":
            text = text.replace("/", " ").replace(".", " ")
        for term in terms(text):
            if credit > found.get(term, 0.0):
                found[term] = credit
    return found


def match(entry: Mapping[str, JSONValue], query: list[QueryTerm], index: TextIndex) -> Match:
    """How much of the query the entry covers, the words it matched and the distinctive ones
    it left out."""
    held = entry_terms(entry)
    total = covered = 0.0
    matched: list[str] = []
    missing: list[str] = []
    for item in query:
        credit = 0.0
        for candidate, weight in index.expansions(item.term):
            if candidate in held:
                exact = 1.0 if weight >= 1.0 else VARIANT_CREDIT
                credit = max(credit, exact * held[candidate])
        total += item.weight
        covered += credit * item.weight
        if credit > 0:
            matched.append(item.word)
        elif item.distinctive:
            missing.append(item.word)
    return Match(covered / total if total > 0 else 0.0, tuple(matched), tuple(missing))


def unmentioned(words: tuple[str, ...], query: list[QueryTerm], index: TextIndex) -> list[str]:
    """The words among ``words`` that no stored entry contains in any field, not even in a
    longer form ("backup" is not mentioned by an entry that only says "back")."""
    by_word = {item.word: item.term for item in query}
    return [
        word
        for word in words
        if word in by_word
        and not any(found.startswith(by_word[word]) for found, _ in index.expansions(by_word[word]))
    ]
