"""The candidate index: which stored entries a write's similarity checks need to look at.

The technique is *count filtering with ScanCount* (the overlap-counting scan of an inverted
index, as in Li, Lu and Lu, "Efficient merging and filtering algorithms for approximate string
searches", ICDE 2008). An entry has four feature sets: the words and the character trigrams
of its statement, and of its secondary text (the fields the kind's spec names,
``similar_primary`` and ``similar_secondary``); the first three are indexed. A candidate's
features are looked up, and every entry on a posting gets one count per shared feature.

**Why it is exact.** The score of a pair (:func:`ctxkeeper.write.similarity.combine`) is a
function of the four Dice coefficients ``2 |x & y| / (|x| + |y|)`` and of whether both sides
have secondary text, nothing else. A feature set holds each feature once, so the count an
entry gets for a family is ``|x & y|`` exactly; the sizes ``|y|`` are kept per entry. The
index computes the same Dice with the same floating-point operations, through the same
``combine``, so its score of an entry equals the scan's bit for bit, and an entry is
shortlisted iff the scan would score it :data:`~ctxkeeper.write.similarity.SHORTLIST_FLOOR`
or more. An entry that shares no feature has every Dice 0 and scores 0, below the floor, so
not visiting it loses nothing. Two more kinds of entry are kept whatever they score: a
tombstone whose statement has the candidate's fingerprint (the tombstone check's score 1.0),
and an entry with no trigrams (nothing to index it by).

**What it skips unscored, and why that loses nothing.** ``combine`` grows with each of its
arguments. An entry sharing no primary word has a word Dice of 0, so it scores at most
``combine(0, g, (1, 1))`` with ``g`` its primary trigram Dice; it is scored only when it shares
enough trigrams for that bound to reach the floor (:func:`_least_shared_grams` derives the
count). The secondary trigrams, which would be the longest postings after the primary ones,
are not indexed: they are computed, from the entry, only for an entry whose score would reach
the floor were it to share all of them. tests/test_similarity_index.py holds the shortlist to a scan on drawn stores, and
evals/similarity_eval.py the findings on every labelled pair.

**Why it pays, and when.** A scan scores every entry from its features (about 40 µs a pair,
and 6.5 KiB of features each to keep warm); the index visits only the postings of the
candidate's features and keeps counts, not features. It is built on first use in a process,
kept in step with the store by entry identity (a stored entry is replaced on change, never
changed in place) and used from :data:`INDEX_MIN_ENTRIES` entries up; below that a scan is as
fast. ``python bench/similarity.py --scan`` measures both.
"""

from __future__ import annotations

from _collections_abc import dict_values
from array import array
from bisect import bisect_left
from collections import Counter
from itertools import chain
from math import floor as floor_int
from typing import Final

from ctxkeeper.core.model import TOMBSTONE_STATUSES
from ctxkeeper.core.text import fingerprint
from ctxkeeper.write.similarity import SHORTLIST_FLOOR, combine, dice, entry_features

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    Entry = Mapping[str, object]

#: Below this many stored entries the checks scan them all. Measured (bench/similarity.py
#: --scan, warm, per write, an idle machine): a scan costs 0.85 ms at 100 entries, 1.6 ms at
#: 200, 8 ms at 1,000 and 306 ms at 5,000 (past what the feature cache holds); the index 0.3,
#: 0.4, 0.9 and 3.3 ms.
INDEX_MIN_ENTRIES: Final = 100
#: The feature families indexed, in :func:`_families` order (the secondary trigrams, the
#: fourth, are computed for the few entries that need them: see ``shortlist``).
_INDEXED: Final = 3


def _families(entry: Entry) -> tuple[str, tuple[frozenset[str], ...], bool]:
    """The entry's statement, its four feature sets (primary words, primary trigrams,
    secondary words, secondary trigrams) and whether it has secondary text."""
    text, (words, grams), secondary = entry_features(entry)
    if secondary is None:
        return text, (words, grams, frozenset(), frozenset()), False
    return text, (words, grams, *secondary), True


