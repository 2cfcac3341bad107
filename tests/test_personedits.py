"""The person's ``edit`` and ``deprecate``, on a real pseudo-terminal, and their refusal under an
agent or without a terminal."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ctxkeeper.write.verbs import record_entry, user_actor
from tests.conftest import constraint_fields
from tests.terminal import on_terminal, person_env, require_person_ancestry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core.store import Store

AGENT = {"CLAUDECODE": "1", "AI_AGENT": "claude-code", "CLAUDE_CODE_SESSION_ID": "s1"}
NEW_RULE = "Every charge and every refund request carries an idempotency key"


def _rule(store: Store) -> str:
    return str(record_entry(store, "constraint", constraint_fields(), actor=user_actor())["id"])


@pytest.mark.slow
class TestEdit:
    def test_a_person_edits_their_rule_after_seeing_the_change(self, store: Store) -> None:
        require_person_ancestry()
        rule = _rule(store)
        argv = ["edit", rule, "--rule", NEW_RULE, "--why", "refunds were double-sent in March"]
        code, out = on_terminal(store.root, argv, b"n\n")
        assert code == 1, out
        assert "cancelled; nothing was changed" in out
        assert store.get(rule)["rule"] == constraint_fields()["rule"]
        code, out = on_terminal(store.root, argv, b"y\n")
        assert code == 0, out
        assert f"+ rule: {NEW_RULE}" in out.replace("\r", "")
        assert "[y/N]" in out
        assert store.get(rule)["rule"] == NEW_RULE
        last = store.history(rule)[-1]
        assert (last["op"], last["actor"]) == ("update", user_actor())

    def test_floors_apply_and_nothing_is_written(self, store: Store) -> None:
        require_person_ancestry()
        rule = _rule(store)
        before = store.read_journal()
        code, out = on_terminal(
            store.root, ["edit", rule, "--reason", "too short", "--why", "shorter reason"], b"y\n"
        )
        assert code == 1, out
        assert "reason" in out
        assert store.read_journal() == before

    @pytest.mark.parametrize("verb", ["edit", "deprecate"])
    def test_refused_under_an_agent_and_without_a_terminal(self, store: Store, verb: str) -> None:
        rule = _rule(store)
        extra = ["--rule", NEW_RULE, "--why", "a reason long enough"] if verb == "edit" else []
        argv = [verb, rule, *extra]
        if verb == "deprecate":
            argv += ["--reason", "the provider now deduplicates charges itself"]
        before = store.read_journal()
        code, out = on_terminal(store.root, argv, b"y\n", env=person_env(**AGENT))
        assert code == 1, out
        assert "is for a person" in out
        piped = subprocess.run(
            [sys.executable, "-m", "ctxkeeper", *argv, "--project-dir", store.root],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=person_env(),
            timeout=60,
            check=False,
        )
        assert piped.returncode == 1
        if not person_env().get("CLAUDECODE"):
            assert "interactive terminal" in piped.stderr or "is for a person" in piped.stderr
        assert store.read_journal() == before


@pytest.mark.slow
class TestDeprecate:
    def test_a_person_retires_their_rule(self, store: Store) -> None:
        require_person_ancestry()
        rule = _rule(store)
        argv = ["deprecate", rule, "--reason", "the provider now deduplicates charges itself"]
        code, out = on_terminal(store.root, argv, b"y\n")
        assert code == 0, out
        assert store.get(rule)["status"] == "deprecated"
        last = store.history(rule)[-1]
        assert last["actor"] == {**user_actor()}


@pytest.mark.slow
class TestPointersLeadToThem:
    def test_reject_points_to_a_deprecate_that_runs(self, store: Store) -> None:
        require_person_ancestry()
        rule = _rule(store)
        code, out = on_terminal(store.root, ["reject", rule, "--reason", "not wanted"], b"y\n")
        assert code == 1, out
        pointer = f"`ctxkeeper deprecate {rule} --reason TEXT`"
        assert pointer in out
        assert store.get(rule)["status"] == "active"  # the control: reject changed nothing
        argv = ["deprecate", rule, "--reason", "the provider now deduplicates charges itself"]
        code, out = on_terminal(store.root, argv, b"y\n")
        assert code == 0, out
        assert store.get(rule)["status"] == "deprecated"

    def test_quality_advice_names_the_verbs_not_a_hand_edit(self, store: Store) -> None:
        rule = _rule(store)
        done = subprocess.run(
            [sys.executable, "-m", "ctxkeeper", "doctor", "--quality", "--project-dir", store.root],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, env=person_env(),
            timeout=60, check=False,
        )  # fmt: skip
        advice = [line for line in done.stdout.splitlines() if f"{rule} has no tags" in line]
        assert advice, done.stdout  # the control: there is advice to read
        assert "`ctxkeeper edit ID` in a person's terminal" in advice[0]
        assert "entries.json" not in done.stdout
