from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxkeeper.cli.doctor import run_doctor
from ctxkeeper.core import journal
from ctxkeeper.core.errors import (
    BelowFloorError,
    NotFoundError,
    PreviouslyRejectedError,
    SecretDetectedError,
    StateError,
    UsageError,
)
from ctxkeeper.core.store import Store
from ctxkeeper.write.verbs import (
    agent_actor,
    deprecate_entry,
    get_entry,
    record_entry,
    update_entry,
    user_actor,
)
from tests.conftest import constraint_fields, decision_fields, pipeline_fields, snapshot_dir

USER = user_actor()
AGENT = agent_actor("session-1")


def record(
    store: Store, kind: str, fields: dict[str, object], supersedes: list[str] | None = None
) -> str:
    return str(record_entry(store, kind, fields, actor=USER, supersedes=supersedes)["id"])


class TestTombstones:
    def test_deprecated_rule_and_rewording_are_refused_unrelated_rule_accepted(
        self, store: Store
    ) -> None:
        rule_id = record(store, "constraint", constraint_fields())
        deprecate_entry(
            store, rule_id, "The provider now deduplicates charges by order id.", actor=USER
        )
        with pytest.raises(PreviouslyRejectedError) as same:
            record(store, "constraint", constraint_fields())
        assert same.value.tombstone_id == rule_id
        assert "deduplicates charges by order id" in str(same.value)
        reworded = constraint_fields(
            rule="Each charge request must carry an idempotency key",
            reason="A retry storm in February double-charged forty customers at checkout.",
        )
        with pytest.raises(PreviouslyRejectedError) as near:
            record(store, "constraint", reworded)
        assert near.value.tombstone_id == rule_id
        assert near.value.code == "previously_rejected"
        control = record(
            store,
            "constraint",
            constraint_fields(
                rule="Refunds are issued only through the ledger service",
                reason="Direct provider refunds skipped the ledger and broke the monthly close.",
            ),
        )
        assert control.startswith("con-002-")

    def test_update_into_a_tombstone_is_refused(self, store: Store) -> None:
        rule_id = record(store, "constraint", constraint_fields())
        deprecate_entry(store, rule_id, "The provider deduplicates by order id now.", actor=USER)
        other = record(
            store,
            "constraint",
            constraint_fields(
                rule="Refunds are issued only through the ledger service",
                reason="Direct provider refunds skipped the ledger and broke the monthly close.",
            ),
        )
        before = snapshot_dir(store.dir)
        with pytest.raises(PreviouslyRejectedError):
            update_entry(
                store,
                other,
                {"rule": "Every charge request carries an idempotency key"},
                "Trying to bring the old rule back",
                actor=AGENT,
            )
        assert snapshot_dir(store.dir) == before

    def test_tombstone_cannot_be_edited_or_deprecated_again(self, store: Store) -> None:
        rule_id = record(store, "constraint", constraint_fields())
        deprecate_entry(store, rule_id, "Retired: the provider deduplicates now.", actor=USER)
        with pytest.raises(StateError, match="ctxkeeper lift"):
            update_entry(store, rule_id, {"hardness": "soft"}, "soften the old rule", actor=AGENT)
        with pytest.raises(StateError, match="tombstone"):
            deprecate_entry(store, rule_id, "Retire it once more for good measure.", actor=AGENT)


