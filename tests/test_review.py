from __future__ import annotations

from typing import ClassVar

import pytest

from ctxkeeper.cli import review
from ctxkeeper.core.errors import (
    PreviouslyRejectedError,
    StaleVerdictError,
    StateError,
    UsageError,
)
from ctxkeeper.core.store import Store
from ctxkeeper.write.verbs import (
    agent_actor,
    record_entry,
    update_entry,
    user_actor,
    verify_entry,
)
from tests.conftest import constraint_fields, decision_fields

USER = user_actor()


def proposed(store: Store, fields: dict[str, object] | None = None) -> str:
    return str(
        record_entry(store, "constraint", fields or constraint_fields(), actor=agent_actor())["id"]
    )


class TestReview:
    def test_approve_makes_active(self, store: Store) -> None:
        entry_id = proposed(store)
        [done] = review.approve(store, [entry_id], actor=USER)
        assert done["status"] == "active"
        with pytest.raises(StateError, match="only proposed entries are approved"):
            review.approve(store, [entry_id], actor=USER)

    def test_reject_makes_a_tombstone_that_refuses_the_same_content(self, store: Store) -> None:
        entry_id = proposed(store)
        other = str(record_entry(store, "decision", decision_fields(), actor=agent_actor())["id"])
        review.reject(store, [entry_id], "We key charges by order id instead.", actor=USER)
        assert store.get(entry_id)["status_reason"] == "We key charges by order id instead."
        with pytest.raises(PreviouslyRejectedError, match="We key charges by order id"):
            proposed(store)
        with pytest.raises(UsageError, match="--reason"):
            review.reject(store, [other], "no", actor=USER)
        with pytest.raises(StateError, match="deprecate"):
            review.reject(store, [entry_id], "Rejecting the rejected entry again.", actor=USER)

    def test_lift_returns_to_proposed_and_lets_the_content_back(self, store: Store) -> None:
        entry_id = proposed(store)
        review.reject(store, [entry_id], "We key charges by order id instead.", actor=USER)
        lifted = review.lift(store, entry_id, actor=USER)
        assert lifted["status"] == "proposed"
        successor = record_entry(
            store, "constraint", constraint_fields(), actor=USER, supersedes=[entry_id]
        )
        assert store.get(entry_id)["superseded_by"] == successor["id"]
        with pytest.raises(StateError, match="not a tombstone"):
            review.lift(store, str(successor["id"]), actor=USER)

    def test_purge_removes_and_the_journal_keeps_only_a_digest(self, store: Store) -> None:
        entry_id = proposed(store)
        keep = str(record_entry(store, "decision", decision_fields(), actor=USER)["id"])
        review.purge(store, entry_id, "Recorded by mistake during a demo.", actor=USER)
        assert entry_id not in store.load().entries
        assert keep in store.load().entries
        last = store.read_journal()[-1]
        assert last["op"] == "purge"
        assert last["after"] is None
        assert last["id"] == entry_id
        assert set(last["before"]) == {"purged_sha256"}  # type: ignore[arg-type]


class TestDecidingChanges:
    def _rule_and_successor(self, store: Store) -> tuple[str, str]:
        rule = str(record_entry(store, "constraint", constraint_fields(), actor=USER)["id"])
        successor = str(
            record_entry(
                store, "decision", decision_fields(), actor=agent_actor(), supersedes=[rule]
            )["id"]
        )
        return rule, successor

    def test_rejecting_the_supersession_keeps_the_successor_for_review(self, store: Store) -> None:
        rule, successor = self._rule_and_successor(store)
        review.reject(store, [rule], "Keep the billing rule in force.", actor=USER)
        assert store.get(rule)["status"] == "active"
        assert "pending_changes" not in store.get(rule)
        kept = store.get(successor)
        assert (kept["status"], kept["supersedes"]) == ("proposed", [])
        # Control: approving the successor now supersedes nothing.
        review.approve(store, [successor], actor=USER)
        assert store.get(rule)["status"] == "active"
        assert store.get(successor)["status"] == "active"

    def test_a_stale_supersession_refuses_the_successors_approval(self, store: Store) -> None:
        rule, successor = self._rule_and_successor(store)
        update_entry(store, rule, {"tags": ["billing"]}, "tag for the billing team", actor=USER)
        with pytest.raises(StateError, match="changed since"):
            review.approve(store, [successor], actor=USER)
        assert store.get(successor)["status"] == "proposed"
        assert store.get(rule)["status"] == "active"

    def test_purging_a_successor_drops_its_supersession(self, store: Store) -> None:
        rule, successor = self._rule_and_successor(store)
        review.purge(store, successor, "Recorded by mistake during a demo.", actor=USER)
        assert "pending_changes" not in store.get(rule)
        assert [r["op"] for r in store.read_journal()][-2:] == ["reject_change", "purge"]

    def test_dry_run_validates_and_writes_nothing(self, store: Store) -> None:
        rule, successor = self._rule_and_successor(store)
        before = store.read_journal()
        planned = review.decide(store, "approve", [rule], actor=USER, dry_run=True)
        assert [d["action"] for d in planned] == ["approve", "supersede"]
        assert store.read_journal() == before
        assert store.get(rule)["status"] == "active"
        assert store.get(successor)["status"] == "proposed"
        with pytest.raises(UsageError, match="neither an entry id"):
            review.decide(store, "approve", ["chg-x"], actor=USER, dry_run=True)


