"""An index kept up to date after writes scores exactly as one built afresh over the same
entries, and the warm server follows writes without a rebuild."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeeper.core.text import terms
from ctxkeeper.read import rank as rank_module
from ctxkeeper.read.textindex import TextIndex
from ctxkeeper.write.verbs import deprecate_entry, record_entry, update_entry, user_actor
from tests.conftest import constraint_fields, decision_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.store import Store

WORDS = ["retry", "payment", "ledger", "cache", "deploy", "schema", "idempotency", "audit",
         "queue", "timeout", "refund", "invoice", "token", "backup", "retention"]  # fmt: skip
QUERIES = ["retry payment timeout", "ledger audit", "idempotency key", "backup retention policy"]


def entry(number: int, words: list[str]) -> JSONObject:
    return {
        "id": f"con-{number:03d}-abcd",
        "rule": " ".join(words),
        "reason": "because " + words[0],
    }


def scores_by_id(index: TextIndex, ids: list[str | None], query: str) -> dict[str, float]:
    scores, relevance = index.score_terms(terms(query))
    out: dict[str, float] = {}
    for doc, value in scores.items():
        found = ids[doc]
        assert found is not None, "a removed document scored"
        out[found] = round(value, 9)
        out["relevance:" + found] = round(relevance.get(doc, 0.0), 9)
    return out


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)
changes = st.lists(
    st.tuples(st.sampled_from(["add", "change", "remove"]), st.integers(0, 30), texts),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(start=st.lists(texts, min_size=1, max_size=20), steps=changes)
def test_updates_score_like_a_fresh_build(
    start: list[list[str]], steps: list[tuple[str, int, list[str]]]
) -> None:
    current = {f"con-{n:03d}-abcd": entry(n, words) for n, words in enumerate(start)}
    docs: list[JSONObject | None] = [current[k] for k in sorted(current)]
    index = TextIndex.build([d for d in docs if d is not None])
    for op, number, words in steps:
        key = f"con-{number:03d}-abcd"
        removed = [(doc, e) for doc, e in enumerate(docs) if e is not None and e["id"] == key]
        if op == "remove" and not removed:
            continue
        added = [] if op == "remove" else [entry(number, words)]
        for doc, _ in removed:
            docs[doc] = None
        index.update(removed, added)
        docs.extend(added)
        if op == "remove":
            del current[key]
        else:
            current[key] = added[0]
    fresh_docs = [current[k] for k in sorted(current)]
    fresh = TextIndex.build(fresh_docs)
    ids = [str(d["id"]) if d is not None else None for d in docs]
    fresh_ids: list[str | None] = [str(d["id"]) for d in fresh_docs]
    assert index.size == fresh.size == len(current)
    assert index.vocabulary == fresh.vocabulary
    assert index.average_length == fresh.average_length  # exactly: fsum
    for word in WORDS:
        [term] = terms(word)
        assert index.doc_frequency(term) == fresh.doc_frequency(term)
    for query in QUERIES:
        assert scores_by_id(index, ids, query) == scores_by_id(fresh, fresh_ids, query)


def _get(store: Store, query: str) -> list[str]:
    result = rank_module.get_context(store, {"query": query})
    results = result["results"]
    assert isinstance(results, list)
    return [str(row["id"]) for row in results if isinstance(row, dict)]


def test_the_warm_index_follows_writes_and_answers_like_a_cold_one(store: Store) -> None:
    actor = user_actor()
    kept = record_entry(
        store,
        "constraint",
        constraint_fields(rule="Payment retries carry an idempotency key"),
        actor=actor,
    )
    gone = record_entry(
        store,
        "decision",
        decision_fields(summary="Ledger audit entries are kept for seven years"),
        actor=actor,
    )
    assert str(gone["id"]) in _get(store, "ledger audit retention")  # the control
    built = rank_module._CACHE.index
    changed = update_entry(
        store,
        str(kept["id"]),
        {"rule": "Payment retries carry a ledger audit key"},
        "clearer rule",
        actor=actor,
    )
    deprecate_entry(store, str(gone["id"]), "Superseded by the archive policy", actor=actor)
    warm = _get(store, "ledger audit retention")
    assert rank_module._CACHE.index is built, "the index was rebuilt, not followed"
    assert str(changed["id"]) in warm
    rank_module._CACHE.state = None  # a cold process: built afresh from the same store
    cold = _get(store, "ledger audit retention")
    assert rank_module._CACHE.index is not built
    assert warm == cold
