"""Agent detection for the human verbs: the environment Claude Code sets and a ``claude``
ancestor, on a real process table and through the real CLI on a pseudo-terminal."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ctxkeeper.cli.agentenv import AGENT_ENV_VARS, agent_signs, ancestors
from ctxkeeper.write.verbs import agent_actor, record_entry, user_actor
from tests.conftest import constraint_fields, decision_fields
from tests.terminal import on_terminal, person_env, require_person_ancestry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core.store import Store

#: A launcher named ``claude`` that stays the CLI's parent (it does not exec it).
FAKE_CLAUDE = '#!/bin/sh\n"$@"\nexit $?\n'


def fake_claude(tmp_path: Path) -> str:
    path = tmp_path / "bin" / "claude"
    path.parent.mkdir()
    path.write_text(FAKE_CLAUDE)
    path.chmod(0o755)
    return str(path)


class TestSigns:
    @pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in AGENT_ENV_VARS])
    def test_each_variable_is_a_sign(self, name: str) -> None:
        assert agent_signs({name: "1"}, proc="/nonexistent") == [f"{name} is set"]
        assert agent_signs({"HOME": "/root"}, proc="/nonexistent") == []

    def test_real_process_table_names_a_claude_ancestor(self, tmp_path: Path) -> None:
        launcher = fake_claude(tmp_path)
        probe = (
            "import os, sys; from ctxkeeper.cli.agentenv import agent_signs; print(agent_signs({}))"
        )
        env = person_env()
        under = subprocess.run(
            [launcher, sys.executable, "-c", probe],
            check=False,
            capture_output=True,
            text=True,
            env=env,
        )
        assert "process 'claude'" in under.stdout, under.stderr
        plain = subprocess.run(
            [sys.executable, "-c", probe], check=False, capture_output=True, text=True, env=env
        )
        if "claude" not in [name for _, name in ancestors(os.getpid())]:
            assert plain.stdout.strip() == "[]"

    def test_ancestry_walk_ends_at_init_and_names_this_process(self) -> None:
        walked = list(ancestors(os.getpid()))
        assert walked[0][0] == os.getpid()
        assert os.path.basename(sys.executable) in {
            name for pid, name in walked if pid == os.getpid()
        }
        assert walked[-1][0] == 1  # init (or the container's first process)
        assert list(ancestors(os.getpid(), proc="/nonexistent")) == []


def _two_proposals(store: Store) -> tuple[str, str]:
    first = str(record_entry(store, "decision", decision_fields(), actor=agent_actor())["id"])
    second = str(record_entry(store, "constraint", constraint_fields(), actor=agent_actor())["id"])
    return first, second


@pytest.mark.slow
class TestHumanVerbsUnderAnAgent:
    @pytest.mark.parametrize(
        "verb",
        [
            pytest.param(["approve", "ID"], id="approve"),
            pytest.param(["reject", "ID", "--reason", "not what we want here"], id="reject"),
            pytest.param(["lift", "ID"], id="lift"),
            pytest.param(["purge", "ID", "--reason", "recorded by mistake today"], id="purge"),
            pytest.param(["review"], id="review"),
        ],
    )
    def test_claude_code_environment_is_refused(self, store: Store, verb: list[str]) -> None:
        require_person_ancestry()
        entry_id, _ = _two_proposals(store)
        argv = [entry_id if arg == "ID" else arg for arg in verb]
        before = store.read_journal()
        claude_env = person_env(CLAUDECODE="1", AI_AGENT="claude-code", CLAUDE_CODE_SESSION_ID="s1")
        code, out = on_terminal(store.root, argv, b"y\n", env=claude_env)
        assert code == 1, out
        assert "run it in your own terminal" in out
        assert "CLAUDECODE is set" in out
        assert "[y/N]" not in out
        assert store.read_journal() == before

    def test_control_without_the_variables_succeeds(self, store: Store) -> None:
        require_person_ancestry()
        entry_id, _ = _two_proposals(store)
        code, out = on_terminal(store.root, ["review"], b"ss")  # skip both proposals
        assert code == 0, out
        assert entry_id in out
        code, out = on_terminal(store.root, ["approve", entry_id], b"y\n")
        assert code == 0, out
        assert store.get(entry_id)["status"] == "active"

    def test_review_json_stays_open_to_the_agent(self, store: Store) -> None:
        entry_id, _ = _two_proposals(store)
        done = subprocess.run(
            [sys.executable, "-m", "ctxkeeper", "review", "--json", "--project-dir", store.root],
            check=False,
            capture_output=True,
            text=True,
            env=person_env(CLAUDECODE="1"),
        )
        assert done.returncode == 0, done.stderr
        assert entry_id in done.stdout

    def test_a_claude_ancestor_is_refused(self, store: Store, tmp_path: Path) -> None:
        require_person_ancestry()
        entry_id, _ = _two_proposals(store)
        launcher = fake_claude(tmp_path)
        code, out = on_terminal(store.root, ["approve", entry_id], b"y\n", prefix=[launcher])
        assert code == 1, out
        assert "process 'claude'" in out
        assert store.get(entry_id)["status"] == "proposed"
        # Control: the same launcher under another name is a person's shell script.
        other = tmp_path / "bin" / "launch"
        other.write_text(FAKE_CLAUDE)
        other.chmod(0o755)
        code, out = on_terminal(store.root, ["approve", entry_id], b"y\n", prefix=[str(other)])
        assert code == 0, out
        assert store.get(entry_id)["status"] == "active"


@pytest.mark.slow
class TestQuestionComesLast:
    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            pytest.param(["approve", "con-404-abcd"], "no entry with id", id="unknown-id"),
            pytest.param(["approve", "nonsense"], "neither an entry id", id="bad-id"),
            pytest.param(["approve", "chg-0000abcd"], "no pending change", id="unknown-change"),
            pytest.param(["reject", "FIRST", "--reason", "no"], "at least 10", id="short-reason"),
            pytest.param(["approve", "FIRST", "ACTIVE"], "no pending change", id="one-bad-of-two"),
            pytest.param(["lift", "FIRST"], "not a tombstone", id="lift-live"),
        ],
    )
    def test_bad_ids_and_reasons_are_refused_before_asking(
        self, store: Store, argv: list[str], message: str
    ) -> None:
        require_person_ancestry()
        first, _ = _two_proposals(store)
        active = str(
            record_entry(
                store,
                "decision",
                decision_fields(summary="A person's own choice here"),
                actor=user_actor(),
            )["id"]
        )
        argv = [{"FIRST": first, "ACTIVE": active}.get(arg, arg) for arg in argv]
        before = store.read_journal()
        code, out = on_terminal(store.root, argv, b"y\n")
        assert code in (1, 2), out
        assert message in out
        assert "[y/N]" not in out
        assert store.read_journal() == before
        # Control: a valid id is asked about, and the question comes after the listing.
        code, out = on_terminal(store.root, ["approve", first], b"n\n")
        assert code == 1
        assert out.index(first) < out.index("[y/N]")
        assert "cancelled" in out