class TestVerdictBinding:
    """A verdict applies only to what the person was shown (issue 22, section 3)."""

    SWAP: ClassVar = {"rule": "Charges may be retried without an idempotency key", "scope": []}

    @pytest.mark.parametrize(
        ("verb", "reason"),
        [
            pytest.param("approve", "", id="approve"),
            pytest.param("reject", "We key charges by order id instead.", id="reject"),
            pytest.param("purge", "Recorded by mistake during a demo.", id="purge"),
        ],
    )
    def test_a_verdict_on_a_moved_proposal_is_stale_and_writes_nothing(
        self, store: Store, verb: str, reason: str
    ) -> None:
        entry_id = proposed(store)
        shown = review.plan(store, verb, [entry_id], actor=USER, reason=reason).shown
        update_entry(store, entry_id, self.SWAP, "the agent rewords it", actor=agent_actor())
        journal = store.read_journal()
        with pytest.raises(StaleVerdictError, match="changed after it was shown") as caught:
            review.decide(store, verb, [entry_id], actor=USER, reason=reason, shown=shown)
        assert store.read_journal() == journal
        assert store.get(entry_id)["status"] == "proposed"
        now = caught.value.now["entry"]
        assert isinstance(now, dict)
        assert now["rule"] == self.SWAP["rule"]
        # Control: shown again, the verdict on the version it holds now applies.
        shown = review.plan(store, verb, [entry_id], actor=USER, reason=reason).shown
        review.decide(store, verb, [entry_id], actor=USER, reason=reason, shown=shown)
        assert store.read_journal()[-1]["op"] == verb

    def test_a_verification_or_another_proposal_leaves_a_change_as_shown(
        self, store: Store
    ) -> None:
        rule = str(record_entry(store, "constraint", constraint_fields(), actor=USER)["id"])
        agent = agent_actor()
        change = str(
            update_entry(store, rule, {"hardness": "soft"}, "soft is enough here", actor=agent)[
                "change"
            ]
        )
        shown = review.plan(store, "approve", [change], actor=USER).shown
        verify_entry(store, rule, actor=agent)
        update_entry(store, rule, {"tags": ["billing"]}, "tag it for the team", actor=agent)
        review.decide(store, "approve", [change], actor=USER, shown=shown)
        assert store.get(rule)["hardness"] == "soft"
        # Control: a change to the live entry a change applies to does stale it.
        later = str(
            update_entry(store, rule, {"tags": ["payments"]}, "tag it for payments", actor=agent)[
                "change"
            ]
        )
        shown = review.plan(store, "approve", [later], actor=USER).shown
        update_entry(store, rule, {"hardness": "hard"}, "the person hardens it again", actor=USER)
        with pytest.raises(StaleVerdictError, match=later):
            review.decide(store, "approve", [later], actor=USER, shown=shown)

    def test_an_id_that_was_not_shown_is_not_decided(self, store: Store) -> None:
        first, second = proposed(store), proposed(store, webhook_rule())
        shown = review.plan(store, "approve", [first], actor=USER).shown
        with pytest.raises(StaleVerdictError, match=second):
            review.decide(store, "approve", [first, second], actor=USER, shown=shown)
        assert store.get(first)["status"] == "proposed"
        review.decide(store, "approve", [first], actor=USER, shown=shown)
        assert store.get(first)["status"] == "active"


def webhook_rule() -> dict[str, object]:
    return constraint_fields(
        rule="Webhook deliveries are retried with exponential backoff",
        reason="Partners rate-limit bursts; a flat retry loop got us blocked for a whole day.",
        scope=["src/webhooks/"],
    )
