"""How ``asked_as`` phrasings reach retrieval (issue 26): indexed, counted as covering a
question, their own abstention floor, and the note when the best match shares only common
words with the question."""

from __future__ import annotations

from typing import Any

from ctxkeeper.core.times import parse_time
from ctxkeeper.read import rank
from ctxkeeper.read.guidance import context_note
from ctxkeeper.read.rank import ContextQuery
from ctxkeeper.read.textindex import TextIndex

AT = parse_time("2026-11-30T12:00:00Z", field="test")


def _entry(entry_id: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": entry_id,
        "status": "active",
        "origin": "user",
        "scope": [],
        "tags": [],
        "related_to": [],
        "supersedes": [],
        "superseded_by": None,
        "valid_from": None,
        "valid_until": None,
        "created_at": "2026-01-05T10:00:00Z",
        "updated_at": "2026-01-05T10:00:00Z",
        "revision": 1,
    }
    return {**base, **fields}


PITR = _entry(
    "pip-001-aaaa",
    kind="pipeline",
    name="Point-in-time recovery of the primary cluster",
    purpose="Recover the primary PostgreSQL cluster from base backups and WAL archives",
    steps=["Pick the target LSN from the WAL archive", "Promote the recovered replica"],
)
FILLER = [
    _entry(
        f"con-{n:03d}-b{n:03x}",
        kind="constraint",
        rule=rule,
        reason="An outage in the spring taught us this the expensive way, twice over",
        hardness="soft",
    )
    for n, rule in enumerate(
        [
            "Keep the Redis rate limiter keys for at least a day",
            "Every service exposes a health endpoint for the load balancer",
            "Tag every container image with the commit it was built from",
            "Database migrations run in a separate deploy step, never at boot",
            "Feature flags are removed within two sprints of full rollout",
            "Log lines carry the request id from the edge proxy",
        ],
        start=1,
    )
]
QUESTION = "restore db to 10:42 yesterday"


def _ask(entries: list[dict[str, Any]], query: str) -> dict[str, Any]:
    index = TextIndex.build(entries)
    request = ContextQuery(query=query, as_of=AT, token_budget=100_000)
    return rank.rank(entries, index, request, root="/p")


class TestPhrasingsCover:
    def test_a_question_in_a_phrasings_words_is_answered_and_without_them_is_not(self) -> None:
        phrased = {**PITR, "asked_as": ["restore the db to a time yesterday", "undo a bad delete"]}
        with_phrasings = _ask([phrased, *FILLER], QUESTION)
        without = _ask([PITR, *FILLER], QUESTION)
        # The same entry, the same question: only the phrasings differ.
        assert without["no_confident_match"] is True
        assert with_phrasings["no_confident_match"] is False
        assert with_phrasings["results"][0]["id"] == "pip-001-aaaa"
        assert with_phrasings["top_relevance"] > without["top_relevance"]

    def test_phrasings_of_another_entry_do_not_lend_it_coverage(self) -> None:
        # A control: phrasings on an unrelated entry leave the question unanswered.
        other = {**FILLER[0], "asked_as": ["redis keys vanish too soon", "rate limit resets"]}
        result = _ask([PITR, other, *FILLER[1:]], QUESTION)
        assert result["no_confident_match"] is True


class TestTheFloorFollowsTheEntry:
    def test_a_best_match_with_phrasings_meets_the_higher_floor(self) -> None:
        # Find a question whose best relevance falls between the two floors, then ask it of
        # the same entry with and without a phrasing that adds no word of the question.
        assert rank.ASKED_AS_FLOOR > rank.RELEVANCE_FLOOR
        entries = [PITR, *FILLER]
        between = None
        for query in (
            "recover primary cluster quickly during a regional outage drill",
            "recover the primary during the quarterly chaos game day exercise",
            "promote replica after the failover test in the staging region",
            "base backups retention for the archive bucket in cold storage",
            "recover primary cluster from wal during disaster exercise",
        ):
            top = _ask(entries, query)["top_relevance"]
            if rank.RELEVANCE_FLOOR <= top < rank.ASKED_AS_FLOOR:
                between = query
                break
        assert between is not None, "no probe question fell between the floors"
        unrelated_phrasing = {**PITR, "asked_as": ["zzz qqq"]}
        plain = _ask(entries, between)
        phrased = _ask([unrelated_phrasing, *FILLER], between)
        assert plain["top_relevance"] == phrased["top_relevance"]
        assert plain["no_confident_match"] is False
        assert phrased["no_confident_match"] is True


class TestCommonWordsOnly:
    def test_the_note_says_when_the_best_match_shares_only_common_words(self) -> None:
        entries = [
            _entry(
                f"con-{n:03d}-c{n:03x}",
                kind="constraint",
                rule=f"The {topic} key must be rotated by the {topic} owner",
                reason="Keys that outlive their owners were behind the March credential leak",
                hardness="hard",
            )
            for n, topic in enumerate(["redis", "stripe", "github", "sentry", "slack"], start=1)
        ]
        common = _ask(entries, "how do we rotate the key")
        distinctive = _ask(entries, "how do we rotate the stripe key")
        assert common["common_words_only"], common
        assert "only common words" in context_note(common, truncated=False)
        # The control: a distinctive word shared with the best match clears the cue.
        assert distinctive["common_words_only"] == []
        assert "only common words" not in context_note(distinctive, truncated=False)
