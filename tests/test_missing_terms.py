"""get_context tells the agent what is missing (issue 13): each result names the query words it
matched and the distinctive ones it did not, the response names the distinctive words the best
entry leaves out (``missing``) and says "nothing stored mentions X" for words no entry holds,
and a ``weak_match`` band sits between a confident answer and ``no_confident_match``.

The eval part runs on the retrieval eval data (evals/corpus, evals/golden*.jsonl): hard
negatives must have the word they ask about named, answerable controls must have none named.
"""

from __future__ import annotations

import json
import re
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import pytest

from ctxkeeper.core.store import Store
from ctxkeeper.core.text import STOPWORDS, stem, terms, tokenize
from ctxkeeper.core.times import parse_time
from ctxkeeper.mcp.tools import load_tools
from ctxkeeper.read import coverage, rank, render
from ctxkeeper.read.rank import ContextQuery
from ctxkeeper.read.textindex import TextIndex
from ctxkeeper.write.verbs import record_entry, user_actor
from tests.conftest import REPO_ROOT, constraint_fields, decision_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject

EVALS = Path(REPO_ROOT) / "evals"
INSTANT = parse_time("2026-11-30T12:00:00Z", field="test")
USER = user_actor()
# Statement fields of an entry: where a control's words must all be found.
STATEMENT = ("summary", "rule", "name", "tags", "problem", "reason", "purpose", "steps")