class TestSupersession:
    def test_superseded_entry_is_frozen_and_successor_editable(self, store: Store) -> None:
        old = record(store, "decision", decision_fields())
        result: Any = record_entry(
            store,
            "decision",
            decision_fields(
                summary="Use a lease table instead of advisory locks for the scheduler",
                why_chosen=(
                    "Leases survive connection poolers in transaction mode, which silently "
                    "dropped session-level advisory locks in production last quarter."
                ),
            ),
            actor=USER,
            supersedes=[old],
        )
        new = str(result["id"])
        assert result["superseded"] == [old]
        old_entry = store.get(old)
        assert old_entry["status"] == "superseded"
        assert old_entry["superseded_by"] == new
        records = store.read_journal()
        assert [r["op"] for r in records[-2:]] == ["record", "supersede"]
        assert records[-1]["tx"] == records[-2]["tx"]  # one transaction
        with pytest.raises(StateError, match=f"record a successor with supersedes=\\['{old}'\\]"):
            update_entry(
                store,
                old,
                {"summary": "Edited history of the old choice"},
                "fixing the old record",
                actor=USER,
            )
        updated = update_entry(
            store, new, {"tags": ["scheduler"]}, "tag it for the scheduler team", actor=USER
        )
        assert updated["revision"] == 2

    def test_only_live_entries_can_be_superseded(self, store: Store) -> None:
        old = record(store, "decision", decision_fields())
        deprecate_entry(store, old, "Retired before anyone replaced it properly.", actor=USER)
        with pytest.raises(StateError, match="only active or proposed"):
            record(
                store,
                "decision",
                decision_fields(summary="A brand new scheduling approach"),
                supersedes=[old],
            )
        with pytest.raises(NotFoundError):
            record(
                store,
                "decision",
                decision_fields(summary="A brand new scheduling approach"),
                supersedes=["dec-099-abcd"],
            )

    def test_possible_supersession_is_flagged_not_acted_on(self, store: Store) -> None:
        old = record(store, "constraint", constraint_fields(tags=["billing"]))
        result: Any = record_entry(
            store,
            "constraint",
            constraint_fields(
                rule="Every charge request carries an idempotency key and a request id",
                reason="Support could not trace double charges without a request id in the logs.",
                tags=["billing"],
            ),
            actor=USER,
        )
        assert old in result["possible_supersession"]
        assert store.get(old)["status"] == "active"


class TestHistory:
    def test_three_updates_keep_every_before_value(self, store: Store) -> None:
        # Under review "off" the agent's change applies directly (tests/test_changes.py
        # covers the default, where it waits for a person).
        config = json.loads(Path(store.path("config.json")).read_text())
        Path(store.path("config.json")).write_text(json.dumps({**config, "review": "off"}))
        entry_id = record(store, "pipeline", pipeline_fields())
        reasons = ["add the canary step", "name the dashboard to watch", "tag for the release crew"]
        changes: list[dict[str, object]] = [
            {"steps": ["Tag the release commit on main", "Deploy a canary to one region"]},
            {"purpose": "Ship a tagged build to production while watching the release dashboard."},
            {"tags": ["release"]},
        ]
        actors = [USER, AGENT, USER]
        for change, reason, actor in zip(changes, reasons, actors, strict=True):
            update_entry(store, entry_id, change, reason, actor=actor)
        result: Any = get_entry(store, entry_id)
        history = result["history"]
        assert [h["op"] for h in history] == ["record", "update", "update", "update"]
        updates = history[1:]
        assert [h["reason"] for h in updates] == reasons
        assert [h["actor"]["origin"] for h in updates] == ["user", "agent", "user"]
        assert updates[0]["before"]["steps"] == pipeline_fields()["steps"]
        assert updates[1]["before"]["purpose"] == pipeline_fields()["purpose"]
        assert updates[2]["before"]["tags"] == []
        assert updates[2]["before"]["revision"] == 3
        assert result["entry"]["revision"] == 4
        report = run_doctor(store, actor=USER)
        assert report.ok, report.problems
        assert report.manual_edits == []


