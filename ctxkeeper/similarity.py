"""Entry similarity: close pairs, restatements, contradictions, tombstone and supersession hits."""

from __future__ import annotations

import re
from functools import lru_cache
from types import MappingProxyType
from typing import Final, Literal, NamedTuple, TypedDict

from ctxkeeper.errors import UsageError
from ctxkeeper.model import LIVE_STATUSES, TOMBSTONE_STATUSES
from ctxkeeper.scope import normalize_scope, scope_covers
from ctxkeeper.text import NEGATION, fingerprint, stem, terms, tokenize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "RESTATEMENT_THRESHOLD",
    "SIMILAR_THRESHOLD",
    "SUPERSESSION_THRESHOLD",
    "TOMBSTONE_THRESHOLD",
    "Label",
    "SimilarEntry",
    "classify",
    "entry_text",
    "matching_tombstone",
    "polarity_conflict",
    "possible_supersession",
    "similar_entries",
    "similarity",
    "statement",
]

Label = Literal["likely_restatement", "likely_contradiction"]

# Chosen from the labelled pairs in evals/similarity/pairs.jsonl; the sweep, the measured rates
# and the reasoning are in evals/SIMILARITY.md (regenerate: `python3 evals/similarity_eval.py`).
SIMILAR_THRESHOLD: Final[float] = 0.40
"""Pairs scoring at least this are reported in ``similar_entries``."""
TOMBSTONE_THRESHOLD: Final[float] = 0.60
"""A candidate this close to a deprecated or rejected entry is refused as a re-assertion."""
SUPERSESSION_THRESHOLD: Final[float] = 0.50
"""A live entry of the same kind and place this close may be what the candidate replaces."""
RESTATEMENT_THRESHOLD: Final[float] = TOMBSTONE_THRESHOLD
"""A pair this close without opposite polarity says the same thing: the tombstone bar."""

# The fields that say what an entry *is* (primary) and why (secondary); steps, alternatives
# and why_chosen describe how or why-not and vary freely between restatements.
_PRIMARY: Final = MappingProxyType(
    {"decision": ("summary",), "constraint": ("rule",), "pipeline": ("name", "purpose")}
)
_SECONDARY: Final = MappingProxyType(
    {"decision": ("problem",), "constraint": ("reason",), "pipeline": ()}
)
# Weights measured in evals/SIMILARITY.md: the rule or summary decides, the reason refines.
_PRIMARY_WEIGHT: Final = 0.8
_TERM_WEIGHT: Final = 0.6


class SimilarEntry(TypedDict):
    """One stored entry close to a candidate, as reported by ``record_entry``."""

    id: str
    kind: str
    status: str
    similarity: float
    label: Label | None


_Features = tuple[frozenset[str], frozenset[str]]
_FEATURE_CACHE_MAX: Final = 65_536


def _field_text(entry: Mapping[str, object], fields: Sequence[str]) -> str:
    values = (entry.get(field) for field in fields)
    return ". ".join(value for value in values if isinstance(value, str) and value)


def statement(entry: Mapping[str, object]) -> str:
    """Return the text of the fields that define the entry, which polarity is read from.

    Decision: summary; constraint: rule; pipeline: name and purpose.
    """
    return _field_text(entry, _PRIMARY.get(str(entry.get("kind")), ()))


def _secondary_text(entry: Mapping[str, object]) -> str:
    return _field_text(entry, _SECONDARY.get(str(entry.get("kind")), ()))


def entry_text(entry: Mapping[str, object]) -> str:
    """Return the text that states what the entry is, primary fields first.

    Decision: summary and problem; constraint: rule and reason; pipeline: name and purpose.
    """
    primary, secondary = statement(entry), _secondary_text(entry)
    return f"{primary}. {secondary}" if secondary else primary


_gram_cache: dict[str, frozenset[str]] = {}
# Tombstone matching fingerprints every tombstone on every write; the texts rarely change.
_fingerprint = lru_cache(maxsize=_FEATURE_CACHE_MAX)(fingerprint)


def _grams(term: str) -> frozenset[str]:
    grams = _gram_cache.get(term)
    if grams is None:
        if len(_gram_cache) >= _FEATURE_CACHE_MAX:
            _gram_cache.clear()
        padded = f" {term} "
        grams = _gram_cache[term] = frozenset(padded[i : i + 3] for i in range(len(padded) - 2))
    return grams


# Keyed on the text itself, so an edited entry gets fresh features and identical texts share
# one computation; the bound keeps a long-lived server from growing without limit.
@lru_cache(maxsize=_FEATURE_CACHE_MAX)
def _features(text: str) -> _Features:
    words = frozenset(terms(text))
    return words, frozenset().union(*map(_grams, words))


