"""The CLI is a door too: run from an agent's shell, every write acts as the agent.

Each test runs the real CLI as a subprocess the way Claude Code's Bash tool runs it (its three
variables set, or a ``claude`` process among the ancestors) and pairs it with the same command
run by a person, which still writes directly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from ctxkeeper.core.store import Store
from tests.conftest import REPO_ROOT
from tests.mcp_wire import McpSession, child_env
from tests.terminal import person_env, require_person_ancestry
from tests.test_agentenv import fake_claude

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


AGENT = {"CLAUDECODE": "1", "AI_AGENT": "claude-code", "CLAUDE_CODE_SESSION_ID": "sess-42"}
PERSON_RULE = (
    "--rule",
    "Every charge request to the payment provider carries an idempotency key",
    "--reason",
    "On 2025-02-11 a retry storm double-charged forty customers at checkout.",
    "--hardness",
    "hard",
    "--scope",
    "src/billing/",
)
SOFTER_RULE = (
    "--rule",
    "Charge requests in staging may skip the idempotency key to keep tests quick",
    "--reason",
    "Staging runs against the provider's sandbox, where a double charge costs nothing.",
    "--hardness",
    "soft",
    "--scope",
    "src/billing/",
)


def cli(
    project: str, *argv: str, env: dict[str, str], prefix: list[str] | None = None
) -> Any:  # the CLI's JSON, read field by field
    """Run ``ctxkeeper ARGV --json`` and return its JSON (the exit status must be 0)."""
    done = subprocess.run(
        [*(prefix or []), sys.executable, "-m", "ctxkeeper", *argv, "--json"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=REPO_ROOT,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def person_rule(store: Store) -> str:
    result = cli(
        store.root, "add", "constraint", *PERSON_RULE, "--project-dir", store.root, env=person_env()
    )
    return str(result["id"])


def entry(store: Store, entry_id: str) -> Any:  # a stored entry, read field by field
    return store.get(entry_id)


def history(store: Store, entry_id: str) -> Any:  # journal records
    return store.history(entry_id)


def origins(store: Store, entry_id: str) -> list[tuple[str, str]]:
    return [(str(r["op"]), str(r["actor"]["origin"])) for r in history(store, entry_id)]


@pytest.mark.slow
class TestAddUnderAnAgent:
    def test_agent_add_with_supersedes_is_a_proposal_and_the_rule_stays(self, store: Store) -> None:
        old = person_rule(store)
        agent_env = person_env(**AGENT)
        result = cli(
            store.root,
            "add",
            "constraint",
            *SOFTER_RULE,
            "--supersedes",
            old,
            "--project-dir",
            store.root,
            env=agent_env,
        )
        new = str(result["id"])
        made = entry(store, new)
        assert (made["status"], made["origin"]) == ("proposed", "agent")
        rule = entry(store, old)
        assert rule["status"] == "active"
        assert rule["hardness"] == "hard"
        assert [c["op"] for c in rule["pending_changes"]] == ["supersede"]
        assert origins(store, new) == [("record", "agent")]
        assert history(store, new)[0]["actor"]["session_id"] == "sess-42"
        review = cli(store.root, "review", "--project-dir", store.root, env=agent_env)
        assert new in [item["id"] for item in review["results"]]
        # Control: the same command from a person's terminal supersedes at once.
        mine = cli(
            store.root,
            "add",
            "constraint",
            *SOFTER_RULE,
            "--supersedes",
            old,
            "--project-dir",
            store.root,
            env=person_env(),
        )
        assert entry(store, str(mine["id"]))["status"] == "active"
        assert entry(store, old)["status"] == "superseded"

    def test_a_claude_ancestor_alone_makes_it_the_agent(self, store: Store, tmp_path: Path) -> None:
        require_person_ancestry()
        launcher = fake_claude(tmp_path)
        under = cli(
            store.root,
            "add",
            "constraint",
            *SOFTER_RULE,
            "--project-dir",
            store.root,
            env=person_env(),
            prefix=[launcher],
        )
        assert entry(store, str(under["id"]))["status"] == "proposed"
        plain = person_rule(store)
        assert entry(store, plain)["status"] == "active"
        assert origins(store, plain) == [("record", "user")]

    def test_the_text_output_says_it_awaits_a_person(self, store: Store) -> None:
        old = person_rule(store)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ctxkeeper",
                "add",
                "constraint",
                *SOFTER_RULE,
                "--supersedes",
                old,
                "--project-dir",
                store.root,
            ],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=person_env(**AGENT),
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "as a proposal: it awaits a person's review" in done.stdout
        assert f"{old} stays in force until a person approves change chg-" in done.stdout


@pytest.mark.slow
class TestOtherWritesUnderAnAgent:
    def test_verify_is_journaled_as_the_agent(self, store: Store) -> None:
        rule = person_rule(store)
        cli(store.root, "verify", rule, "--project-dir", store.root, env=person_env(**AGENT))
        cli(store.root, "verify", rule, "--project-dir", store.root, env=person_env())
        assert origins(store, rule)[-2:] == [("verify", "agent"), ("verify", "user")]

    def test_a_hand_edit_found_under_an_agent_waits_for_a_person(self, store: Store) -> None:
        rule = person_rule(store)
        proposal = cli(
            store.root,
            "add",
            "constraint",
            *SOFTER_RULE,
            "--project-dir",
            store.root,
            env=person_env(**AGENT),
        )["id"]
        # What `sed -i` on entries.json from the agent's shell does: soften the person's rule
        # and approve the agent's own proposal.
        path = store.path("entries.json")
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        text = text.replace('"hardness": "hard"', '"hardness": "soft"').replace(
            '"status": "proposed"', '"status": "active"'
        )
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        done = subprocess.run(
            [sys.executable, "-m", "ctxkeeper", "doctor", "--repair", "--project-dir", store.root],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=person_env(**AGENT),
            timeout=60,
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr
        held = entry(store, rule)
        assert held["hardness"] == "hard"
        assert held["status"] == "active"
        [change] = held["pending_changes"]
        assert change["fields"] == {"hardness": "soft"}
        assert change["actor"]["origin"] == "agent"
        assert entry(store, str(proposal))["status"] == "proposed"
        assert all(origin == "agent" for op, origin in origins(store, str(proposal))[1:])
        # Control: the same hand edit by a person, found by their own doctor, applies as theirs.
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text.replace('"hardness": "hard"', '"hardness": "soft"', 1))
        cli(store.root, "doctor", "--repair", "--project-dir", store.root, env=person_env())
        assert entry(store, rule)["hardness"] == "soft"
        assert origins(store, rule)[-1] == ("manual_edit", "user")

    def test_a_hand_edit_found_by_the_mcp_server_waits_for_a_person(self, store: Store) -> None:
        rule = person_rule(store)
        path = store.path("entries.json")
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text.replace('"scope": ["src/billing"]', '"scope": []'))
        server = McpSession(
            [sys.executable, "-m", "ctxkeeper", "serve", "--project-dir", store.root],
            env=child_env(HOME=store.root),
        )
        try:
            result = server.call("verify_entry", {"id": rule})
        finally:
            server.close()
        assert not result.get("isError"), result
        held = entry(store, rule)
        assert held["scope"] == ["src/billing"]
        assert [c["fields"] for c in held["pending_changes"]] == [{"scope": []}]
        assert origins(store, rule)[-1] == ("verify", "agent")

    def test_phrasings_added_by_hand_apply_and_a_rule_change_beside_them_waits(
        self, store: Store
    ) -> None:
        first, second = (
            person_rule(store),
            cli(
                store.root,
                "add",
                "constraint",
                *SOFTER_RULE,
                "--project-dir",
                store.root,
                env=person_env(),
            )["id"],
        )
        asked = '"asked_as": ["why are charges sent twice", "double charge on retry"], '
        path = store.path("entries.json")
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        # The first entry gets phrasings alone; the second phrasings and a softer hardness.
        hard, soft = '"hardness": "hard", ', '"hardness": "soft", '
        text = text.replace(hard, hard + asked, 1).replace(soft, '"hardness": "hard", ' + asked)
        assert text.count("asked_as") == 2
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        server = McpSession(
            [sys.executable, "-m", "ctxkeeper", "serve", "--project-dir", store.root],
            env=child_env(HOME=store.root),
        )
        try:
            result = server.call("verify_entry", {"id": first})
        finally:
            server.close()
        assert not result.get("isError"), result
        applied = entry(store, first)
        assert applied["asked_as"] == ["why are charges sent twice", "double charge on retry"]
        assert "pending_changes" not in applied
        assert ("manual_edit", "agent") in origins(store, first)
        held = entry(store, str(second))
        assert (held["hardness"], held.get("asked_as")) == ("soft", None)
        [change] = held["pending_changes"]
        assert set(change["fields"]) == {"asked_as", "hardness"}
