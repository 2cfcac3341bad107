"""An in-memory inverted index over entries: weighted field terms, IDF, prefix lookup."""

from __future__ import annotations

import bisect
import json
import math
import os
from array import array
from dataclasses import dataclass, field
from typing import Final

from ctxkeeper.core.model import FieldWeights
from ctxkeeper.core.text import NEGATION, terms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    from ctxkeeper.core._types import JSONValue

#: How much a term counts by the field it appears in: the field that states what the entry is
#: (summary, rule, name) and its tags outweigh the rationale (DESIGN.md, issue 4). The kinds'
#: fields weigh what their spec says (``FieldSpec.search_weight`` in core/model.py).
#: ``asked_as`` (how people ask for the entry, written when it was recorded: issue 26) weighs
#: as what the entry is about.
ASKED_AS_WEIGHT: Final = 3.0
FIELD_WEIGHTS: Final = FieldWeights(
    lambda spec: spec.search_weight, {"tags": 2.5, "asked_as": ASKED_AS_WEIGHT, "scope": 1.0}
)
_K1: Final = 1.2
_B: Final = 0.6
_MIN_PREFIX: Final = 4
#: A prefix or stem-variant hit counts for less than an exact term hit.
PREFIX_CREDIT: Final = 0.5


Posting = tuple["array[int]", "array[float]"]


def field_text(value: JSONValue) -> str:
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    return "" if value is None else str(value)


def _bucket(entry: Mapping[str, JSONValue]) -> tuple[dict[str, float], float]:
    """An entry's weighted term frequencies, and its weighted length."""
    length = 0.0
    bucket: dict[str, float] = {}
    for name, weight in FIELD_WEIGHTS.items():
        text = field_text(entry.get(name))
        if name == "scope":
            text = text.replace("/", " ").replace(".", " ")
        for term in terms(text):
            if term == NEGATION:
                continue
            bucket[term] = bucket.get(term, 0.0) + weight
            length += weight
    return bucket, length


@dataclass
class TextIndex:
    """Postings of weighted term frequencies per entry, built once and then kept up to date
    by :meth:`update` (dec-026-7df7: a write changes a few entries; a rebuild cost a second
    at 10,000).

    An entry is a *document* numbered in the order it was added; one removed leaves its
    number unused (in ``removed``), so the others keep theirs, and nothing of it stays in the
    postings or the statistics: the scores are those of a fresh build over the same entries.
    """

    ids: list[str] = field(default_factory=list)
    postings: dict[str, Posting] = field(default_factory=dict)
    """Per term, the entries holding it (ascending) and its weighted frequency in each, as
    two typed arrays: a tenth of the memory of a dict per term in a long-running server."""
    lengths: list[float] = field(default_factory=list)
    vocabulary: list[str] = field(default_factory=list)
    average_length: float = 1.0
    removed: set[int] = field(default_factory=set)

    @property
    def size(self) -> int:
        """How many entries the index holds."""
        return len(self.ids) - len(self.removed)

    @classmethod
    def build(cls, entries: Iterable[Mapping[str, JSONValue]]) -> TextIndex:
        index = cls()
        for entry in entries:
            index._add(entry)
        index.vocabulary = sorted(index.postings)
        index._average()
        return index

    def update(
        self,
        removed: Iterable[tuple[int, Mapping[str, JSONValue]]],
        added: Iterable[Mapping[str, JSONValue]],
    ) -> list[int]:
        """Take out the documents ``removed`` (each with the entry it was built from), add
        ``added`` as new documents; return the new documents' numbers."""
        gone: set[str] = set()
        for doc, entry in removed:
            for term in _bucket(entry)[0]:
                docs, tfs = self.postings[term]
                at = bisect.bisect_left(docs, doc)
                if at == len(docs) or docs[at] != doc:
                    raise ValueError(f"document {doc} is not under {term!r}")
                del docs[at], tfs[at]
                if not docs:
                    del self.postings[term]
                    gone.add(term)
            self.removed.add(doc)
            self.lengths[doc] = 0.0
        known = len(self.postings)
        numbers = [self._add(entry) for entry in added]
        if gone or len(self.postings) != known:
            self.vocabulary = sorted(self.postings)
        self._average()
        return numbers

    def _add(self, entry: Mapping[str, JSONValue]) -> int:
        doc = len(self.ids)
        self.ids.append(str(entry.get("id")))
        bucket, length = _bucket(entry)
        postings = self.postings
        for term, tf in bucket.items():
            posting = postings.get(term)
            if posting is None:
                posting = postings[term] = (array("i"), array("d"))
            posting[0].append(doc)
            posting[1].append(tf)
        self.lengths.append(length)
        return doc

    def _average(self) -> None:
        # fsum: exact, so the average does not depend on the order entries were added in.
        lengths = self.lengths
        live = [lengths[doc] for doc in range(len(lengths)) if doc not in self.removed]
        self.average_length = math.fsum(live) / len(live) if live else 1.0

    def doc_frequency(self, term: str) -> int:
        """How many entries hold ``term``."""
        posting = self.postings.get(term)
        return len(posting[0]) if posting is not None else 0

    def idf(self, term: str) -> float:
        df = self.doc_frequency(term)
        return math.log(1.0 + (self.size - df + 0.5) / (df + 0.5))

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
                docs, tfs = self.postings[matched]
                for doc, tf in zip(docs, tfs, strict=True):
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
        n = self.size
        return math.log(1.0 + (n + 0.5) / 0.5)