def _dice(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


def _text_similarity(a: _Features, b: _Features) -> float:
    return _TERM_WEIGHT * _dice(a[0], b[0]) + (1 - _TERM_WEIGHT) * _dice(a[1], b[1])


def _entry_features(entry: Mapping[str, object]) -> tuple[_Features, _Features | None]:
    secondary = _secondary_text(entry)
    return _features(statement(entry)), _features(secondary) if secondary else None


def _score(a: tuple[_Features, _Features | None], b: tuple[_Features, _Features | None]) -> float:
    score = _text_similarity(a[0], b[0])
    if a[1] is not None and b[1] is not None:
        score = _PRIMARY_WEIGHT * score + (1 - _PRIMARY_WEIGHT) * _text_similarity(a[1], b[1])
    return score


def similarity(a: Mapping[str, object], b: Mapping[str, object]) -> float:
    """Return how close two entries' statements are, from 0 (unrelated) to 1 (identical).

    Symmetric. Blends stemmed-term overlap with character-trigram overlap (robust to light
    rewording) on the primary fields (:func:`statement`), refined by the secondary fields
    (problem, reason) when both entries have them. Entries of different kinds are compared
    field role by field role.
    """
    return _score(_entry_features(a), _entry_features(b))


# ---------------------------------------------------------------------------------- polarity

# Tokens that negate their clause. An odd number of them makes a statement negative, so
# "never deploy without tests" reads as positive, like "always deploy with tests".
_NEGATOR_LIST: Final = """
    not no never nor cannot none non without avoid avoids avoided avoiding
    forbid forbids forbidden forbidding ban bans banned prohibit prohibits prohibited disallow
    disallows disallowed
"""
_NEGATORS: Final = frozenset(_NEGATOR_LIST.split())
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
)
_SIDES: Final = {
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
    r"[;:.!?()\u2013\u2014]+|\s-{1,2}\s"
    r"|\b(?:but|so|because|unless|otherwise|although|whereas)\b"
    r"|(?:,\s*|\band\s+)(?=(?:not|never|but|except)\b)"
    r"|(?=\b(?:instead\s+of|rather\s+than)\b)"
)
_ALTERNATIVE: Final = ("instead", "rather")


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


def _number(token: str) -> str:
    if token.isdigit():
        return token.lstrip("0") or "0"
    return _NUMBER_WORDS.get(token, "")


