"""Entry similarity, the rules: the score, its thresholds, restatements, contradictions, and
the tombstone and supersession checks.

Every check here compares a candidate with the entries it is given. Which entries those are,
in a large store, is the candidate index's job (ctxkeeper/write/candidates.py): it proposes
exactly the entries that can score :data:`SHORTLIST_FLOOR` or more, so the checks find the
same as over every entry.
"""

from __future__ import annotations

import re
from functools import lru_cache
from types import MappingProxyType
from typing import Final, Literal, TypedDict

from ctxkeeper.core.errors import UsageError
from ctxkeeper.core.model import KINDS, LIVE_STATUSES, TOMBSTONE_STATUSES, KindTable, kind_spec
from ctxkeeper.core.scope import normalize_scope, scope_covers
from ctxkeeper.core.text import STOPWORDS, comparable, fingerprint, stem, terms
from ctxkeeper.write.polarity import NEGATORS, SIDES, number_token, polarity_conflict
from ctxkeeper.write.synonyms import synonym_in

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "RESTATEMENT_THRESHOLD",
    "SHORTLIST_FLOOR",
    "SIMILAR_THRESHOLD",
    "SUPERSESSION_THRESHOLD",
    "TOMBSTONE_THRESHOLD",
    "Features",
    "Label",
    "SimilarEntry",
    "classify",
    "combine",
    "dice",
    "different_choice",
    "entry_features",
    "entry_text",
    "matching_tombstone",
    "possible_supersession",
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


#: A text's stemmed words and their character trigrams.
Features = tuple[frozenset[str], frozenset[str]]
#: Texts whose comparable form and features are kept (each about 6.5 KiB): the entries a
#: scan of a store under :data:`ctxkeeper.write.candidates.INDEX_MIN_ENTRIES` compares, twice
#: over, and the candidates. A larger store goes through the candidate index, which keeps
#: counts, not features, so the checks see only a shortlist; the bound keeps a long-lived
#: server's memory flat however many writes it serves.
_CACHE_MAX: Final = 2_048

_comparable = lru_cache(maxsize=_CACHE_MAX)(comparable)


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


# Tombstone matching fingerprints every tombstone it is given; the texts rarely change.
_fingerprint = lru_cache(maxsize=_CACHE_MAX)(fingerprint)


def text_features(text: str) -> Features:
    """The stemmed words of ``text`` and their trigrams (each word padded with a space)."""
    words = frozenset(terms(text))
    grams: set[str] = set()
    for word in words:
        padded = f" {word} "
        grams.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return words, frozenset(grams)


# Keyed on the text itself, so an edited entry gets fresh features and identical texts share
# one computation.
_features = lru_cache(maxsize=_CACHE_MAX)(text_features)


def entry_features(entry: Mapping[str, object]) -> tuple[str, Features, Features | None]:
    """The entry's statement, its features, and its secondary text's (None: it has none);
    computed afresh, for the candidate index, which keeps counts rather than features."""
    kind = str(entry.get("kind"))
    text = ". ".join(
        comparable(value)
        for value in (entry.get(field) for field in _PRIMARY.get(kind, ()))
        if isinstance(value, str) and value
    )
    secondary = ". ".join(
        comparable(value)
        for value in (entry.get(field) for field in _SECONDARY.get(kind, ()))
        if isinstance(value, str) and value
    )
    return text, text_features(text), text_features(secondary) if secondary else None


def dice(shared: int, size_a: int, size_b: int) -> float:
    """The Dice coefficient of two sets from their sizes and how many members they share."""
    if not size_a or not size_b:
        return 0.0
    return 2 * shared / (size_a + size_b)


def combine(words: float, grams: float, secondary: tuple[float, float] | None = None) -> float:
    """The score from the Dice of the primary words and trigrams, refined by the secondary
    words' and trigrams' when both entries have secondary text. The candidate index scores
    from counts through this same function, so its scores are the scan's to the last bit."""
    score = _TERM_WEIGHT * words + (1 - _TERM_WEIGHT) * grams
    if secondary is not None:
        refine = _TERM_WEIGHT * secondary[0] + (1 - _TERM_WEIGHT) * secondary[1]
        score = _PRIMARY_WEIGHT * score + (1 - _PRIMARY_WEIGHT) * refine
    return score


def _dice_of(a: frozenset[str], b: frozenset[str]) -> float:
    return dice(len(a & b), len(a), len(b))


def _entry_features(entry: Mapping[str, object]) -> tuple[Features, Features | None]:
    secondary = _secondary_text(entry)
    return _features(statement(entry)), _features(secondary) if secondary else None


def _score(a: tuple[Features, Features | None], b: tuple[Features, Features | None]) -> float:
    (words_a, grams_a), second_a = a
    (words_b, grams_b), second_b = b
    refine = None
    if second_a is not None and second_b is not None:
        refine = (_dice_of(second_a[0], second_b[0]), _dice_of(second_a[1], second_b[1]))
    return combine(_dice_of(words_a, words_b), _dice_of(grams_a, grams_b), refine)


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


@lru_cache(maxsize=_CACHE_MAX)
def _vocabulary(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def _spelled_like(entry: Mapping[str, object], other: Mapping[str, object]) -> dict[str, object]:
    """``entry`` with each obvious misspelling of a word of ``other``, and each word of a
    synonym class ``other`` also uses (write/synonyms.py), replaced by that word."""
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
            lower = word.lower()
            return _typo_of(lower, vocabulary) or synonym_in(lower, vocabulary) or word

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
    own: tuple[Features, Features | None],
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


#: The lowest score any check acts on: the typo-tolerant tombstone check looks at pairs from
#: :data:`_TYPO_CANDIDATES_MIN_SCORE` up, the other checks start higher.
SHORTLIST_FLOOR: Final[float] = min(
    _TYPO_CANDIDATES_MIN_SCORE, TOMBSTONE_THRESHOLD, SIMILAR_THRESHOLD, SUPERSESSION_THRESHOLD
)
