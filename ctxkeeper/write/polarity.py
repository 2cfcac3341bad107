"""Polarity: whether two statements say opposite things (never/always, must/may, 3 vs 5).

Split out of :mod:`ctxkeeper.write.similarity`, which asks it whether a close pair is a
contradiction rather than a restatement, and whether a tombstone's reversal is being written.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final, NamedTuple

from ctxkeeper.core.text import NEGATION, stem, terms, tokenize

__all__ = ["NEGATORS", "SIDES", "number_token", "polarity_conflict"]


# Tokens that negate their clause. An odd number of them makes a statement negative, so
# "never deploy without tests" reads as positive, like "always deploy with tests".
_NEGATOR_LIST: Final = """
    not no never nor cannot none non without avoid avoids avoided avoiding
    forbid forbids forbidden forbidding ban bans banned prohibit prohibits prohibited disallow
    disallows disallowed
"""
NEGATORS: Final = frozenset(_NEGATOR_LIST.split())
# Pairs of opposite words, compared by stem. A negator already covers always/never and
# use/avoid; listing them here too would count one reversal twice and cancel it out.
_ANTONYMS: Final = (
    ("enable enables enabled", "disable disables disabled"),
    ("allow allows allowed permit permitted", "deny denies denied block blocks blocked"),
    ("sync synchronous synchronously blocking", "async asynchronous asynchronously"),
    ("include includes included", "exclude excludes excluded"),
    ("add adds added insert", "remove removes removed delete deleted drop dropped"),
    ("accept accepts accepted", "reject rejects rejected refuse refused"),
    ("public publicly", "private privately"),
    ("mutable", "immutable"),
    ("before", "after"),
    ("increase increases increased raise", "decrease decreases decreased reduce lower"),
    ("manual manually", "automatic automatically"),
    ("sequential sequentially serially", "parallel concurrently"),
    ("local locally", "remote remotely"),
    ("internal", "external"),
    ("least minimum", "most maximum"),
    ("true", "false"),
    ("strict strictly", "lenient loose"),
    ("soft", "hard"),
    # Keeping data is not flushing it: "never flush the keys" and "keep the keys" agree.
    (
        "keep keeps kept retain retains retained preserve preserves preserved",
        (
            "flush flushes flushed evict evicts evicted discard discards discarded purge "
            "purges purged expire expires expired"
        ),
    ),
)
SIDES: Final = {
    stem(word): (index, side)
    for index, pair in enumerate(_ANTONYMS)
    for side, words in enumerate(pair)
    for word in words.split()
}
_HARD: Final = frozenset({"must", "required", "require", "requires", "mandatory", "shall"})
_SOFT: Final = frozenset({"may", "optional", "optionally"})


# Clause boundaries: sentence punctuation, dashes, conjunctions that start a reason or a
# contrast ("so a second run does no harm"; not "while", which usually binds two halves of
# one prohibition: "never hold a lock while calling out"), a comma or "and" that introduces a negated
# contrast (", not by tag", "and never on weekends"), and "instead of" / "rather than", which
# open a clause naming the rejected alternative. A plain list comma stays inside its clause.
_CLAUSE_BREAK: Final = re.compile(
    r"[;:.!?]+(?=\s|$)|[()\u2013\u2014]+|\s-{1,2}\s"
    r"|\b(?:but|so|because|unless|otherwise|although|whereas)\b"
    r"|(?:,\s*|\band\s+)(?=(?:not|never|but|except)\b)"
    r"|(?=\b(?:instead\s+of|rather\s+than)\b)"
)
_ALTERNATIVE: Final = ("instead", "rather")
# A short clause opened by one of these and ended by a comma is a fronted condition of the
# next one: "Without a key, never call X" is one prohibition, as "Never call X without a key".
_FRONTED: Final = frozenset(
    {"without", "with", "before", "after", "when", "whenever", "if", "during", "for", "in", "on"}
    | {"once", "while", "until", "outside", "inside", "within"}
)
_FRONTED_MAX_TOKENS: Final = 8


# Quantities, so that "at most three retries" and "up to 3 retries" agree while "at most
# five retries" is a different rule: a retuned limit replaces the old one, it is not a copy.
_NUMBER_WORDS: Final = {
    word: str(value)
    for value, words in enumerate(
        (
            "zero",
            "one once",
            "two twice",
            "three thrice",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        )
    )
    for word in words.split()
} | {"twenty": "20", "thirty": "30", "sixty": "60", "ninety": "90", "hundred": "100"}


class _Clause(NamedTuple):
    terms: frozenset[str]
    negative: bool
    sides: frozenset[tuple[int, int]]
    mode: int
    """1 = only hard words ("must"), -1 = only permissive words ("may"), 0 = neither or both."""
    numbers: frozenset[str]


def number_token(token: str) -> str:
    if token.isdigit():
        return token.lstrip("0") or "0"
    return _NUMBER_WORDS.get(token, "")


def _parts(text: str) -> list[str]:
    """Split text into clauses, folding a fronted condition into the clause it conditions."""
    parts: list[str] = []
    pending = ""
    start = 0
    for match in _CLAUSE_BREAK.finditer(text):
        part = text[start : match.start()]
        tokens = tokenize(part)
        if (
            tokens
            and tokens[0] in _FRONTED
            and len(tokens) <= _FRONTED_MAX_TOKENS
            and not _HARD.intersection(tokens)
            and match.group().strip() in (",", "")
        ):
            pending += part + " "
        else:
            parts.append(pending + part)
            pending = ""
        start = match.end()
    parts.append(pending + text[start:])
    return parts


@lru_cache(maxsize=4_096)
def _clauses(text: str) -> tuple[_Clause, ...]:
    clauses = []
    for part in _parts(text.lower()):
        tokens = tokenize(part)
        if not tokens:
            continue
        negators = sum(token in NEGATORS or token.endswith("n't") for token in tokens)
        # "instead of X" negates X; a trailing "do Y instead" does not negate Y.
        negators += tokens[0] in _ALTERNATIVE
        hard = any(token in _HARD for token in tokens)
        soft = any(token in _SOFT for token in tokens)
        clauses.append(
            _Clause(
                terms=frozenset(terms(part)) - {NEGATION},
                negative=negators % 2 == 1,
                sides=frozenset(SIDES[s] for s in map(stem, tokens) if s in SIDES),
                mode=int(hard) - int(soft),
                numbers=frozenset(number_token(token) for token in tokens if number_token(token)),
            )
        )
    return tuple(clauses)


def _opposed(a: _Clause, b: _Clause) -> bool:
    reversals = int(a.negative != b.negative)
    for index, side in a.sides:
        mirror = (index, 1 - side)
        if mirror in b.sides and mirror not in a.sides and (index, side) not in b.sides:
            reversals += 1
    changed_number = bool(a.numbers and b.numbers and a.numbers != b.numbers)
    return reversals % 2 == 1 or a.mode * b.mode == -1 or changed_number


def _votes(mine: tuple[_Clause, ...], theirs: tuple[_Clause, ...]) -> tuple[float, float]:
    # Each clause is compared with the clause(s) of the other statement it shares the most
    # terms with, and votes with that overlap as its weight; ties split the weight.
    opposed = agreed = 0.0
    for clause in mine:
        overlaps = [len(clause.terms & other.terms) for other in theirs]
        best = max(overlaps)
        if best == 0:
            continue
        matches = [
            other for other, overlap in zip(theirs, overlaps, strict=True) if overlap == best
        ]
        for other in matches:
            if _opposed(clause, other):
                opposed += best / len(matches)
            else:
                agreed += best / len(matches)
    return opposed, agreed


def polarity_conflict(a_text: str, b_text: str) -> bool:
    """Return True when two statements on one topic point in opposite directions.

    Each statement is cut into clauses; each clause is paired with the clause of the other
    statement it shares the most terms with, and the pairs vote, weighted by that overlap. A
    pair is opposed when it has an odd number of reversals: one side negated and the other
    not ("never X" / "always X", "use X" / "avoid X"), or an antonym pair split between them
    ("enable" / "disable", "before" / "after"); so a double reversal ("never disable X" /
    "always enable X") agrees. A hard requirement against a permission ("must" / "may",
    "required" / "optional") is opposed too, and so is a changed quantity ("at most three
    retries" / "at most five retries": a retuned limit replaces the old rule). The statements conflict when the opposed votes
    outweigh the agreeing ones, so "do not X; do Y" agrees with "do Y instead of X".
    Whether the topic is the same is the caller's question (see :func:`classify`).
    """
    clauses_a, clauses_b = _clauses(a_text), _clauses(b_text)
    if not clauses_a or not clauses_b:
        return False
    opposed_ab, agreed_ab = _votes(clauses_a, clauses_b)
    opposed_ba, agreed_ba = _votes(clauses_b, clauses_a)
    return opposed_ab + opposed_ba > agreed_ab + agreed_ba