class CandidateIndex:
    """Postings of the stored entries' features, and each entry's four feature-set sizes."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._doc_of: dict[str, int] = {}
        self._ids: list[str | None] = []
        self._sizes: list[tuple[int, int, int]] = []
        self._refined: list[bool] = []
        self._tables: tuple[dict[str, array[int]], ...] = tuple({} for _ in range(_INDEXED))
        #: Entries with no primary trigrams, kept in every shortlist.
        self._bare: set[int] = set()
        #: Tombstones by the fingerprint of their statement.
        self._prints: dict[str, set[int]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def sync(self, entries: Mapping[str, Entry]) -> None:
        """Index exactly these entries (by their keys), re-indexing those whose object is not
        the one indexed under their id."""
        mine = self._entries
        for entry_id, entry in entries.items():
            if mine.get(entry_id) is not entry:
                if entry_id in mine:
                    self._remove(entry_id)
                self._add(entry_id, entry)
        if len(mine) != len(entries):
            for entry_id in [key for key in mine if key not in entries]:
                self._remove(entry_id)

    def _add(self, entry_id: str, entry: Entry) -> None:
        doc = len(self._ids)
        text, features, refined = _families(entry)
        self._entries[entry_id] = entry
        self._doc_of[entry_id] = doc
        self._ids.append(entry_id)
        self._sizes.append((len(features[0]), len(features[1]), len(features[2])))
        self._refined.append(refined)
        for table, keys in zip(self._tables, features[:_INDEXED], strict=True):
            for key in keys:
                postings = table.get(key)
                if postings is None:
                    table[key] = array("i", (doc,))
                else:
                    postings.append(doc)  # documents only ever grow: postings stay sorted
        if not features[1]:
            self._bare.add(doc)
        if text and entry.get("status") in TOMBSTONE_STATUSES:
            self._prints.setdefault(fingerprint(text), set()).add(doc)

    def _remove(self, entry_id: str) -> None:
        entry = self._entries.pop(entry_id)
        doc = self._doc_of.pop(entry_id)
        self._ids[doc] = None
        text, features, _ = _families(entry)
        for table, keys in zip(self._tables, features[:_INDEXED], strict=True):
            for key in keys:
                postings = table[key]
                del postings[bisect_left(postings, doc)]
                if not postings:
                    del table[key]
        self._bare.discard(doc)
        if text and entry.get("status") in TOMBSTONE_STATUSES:
            docs = self._prints.get(fingerprint(text), set())
            docs.discard(doc)
            if not docs:
                self._prints.pop(fingerprint(text), None)

    def shortlist(self, candidate: Entry, floor: float = SHORTLIST_FLOOR) -> set[str] | None:
        """The ids of the indexed entries that score ``floor`` or more against the candidate,
        every entry without trigrams and every tombstone of the candidate's fingerprint;
        None when the candidate has no trigrams to look up (scan them all)."""
        text, features, refined = _families(candidate)
        if not features[1]:
            return None
        # Shared features per entry, counted in C (most postings are trigrams'); the
        # secondary trigrams only for an entry that could reach the floor with all of them.
        words1, grams1, words2 = (
            Counter(chain.from_iterable(table[key] for key in keys if key in table))
            for table, keys in zip(self._tables, features, strict=False)
        )
        own = [len(keys) for keys in features]
        # Only an entry sharing a primary word, or enough primary trigrams, can reach the floor.
        enough = _least_shared_grams(floor, own[1])
        maybe = set(words1)
        maybe.update(doc for doc, count in grams1.items() if count >= enough)
        keep = self._bare | self._prints.get(fingerprint(text), set())
        sizes, both, ids, entries = self._sizes, self._refined, self._ids, self._entries
        for doc in maybe:
            size = sizes[doc]
            primary = (dice(words1[doc], own[0], size[0]), dice(grams1[doc], own[1], size[1]))
            if not (refined and both[doc]):
                if combine(*primary) >= floor:
                    keep.add(doc)
                continue
            words = dice(words2[doc], own[2], size[2])
            if combine(*primary, (words, 1.0)) < floor:
                continue  # not even sharing every secondary trigram would do
            grams2 = _families(entries[str(ids[doc])])[1][3]
            refine = (words, dice(len(grams2 & features[3]), own[3], len(grams2)))
            if combine(*primary, refine) >= floor:
                keep.add(doc)
        return {str(ids[doc]) for doc in keep}


def _least_shared_grams(floor: float, grams: int) -> int:
    """The fewest primary trigrams an entry sharing no primary word must share with a
    candidate of ``grams`` trigrams to score ``floor`` (a lower bound, rounded down).

    Sharing no word, its word Dice is 0, and its score is at most ``combine(0, g, (1, 1))``,
    ``g`` its trigram Dice (``combine`` grows with each argument, and a refinement of
    (1, 1) adds at least what it takes away). So ``g >= d``, the least ``g`` with
    ``combine(0, g, (1, 1)) >= floor``; and ``g = 2s / (n + m) <= 2s / (n + s)`` (the entry holds
    the ``s`` shared trigrams, ``m >= s``), so ``s >= d n / (2 - d)``.
    """
    low, high = 0.0, 1.0
    if combine(0.0, high, (1.0, 1.0)) < floor:
        return grams + 1  # no trigram overlap reaches it: only shared words can
    for _ in range(40):  # bisection: ``low`` stays a value below the least such g
        middle = (low + high) / 2
        if combine(0.0, middle, (1.0, 1.0)) >= floor:
            high = middle
        else:
            low = middle
    return max(0, floor_int(low * grams / (2 - low)))


_INDEX = CandidateIndex()


def shortlist(candidate: Entry, stored: Iterable[Entry]) -> list[Entry]:
    """The stored entries that can matter to any similarity check of the candidate, in their
    stored order: the same findings as passing every stored entry to the checks.

    ``stored`` as a dict's ``values()`` view (a transaction's ``entries.values()``) is indexed
    by the dict's keys; any other iterable by each entry's id (and scanned whole when an entry
    has no string id or two share one). Fewer than :data:`INDEX_MIN_ENTRIES` are returned whole.
    """
    entries: Mapping[str, Entry]
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
    _INDEX.sync(entries)
    keep = _INDEX.shortlist(candidate)
    if keep is None:
        return list(entries.values())
    return [entries[entry_id] for entry_id in entries if entry_id in keep]


def _by_id(listed: Sequence[Entry]) -> dict[str, Entry]:
    """The entries by id; shorter than ``listed`` when an id is missing or repeated."""
    out: dict[str, Entry] = {}
    for entry in listed:
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or entry_id in out:
            return {}
        out[entry_id] = entry
    return out