@lru_cache(maxsize=1)
def eval_data() -> tuple[dict[str, list[JSONObject]], list[JSONObject]]:
    corpus = {
        path.stem: [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for path in sorted((EVALS / "corpus").glob("*.jsonl"))
    }
    cases = [
        json.loads(line)
        for name in ("golden.jsonl", "golden_fresh.jsonl")
        if (EVALS / name).exists()
        for line in (EVALS / name).read_text().splitlines()
        if line.strip()
    ]
    return corpus, cases


@cache
def index_of(project: str) -> TextIndex:
    return TextIndex.build(eval_data()[0][project])


def ask(project: str, query: str) -> Any:
    request = ContextQuery(query=query, as_of=INSTANT, token_budget=100_000)
    return rank.rank(eval_data()[0][project], index_of(project), request, root="/eval")


def content_words(query: str) -> list[str]:
    """Query words that say what it is about, by a rule of this test's own: three letters or
    more, not a number, not a stop word and not filler."""
    return [
        word
        for word in tokenize(coverage.normalise_query(query))
        if len(word) >= 3
        and word.isalpha()
        and word not in STOPWORDS
        and not (set(terms(word)) & coverage.FILLER)
    ]


def text_of(entry: JSONObject, fields: tuple[str, ...] | None = None) -> str:
    """The entry's field values (not its keys), lowercased."""
    values = [entry.get(k) for k in (fields or tuple(entry))]
    return " ".join(json.dumps(v) for v in values if v).lower()


def absent_words(project: str, query: str) -> list[str]:
    """Content words no word of the project's entries begins like, in any field (a plain text
    search on the first four letters of the stem, independent of the index)."""
    store_text = " ".join(text_of(e) for e in eval_data()[0][project])
    return [w for w in content_words(query) if not starts_a_word(stem(w)[:4], store_text)]


def starts_a_word(prefix: str, text: str) -> bool:
    return re.search(r"(?<![^\W_])" + re.escape(prefix), text) is not None


def tool_text(result: Any) -> str:
    return render.relevance_line(result)


class TestEvalHardNegatives:
    def test_a_word_no_entry_holds_is_named_and_controls_name_nothing(self) -> None:
        corpus, cases = eval_data()
        named = 0
        for case in cases:
            if case["type"] != "hard_negative":
                continue
            project, query = str(case["project"]), str(case["query"])
            absent = absent_words(project, query)
            if not absent:
                continue
            result = ask(project, query)
            missing, unmentioned = result["missing"], result["unmentioned"]
            assert set(absent) <= set(map(str, missing)), (case["id"], absent, missing)
            assert set(absent) <= set(map(str, unmentioned)), (case["id"], absent, unmentioned)
            assert "nothing stored mentions" in tool_text(result)
            assert all(word in tool_text(result) for word in absent)
            named += 1
        # Answerable controls: every content word is in the expected entry's statement.
        controls = 0
        for case in cases:
            if case["type"] != "positive":
                continue
            project, query = str(case["project"]), str(case["query"])
            by_id = {str(e["id"]): e for e in corpus[project]}
            first_expected = case["expected"]
            assert isinstance(first_expected, list)
            expected = by_id[str(first_expected[0])]
            words = content_words(query)
            statement = text_of(expected, STATEMENT)
            if not words or not all(starts_a_word(stem(w), statement) for w in words):
                continue
            result = ask(project, query)
            assert result["missing"] == [], (case["id"], result["missing"])
            assert result["no_confident_match"] is False, case["id"]
            assert "nothing stored mentions" not in tool_text(result)
            controls += 1
        # Enough of both that the test cannot pass on an empty sample.
        assert named >= 30
        assert controls >= 5

    # Hard negatives whose asked-about facet is a word other entries use: the best entry
    # still leaves it out, and the report names it.
    @pytest.mark.parametrize(
        ("case_id", "facet"),
        [
            ("q017", "retention"),
            ("q019", "limiter"),
            ("q020", "freeze"),
            ("q132", "ttl"),
            ("fleet_dispatch-q073", "retention"),
            ("fleet_dispatch-q078", "malware"),
            ("game_backend-q082", "spectators"),
            ("legal_records-q078", "algorithm"),
        ],
    )
    def test_the_facet_a_hard_negative_asks_about_is_named(self, case_id: str, facet: str) -> None:
        case = next(c for c in eval_data()[1] if c["id"] == case_id)
        assert case["type"] == "hard_negative"
        result = ask(str(case["project"]), str(case["query"]))
        assert facet in result["missing"]
        best = max(result["results"], key=lambda item: item["relevance"])
        assert isinstance(best, dict)
        assert facet in best["missing_terms"]
        assert best["matched_terms"], "the best entry shares vocabulary with the question"
        assert facet in tool_text(result)


class TestToolSurface:
    def context(self, store: Store, **arguments: Any) -> tuple[Any, str]:
        spec = next(s for s in load_tools(store.root) if s.name == "get_context")
        result = spec.handler(arguments)
        return result.structured, result.text

    def test_near_miss_is_named_answer_is_not(self, store: Store) -> None:
        record_entry(
            store,
            "constraint",
            constraint_fields(
                rule="Migrations on the ledger Postgres database run only in the nightly window",
                reason="A daytime ALTER TABLE on the ledger database locked payouts for an hour.",
            ),
            actor=USER,
        )
        record_entry(store, "decision", decision_fields(), actor=USER)
        near, near_text = self.context(
            store, query="what is the backup retention period for the ledger Postgres database?"
        )
        answer, answer_text = self.context(
            store, query="when may a migration run on the ledger Postgres database?"
        )
        assert "retention" in near["missing"]
        assert "nothing stored mentions" in near_text
        assert "retention" in near_text
        first = near["results"][0]
        assert "ledger" in first["matched_terms"]
        assert "retention" in first["missing_terms"]
        # The control in the same store: nothing distinctive left out, nothing said missing.
        assert answer["missing"] == []
        assert answer["no_confident_match"] is False
        assert "nothing stored mentions" not in answer_text
        assert "migration" in answer["results"][0]["matched_terms"]

    def test_best_match_lacking_a_word_other_entries_hold_is_told_apart(self, store: Store) -> None:
        record_entry(store, "decision", decision_fields(), actor=USER)
        record_entry(
            store,
            "constraint",
            constraint_fields(
                rule="Invoice emails are rendered from the template service only",
                reason="Hand-built invoice emails broke the unsubscribe footer twice in 2025.",
            ),
            actor=USER,
        )
        result, text = self.context(
            store, query="which advisory locks does the scheduler take for invoice emails"
        )
        best = max(result["results"], key=lambda item: item["relevance"])
        assert isinstance(best, dict)
        lacking = [w for w in best["missing_terms"] if w not in result["unmentioned"]]
        assert lacking, "the best match leaves out a word another entry holds"
        assert f"the best match does not cover {lacking[0]}" in text

    def test_three_bands_and_withhold(self, store: Store) -> None:
        record_entry(store, "decision", decision_fields(), actor=USER)
        queries = {
            "confident": "advisory locks for the nightly invoice job on scheduler replicas",
            "weak": "advisory locks for the nightly invoice job retention backup encryption",
            "none": "what font does the marketing site use for headings?",
        }
        seen = {}
        for band, query in queries.items():
            result, text = self.context(store, query=query, abstain="withhold")
            relevance = float(result["top_relevance"])
            weak, none = bool(result["weak_match"]), bool(result["no_confident_match"])
            # The band follows the two floors, whatever they are.
            assert none == (relevance < rank.RELEVANCE_FLOOR)
            assert weak == (rank.RELEVANCE_FLOOR <= relevance < rank.WEAK_FLOOR)
            seen[band] = "none" if none else "weak" if weak else "confident"
            # Withholding still happens only with no confident match.
            assert result["withheld"] is none
            items = result["results"]
            assert isinstance(items, list)
            assert all(("entry" in i) is not none for i in items if isinstance(i, dict))
            assert ("weak match" in text) is weak
        assert seen == {"confident": "confident", "weak": "weak", "none": "none"}

    def test_query_without_words_reports_no_terms(self, store: Store) -> None:
        record_entry(store, "constraint", constraint_fields(), actor=USER)
        result, text = self.context(store, path="src/billing/charge.py")
        items = result["results"]
        assert items
        assert all(i["matched_terms"] == [] and i["missing_terms"] == [] for i in items)
        assert result["missing"] == []
        assert "mention" not in text


class TestDistinctive:
    def test_filler_numbers_and_common_words_are_never_missing(self) -> None:
        entries: list[JSONObject] = [
            {"id": f"dec-00{n}-aaaa", "summary": f"Ledger service note {n}", "tags": ["ledger"]}
            for n in range(8)
        ]
        index = TextIndex.build(entries)
        asked = coverage.query_terms("is it safe to just rotate the ledger keys at 10:30?", index)
        by_word = {q.word: q for q in asked}
        assert by_word["rotate"].distinctive  # no entry holds it
        assert not by_word["safe"].distinctive  # filler
        assert not by_word["10"].distinctive  # a number
        assert not by_word["ledger"].distinctive  # in every entry
        found = coverage.match(entries[0], asked, index)
        assert "rotate" in found.missing
        assert "ledger" in found.matched
        assert "safe" not in found.missing
        assert "10" not in found.missing

    def test_contractions_do_not_become_rare_words(self) -> None:
        entries: list[JSONObject] = [{"id": "dec-001-aaaa", "summary": "Ledger retention rule"}]
        index = TextIndex.build(entries)
        words = [q.word for q in coverage.query_terms("what's the ledger's retention?", index)]
        assert words == ["ledger", "retention"]
        assert coverage.match(
            entries[0], coverage.query_terms("what's the ledger's retention?", index), index
        ).relevance == pytest.approx(1.0)

    def test_rejected_alternatives_do_not_count_as_coverage(self) -> None:
        rejected: JSONObject = {
            "id": "dec-001-aaaa",
            "summary": "Keep sessions in Postgres",
            "alternatives": ["Memcached for sessions: lost on every restart"],
        }
        chosen: JSONObject = {"id": "dec-002-bbbb", "summary": "Cache rendered pages in Memcached"}
        index = TextIndex.build([rejected, chosen])
        asked = coverage.query_terms("memcached sessions", index)
        turned_down = coverage.match(rejected, asked, index)
        assert "memcached" not in turned_down.matched
        assert "sessions" in turned_down.matched
        assert "memcached" in coverage.match(chosen, asked, index).matched
