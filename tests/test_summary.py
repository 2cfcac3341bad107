from __future__ import annotations

from typing import Any

from ctxkeeper.core.store import Store
from ctxkeeper.read.summary import project_summary, render_summary
from ctxkeeper.write.verbs import agent_actor, record_entry, user_actor
from tests.conftest import constraint_fields, decision_fields

USER = user_actor()


class TestSummary:
    def test_counts_hard_constraints_recent_and_pending(self, store: Store) -> None:
        hard = str(record_entry(store, "constraint", constraint_fields(), actor=USER)["id"])
        soft = str(
            record_entry(
                store,
                "constraint",
                constraint_fields(
                    rule="Prefer cursor pagination on list endpoints",
                    hardness="soft",
                    reason="Offset pagination timed out on merchants with a million orders in 2025.",
                ),
                actor=USER,
            )["id"]
        )
        expired = str(
            record_entry(
                store,
                "constraint",
                constraint_fields(
                    rule="No deploys during the 2025 holiday freeze window",
                    reason="Holiday traffic peaks and on-call is thin, so a bad deploy costs the most.",
                    valid_until="2026-01-02",
                ),
                actor=USER,
            )["id"]
        )
        decision = str(record_entry(store, "decision", decision_fields(), actor=USER)["id"])
        pending = str(
            record_entry(
                store,
                "decision",
                decision_fields(
                    summary="Adopt structured logging with JSON lines everywhere",
                ),
                actor=agent_actor(),
            )["id"]
        )
        summary: Any = project_summary(store)
        assert summary["total"] == 5
        assert summary["counts"]["constraint"] == {"active": 3}
        assert [c["id"] for c in summary["hard_constraints"]] == [hard]
        listed = str(summary["hard_constraints"])
        assert soft not in listed
        assert expired not in listed
        assert [d["id"] for d in summary["recent_decisions"]] == [decision]
        assert summary["pending_review"] == 1
        assert summary["pending_ids"] == [pending]
        assert summary["truncated"] is False
        text = render_summary(summary)
        assert "idempotency key" in text
        assert "5 entries; 1 entry awaiting review" in text

    def test_budget_cuts_lists(self, store: Store) -> None:
        for n in range(10):
            record_entry(
                store,
                "constraint",
                constraint_fields(
                    rule=f"Rule number {n} about the billing ledger entries",
                    reason=f"Incident {n}: a ledger entry was written twice during a failover drill.",
                ),
                actor=USER,
            )
        small: Any = project_summary(store, token_budget=200)
        assert small["truncated"] is True
        assert 0 < len(small["hard_constraints"]) < 10
        assert "cut to fit" in render_summary(small)

    def test_pending_changes_are_listed_and_the_rule_stays_in_force(self, store: Store) -> None:
        from ctxkeeper.write.verbs import update_entry

        hard = str(record_entry(store, "constraint", constraint_fields(), actor=USER)["id"])
        result: Any = update_entry(
            store, hard, {"hardness": "soft"}, "soften it for now", actor=agent_actor()
        )
        summary: Any = project_summary(store)
        assert summary["pending_review"] == 1
        assert summary["pending_changes"] == [
            {"change": result["change"], "id": hard, "op": "update", "stale": False}
        ]
        assert [c["id"] for c in summary["hard_constraints"]] == [hard]
        assert "update of " + hard in render_summary(summary)
