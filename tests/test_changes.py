"""An agent's change to an entry a person recorded or approved is a proposal: the live entry
stays as it is until a person decides (through the real tool handlers the MCP server runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxkeeper.cli import review
from ctxkeeper.core.changes import pending_changes
from ctxkeeper.core.errors import PreviouslyRejectedError, StateError
from ctxkeeper.core.store import Store
from ctxkeeper.mcp.tools import load_tools
from ctxkeeper.read.rank import get_context
from ctxkeeper.write.verbs import record_entry, update_entry, user_actor
from tests.conftest import constraint_fields, snapshot_dir

USER = user_actor()
BILLING_FILE = "src/billing/charge.py"
UNRELATED: dict[str, Any] = {
    "kind": "decision",
    "summary": "Render invoices as PDF on the worker queue",
    "problem": "Rendering invoices inside the web request timed out for large merchants.",
    "why_chosen": (
        "The worker queue already retries and isolates slow jobs, so long renders no longer "
        "hold a web worker or hit the gateway timeout."
    ),
}


def tool(store: Store, name: str, arguments: Any) -> Any:
    """Call one MCP tool handler as the server does (the agent's actor, its validation)."""
    [spec] = [spec for spec in load_tools(store.root) if spec.name == name]
    return spec.handler(arguments)


def persons_rule(store: Store) -> str:
    return str(record_entry(store, "constraint", constraint_fields(), actor=USER)["id"])


def journal_of(store: Store) -> list[Any]:
    return list(store.read_journal())


def waiting_changes(store: Store) -> list[Any]:
    return list(pending_changes(store.load().entries.values()))


def delivered_for_billing(store: Store) -> dict[str, Any]:
    """The entries get_context(path=...) returns for a billing file, by id."""
    result: Any = get_context(store, {"path": BILLING_FILE})
    return {item["id"]: item["entry"] for item in result["results"]}


def live_fields(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key != "pending_changes"}


def set_review(store: Store, policy: str) -> None:
    path = Path(store.path("config.json"))
    config = json.loads(path.read_text())
    config["review"] = policy
    path.write_text(json.dumps(config))


class TestAgentUpdate:
    def test_rewriting_a_persons_hard_rule_waits_and_the_rule_stays_in_force(
        self, store: Store
    ) -> None:
        rule_id = persons_rule(store)
        before = store.get(rule_id)
        result = tool(
            store,
            "update_entry",
            {
                "id": rule_id,
                "updates": {
                    "rule": "Charge requests may omit the idempotency key",
                    "hardness": "soft",
                    "scope": [],
                },
                "reason": "the provider deduplicates now",
            },
        )
        structured = result.structured
        assert structured["pending"] is True
        assert str(structured["change"]).startswith("chg-")
        assert "awaits a person" in result.text
        assert "unchanged" in result.text
        live = store.get(rule_id)
        assert live_fields(live) == before
        assert live["rule"] == constraint_fields()["rule"]
        assert (live["hardness"], live["scope"], live["status"]) == (
            "hard",
            ["src/billing"],
            "active",
        )
        assert live["revision"] == 1
        delivered = delivered_for_billing(store)
        assert delivered[rule_id]["hardness"] == "hard"
        assert delivered[rule_id]["rule"] == constraint_fields()["rule"]
        # Control: the change is there, waiting, and a person's approval applies it.
        [waiting] = waiting_changes(store)
        assert waiting["change"] == structured["change"]
        assert waiting["op"] == "update"
        review.approve(store, [str(structured["change"])], actor=USER)
        applied = store.get(rule_id)
        assert applied["hardness"] == "soft"
        assert applied["revision"] == 2
        assert "pending_changes" not in applied or applied["pending_changes"] == []

    def test_rejected_update_leaves_the_rule_untouched(self, store: Store) -> None:
        rule_id = persons_rule(store)
        before = store.get(rule_id)
        change = tool(
            store,
            "update_entry",
            {"id": rule_id, "updates": {"hardness": "soft"}, "reason": "soften it for now"},
        ).structured["change"]
        review.reject(store, [rule_id], "The rule stays hard after the incident.", actor=USER)
        after = store.get(rule_id)
        assert live_fields(after) == before
        assert after.get("pending_changes", []) == []
        ops = [(r["op"], r["actor"]["origin"]) for r in journal_of(store)]
        assert ops[-2:] == [("propose_update", "agent"), ("reject_change", "user")]
        assert change in str(journal_of(store)[-1]["reason"])

    def test_agent_edits_its_own_proposed_entry_directly(self, store: Store) -> None:
        own = tool(store, "record_entry", UNRELATED).structured["id"]
        result = tool(
            store,
            "update_entry",
            {"id": own, "updates": {"tags": ["invoices"]}, "reason": "tag it for the team"},
        )
        assert result.structured["pending"] is False
        assert store.get(own)["tags"] == ["invoices"]
        assert store.get(own)["revision"] == 2

    def test_review_off_applies_agent_changes_at_once(self, store: Store) -> None:
        rule_id = persons_rule(store)
        set_review(store, "off")
        result = tool(
            store,
            "update_entry",
            {"id": rule_id, "updates": {"hardness": "soft"}, "reason": "soften it for now"},
        )
        assert result.structured["pending"] is False
        assert store.get(rule_id)["hardness"] == "soft"
        assert journal_of(store)[-1]["op"] == "update"

    def test_a_persons_update_applies_directly_and_makes_a_waiting_change_stale(
        self, store: Store
    ) -> None:
        rule_id = persons_rule(store)
        change = str(
            tool(
                store,
                "update_entry",
                {"id": rule_id, "updates": {"hardness": "soft"}, "reason": "soften it for now"},
            ).structured["change"]
        )
        update_entry(store, rule_id, {"tags": ["billing"]}, "tag for the billing team", actor=USER)
        assert store.get(rule_id)["tags"] == ["billing"]
        [waiting] = waiting_changes(store)
        assert waiting["stale"] is True
        before = snapshot_dir(store.dir)
        with pytest.raises(StateError, match="changed since"):
            review.approve(store, [change], actor=USER)
        assert snapshot_dir(store.dir) == before
        review.reject(store, [change], "Superseded by the tagging edit.", actor=USER)
        assert store.get(rule_id)["hardness"] == "hard"


class TestAgentSupersession:
    def test_an_unrelated_successor_does_not_knock_out_a_persons_rule(self, store: Store) -> None:
        rule_id = persons_rule(store)
        before = store.get(rule_id)
        result = tool(store, "record_entry", {**UNRELATED, "supersedes": [rule_id]})
        successor = str(result.structured["id"])
        assert result.structured["superseded"] == []
        assert result.structured["pending"] is True
        assert [p["id"] for p in result.structured["pending_supersession"]] == [rule_id]
        assert "awaits a person" in result.text
        assert live_fields(store.get(rule_id)) == before
        assert rule_id in delivered_for_billing(store)
        review.reject(store, [successor], "Unrelated to the billing rule.", actor=USER)
        assert store.get(successor)["status"] == "rejected"
        assert live_fields(store.get(rule_id)) == before
        assert store.get(rule_id).get("pending_changes", []) == []
        # Still editable by its owner (a superseded entry would be frozen).
        update_entry(store, rule_id, {"tags": ["billing"]}, "tag for the billing team", actor=USER)
        assert store.get(rule_id)["revision"] == 2

    def test_approving_the_successor_supersedes_in_the_same_transaction(self, store: Store) -> None:
        rule_id = persons_rule(store)
        successor = str(
            tool(
                store,
                "record_entry",
                {
                    "kind": "constraint",
                    "rule": "Every charge request carries an idempotency key and a request id",
                    "reason": "Support could not trace double charges without a request id logged.",
                    "hardness": "hard",
                    "scope": ["src/billing/"],
                    "supersedes": [rule_id],
                },
            ).structured["id"]
        )
        assert store.get(rule_id)["status"] == "active"
        review.approve(store, [rule_id], actor=USER)  # the entry id of its one pending change
        assert store.get(successor)["status"] == "active"
        old = store.get(rule_id)
        assert (old["status"], old["superseded_by"]) == ("superseded", successor)
        records = journal_of(store)
        assert [(r["op"], r["id"]) for r in records[-2:]] == [
            ("approve", successor),
            ("supersede", rule_id),
        ]
        assert records[-1]["tx"] == records[-2]["tx"]
        assert records[-1]["actor"]["origin"] == "user"


class TestAgentDeprecation:
    def test_retiring_a_persons_rule_waits_and_review_shows_it(self, store: Store) -> None:
        rule_id = persons_rule(store)
        before = store.get(rule_id)
        result = tool(
            store,
            "deprecate_entry",
            {"id": rule_id, "reason": "The provider deduplicates charges by order id now."},
        )
        assert result.structured["pending"] is True
        assert "awaits a person" in result.text
        assert live_fields(store.get(rule_id)) == before
        assert rule_id in delivered_for_billing(store)
        [waiting] = waiting_changes(store)
        assert (waiting["id"], waiting["op"]) == (rule_id, "deprecate")
        # Not a tombstone: the person can restate the rule in other words (no previously_rejected).
        reworded = constraint_fields(
            rule="Each charge request must carry an idempotency key",
            reason="A retry storm in February double-charged forty customers at checkout.",
            scope=["src/payments/"],
        )
        assert record_entry(store, "constraint", reworded, actor=USER)["entry"]
        # Control: once a person approves the deprecation, it is a tombstone that refuses.
        review.approve(store, [str(result.structured["change"])], actor=USER)
        assert store.get(rule_id)["status"] == "deprecated"
        with pytest.raises(PreviouslyRejectedError):
            record_entry(store, "constraint", constraint_fields(), actor=USER)


class TestDecidingByEntryId:
    def test_two_pending_changes_need_a_change_id(self, store: Store) -> None:
        rule_id = persons_rule(store)
        first = tool(
            store,
            "update_entry",
            {"id": rule_id, "updates": {"hardness": "soft"}, "reason": "soften it for now"},
        ).structured["change"]
        second = tool(
            store,
            "deprecate_entry",
            {"id": rule_id, "reason": "The provider deduplicates charges by order id now."},
        ).structured["change"]
        with pytest.raises(StateError) as info:
            review.approve(store, [rule_id], actor=USER)
        assert str(first) in str(info.value)
        assert str(second) in str(info.value)
        assert store.get(rule_id)["status"] == "active"

    def test_an_identical_proposal_is_not_queued_twice(self, store: Store) -> None:
        rule_id = persons_rule(store)
        args = {"id": rule_id, "updates": {"hardness": "soft"}, "reason": "soften it for now"}
        first = tool(store, "update_entry", args).structured["change"]
        size = len(journal_of(store))
        again = tool(store, "update_entry", args).structured
        assert again["change"] == first
        assert again["pending"] is True
        assert len(journal_of(store)) == size
        # Control: a different proposal is queued.
        other = tool(store, "update_entry", {**args, "updates": {"tags": ["billing"]}})
        assert other.structured["change"] != first
        assert len(journal_of(store)) == size + 1
