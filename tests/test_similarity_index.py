"""The similarity index's shortlist against a scan of every entry, and how it follows changes.

``record_entry`` scores only the entries ``candidates.shortlist`` proposes; the index scores
every entry sharing a feature from overlap counts, exactly as a scan would (see the module
docstring of ctxkeeper/write/candidates.py). These tests hold it to exactly the entries a full scan finds
at or above the floor, on stores drawn from a small vocabulary so that overlaps are common.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkeeper.core.model import TOMBSTONE_STATUSES
from ctxkeeper.core.text import fingerprint
from ctxkeeper.write import candidates as cand
from ctxkeeper.write import similarity as sim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

Entry = dict[str, object]

# Few words, many shared trigrams ("deploy"/"deployment", "cache"/"caches"): scores spread
# over the whole range, floor included.
VOCABULARY = [
    "use",
    "redis",
    "for",
    "the",
    "session",
    "cache",
    "caches",
    "never",
    "log",
    "tokens",
    "deploy",
    "deployment",
    "staging",
    "production",
    "retry",
    "requests",
    "billing",
    "service",
    "services",
    "always",
    "store",
    "money",
    "integer",
    "cents",
    "rotate",
    "keys",
    "weekly",
    "monthly",
    "api",
    "gateway",
    "queue",
    "worker",
    "workers",
    "timeout",
]
STATUSES = ("active", "proposed", "deprecated", "rejected", "superseded")

sentences = st.lists(st.sampled_from(VOCABULARY), min_size=0, max_size=9).map(" ".join)


@st.composite
def entries(draw: st.DrawFn) -> Entry:
    kind = draw(st.sampled_from(("decision", "constraint", "pipeline")))
    primary, secondary = draw(sentences), draw(sentences)
    entry: Entry = {"kind": kind, "status": draw(st.sampled_from(STATUSES))}
    if kind == "decision":
        entry.update(summary=primary, problem=secondary)
    elif kind == "constraint":
        entry.update(rule=primary, reason=secondary, hardness="hard")
    else:
        entry.update(name=draw(st.sampled_from(VOCABULARY)), purpose=primary)
    return entry


def _numbered(drawn: Sequence[Entry]) -> list[Entry]:
    return [{**entry, "id": f"con-{n:04d}-abcd"} for n, entry in enumerate(drawn)]


def _scan(candidate: Mapping[str, object], stored: Sequence[Entry]) -> set[object]:
    """What the index must return: by a scan of every entry, the floor's own rule."""
    own = fingerprint(sim.statement(candidate))
    return {
        entry["id"]
        for entry in stored
        if sim.similarity(candidate, entry) >= sim.SHORTLIST_FLOOR - 1e-9
        or not sim._features(sim.statement(entry))[1]  # nothing to index it by: kept
        or (
            entry["status"] in TOMBSTONE_STATUSES
            and sim.statement(entry)
            and fingerprint(sim.statement(entry)) == own
        )
    }


def _findings(candidate: Mapping[str, object], stored: Sequence[Mapping[str, object]]) -> object:
    return (
        sim.similar_entries(candidate, stored),
        sim.matching_tombstone(candidate, stored),
        sim.possible_supersession(candidate, stored),
    )


def _short(candidate: Mapping[str, object], stored: Sequence[Entry]) -> list[Entry] | None:
    """The stored entries a fresh index shortlists, in stored order (None: scan them all)."""
    index = cand.CandidateIndex()
    index.sync({str(entry["id"]): entry for entry in stored})
    keep = index.shortlist(candidate)
    return None if keep is None else [entry for entry in stored if entry["id"] in keep]


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    stored=st.lists(entries(), min_size=1, max_size=60),
    candidate=entries(),
    copied=st.integers(min_value=0),
)
def test_the_shortlist_is_exactly_what_a_scan_keeps(
    stored: list[Entry], candidate: Entry, copied: int
) -> None:
    stored = _numbered(stored)
    # The control: one stored entry restates the candidate, so the answer is never empty
    # when the candidate has text to compare.
    twin = stored[copied % len(stored)]
    stored[copied % len(stored)] = {**candidate, "id": twin["id"], "status": twin["status"]}
    short = _short(candidate, stored)
    if not sim._features(sim.statement(candidate))[1]:
        assert short is None  # nothing to index the candidate by: every entry is scanned
        return
    assert short is not None
    ids = {entry["id"] for entry in short}
    assert twin["id"] in ids
    assert ids == _scan(candidate, stored)
    assert _findings(candidate, short) == _findings(candidate, stored)


def test_a_small_store_is_scanned_whole_and_a_large_one_shortlisted() -> None:
    small = _store(cand.INDEX_MIN_ENTRIES - 1)
    large = _store(cand.INDEX_MIN_ENTRIES)
    candidate = {k: v for k, v in small["con-0005-abcd"].items() if k not in ("id", "status")}
    assert len(cand.shortlist(candidate, small.values())) == len(small)
    short = cand.shortlist(candidate, large.values())
    assert 0 < len(short) < len(large)
    assert "con-0005-abcd" in {entry["id"] for entry in short}


