"""What the person approves is what they saw (issue 22, section 3), on a real terminal.

The person runs a human verb (`approve ID`, `reject ID`, `lift ID`, or `review` and a key) on
a pseudo-terminal; while its question waits, another process changes what it shows: the agent
through the real MCP server over stdio, or through its Bash tool (a `sed` on the store). The
person's answer must then be refused as stale, write nothing, and show the new version. Each
test's control runs the same verb again with nothing moving, and the answer applies.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from ctxkeeper.cli import review
from ctxkeeper.core.changes import changes_of
from ctxkeeper.write.verbs import agent_actor, record_entry, user_actor
from tests.conftest import constraint_fields
from tests.mcp_wire import McpSession, child_env
from tests.terminal import Session, person_env, require_person_ancestry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ctxkeeper.core.store import Store

pytestmark = pytest.mark.slow

SHOWN_RULE = "Log every refund request with the operator id for the audit trail"
SWAPPED_RULE = "Refunds may be issued without logging the operator id"
REFUND = {
    "kind": "constraint",
    "rule": SHOWN_RULE,
    "reason": "Finance reconciles refunds against the operator who issued them every month.",
    "hardness": "soft",
    "scope": ["src/billing/"],
}
#: The agent's edit of its own proposal: reworded, hard and project-wide.
SWAP = {"rule": SWAPPED_RULE, "hardness": "hard", "scope": []}
QUESTION = "[y/N]"
QUEUE_PROMPT = "[q]uit > "


def flat(text: str) -> str:
    """``text`` with its line wrapping undone (any run of whitespace as one space)."""
    return " ".join(text.split())


@pytest.fixture
def agent(store: Store) -> Iterator[McpSession]:
    """The agent: one session with the real `ctxkeeper serve` over stdio."""
    command = [sys.executable, "-m", "ctxkeeper", "serve", "--project-dir", store.root]
    session = McpSession(command, env=child_env(HOME=store.root))
    try:
        yield session
    finally:
        session.close()


def call(agent: McpSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = agent.call(tool, arguments)
    assert not result.get("isError"), result
    structured = result["structuredContent"]
    assert isinstance(structured, dict)
    return structured


def agent_proposes(agent: McpSession, fields: dict[str, Any] = REFUND) -> str:
    done = call(agent, "record_entry", dict(fields))
    assert done["entry"]["status"] == "proposed"
    return str(done["id"])


def agent_swaps(agent: McpSession, entry_id: str, updates: dict[str, Any] = SWAP) -> None:
    """The agent edits its own proposal (allowed while it is proposed): it applies at once."""
    done = call(
        agent,
        "update_entry",
        {"id": entry_id, "updates": updates, "reason": "refined the rule while reviewing it"},
    )
    assert done["pending"] is False


def ops_of(store: Store, entry_id: str) -> list[str]:
    return [str(r["op"]) for r in store.read_journal() if r.get("id") == entry_id]


class TestApprove:
    def test_a_proposal_reworded_while_the_question_waits_is_not_approved(
        self, store: Store, agent: McpSession
    ) -> None:
        require_person_ancestry()
        proposal = agent_proposes(agent)
        person = Session(store.root, ["approve", proposal])
        shown = flat(person.expect(QUESTION))
        assert SHOWN_RULE in shown
        assert "hardness: soft" in shown
        assert "scope: src/billing" in shown
        agent_swaps(agent, proposal)
        person.type("y\n")
        status, out = person.finish()
        said = flat(out[out.index(QUESTION) :])
        assert status == 1, out
        assert "not approved" in said
        assert "changed after it was shown to you" in said
        assert f"+ rule: {SWAPPED_RULE}" in said
        assert "+ hardness: hard" in said
        assert f"ctxkeeper approve {proposal}` again" in said
        entry = store.get(proposal)
        assert (entry["status"], entry["rule"], entry["scope"]) == ("proposed", SWAPPED_RULE, [])
        assert ops_of(store, proposal) == ["record", "update"]
        # Control: nothing moves while the question waits, and `y` approves what was shown.
        person = Session(store.root, ["approve", proposal])
        shown = flat(person.expect(QUESTION))
        assert SWAPPED_RULE in shown
        assert "hardness: hard" in shown
        person.type("y\n")
        status, out = person.finish()
        assert status == 0, out
        assert store.get(proposal)["status"] == "active"
        last = store.read_journal()[-1]
        assert (last["op"], last["id"]) == ("approve", proposal)
        actor = last["actor"]
        assert isinstance(actor, dict)
        assert actor["origin"] == "user"

    def test_a_successor_reworded_while_its_supersession_waits_supersedes_nothing(
        self, store: Store, agent: McpSession
    ) -> None:
        require_person_ancestry()
        rule = str(record_entry(store, "constraint", constraint_fields(), actor=user_actor())["id"])
        successor_fields = {
            "kind": "constraint",
            "rule": "Charge requests carry an idempotency key the client generates",
            "reason": "Server-made keys were lost on timeouts, so the client's retry got a new one.",
            "hardness": "hard",
            "scope": ["src/billing/"],
            "supersedes": [rule],
        }
        successor = agent_proposes(agent, successor_fields)
        [waiting] = changes_of(store.get(rule))
        change = str(waiting["change"])
        skip = "Charge requests may skip the idempotency key in staging"
        person = Session(store.root, ["approve", change])
        shown = flat(person.expect(QUESTION))
        assert str(successor_fields["rule"]) in shown
        assert f"supersede {rule}" in shown
        agent_swaps(agent, successor, {"rule": skip, "scope": []})
        person.type("y\n")
        status, out = person.finish()
        said = flat(out[out.index(QUESTION) :])
        assert status == 1, out
        assert f"{change} changed after it was shown to you" in said
        assert f"+ rule: {skip}" in said
        assert store.get(successor)["status"] == "proposed"
        assert store.get(successor)["rule"] == skip
        kept = store.get(rule)
        assert kept["status"] == "active"
        assert kept["pending_changes"]
        # Control: the supersession approved as shown now.
        person = Session(store.root, ["approve", change])
        assert skip in flat(person.expect(QUESTION))
        person.type("y\n")
        status, out = person.finish()
        assert status == 0, out
        assert store.get(successor)["status"] == "active"
        assert store.get(rule)["status"] == "superseded"


class TestRejectAndLift:
    def test_a_rejection_does_not_tombstone_what_the_person_never_read(
        self, store: Store, agent: McpSession
    ) -> None:
        require_person_ancestry()
        proposal = agent_proposes(agent)
        why = ["--reason", "we already log refunds in the ledger service"]
        person = Session(store.root, ["reject", proposal, *why])
        assert SHOWN_RULE in flat(person.expect(QUESTION))
        agent_swaps(agent, proposal)
        person.type("y\n")
        status, out = person.finish()
        said = flat(out[out.index(QUESTION) :])
        assert status == 1, out
        assert "not rejected" in said
        assert f"+ rule: {SWAPPED_RULE}" in said
        assert store.get(proposal)["status"] == "proposed"
        assert ops_of(store, proposal) == ["record", "update"]
        # Control: the same rejection with nothing moving makes the tombstone.
        person = Session(store.root, ["reject", proposal, *why])
        assert SWAPPED_RULE in flat(person.expect(QUESTION))
        person.type("y\n")
        status, out = person.finish()
        assert status == 0, out
        assert store.get(proposal)["status"] == "rejected"
        assert ops_of(store, proposal)[-1] == "reject"

    def test_a_tombstone_hand_edited_while_the_lift_waits_is_not_lifted(self, store: Store) -> None:
        require_person_ancestry()
        fields = {key: value for key, value in REFUND.items() if key != "kind"}
        tombstone = str(record_entry(store, "constraint", fields, actor=agent_actor())["id"])
        review.reject(store, [tombstone], "Refund logging lives in the ledger.", actor=user_actor())
        person = Session(store.root, ["lift", tombstone])
        assert SHOWN_RULE in flat(person.expect(QUESTION))
        # The agent's Bash tool rewrites the stored text behind the store's back.
        agent_env = person_env(CLAUDECODE="1", AI_AGENT="claude-code", CLAUDE_CODE_SESSION_ID="s1")
        subprocess.run(
            ["sed", "-i", f"s/{SHOWN_RULE}/{SWAPPED_RULE}/", store.path("entries.json")],
            env=agent_env,
            check=True,
            timeout=30,
        )
        person.type("y\n")
        status, out = person.finish()
        said = flat(out[out.index(QUESTION) :])
        assert status == 1, out
        assert "not lifted" in said
        assert f"+ rule: {SWAPPED_RULE}" in said
        assert store.get(tombstone)["status"] == "rejected"
        assert ops_of(store, tombstone) == ["record", "reject"]
        # Control: lifting the version it holds now, with nothing moving, goes through.
        person = Session(store.root, ["lift", tombstone])
        assert SWAPPED_RULE in flat(person.expect(QUESTION))
        person.type("y\n")
        status, out = person.finish()
        assert status == 0, out
        assert store.get(tombstone)["status"] == "proposed"
        assert ops_of(store, tombstone)[-1] == "lift"


class TestReviewQueue:
    def test_an_item_reworded_while_the_person_reads_it_is_shown_again(
        self, store: Store, agent: McpSession
    ) -> None:
        require_person_ancestry()
        proposal = agent_proposes(agent)
        env = person_env(COLUMNS="80", TERM="xterm", NO_COLOR="1")
        person = Session(store.root, ["review"], env=env)
        screen = flat(person.expect(QUEUE_PROMPT))
        assert SHOWN_RULE in screen
        assert "hardness: soft" in screen
        agent_swaps(agent, proposal)
        person.type("a")
        again = flat(person.expect(QUEUE_PROMPT))
        assert f"not approved: {proposal} changed while you read it" in again
        assert f"+ rule: {SWAPPED_RULE}" in again
        assert "shown again below" in again
        # The item itself, re-shown as it stands now, after the notice.
        shown_again = again[again.index("shown again below") :]
        assert SWAPPED_RULE in shown_again
        assert "hardness: hard" in shown_again
        assert store.get(proposal)["status"] == "proposed"
        assert ops_of(store, proposal) == ["record", "update"]
        # Control: nothing moves now, and the same key approves the version on the screen.
        person.type("a")
        status, out = person.finish()
        assert status == 0, out
        assert "approved 1" in flat(out)
        assert store.get(proposal)["status"] == "active"
        assert store.get(proposal)["rule"] == SWAPPED_RULE
        assert ops_of(store, proposal)[-1] == "approve"
