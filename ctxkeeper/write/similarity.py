"""Entry similarity: close pairs, restatements, contradictions, tombstone and supersession hits."""

from __future__ import annotations

import re
from _collections_abc import dict_values
from array import array
from bisect import bisect_left
from collections import Counter
from functools import lru_cache
from itertools import chain, compress, filterfalse
from math import ceil
from operator import is_not, le
from types import MappingProxyType
from typing import Final, Literal, TypedDict

from ctxkeeper.core.errors import UsageError
from ctxkeeper.core.model import KINDS, LIVE_STATUSES, TOMBSTONE_STATUSES, KindTable, kind_spec
from ctxkeeper.core.scope import normalize_scope, scope_covers
from ctxkeeper.core.text import STOPWORDS, comparable, fingerprint, stem, terms
from ctxkeeper.write.polarity import NEGATORS, SIDES, number_token, polarity_conflict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence

__all__ = [
    "RESTATEMENT_THRESHOLD",
    "SHORTLIST_FLOOR",
    "SIMILAR_THRESHOLD",
    "SUPERSESSION_THRESHOLD",
    "TOMBSTONE_THRESHOLD",
    "Label",
    "SimilarEntry",
    "SimilarityIndex",
    "classify",
    "different_choice",
    "entry_text",
    "matching_tombstone",
    "possible_supersession",
    "shortlist",
    "similar_entries",
    "similarity",
    "statement",
    "tombstone_score",
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
# (Each kind's spec names them: ``similar_primary`` and ``similar_secondary``.)
_PRIMARY: Final[Mapping[str, tuple[str, ...]]] = KindTable(lambda spec: spec.similar_primary)
_SECONDARY: Final[Mapping[str, tuple[str, ...]]] = KindTable(lambda spec: spec.similar_secondary)
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


# Cached: every write compares against every stored entry, whose texts rarely change.
_comparable = lru_cache(maxsize=_FEATURE_CACHE_MAX)(comparable)


def _field_text(entry: Mapping[str, object], fields: Sequence[str]) -> str:
    values = (entry.get(field) for field in fields)
    return ". ".join(_comparable(value) for value in values if isinstance(value, str) and value)


def statement(entry: Mapping[str, object]) -> str:
    """Return the text of the fields that define the entry, which polarity is read from.

    Decision: summary; constraint: rule; pipeline: name and purpose. The text is in its
    comparable form (:func:`ctxkeeper.core.text.comparable`): look-alike letters, invisible
    characters and shorthands such as "w/o" cannot hide a restatement.
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


def _uncached_text(entry: Mapping[str, object], table: Mapping[str, tuple[str, ...]]) -> str:
    """:func:`statement` (``_PRIMARY``) or the secondary text (``_SECONDARY``), uncached."""
    values = (entry.get(field) for field in table.get(str(entry.get("kind")), ()))
    return ". ".join(comparable(value) for value in values if isinstance(value, str) and value)


def _uncached_features(text: str) -> _Features:
    """:func:`_features` without filling its caches: the index computes each stored entry's
    features once and keeps only the postings, so caching them would double its memory."""
    words = frozenset(terms(text))
    grams: set[str] = set()
    for word in words:
        padded = f" {word} "
        grams.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return words, frozenset(grams)


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


# ---------------------------------------------------------------------- typos and choices

# Words that mean something different from their near-spellings ("sync"/"async", "mysql"/
# "mssql"): never treated as a typo of one another.
_TECH_LIST: Final = """
    redis memcached valkey postgres postgresql mysql mariadb mssql sqlite oracle mongodb mongo
    cassandra dynamodb couchdb elasticsearch opensearch solr kafka rabbitmq nats sqs sns pubsub
    kinesis celery sidekiq resque airflow dagster prefect temporal docker podman kubernetes k8s
    nomad helm terraform pulumi ansible chef puppet nginx apache caddy envoy haproxy traefik
    istio linkerd grpc trpc graphql rest soap json yaml toml xml protobuf avro thrift msgpack
    http https http2 http3 tcp udp quic websocket websockets sse react vue svelte angular solid
    preact django flask fastapi rails laravel express nestjs nextjs nuxt remix spring gin
    sqlalchemy prisma sequelize typeorm drizzle hibernate pytest unittest jest vitest mocha
    cypress playwright selenium webpack vite esbuild rollup parcel turbopack babel swc tsc
    black ruff flake8 pylint mypy pyright prettier eslint biome gofmt rustfmt clippy npm yarn
    pnpm bun deno node pip poetry uv conda pipenv maven gradle bazel make cmake ninja s3 gcs
    azure gcp aws heroku vercel netlify fly cloudflare fastly akamai datadog sentry grafana
    prometheus honeycomb newrelic splunk loki jaeger zipkin github gitlab bitbucket jenkins
    circleci travis buildkite argo argocd flux spinnaker stripe braintree adyen paypal twilio
    sendgrid mailgun postmark okta auth0 keycloak cognito jwt oauth saml ldap vault sops
    staging production prod dev development qa uat test testing sandbox canary preview local
    demo beta alpha nightly weekly daily hourly monthly blue green primary replica
"""
_TECH: Final = frozenset(_TECH_LIST.split())
# Short names of one choice that are not spelled inside the long one.
_ALIASES: Final = MappingProxyType(
    {
        "k8s": "kubernetes",
        "js": "javascript",
        "ts": "typescript",
        "golang": "go",
        "psql": "postgres",
    }
)
_TYPO_MIN_LENGTH: Final = 5
_NEGATOR_TARGETS: Final = frozenset({"never", "without", "cannot"})
_TYPO_CANDIDATES_MIN_SCORE: Final = 0.35
_WORD: Final = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# Tokens joined into one name: "deploy-staging", "acme_releases", "eu-west-1", "app.config".
_COMPOUND: Final = re.compile(r"[^\W_]+(?:[-_./][^\W_]+)+")
_SENTENCE_START: Final = re.compile(r"(?:^|[.;:!?]\s+|\n)\W*([^\W_]+)")


def _within_one_edit(a: str, b: str, limit: int) -> bool:
    """True when a and b are at most ``limit`` insertions, deletions, substitutions or swaps apart."""
    if abs(len(a) - len(b)) > limit:
        return False
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, char_b in enumerate(b, start=1):
            cost = int(char_a != char_b)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return False
        previous2, previous = previous, current
    return previous[-1] <= limit


def _protected(token: str) -> bool:
    return token in _TECH or token in NEGATORS or stem(token) in SIDES or bool(number_token(token))


def _typo_of(token: str, vocabulary: frozenset[str]) -> str | None:
    """The word of ``vocabulary`` that ``token`` is an obvious misspelling of, if exactly one."""
    if token in vocabulary or not token.isalpha() or _protected(token):
        return None
    matches = set()
    for word in vocabulary:
        if word[:1] != token[:1] or not word.isalpha():
            continue
        long_enough = min(len(word), len(token)) >= _TYPO_MIN_LENGTH or (
            word in _NEGATOR_TARGETS and len(token) >= len(word) - 1
        )
        if not long_enough or (_protected(word) and word not in _NEGATOR_TARGETS | _TECH):
            continue
        if _within_one_edit(token, word, 1):
            matches.add(word)
    return matches.pop() if len(matches) == 1 else None


@lru_cache(maxsize=_FEATURE_CACHE_MAX)
def _vocabulary(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def _spelled_like(entry: Mapping[str, object], other: Mapping[str, object]) -> dict[str, object]:
    """``entry`` with each obvious misspelling of a word of ``other`` replaced by that word."""
    vocabulary = _vocabulary(entry_text(other))
    fields = (
        *_PRIMARY.get(str(entry.get("kind")), ()),
        *_SECONDARY.get(str(entry.get("kind")), ()),
    )
    fixed: dict[str, object] = dict(entry)
    for field in fields:
        value = entry.get(field)
        if not isinstance(value, str):
            continue

        def repair(match: re.Match[str]) -> str:
            word = match.group()
            return _typo_of(word.lower(), vocabulary) or word

        fixed[field] = _WORD.sub(repair, _comparable(value))
    return fixed


def _slot_terms(entry: Mapping[str, object]) -> tuple[frozenset[str], dict[str, str]]:
    """The primary field's terms, and those of them that name a choice, with their spelling.

    A term names a choice (a technology, a target, an environment, a version) when its word is
    capitalised mid-sentence ("Redis", "SQLAlchemy"), holds a digit ("3.12", "eu-west-1"), is
    part of a joined name ("acme-releases", itself a term too), is a known technology or
    environment word, or belongs to a pipeline's name.
    """
    text = statement(entry)
    starts = {match.group(1) for match in _SENTENCE_START.finditer(text)}
    compounds = _COMPOUND.findall(text)
    joined = {word for name in compounds for word in _WORD.findall(name)}
    kind = entry.get("kind")
    named_by = kind_spec(kind).named_by if isinstance(kind, str) and kind in KINDS else ""
    name = entry.get(named_by) if named_by else None
    named = set(_WORD.findall(name.lower())) if isinstance(name, str) else set()
    # A joined name is also a term of its own: "acme-dist" and "acme-releases" differ even
    # when "release" occurs elsewhere in the statement.
    slots = {name.lower(): _squeezed(name) for name in compounds}
    all_terms = set(slots)
    for word in _WORD.findall(text):
        lower = _ALIASES.get(word.lower(), word.lower())
        if lower in STOPWORDS or lower in NEGATORS:
            continue
        term = number_token(lower) or stem(lower.replace("'", ""))
        all_terms.add(term)
        if (
            (word not in starts and any(char.isupper() for char in word))
            or any(char.isdigit() for char in word)
            or word in joined
            or lower in _TECH
            or lower in named
        ):
            slots[term] = _squeezed(lower)
    return frozenset(all_terms), slots


def _squeezed(text: str) -> str:
    return "".join(_WORD.findall(text.lower()))


def different_choice(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """Return True when two otherwise close entries name a different choice in the same slot.

    "Use Memcached for the session cache" after "Use Redis for the session cache"; pipeline
    ``deploy-production`` after ``deploy-staging``: each primary field has a choice-naming term
    the other lacks (see :func:`_slot_terms`). A term added on one side only ("the payment
    provider (Stripe)") is a refinement, not a different choice.
    """
    terms_a, slots_a = _slot_terms(a)
    terms_b, slots_b = _slot_terms(b)
    squeezed_a, squeezed_b = _squeezed(statement(a)), _squeezed(statement(b))

    def new_choice(slots: dict[str, str], other: Mapping[str, object]) -> bool:
        # Spelled inside the other statement ("RabbitMQ" / "Rabbit MQ", "prod" / "production")
        # or one typo away from one of its words ("anonymised" / "anonymized") is the same
        # choice written differently.
        other_terms, other_text = (terms_b, squeezed_b) if other is b else (terms_a, squeezed_a)
        vocabulary = _vocabulary(statement(other))
        return any(
            term not in other_terms
            and spelling not in other_text
            and _typo_of(spelling, vocabulary) is None
            for term, spelling in slots.items()
        )

    return new_choice(slots_a, b) and new_choice(slots_b, a)


# -------------------------------------------------------------------------------- verdicts


def classify(a: Mapping[str, object], b: Mapping[str, object], score: float) -> Label | None:
    """Label a pair whose similarity is ``score``: a restatement, a contradiction, or neither.

    Opposite polarity on a shared topic (score at least :data:`SIMILAR_THRESHOLD`), or a
    different choice in the same slot (:func:`different_choice`), is a likely contradiction;
    otherwise a score at the tombstone bar is a likely restatement.
    """
    if score < SIMILAR_THRESHOLD:
        return None
    if polarity_conflict(statement(a), statement(b)) or different_choice(a, b):
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

    Texts are compared in their comparable form (look-alike letters, invisible characters and
    "w/o" undone), and a candidate word that is an obvious misspelling of a tombstone word
    counts as that word, so none of these hides a restatement.

    A candidate of opposite polarity to the tombstone (tombstone "never use X", candidate
    "always use X") is *not* a match: retiring a rule is usually the very reason its reversal
    is being recorded, and refusing it would keep the retired rule alive. Nor is a successor
    that names a different choice in the same slot (:func:`different_choice`: Memcached
    after a retired Redis). Such pairs still show up in :func:`similar_entries` labelled
    ``likely_contradiction``, next to the tombstone's id, for the writer and the reviewer.
    """
    kind = candidate.get("kind")
    own = _entry_features(candidate)
    own_print = fingerprint(statement(candidate))
    best: dict[bool, tuple[float, Mapping[str, object]]] = {}
    for entry in stored:
        if entry.get("status") not in TOMBSTONE_STATUSES:
            continue
        score = _tombstone_score(candidate, own, own_print, entry)
        if score is None:
            continue
        same_kind = entry.get("kind") == kind
        if same_kind not in best or score > best[same_kind][0]:
            best[same_kind] = (score, entry)
    for same_kind in (True, False):
        if same_kind in best:
            score, entry = best[same_kind]
            return entry, score
    return None


def tombstone_score(
    candidate: Mapping[str, object], tombstone: Mapping[str, object]
) -> float | None:
    """Return how strongly the candidate re-asserts the tombstone; None when it does not.

    None for a reversal or a different choice (the tombstone's successor), whatever the
    score; otherwise the similarity after obvious misspellings of the tombstone's words are
    read as those words (1.0 for the same fingerprint). The caller compares it with
    :data:`TOMBSTONE_THRESHOLD`; :func:`matching_tombstone` does.
    """
    return _tombstone_score(
        candidate,
        _entry_features(candidate),
        fingerprint(statement(candidate)),
        tombstone,
        threshold=0.0,
    )


def _tombstone_score(
    candidate: Mapping[str, object],
    own: tuple[_Features, _Features | None],
    own_print: str,
    entry: Mapping[str, object],
    *,
    threshold: float = TOMBSTONE_THRESHOLD,
) -> float | None:
    text = statement(entry)
    if text and _fingerprint(text) == own_print:
        return 1.0
    score = _score(own, _entry_features(entry))
    if score < min(threshold, _TYPO_CANDIDATES_MIN_SCORE):
        return None
    # Typos only ever make a restatement look less like its tombstone: read them as meant.
    fixed = _spelled_like(candidate, entry)
    fixed_text = statement(fixed)
    if fixed_text != statement(candidate):
        if text and _fingerprint(text) == fingerprint(fixed_text):
            return 1.0
        score = max(score, _score(_entry_features(fixed), _entry_features(entry)))
    if score < threshold:
        return None
    if polarity_conflict(fixed_text, text) or different_choice(fixed, entry):
        return None
    return score


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


# ------------------------------------------------------------------ candidate generation

#: The lowest score any check acts on: the typo-tolerant tombstone check looks at pairs from
#: :data:`_TYPO_CANDIDATES_MIN_SCORE` up, the other checks start higher.
SHORTLIST_FLOOR: Final[float] = min(
    _TYPO_CANDIDATES_MIN_SCORE, TOMBSTONE_THRESHOLD, SIMILAR_THRESHOLD, SUPERSESSION_THRESHOLD
)
#: Below this many stored entries a plain scan is about as fast, and the index is not built.
INDEX_MIN_ENTRIES: Final = 32
_SLACK: Final = 1e-9
# Between a bound and the score it bounds, computed in floating point in different orders.
_CUT_ROUNDING: Final = 1e-6
#: A feature held by more than this share of the indexed entries may be left unread (the
#: suffix of :meth:`SimilarityIndex.shortlist`); rarer ones are always read.
_COMMON: Final = 0.25

#: What a caller that tracks its changes can say about the entries it passes to
#: :meth:`SimilarityIndex.sync`: ``(since, version, ids)``, "these entries are the ones synced
#: as ``since`` except at most at ``ids``; call them ``version``".
Changes = tuple[object, object, "Collection[str]"]

# The score's parts as weights of the three indexed Dice (primary words, primary trigrams,
# secondary words), and what the unindexed secondary trigrams can add at most: a pair where
# only one side has secondary text, and a pair where both have.
_PLAIN: Final = (_TERM_WEIGHT, 1 - _TERM_WEIGHT, 0.0, 0.0)
_BOTH: Final = (
    _PRIMARY_WEIGHT * _TERM_WEIGHT,
    _PRIMARY_WEIGHT * (1 - _TERM_WEIGHT),
    (1 - _PRIMARY_WEIGHT) * _TERM_WEIGHT,
    (1 - _PRIMARY_WEIGHT) * (1 - _TERM_WEIGHT),
)
_WORDS1, _GRAMS1, _WORDS2 = 0, 1, 2


def _contains(postings: Sequence[int], doc: int) -> bool:
    at = bisect_left(postings, doc)
    return at < len(postings) and postings[at] == doc


def _dice_of(shared: int, size: int, doc_size: int) -> float:
    return 2 * shared / (size + doc_size) if doc_size else 0.0


def _counted_score(
    weights: Sequence[float], shared: Sequence[int], sizes: Sequence[int], doc_sizes: Sequence[int]
) -> float:
    """The most a score can be with these shared primary words, primary trigrams and
    secondary words (the secondary trigrams, not counted, at their most)."""
    return weights[3] + sum(
        weights[family] * _dice_of(shared[family], sizes[family], doc_sizes[family])
        for family in (_WORDS1, _GRAMS1, _WORDS2)
    )


class SimilarityIndex:
    """An inverted index of the stored entries' words and trigrams (primary fields) and
    words (secondary fields).

    :meth:`shortlist` returns the entries that score at least a floor against a candidate,
    found from overlap counts: every other entry provably scores below it, so the checks give
    the same answers as a scan of every entry (the similarity evals and
    tests/test_similarity_index.py hold them to it). Kept warm between writes and brought up
    to date by entry identity: a stored entry is replaced on change, never changed in place,
    so :meth:`sync` re-indexes only the entries whose object changed.

    Postings are ``array('i')`` of document numbers, ascending (a document gets the next
    number when it is indexed, and removal keeps the order), so membership is a bisection;
    a feature of a single entry (most words) keeps just its number.
    """

    def __init__(self) -> None:
        self._entries: dict[str, Mapping[str, object]] = {}
        self._doc_of: dict[str, int] = {}
        self._ids: list[str | None] = []
        # A feature's postings; a feature of one entry only (most words) holds its number.
        self._tables: tuple[dict[str, array[int] | int], ...] = ({}, {}, {})
        # Per document number: its shape (primary word and trigram counts, has secondary
        # text) as an index into ``_shapes``, its trigram and secondary word counts. Per
        # shape: how many indexed entries have it, the fewest secondary words any of them had.
        self._shape_of = array("i")
        self._words2_of = array("i")
        self._grams1_of = array("i")
        self._shapes: list[tuple[int, int, bool]] = []
        self._shape_ids: dict[tuple[int, int, bool], int] = {}
        self._shape_counts: Counter[int] = Counter()
        self._least_words2 = array("i")
        self._empty: set[int] = set()
        self._prints: dict[str, set[int]] = {}
        self._tombstones: set[int] = set()
        self._next = 0
        self._version: object = None

    def __len__(self) -> int:
        return len(self._entries)

    def sync(
        self, entries: Mapping[str, Mapping[str, object]], changes: Changes | None = None
    ) -> None:
        """Index exactly these entries (by their keys), re-indexing only those that changed.

        The entries whose object differs from the one indexed under their id are found by one
        pass of C-level iteration (no Python code runs per unchanged entry). With ``changes``
        whose ``since`` is the version this index last synced, only its ``ids`` are looked
        at; when the counts then disagree, or the version is not this index's, the whole
        mapping is compared as without it.
        """
        mine = self._entries
        if changes is not None and self._version is not None and changes[0] == self._version:
            self._apply(entries, [i for i in changes[2] if entries.get(i) is not mine.get(i)])
            if len(mine) != len(entries):
                self._apply_all(entries)
        else:
            self._apply_all(entries)
        self._version = changes[1] if changes is not None else None

    def _apply_all(self, entries: Mapping[str, Mapping[str, object]]) -> None:
        mine = self._entries
        changed = list(compress(entries, map(is_not, entries.values(), map(mine.get, entries))))
        self._apply(entries, changed)
        if len(mine) != len(entries):
            for entry_id in list(filterfalse(entries.__contains__, mine)):
                self._remove(entry_id)

    def _apply(self, entries: Mapping[str, Mapping[str, object]], changed: Iterable[str]) -> None:
        for entry_id in changed:
            if entry_id in self._entries:
                self._remove(entry_id)
            entry = entries.get(entry_id)
            if entry is not None:
                self._add(entry_id, entry)

    @staticmethod
    def _features_of(entry: Mapping[str, object]) -> tuple[str, tuple[frozenset[str], ...], bool]:
        text = _uncached_text(entry, _PRIMARY)
        words, grams = _uncached_features(text)
        secondary = _uncached_text(entry, _SECONDARY)
        return text, (words, grams, frozenset(terms(secondary))), bool(secondary)

    def _add(self, entry_id: str, entry: Mapping[str, object]) -> None:
        doc = self._next
        self._next += 1
        text, features, refined = self._features_of(entry)
        self._entries[entry_id] = entry
        self._doc_of[entry_id] = doc
        self._ids.append(entry_id)
        # Trigram counts are rounded down to a multiple of 4 (a smaller size only raises the
        # bound on an entry's Dice), so that there are few shapes to compute a cut for.
        grams1 = len(features[_GRAMS1])
        shape = (len(features[_WORDS1]), grams1 if grams1 < 4 else grams1 & ~3, refined)
        shape_id = self._shape_ids.get(shape)
        if shape_id is None:
            shape_id = self._shape_ids[shape] = len(self._shapes)
            self._shapes.append(shape)
            self._least_words2.append(len(features[_WORDS2]))
        self._least_words2[shape_id] = min(self._least_words2[shape_id], len(features[_WORDS2]))
        self._shape_of.append(shape_id)
        self._words2_of.append(len(features[_WORDS2]))
        self._grams1_of.append(grams1)
        self._shape_counts[shape_id] += 1
        if not features[_GRAMS1]:
            self._empty.add(doc)
        for table, keys in zip(self._tables, features, strict=True):
            for key in keys:
                postings = table.get(key)
                if postings is None:
                    table[key] = doc
                elif isinstance(postings, int):
                    table[key] = array("i", (postings, doc))
                else:
                    postings.append(doc)
        if entry.get("status") in TOMBSTONE_STATUSES:
            self._tombstones.add(doc)
            if text:
                self._prints.setdefault(_fingerprint(text), set()).add(doc)

    def _remove(self, entry_id: str) -> None:
        entry = self._entries.pop(entry_id)
        doc = self._doc_of.pop(entry_id)
        self._ids[doc] = None
        shape_id = self._shape_of[doc]
        self._shape_counts[shape_id] -= 1
        if not self._shape_counts[shape_id]:
            del self._shape_counts[shape_id]
        self._empty.discard(doc)
        self._tombstones.discard(doc)
        text, features, _ = self._features_of(entry)
        for table, keys in zip(self._tables, features, strict=True):
            for key in keys:
                postings = table[key]
                if isinstance(postings, int):
                    del table[key]
                    continue
                del postings[bisect_left(postings, doc)]
                if len(postings) == 1:
                    table[key] = postings[0]
        if text and entry.get("status") in TOMBSTONE_STATUSES:
            docs = self._prints.get(_fingerprint(text), set())
            docs.discard(doc)
            if not docs:
                self._prints.pop(_fingerprint(text), None)

    def shortlist(
        self, candidate: Mapping[str, object], floor: float = SHORTLIST_FLOOR
    ) -> set[str] | None:
        """The ids of the indexed entries that score ``floor`` or more against the candidate
        (:func:`_score`), with every entry without trigrams and every tombstone of the same
        fingerprint; None: scan them all.

        **The score, from counts.** With ``o_f`` the features of family ``f`` (primary words
        ``W1``, primary trigrams ``G1``, secondary words ``W2``) an entry shares with the
        candidate, its score is ``sum_f a_f * 2 o_f / (|x_f| + |y_f|)``, plus at most ``a_G2``
        for the secondary trigrams (not indexed): ``a = (0.6, 0.4, 0, 0)`` unless both sides
        have secondary text, then ``(0.48, 0.32, 0.12, 0.08)``. So an entry can reach
        ``floor`` only if ``sum_f c_f o_f >= need``, ``c_f = 2 a_f / (|x_f| + |y_f|)`` and
        ``need = floor - 1e-9 - a_G2``; ``c_f`` is bounded from above by the entry's *shape*:
        its primary word count, its trigram count rounded down to a multiple of 4, whether it
        has secondary text, and for ``W2`` the fewest secondary words any entry of its shape
        had (a smaller ``|y_f|`` only raises ``c_f``).

        **Weighted counts.** Words count ``r_f`` times (``r_G1 = 1``; any ``r_f >= 1``), so
        ``sum_f c_f o_f <= M * C`` with ``C = sum_f r_f o_f`` and ``M = max_f c_f / r_f``: an
        entry needs ``C >= need / M``. The candidate's features are taken most common first;
        those held by more than a quarter of the entries go *unread* while every shape with
        trigrams keeps ``need / M - U > 0``, ``U`` the weight of the unread features (their
        ``r_f`` summed). An entry shares at most ``U`` of weight among them, so it needs
        ``C_read >= ceil(need / M - U) >= 1``: one sharing no read feature cannot reach the
        floor, and the read postings are counted and this cut applied in C
        (``collections.Counter``, ``itertools.compress``), no Python code running per entry.

        **Verification.** An entry past the cut gets its exact counts (the unread features by
        bisecting their postings only when the read counts alone fall short and the unread
        ones could close the gap), then the test above with its own sizes, then its exact
        score. So exactly the entries scoring ``floor - 1e-9`` or more are returned, plus the
        two kinds above.
        """
        text = statement(candidate)
        words, grams = _features(text)
        if not grams:
            return None
        secondary = _secondary_text(candidate)
        words2 = _features(secondary)[0] if secondary else frozenset()
        keep = set(self._empty)
        keep.update(self._prints.get(_fingerprint(text), ()))
        if not self._shape_counts:
            return {str(self._ids[doc]) for doc in keep}
        sizes = (len(words), len(grams), len(words2))
        keep_at = floor - _SLACK
        shapes, least2, counts = self._shapes, self._least_words2, self._shape_counts

        def rates(shape_id: int) -> tuple[tuple[float, float, float], float]:
            doc_w, doc_g, doc_refined = shapes[shape_id]
            weights = _BOTH if secondary and doc_refined else _PLAIN
            doc_sizes = (doc_w, doc_g, least2[shape_id] if doc_refined else 0)
            return (
                (
                    2 * weights[0] / (sizes[0] + doc_sizes[0]) if doc_sizes[0] else 0.0,
                    2 * weights[1] / (sizes[1] + doc_sizes[1]),
                    2 * weights[2] / (sizes[2] + doc_sizes[2]) if sizes[2] else 0.0,
                ),
                keep_at - weights[3],
            )

        # The ratios that make the weighted count tight for the commonest shape.
        typical = rates(max(counts, key=counts.__getitem__))[0]
        ratio = tuple(max(1, round(rate / typical[_GRAMS1])) for rate in typical)
        reach: list[float] = [0.0] * len(shapes)
        for shape_id in counts:
            rate, need = rates(shape_id)
            reach[shape_id] = need / max(rate[f] / ratio[f] for f in range(3))
        least_reach = min((reach[i] for i in counts if shapes[i][1]), default=0.0)
        found: list[tuple[int, int, Sequence[int]]] = []
        for family, keys in enumerate((words, grams, words2)):
            table = self._tables[family]
            for key in keys:
                postings = table.get(key)
                if isinstance(postings, int):
                    found.append((1, family, (postings,)))
                elif postings is not None:
                    found.append((len(postings), family, postings))
        found.sort(key=lambda item: item[0], reverse=True)
        common = _COMMON * len(self._entries)
        unread: tuple[list[Sequence[int]], ...] = ([], [], [])
        read: tuple[list[Sequence[int]], ...] = ([], [], [])
        unread_weight = 0
        for length, family, held in found:
            if length > common and least_reach - unread_weight - ratio[family] > _CUT_ROUNDING:
                unread[family].append(held)
                unread_weight += ratio[family]
            else:
                read[family].append(held)
        cuts = [ceil(value - unread_weight - _CUT_ROUNDING) for value in reach]
        shared: tuple[Counter[int], ...] = (Counter(), Counter(), Counter())
        for family in (_WORDS1, _GRAMS1, _WORDS2):
            shared[family].update(chain.from_iterable(read[family]))
        weighted = Counter(shared[_GRAMS1])
        for family in (_WORDS1, _WORDS2):
            for _ in range(ratio[family]):
                weighted.update(chain.from_iterable(read[family]))
        docs = weighted.keys()
        past = map(
            le, map(cuts.__getitem__, map(self._shape_of.__getitem__, docs)), weighted.values()
        )
        own: tuple[_Features, _Features | None] | None = None
        for doc in compress(docs, past):
            doc_w, _, doc_refined = shapes[self._shape_of[doc]]
            doc_sizes = (doc_w, self._grams1_of[doc], self._words2_of[doc] if doc_refined else 0)
            weights = _BOTH if secondary and doc_refined else _PLAIN
            got = [shared[family][doc] for family in (_WORDS1, _GRAMS1, _WORDS2)]
            most = [got[f] + min(len(unread[f]), doc_sizes[f] - got[f]) for f in range(3)]
            if _counted_score(weights, most, sizes, doc_sizes) < keep_at:
                continue
            if _counted_score(weights, got, sizes, doc_sizes) < keep_at:
                for family in (_WORDS1, _GRAMS1, _WORDS2):
                    got[family] += sum(_contains(p, doc) for p in unread[family])
                if _counted_score(weights, got, sizes, doc_sizes) < keep_at:
                    continue
            if own is None:
                own = _entry_features(candidate)
            entry = self._entries[str(self._ids[doc])]
            if _score(own, _entry_features(entry)) >= keep_at:
                keep.add(doc)
        ids = self._ids
        return {str(ids[doc]) for doc in keep}

    def tombstones_among(self, ids: Iterable[str]) -> int:
        """How many of these indexed ids are tombstones (deprecated or rejected)."""
        doc_of, tombstones = self._doc_of, self._tombstones
        return sum(doc_of[entry_id] in tombstones for entry_id in ids)


_INDEX = SimilarityIndex()


def shortlist(
    candidate: Mapping[str, object],
    stored: Iterable[Mapping[str, object]],
    *,
    changes: Changes | None = None,
) -> list[Mapping[str, object]]:
    """The stored entries that can matter to any check of the candidate.

    The same answers as passing every stored entry to :func:`similar_entries`,
    :func:`matching_tombstone` and :func:`possible_supersession`, at the cost of the few
    plausible ones: a process-wide :class:`SimilarityIndex` (built on first use, kept warm
    in the server) proposes them. Small stores are returned whole.

    ``stored`` as a dict's ``values()`` view (a transaction's ``entries.values()``) is synced
    by the dict's keys without a Python-level pass over it; any other iterable is read whole
    (and scanned whole when an entry has no string id or two share one). ``changes``: see
    :meth:`SimilarityIndex.sync`, for a dict view only.

    The entries come in their stored order when two or more tombstones are among them, the
    only case an order can change a finding (:func:`matching_tombstone` keeps the first of
    equal scores); otherwise in the order they were indexed.
    """
    entries: Mapping[str, Mapping[str, object]]
    if isinstance(stored, dict_values):
        entries = stored.mapping
        if len(entries) < INDEX_MIN_ENTRIES:
            return list(entries.values())
    else:
        listed = list(stored)
        if len(listed) < INDEX_MIN_ENTRIES:
            return listed
        entries = _by_id(listed)
        if len(entries) != len(listed):
            return listed
        changes = None
    _INDEX.sync(entries, changes)
    keep = _INDEX.shortlist(candidate)
    if keep is None:
        return list(entries.values())
    if _INDEX.tombstones_among(keep) > 1:
        return [entries[entry_id] for entry_id in filter(keep.__contains__, entries)]
    return [entries[entry_id] for entry_id in sorted(keep, key=_INDEX._doc_of.__getitem__)]


def _by_id(listed: Sequence[Mapping[str, object]]) -> dict[str, Mapping[str, object]]:
    """The entries by id; shorter than ``listed`` when an id is missing or repeated."""
    out: dict[str, Mapping[str, object]] = {}
    for entry in listed:
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or entry_id in out:
            return {}
        out[entry_id] = entry
    return out