class TestUpdateRules:
    def test_floors_reapply_on_update(self, store: Store) -> None:
        entry_id = record(store, "constraint", constraint_fields())
        before = snapshot_dir(store.dir)
        with pytest.raises(BelowFloorError, match="'reason' is 7 characters"):
            update_entry(store, entry_id, {"reason": "because"}, "shorten the reason", actor=USER)
        assert snapshot_dir(store.dir) == before

    @pytest.mark.parametrize("reason", ["", "   ", "short"])
    def test_update_needs_a_reason(self, store: Store, reason: str) -> None:
        entry_id = record(store, "constraint", constraint_fields())
        with pytest.raises(UsageError, match="needs a reason"):
            update_entry(store, entry_id, {"hardness": "soft"}, reason, actor=USER)

    def test_unchanged_and_empty_updates_are_refused(self, store: Store) -> None:
        entry_id = record(store, "constraint", constraint_fields())
        with pytest.raises(UsageError, match="unchanged"):
            update_entry(store, entry_id, {"hardness": "hard"}, "no real change here", actor=USER)
        with pytest.raises(UsageError, match="updates is empty"):
            update_entry(store, entry_id, {}, "nothing at all to do", actor=USER)

    def test_identity_fields_cannot_be_updated(self, store: Store) -> None:
        entry_id = record(store, "constraint", constraint_fields())
        with pytest.raises(Exception, match="has no field 'status'"):
            update_entry(store, entry_id, {"status": "active"}, "approve it myself", actor=AGENT)

    def test_deprecate_rules(self, store: Store) -> None:
        entry_id = record(store, "constraint", constraint_fields())
        with pytest.raises(UsageError, match="at least 20 characters"):
            deprecate_entry(store, entry_id, "too short", actor=USER)
        with pytest.raises(UsageError, match="by itself"):
            deprecate_entry(
                store,
                entry_id,
                "Replaced by itself, which is nonsense.",
                actor=USER,
                superseded_by=entry_id,
            )
        with pytest.raises(NotFoundError):
            deprecate_entry(
                store,
                entry_id,
                "Replaced by an entry that does not exist.",
                actor=USER,
                superseded_by="con-042-abcd",
            )
        successor = record(store, "decision", decision_fields())
        result: Any = deprecate_entry(
            store,
            entry_id,
            "Replaced by the scheduling decision.",
            actor=USER,
            superseded_by=successor,
        )
        entry = result["entry"]
        assert entry["status"] == "deprecated"
        assert entry["superseded_by"] == successor
        assert entry["status_reason"] == "Replaced by the scheduling decision."


class TestReviewPolicyAndSecrets:
    def test_agent_entries_start_proposed_user_entries_active(self, store: Store) -> None:
        agent: Any = record_entry(store, "decision", decision_fields(), actor=AGENT)
        user: Any = record_entry(store, "pipeline", pipeline_fields(), actor=USER)
        assert agent["entry"]["status"] == "proposed"
        assert agent["entry"]["origin"] == "agent"
        assert user["entry"]["status"] == "active"

    def test_review_off_makes_agent_entries_active(self, store: Store) -> None:
        config = json.loads(Path(store.path("config.json")).read_text())
        config["review"] = "off"
        Path(store.path("config.json")).write_text(json.dumps(config))
        agent: Any = record_entry(store, "decision", decision_fields(), actor=AGENT)
        assert agent["entry"]["status"] == "active"

    def test_secret_is_refused_without_echo_and_nothing_changes(self, store: Store) -> None:
        record(store, "pipeline", pipeline_fields())
        before = snapshot_dir(store.dir)
        token = "ghp_" + "A1b2C3d4E5f6" * 3
        fields = pipeline_fields(steps=["Tag the release commit", f"Push with token {token} set"])
        with pytest.raises(SecretDetectedError) as info:
            record(store, "pipeline", fields)
        assert "steps[1]" in str(info.value)
        assert token not in str(info.value)
        assert snapshot_dir(store.dir) == before

    def test_similar_entries_are_labelled_across_statuses(self, store: Store) -> None:
        first = record(
            store,
            "constraint",
            constraint_fields(rule="Always retry webhook deliveries with backoff"),
        )
        result: Any = record_entry(
            store,
            "constraint",
            constraint_fields(
                rule="Never retry webhook deliveries with backoff",
                reason="Retried webhooks arrived out of order and corrupted order states.",
            ),
            actor=USER,
        )
        labels = {item["id"]: item["label"] for item in result["similar_entries"]}
        assert labels.get(first) == "likely_contradiction"
        assert journal.verify_chain(store.read_journal()) == []


class TestForeignScopes:
    @pytest.mark.parametrize("scope", ["C:\\x", "~/x"])
    def test_a_drive_or_home_scope_is_refused_and_nothing_stored(
        self, store: Store, scope: str
    ) -> None:
        with pytest.raises(UsageError, match="not a path in this project"):
            record(store, "constraint", constraint_fields(scope=[scope]))
        # The control: the same entry under a project path is stored.
        kept = record(store, "constraint", constraint_fields(scope=["src/x/"]))
        assert list(store.load().entries) == [kept]
        assert store.get(kept)["scope"] == ["src/x"]