@lru_cache(maxsize=4_096)
def _clauses(text: str) -> tuple[_Clause, ...]:
    clauses = []
    for part in _CLAUSE_BREAK.split(text.lower()):
        tokens = tokenize(part)
        if not tokens:
            continue
        negators = sum(token in _NEGATORS or token.endswith("n't") for token in tokens)
        # "instead of X" negates X; a trailing "do Y instead" does not negate Y.
        negators += tokens[0] in _ALTERNATIVE
        hard = any(token in _HARD for token in tokens)
        soft = any(token in _SOFT for token in tokens)
        clauses.append(
            _Clause(
                terms=frozenset(terms(part)) - {NEGATION},
                negative=negators % 2 == 1,
                sides=frozenset(_SIDES[s] for s in map(stem, tokens) if s in _SIDES),
                mode=int(hard) - int(soft),
                numbers=frozenset(_number(token) for token in tokens if _number(token)),
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


# -------------------------------------------------------------------------------- verdicts


def classify(a: Mapping[str, object], b: Mapping[str, object], score: float) -> Label | None:
    """Label a pair whose similarity is ``score``: a restatement, a contradiction, or neither.

    Opposite polarity on a shared topic (score at least :data:`SIMILAR_THRESHOLD`) is a
    likely contradiction; otherwise a score at the tombstone bar is a likely restatement.
    """
    if score < SIMILAR_THRESHOLD:
        return None
    if polarity_conflict(statement(a), statement(b)):
        return "likely_contradiction"
    if score >= RESTATEMENT_THRESHOLD:
        return "likely_restatement"
    return None


def similar_entries(
    candidate: Mapping[str, object], stored: Iterable[Mapping[str, object]], *, limit: int = 5
) -> list[SimilarEntry]:
    """Return the stored entries closest to a candidate, best first, at most ``limit``.

    Every stored entry counts, whatever its kind or status: a superseded or tombstoned entry
    close to a new one is exactly what the writer needs to see. The candidate's own id is
    skipped so an update is not reported as similar to itself.
    """
    own_id = candidate.get("id")
    own = _entry_features(candidate)
    hits: list[tuple[float, Mapping[str, object]]] = []
    for entry in stored:
        if own_id is not None and entry.get("id") == own_id:
            continue
        score = _score(own, _entry_features(entry))
        if score >= SIMILAR_THRESHOLD:
            hits.append((score, entry))
    hits.sort(key=lambda hit: (-hit[0], str(hit[1].get("id"))))
    return [
        SimilarEntry(
            id=str(entry.get("id")),
            kind=str(entry.get("kind")),
            status=str(entry.get("status")),
            similarity=round(score, 3),
            label=classify(candidate, entry, score),
        )
        for score, entry in hits[:limit]
    ]


def matching_tombstone(
    candidate: Mapping[str, object], stored: Iterable[Mapping[str, object]]
) -> tuple[Mapping[str, object], float] | None:
    """Return the tombstone the candidate re-asserts, with its score; None when there is none.

    A tombstone (deprecated or rejected entry) matches when its primary text has the same
    fingerprint as the candidate's (score 1.0), or when the similarity reaches
    :data:`TOMBSTONE_THRESHOLD`. The best same-kind match wins; other kinds are consulted only
    when no entry of the candidate's kind matches, since a rejected decision restated as a
    constraint is still the rejected content.

    A candidate of opposite polarity to the tombstone (tombstone "never use X", candidate
    "always use X") is *not* a match: retiring a rule is usually the very reason its reversal
    is being recorded, and refusing it would keep the retired rule alive. Such a pair still
    shows up in :func:`similar_entries` labelled ``likely_contradiction``, next to the
    tombstone's id, for the writer and the reviewer to see.
    """
    kind = candidate.get("kind")
    own = _entry_features(candidate)
    own_text = statement(candidate)
    own_print = fingerprint(own_text)
    best: dict[bool, tuple[float, Mapping[str, object]]] = {}
    for entry in stored:
        if entry.get("status") not in TOMBSTONE_STATUSES:
            continue
        text = statement(entry)
        if text and _fingerprint(text) == own_print:
            score = 1.0
        else:
            score = _score(own, _entry_features(entry))
            if score < TOMBSTONE_THRESHOLD or polarity_conflict(own_text, text):
                continue
        same_kind = entry.get("kind") == kind
        if same_kind not in best or score > best[same_kind][0]:
            best[same_kind] = (score, entry)
    for same_kind in (True, False):
        if same_kind in best:
            score, entry = best[same_kind]
            return entry, score
    return None


def _canonical_scopes(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    scopes = []
    for scope in value:
        if isinstance(scope, str):
            # A candidate may arrive before the model canonicalised it ("billing/", "./x").
            try:
                scopes.append(normalize_scope(scope))
            except UsageError:
                scopes.append(scope)
    return scopes


def _scopes_overlap(a: object, b: object) -> bool:
    scopes_a, scopes_b = _canonical_scopes(a), _canonical_scopes(b)
    if "" in scopes_a or "" in scopes_b or not scopes_a or not scopes_b:
        # An empty scope is project-wide and overlaps everything.
        return True
    return any(scope_covers(sa, sb) or scope_covers(sb, sa) for sa in scopes_a for sb in scopes_b)


def _tags_overlap(a: object, b: object) -> bool:
    tags_a = {t for t in a if isinstance(t, str)} if isinstance(a, list) else set()
    tags_b = {t for t in b if isinstance(t, str)} if isinstance(b, list) else set()
    return bool(tags_a & tags_b) or (not tags_a and not tags_b)


def possible_supersession(
    candidate: Mapping[str, object], stored: Iterable[Mapping[str, object]]
) -> list[str]:
    """Return the ids of live entries the candidate may replace, best match first.

    A live (active or proposed) entry of the same kind qualifies when its scope overlaps the
    candidate's (whole path components; an empty scope overlaps everything), their tags
    overlap (or both have none), and the similarity reaches :data:`SUPERSESSION_THRESHOLD`.
    A contradiction qualifies too: a reversed rule in the same place replaces the old one.
    """
    own_id = candidate.get("id")
    own = _entry_features(candidate)
    kind = candidate.get("kind")
    hits: list[tuple[float, str]] = []
    for entry in stored:
        if entry.get("kind") != kind or entry.get("status") not in LIVE_STATUSES:
            continue
        if own_id is not None and entry.get("id") == own_id:
            continue
        if not _scopes_overlap(candidate.get("scope"), entry.get("scope")):
            continue
        if not _tags_overlap(candidate.get("tags"), entry.get("tags")):
            continue
        score = _score(own, _entry_features(entry))
        if score >= SUPERSESSION_THRESHOLD:
            hits.append((score, str(entry.get("id"))))
    hits.sort(key=lambda hit: (-hit[0], hit[1]))
    return [entry_id for _, entry_id in hits]
