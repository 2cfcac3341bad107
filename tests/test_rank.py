from __future__ import annotations

from typing import Any

import pytest

from ctxkeeper.core.errors import UsageError
from ctxkeeper.core.store import Store
from ctxkeeper.read import rank
from ctxkeeper.read.rank import get_context
from ctxkeeper.write.verbs import agent_actor, deprecate_entry, record_entry, user_actor
from tests.conftest import constraint_fields, decision_fields, pipeline_fields

USER = user_actor()

OLD_QUEUE = decision_fields(
    summary="Use RabbitMQ for the order events queue",
    problem="Order events were lost when the API process restarted mid-request.",
    why_chosen="RabbitMQ gave durable queues and acknowledgements with the team's existing ops knowledge.",
    tags=["queue"],
)
NEW_QUEUE = decision_fields(
    summary="Use Kafka for the order events stream instead of RabbitMQ",
    problem="Replaying order events for the new analytics consumers was impossible with RabbitMQ.",
    why_chosen="Kafka keeps a replayable log per topic, so new consumers can rebuild state from the start.",
    tags=["queue"],
)


def ids(result: dict[str, Any]) -> list[str]:
    return [item["id"] for item in result["results"]]


@pytest.fixture
def queue_store(store: Store) -> tuple[Store, str, str]:
    old = str(record_entry(store, "decision", OLD_QUEUE, actor=USER)["id"])
    new = str(record_entry(store, "decision", NEW_QUEUE, actor=USER, supersedes=[old])["id"])
    return store, old, new


