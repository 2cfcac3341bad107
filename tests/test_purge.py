"""Honest forgetting: a purge removes an entry's text from the store, the journal and the
snapshot, keeps digests so the chain verifies and the value stays refused, and says what it
could not reach."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from ctxkeeper.cli import forget, review
from ctxkeeper.core import journal
from ctxkeeper.core.errors import PreviouslyRejectedError
from ctxkeeper.core.store import Store
from ctxkeeper.write import exchange
from ctxkeeper.write.verbs import agent_actor, record_entry, update_entry, user_actor

from .conftest import REPO_ROOT, constraint_fields, decision_fields
from .terminal import on_terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

RULE = "Never write a customer's phone number into the audit log"
REASON = "A support export leaked the audit log with thousands of phone numbers in it in 2025"


def _tree_bytes(directory: str) -> bytes:
    chunks = []
    for folder, _, names in os.walk(directory):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                chunks.append(handle.read())
    return b"\n".join(chunks)


def _doctor(root: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", "doctor", "--project-dir", root],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )


@pytest.fixture
def purged(store: Store) -> tuple[Store, str, str]:
    """A store where a rule with history was purged; an unrelated decision stays."""
    rule = record_entry(
        store, "constraint", constraint_fields(rule=RULE, reason=REASON), actor=user_actor()
    )
    rule_id = str(rule["id"])
    update_entry(
        store, rule_id, {"tags": ["privacy"]}, "tag it for the privacy review", actor=user_actor()
    )
    update_entry(
        store, rule_id, {"hardness": "soft"}, "an agent proposes to soften it", actor=agent_actor()
    )
    kept = record_entry(store, "decision", decision_fields(), actor=user_actor())
    review.purge(store, rule_id, "it names customer data we must not keep", actor=user_actor())
    return store, rule_id, str(kept["id"])


class TestPurge:
    def test_the_text_is_nowhere_under_context_and_doctor_passes(
        self, purged: tuple[Store, str, str]
    ) -> None:
        store, rule_id, kept_id = purged
        everything = _tree_bytes(store.dir)
        assert RULE.encode() not in everything
        assert REASON.encode() not in everything
        kept = store.get(kept_id)
        assert str(kept["summary"]).encode() in everything  # the control: other text is there
        done = _doctor(store.root)
        assert done.returncode == 0, done.stdout + done.stderr
        # Every record of the purged entry keeps digests; the chain still verifies.
        records = [r for r in store.read_journal() if r["id"] == rule_id]
        assert [r["op"] for r in records] == ["record", "update", "propose_update", "purge"]
        assert all(journal.is_redacted(r["after"]) for r in records[:-1])
        assert journal.verify_chain(store.read_journal()) == []

    def test_a_re_record_of_the_value_stays_refused(self, purged: tuple[Store, str, str]) -> None:
        store, rule_id, _ = purged
        for actor in (agent_actor(), user_actor()):
            with pytest.raises(PreviouslyRejectedError, match=rule_id):
                record_entry(
                    store,
                    "constraint",
                    constraint_fields(rule=RULE.upper() + " ", reason=REASON),
                    actor=actor,
                )
        record_entry(  # the control: a different rule is recorded
            store, "constraint", constraint_fields(rule="Audit log rows are never updated in place"),
            actor=agent_actor(),
        )  # fmt: skip

    def test_history_keeps_the_purge_and_its_reason_but_no_text(
        self, purged: tuple[Store, str, str]
    ) -> None:
        store, rule_id, _ = purged
        history = store.history(rule_id)
        assert history[-1]["reason"] == "it names customer data we must not keep"
        assert RULE not in str(history)

    def test_the_cli_reports_what_it_reached_and_what_it_did_not(self, store: Store) -> None:
        subprocess.run(["git", "init", "-q", store.root], check=True)
        rule = record_entry(
            store, "constraint", constraint_fields(rule=RULE, reason=REASON), actor=user_actor()
        )
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
        subprocess.run(["git", "-C", store.root, "add", "-A"], check=True, env=env)
        subprocess.run(["git", "-C", store.root, "commit", "-qm", "rule"], check=True, env=env)
        code, out = on_terminal(
            store.root, ["purge", str(rule["id"]), "--reason", "it names customer data"], b"y\n"
        )
        assert code == 0, out
        assert "no file under .context/ holds its text" in out
        assert "1 commit in git history holds it" in out
        assert "teammates' clones keep their copies" in out
        assert RULE.encode() not in _tree_bytes(store.dir)

    def test_a_file_still_holding_the_text_is_named(self, store: Store) -> None:
        rule = record_entry(
            store, "constraint", constraint_fields(rule=RULE, reason=REASON), actor=user_actor()
        )
        texts = forget.texts_of(store.get(str(rule["id"])))
        with open(os.path.join(store.dir, "notes-backup.json"), "w", encoding="utf-8") as handle:
            handle.write(RULE)
        review.purge(store, str(rule["id"]), "it names customer data", actor=user_actor())
        lines = forget.report(store, str(rule["id"]), texts)
        assert any("notes-backup.json" in line for line in lines)
        assert not any(line.startswith("removed:") for line in lines)

    def test_the_search_index_forgets_the_entry(self, store: Store) -> None:
        rule = record_entry(
            store, "constraint", constraint_fields(rule=RULE, reason=REASON), actor=user_actor()
        )
        found = subprocess.run(
            [sys.executable, "-m", "ctxkeeper", "--project-dir", store.root, "search", "phone"],
            capture_output=True, text=True, cwd=REPO_ROOT, check=True,
        )  # fmt: skip
        assert str(rule["id"]) in found.stdout
        index = os.path.join(store.dir, "cache", "text-index.json")
        with open(index, encoding="utf-8") as handle:
            assert str(rule["id"]) in json.load(handle)["ids"]  # the control: it was indexed
        code, out = on_terminal(
            store.root, ["purge", str(rule["id"]), "--reason", "it names customer data"], b"y\n"
        )
        assert code == 0, out
        assert not os.path.exists(index)
        assert "no file under .context/ holds its text" in out

    def test_a_live_entry_quoting_the_text_is_not_reported_but_a_stray_copy_is(
        self, store: Store
    ) -> None:
        rule = record_entry(
            store, "constraint", constraint_fields(rule=RULE, reason=REASON), actor=user_actor()
        )
        quoting = record_entry(
            store,
            "constraint",
            constraint_fields(
                rule=RULE + " or into the billing export",
                reason="The billing export is shared with the payment provider every night",
            ),
            actor=user_actor(),
        )
        with open(os.path.join(store.dir, "notes-backup.txt"), "w", encoding="utf-8") as handle:
            handle.write(RULE)
        code, out = on_terminal(
            store.root, ["purge", str(rule["id"]), "--reason", "it names customer data"], b"y\n"
        )
        assert code == 0, out
        held = next(line for line in out.splitlines() if "still holding its text" in line)
        assert "notes-backup.txt" in held
        for own_file in ("entries.json", "journal.jsonl", "snapshot.jsonl", "scope-index"):
            assert own_file not in held, held
        assert store.get(str(quoting["id"]))["rule"] == RULE + " or into the billing export"


class TestAcrossClones:
    def test_a_teammate_receives_no_text_and_keeps_refusing_the_value(
        self, purged: tuple[Store, str, str], tmp_path: Path
    ) -> None:
        store, _rule_id, kept_id = purged
        fresh = tmp_path / "fresh" / ".context"
        fresh.mkdir(parents=True)
        for name in ("config.json", "snapshot.jsonl"):
            shutil.copy(os.path.join(store.dir, name), fresh / name)
        clone = Store.open(str(fresh.parent))
        report = exchange.import_snapshot(clone, actor=user_actor())
        assert report["added"] == [kept_id]
        assert RULE.encode() not in _tree_bytes(clone.dir)
        with pytest.raises(PreviouslyRejectedError):
            record_entry(
                clone, "constraint", constraint_fields(rule=RULE, reason=REASON), actor=user_actor()
            )

    def test_a_teammate_who_had_it_loses_the_entry_then_purges_the_copy(
        self, store: Store, tmp_path: Path
    ) -> None:
        rule = record_entry(
            store, "constraint", constraint_fields(rule=RULE, reason=REASON), actor=user_actor()
        )
        rule_id = str(rule["id"])
        theirs_dir = tmp_path / "theirs" / ".context"
        theirs_dir.mkdir(parents=True)
        for name in ("config.json", "snapshot.jsonl"):
            shutil.copy(os.path.join(store.dir, name), theirs_dir / name)
        theirs = Store.open(str(theirs_dir.parent))
        exchange.import_snapshot(theirs, actor=user_actor())
        review.purge(store, rule_id, "it names customer data we must not keep", actor=user_actor())
        with (
            open(theirs_dir / "snapshot.jsonl", "ab") as handle,
            open(os.path.join(store.dir, "snapshot.jsonl"), "rb") as ours,
        ):
            handle.write(ours.read())  # a union merge of both sides
        report = exchange.import_snapshot(theirs, actor=user_actor())
        assert report["removed"] == [rule_id]
        assert rule_id not in theirs.load().entries
        # Importing never destroys what this clone holds: the text waits for their own purge.
        assert RULE.encode() in _tree_bytes(theirs.dir)
        review.purge(theirs, rule_id, "a teammate purged it; remove our copy", actor=user_actor())
        assert RULE.encode() not in _tree_bytes(theirs.dir)
        assert _doctor(theirs.root).returncode == 0