def _store(size: int) -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for n in range(size):
        words = [VOCABULARY[(n * 7 + k * 3) % len(VOCABULARY)] for k in range(6)]
        entry_id = f"con-{n:04d}-abcd"
        out[entry_id] = {
            "id": entry_id,
            "kind": "constraint",
            "status": "active",
            "rule": f"{' '.join(words)} module{n}",
            "reason": f"{' '.join(reversed(words))} because of module{n}",
            "hardness": "hard",
        }
    return out


def _ids(candidate: Mapping[str, object], entries: dict[str, Entry]) -> set[str]:
    return {str(entry["id"]) for entry in cand.shortlist(candidate, entries.values())}


def test_a_dict_view_is_followed_through_replacements_removals_and_additions() -> None:
    entries = _store(cand.INDEX_MIN_ENTRIES + 20)
    target = entries["con-0005-abcd"]
    candidate = {k: v for k, v in target.items() if k not in ("id", "status")}
    assert "con-0005-abcd" in _ids(candidate, entries)
    # Replaced by an unrelated text (a new object): it leaves the shortlist.
    entries = dict(entries)
    entries["con-0005-abcd"] = {**target, "rule": "Plant tulips in autumn", "reason": "Spring"}
    assert "con-0005-abcd" not in _ids(candidate, entries)
    # A new entry restating the candidate is found; a removed one is forgotten.
    entries = dict(entries)
    entries["con-0999-abcd"] = {**target, "id": "con-0999-abcd"}
    assert "con-0999-abcd" in _ids(candidate, entries)
    del entries["con-0999-abcd"]
    assert "con-0999-abcd" not in _ids(candidate, entries)
    listed = list(entries.values())
    assert _findings(candidate, cand.shortlist(candidate, entries.values())) == _findings(
        candidate, listed
    )


def test_the_index_syncs_by_identity() -> None:
    index = cand.CandidateIndex()
    entries = _store(60)
    target = entries["con-0007-abcd"]
    candidate = {k: v for k, v in target.items() if k not in ("id", "status")}
    index.sync(entries)
    assert len(index) == 60
    before = index.shortlist(candidate)
    assert before is not None
    assert "con-0007-abcd" in before
    # A replaced object is re-indexed; an equal copy of another entry is found under its id.
    entries = dict(entries)
    entries["con-0007-abcd"] = {**target, "rule": "Plant tulips", "reason": "Spring"}
    entries["con-0008-abcd"] = {**target, "id": "con-0008-abcd"}
    index.sync(entries)
    after = index.shortlist(candidate)
    assert after is not None
    assert "con-0007-abcd" not in after
    assert "con-0008-abcd" in after
    # A removed entry is forgotten.
    del entries["con-0008-abcd"]
    index.sync(entries)
    assert "con-0008-abcd" not in (index.shortlist(candidate) or set())
    assert len(index) == 59


def test_equal_tombstones_come_in_stored_order() -> None:
    entries = _store(cand.INDEX_MIN_ENTRIES)
    rule = "Never store money as floating point numbers in the billing service"
    for first, second in (("con-0001-abcd", "con-0002-abcd"), ("con-0002-abcd", "con-0001-abcd")):
        ordered = {
            first: {**entries[first], "rule": rule, "status": "deprecated"},
            second: {**entries[second], "rule": rule, "status": "rejected"},
        }
        ordered.update((k, v) for k, v in entries.items() if k not in ordered)
        candidate = {"kind": "constraint", "rule": rule, "hardness": "hard", "reason": "x"}
        short = cand.shortlist(candidate, ordered.values())
        found = sim.matching_tombstone(candidate, short)
        assert found is not None
        assert found[0]["id"] == first
        assert found == sim.matching_tombstone(candidate, list(ordered.values()))


def test_a_short_entry_sharing_only_the_commonest_words_is_kept() -> None:
    # Every entry holds "redis", half of them the candidate's other words. The one-word entry
    # shares nothing else and still reaches the floor (0.39): it must be kept, the unrelated
    # one not.
    stored: list[Entry] = [
        {
            "id": f"con-{n:04d}-abcd",
            "kind": "constraint",
            "status": "active",
            "rule": f"redis {'use session cache' if n % 2 else 'queue'} item{n} part{n} bit{n}",
            "reason": f"reason{n} detail{n}",
            "hardness": "hard",
        }
        for n in range(cand.INDEX_MIN_ENTRIES)
    ]
    stored += [
        {**stored[0], "id": "con-9100-abcd", "rule": "redis", "reason": "other"},
        {**stored[0], "id": "con-9101-abcd", "rule": "tulips in spring", "reason": "other"},
    ]
    candidate: Entry = {"kind": "constraint", "rule": "use redis for session cache"}
    assert sim.similarity(candidate, stored[-2]) >= sim.SHORTLIST_FLOOR
    ids = {entry["id"] for entry in cand.shortlist(candidate, stored)}
    assert "con-9100-abcd" in ids
    assert "con-9101-abcd" not in ids
    assert ids == _scan(candidate, stored)