class TestStatusFilter:
    def test_superseded_absent_by_default_successor_present(
        self, queue_store: tuple[Store, str, str]
    ) -> None:
        store, old, new = queue_store
        result: Any = get_context(store, {"query": "which message queue do order events use?"})
        assert new in ids(result)
        assert old not in ids(result)

    def test_negative_control_without_the_filter_the_old_entry_appears(
        self, queue_store: tuple[Store, str, str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Disabling the status filter must make the test above fail: the filter is load-bearing.
        store, old, new = queue_store
        monkeypatch.setattr(
            rank, "LIVE_STATUSES", frozenset({"active", "proposed", "superseded", "deprecated"})
        )
        result: Any = get_context(store, {"query": "which message queue do order events use?"})
        assert old in ids(result)
        assert new in ids(result)

    def test_deprecated_rule_absent_while_successor_present(self, store: Store) -> None:
        old = str(record_entry(store, "constraint", constraint_fields(), actor=USER)["id"])
        successor = str(
            record_entry(
                store,
                "constraint",
                constraint_fields(
                    rule="Charge requests reuse the order id as their idempotency key",
                    reason="Generated keys were lost on worker restarts and retries double-charged again.",
                ),
                actor=USER,
            )["id"]
        )
        deprecate_entry(
            store,
            old,
            "Replaced by keying charges on the order id.",
            actor=USER,
            superseded_by=successor,
        )
        result: Any = get_context(store, {"query": "idempotency key for charge requests"})
        assert successor in ids(result)
        assert old not in ids(result)
        history: Any = get_context(
            store, {"query": "idempotency key for charge requests", "include_history": True}
        )
        labels = {item["id"]: item.get("label", "") for item in history["results"]}
        assert labels[old].startswith("tombstone (deprecated): Replaced by keying")
        assert successor in labels


class TestHistoryQuestions:
    def test_include_history_returns_both_ends_linked(
        self, queue_store: tuple[Store, str, str]
    ) -> None:
        store, old, new = queue_store
        result: Any = get_context(
            store,
            {"query": "what did we use before Kafka for order events?", "include_history": True},
        )
        by_id = {item["id"]: item for item in result["results"]}
        assert old in by_id
        assert new in by_id
        assert by_id[old]["status"] == "superseded"
        assert by_id[old]["successor"]["id"] == new
        assert by_id[old]["label"].startswith("superseded")


class TestValidity:
    def test_expired_and_future_entries_follow_as_of(self, store: Store) -> None:
        freeze = str(
            record_entry(
                store,
                "constraint",
                constraint_fields(
                    rule="No deploys of the payments API during the holiday freeze",
                    reason="Holiday traffic peaks and the on-call rota is thin; a bad deploy costs the most then.",
                    valid_from="2026-12-20",
                    valid_until="2027-01-02",
                ),
                actor=USER,
            )["id"]
        )
        control = str(
            record_entry(
                store,
                "pipeline",
                pipeline_fields(
                    name="Deploy the payments API",
                    purpose="Ship the payments API to production with a rollback point.",
                ),
                actor=USER,
            )["id"]
        )
        for as_of, present in (
            ("2026-12-19T23:59:59Z", False),
            ("2026-12-20", True),
            ("2027-01-02T23:59:59Z", True),
            ("2027-01-03", False),
        ):
            result: Any = get_context(store, {"query": "deploy the payments API", "as_of": as_of})
            assert (freeze in ids(result)) is present, as_of
            assert control in ids(result)


class TestScopeAndAbstention:
    def test_path_boost_uses_whole_components(self, store: Store) -> None:
        rule = str(
            record_entry(
                store, "constraint", constraint_fields(scope=["src/billing/"]), actor=USER
            )["id"]
        )
        inside: Any = get_context(store, {"path": "src/billing/charge.py"})
        outside: Any = get_context(store, {"path": "src/billing_legacy/charge.py"})
        assert ids(inside) == [rule]
        assert inside["no_confident_match"] is False
        assert ids(outside) == []
        assert outside["no_confident_match"] is True

    def test_unrelated_question_is_flagged_answerable_one_is_not(self, store: Store) -> None:
        record_entry(store, "decision", decision_fields(), actor=USER)
        answered: Any = get_context(
            store,
            {
                "query": "how do we stop the nightly invoice job running twice on two scheduler replicas?"
            },
        )
        unknown: Any = get_context(
            store, {"query": "what font does the marketing site use for headings?"}
        )
        assert answered["no_confident_match"] is False
        assert unknown["no_confident_match"] is True
        assert answered["top_relevance"] > unknown["top_relevance"]

    def test_withhold_returns_pointers_only_when_not_confident(self, store: Store) -> None:
        record_entry(store, "decision", decision_fields(), actor=USER)
        weak: Any = get_context(store, {"query": "scheduler font colours", "abstain": "withhold"})
        assert weak["withheld"] is True
        assert all("entry" not in item and "line" in item for item in weak["results"])
        strong: Any = get_context(
            store, {"query": "advisory locks for the job scheduler", "abstain": "withhold"}
        )
        assert strong["withheld"] is False
        assert all("entry" in item for item in strong["results"])

    def test_proposed_entries_are_labelled_unreviewed(self, store: Store) -> None:
        proposed = str(
            record_entry(store, "decision", decision_fields(), actor=agent_actor())["id"]
        )
        result: Any = get_context(store, {"query": "advisory locks scheduler"})
        item = next(i for i in result["results"] if i["id"] == proposed)
        assert item["status"] == "proposed"
        assert item["label"].startswith("unreviewed")


class TestBudgetAndRelated:
    def test_budget_truncates_and_reports_dropped(self, store: Store) -> None:
        for n in range(6):
            record_entry(
                store,
                "pipeline",
                pipeline_fields(
                    name=f"Release train {n}",
                    purpose=f"Release train number {n} ships the mobile app build to the store reviewers.",
                ),
                actor=USER,
            )
        full: Any = get_context(store, {"query": "release train mobile app build"})
        small: Any = get_context(
            store, {"query": "release train mobile app build", "token_budget": 300}
        )
        assert len(full["results"]) == 6
        assert full["budget_truncated"] is False
        assert small["budget_truncated"] is True
        assert len(small["results"]) + len(small["dropped_ids"]) == 6
        assert small["tokens_used"] <= 300

    def test_related_entries_follow_one_hop(self, store: Store) -> None:
        base = str(record_entry(store, "decision", decision_fields(), actor=USER)["id"])
        linked = str(
            record_entry(store, "pipeline", pipeline_fields(related_to=[base]), actor=USER)["id"]
        )
        result: Any = get_context(store, {"query": "release smoke suite staging"})
        assert ids(result) == [linked, base]  # base came along the hop, ranked below
        reverse: Any = get_context(store, {"query": "advisory locks scheduler replicas"})
        assert ids(reverse) == [base]  # the hop follows related_to one way only

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            pytest.param({"kinds": ["memo"]}, "kinds", id="bad-kind"),
            pytest.param({"token_budget": 5}, "token_budget", id="tiny-budget"),
            pytest.param({"abstain": "maybe"}, "abstain", id="bad-abstain"),
            pytest.param({"as_of": "yesterday"}, "as_of", id="bad-time"),
        ],
    )
    def test_bad_arguments(self, store: Store, arguments: dict[str, object], message: str) -> None:
        with pytest.raises(UsageError, match=message):
            get_context(store, arguments)


class TestFreshness:
    def test_hand_edit_is_seen_without_a_restart(self, store: Store) -> None:
        import json
        from pathlib import Path

        entry_id = str(record_entry(store, "decision", decision_fields(), actor=USER)["id"])
        before: Any = get_context(store, {"query": "zeppelin mooring"})
        assert entry_id not in ids(before)
        path = Path(store.path("entries.json"))
        doc = json.loads(path.read_text())
        doc["entries"][0]["summary"] = "Use a zeppelin mooring schedule for the invoice job"
        path.write_text(json.dumps(doc, indent=2))
        after: Any = get_context(store, {"query": "zeppelin mooring"})
        assert ids(after) == [entry_id]