# ------------------------------------------------------------------------ the on-disk copy

#: Under ``.context/cache/``: the index of the last store state a cold process built it for.
CACHE_FILE: Final = "text-index.json"
CACHE_VERSION: Final = 2


class IndexCacheError(ValueError):
    """The on-disk index is not what this code writes: rebuild it."""


class _Postings(dict[str, "Posting"]):
    """The postings of an index read from disk, each term's kept as the string it was stored
    as (``"doc:weight doc:weight"``) until first use, so a cold process pays only for the
    terms its query touches. Each is checked as it is read: a bad one raises
    :class:`IndexCacheError`."""

    def __init__(self, raw: dict[str, str], docs: int) -> None:
        super().__init__()
        self._raw = raw
        self._docs = docs

    def __contains__(self, term: object) -> bool:
        return term in self._raw

    def __setitem__(self, term: str, value: Posting) -> None:
        self._raw.setdefault(term, "")  # a term an update added: known, its value is held here
        super().__setitem__(term, value)

    def __delitem__(self, term: str) -> None:
        del self._raw[term]
        super().pop(term, None)

    def __len__(self) -> int:
        return len(self._raw)

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __missing__(self, term: str) -> Posting:
        packed = self._raw[term]
        value: Posting = (array("i"), array("d"))
        try:
            for pair in packed.split(" "):
                doc, _, weight = pair.partition(":")
                number, tf = int(doc), float(weight)
                if not 0 <= number < self._docs or not tf > 0:
                    raise IndexCacheError(term)
                if value[0] and number <= value[0][-1]:
                    raise IndexCacheError(term)  # ascending, each entry once
                value[0].append(number)
                value[1].append(tf)
        except (AttributeError, ValueError) as exc:
            raise IndexCacheError(term) from exc
        self[term] = value
        return value

    def get(self, term: str, default: object = None) -> Posting | object:  # type: ignore[override]
        return self[term] if term in self._raw else default


def _encode(index: TextIndex, key: str) -> bytes:
    document = {
        "version": CACHE_VERSION,
        "key": key,
        "ids": index.ids,
        "lengths": index.lengths,
        "postings": {
            term: " ".join(f"{doc}:{weight!r}" for doc, weight in zip(*posting, strict=True))
            for term, posting in index.postings.items()
        },
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


def _decode(data: bytes, key: str, ids: list[str]) -> TextIndex:
    """The index in ``data`` when it was built for ``key`` over exactly ``ids``; else raise."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise IndexCacheError("does not parse") from exc
    if not isinstance(doc, dict) or doc.get("version") != CACHE_VERSION or doc.get("key") != key:
        raise IndexCacheError("stale")
    lengths, postings = doc.get("lengths"), doc.get("postings")
    if doc.get("ids") != ids or not isinstance(postings, dict):
        raise IndexCacheError("other entries")
    if not isinstance(lengths, list) or len(lengths) != len(ids):
        raise IndexCacheError("lengths")
    if not all(type(n) in (int, float) and n >= 0 for n in lengths):
        raise IndexCacheError("lengths")
    if not all(isinstance(t, str) for t in postings.values()):
        raise IndexCacheError("postings")
    index = TextIndex(
        ids=list(ids),
        postings=_Postings(postings, len(ids)),
        lengths=[float(n) for n in lengths],
    )
    index.vocabulary = sorted(postings)
    index.average_length = (sum(index.lengths) / len(index.lengths)) if index.lengths else 1.0
    return index


def load_or_build(
    entries: Sequence[Mapping[str, JSONValue]], cache_dir: str, key: str, *, save: bool
) -> TextIndex:
    """The index of ``entries`` from ``cache_dir`` when it was written for ``key`` (a digest of
    the store state) over the same ids, else built, and written there when ``save``.

    The file is derived and lives in the project: it is checked before use, and anything
    odd about it (torn, edited, another version, other entries) means a rebuild, never an
    error. A write that fails is skipped: the index is only a cache.
    """
    path = os.path.join(cache_dir, CACHE_FILE)
    ids = [str(entry.get("id")) for entry in entries]
    try:
        if not os.path.islink(path):
            with open(path, "rb") as handle:
                return _decode(handle.read(), key, ids)
    except (OSError, IndexCacheError):
        pass
    index = TextIndex.build(entries)
    if save:
        try:
            from ctxkeeper.core import fsutil

            os.makedirs(cache_dir, exist_ok=True)
            fsutil.write_atomic(path, _encode(index, key), durable=False)
        except (OSError, ValueError):
            pass
    return index
