"""The README's "A five-minute walk", as written, with the real Claude Code client.

tests/test_readme_walk.py runs the walk's shell commands and skips the two blocks that need
Claude Code or a terminal. Here the whole walk runs in order, each block read from README.md:
the person's commands with this checkout's CLI and no agent variables; step 3's ``claude`` line
as a headless session of the real client (2.1.332) with the plugin installed as the README's
Install section says, the model played by the loopback stand-in; step 5's ``ctxkeeper review``
on a real pseudo-terminal, where the person presses ``a``.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.e2e.claude_session import MCP_PREFIX, Session, Workspace
from tests.e2e.model_standin import ToolCall
from tests.e2e.test_claude_code import install_clean
from tests.terminal import Session as Terminal
from tests.test_readme_walk import (
    README_ID,
    WALK,
    Block,
    blocks,
    make_repository,
    make_shim,
    person_env,
    readme,
    readme_transcript,
    real_ids,
    run_command,
    section,
    with_real_ids,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

pytestmark = pytest.mark.slow

#: The decision step 5 asks the agent to record ("store money as integer cents").
CENTS = {
    "kind": "decision",
    "summary": "Store money as integer cents",
    "problem": "Float amounts rounded differently in the invoice total and the ledger export.",
    "why_chosen": (
        "Integer cents are exact, compare equal across services, and the payment provider "
        "already takes amounts in minor units."
    ),
}
#: src/billing/charge.py as tests/test_readme_walk.py's repository holds it, and the agent's edits.
ORIGINAL = "def charge():\n    pass\n"
FIRST_TRY = "def charge(amount):\n    return retry(lambda: provider.charge(amount))\n"
COMPLYING = (
    "def charge(amount, key):\n"
    "    return retry(lambda: provider.charge(amount, idempotency_key=key))\n"
)
#: Another file under the rule's folder: not held back again once the rule was shown.
SIBLING = "def refund(amount, key):\n    return provider.refund(amount, idempotency_key=key)\n"
REVIEW_PROMPT = "[q]uit > "
#: What Claude Code 2.1.332 puts before a PreToolUse hook's deny reason in the tool result the
#: model reads; the rest is the hook's reason, verbatim (the README shows the reason alone).
CLIENT_PREFIX = "PreToolUse:Edit hook error: "


def the_prompt(block: Block) -> str:
    """Step 3's task for the agent, from the README's ``claude "..."`` line."""
    (command,) = block.commands
    program, prompt = shlex.split(command)
    assert program == "claude", command
    return prompt


def run_as_person(project: Path, env: dict[str, str], command: str) -> str:
    """One README command in the person's shell, README ids read as this run's; its output."""
    real = with_real_ids(command, real_ids(project, env)) if README_ID.search(command) else command
    done = run_command(project, env, real)
    assert done.returncode == 0, f"`{command}`: {done.stdout}\n{done.stderr}"
    return done.stdout


def agent_session(space: Workspace, prompt: str) -> Session:
    """Steps 3-5 in the real client: the agent reads charge.py, tries the retry, is held back,
    re-issues the edit with a key, writes a sibling file, then records the decision."""
    charge = str(space.project / "src" / "billing" / "charge.py")
    refund = str(space.project / "src" / "billing" / "refund.py")
    edit = {"file_path": charge, "old_string": ORIGINAL, "new_string": FIRST_TRY}
    complying = {"file_path": charge, "old_string": ORIGINAL, "new_string": COMPLYING}
    return space.run(
        [
            [ToolCall("Read", {"file_path": charge})],
            [ToolCall("Edit", edit)],
            [ToolCall("Edit", complying)],
            [ToolCall("Write", {"file_path": refund, "content": SIBLING})],
            [ToolCall(MCP_PREFIX + "record_entry", CENTS)],
            "done",
        ],
        plugin_dir=None,
        prompt=prompt,
    )


def review_on_a_terminal(project: Path, env: dict[str, str], command: str) -> str:
    """Step 5's ``ctxkeeper review`` typed in the person's terminal; ``a`` at the one item."""
    screen = Terminal(
        str(project),
        [],
        env={**env, "COLUMNS": "80", "TERM": "xterm"},
        command=["bash", "-c", command],
    )
    shown = screen.expect(REVIEW_PROMPT)
    screen.type("a")
    code, text = screen.finish()
    assert code == 0, text
    return shown + text


def listed(project: Path, env: dict[str, str]) -> dict[str, JSONObject]:
    out = json.loads(run_as_person(project, env, "ctxkeeper list --json"))
    return {str(e["id"]): e for e in out["results"]}


class TestTheWalkInClaudeCode:
    def test_the_walk_as_written(self, tmp_path: Path) -> None:
        space = Workspace(tmp_path)
        space.project.rmdir()
        make_repository(space.project)
        charge = space.project / "src" / "billing" / "charge.py"
        assert charge.read_text(encoding="utf-8") == ORIGINAL
        env = person_env(make_shim(tmp_path / "bin"))
        # Install, as the README's Install section says: a marketplace from a clone, then the
        # plugin (no --plugin-dir), under this throwaway HOME.
        install = section(readme(), "Install")
        assert "claude plugin marketplace add" in install
        assert "claude plugin install ctxkeeper@ctxkeeper" in install
        install_clean(space, tmp_path)

        walk = blocks(readme(), WALK)
        assert [b.skip for b in walk].count("needs claude") == 1
        assert [b.skip for b in walk].count("needs a terminal") == 1
        session: Session | None = None
        proposal: dict[str, JSONObject] = {}
        shown_review = ""
        printed: dict[str, str] = {}
        for block in walk:
            if block.skip == "needs claude":
                session = agent_session(space, the_prompt(block))
                proposal = listed(space.project, env)
            elif block.skip == "needs a terminal":
                (command,) = block.commands
                shown_review = review_on_a_terminal(space.project, env, command)
            else:
                assert block.exit_code == 0, block
                for command in block.commands:
                    printed[command] = run_as_person(space.project, env, command)
        assert session is not None

        # Steps 1-2: the person's rule, active at once.
        rule_id = real_ids(space.project, env)["con-001"]
        assert printed["ctxkeeper list"].count(rule_id) == 1
        # Step 3: the README's prompt reached the model.
        assert the_prompt(next(b for b in walk if b.skip == "needs claude")) in session.sent(0)
        # Step 4: the session-start summary carried the rule...
        assert "SessionStart hook additional context" in session.sent(0)
        assert "Every call to the payment provider carries an idempotency key" in session.sent(0)
        # ...the Read ran, the first Edit was held back with exactly the README's text...
        assert not session.tool_result(0).get("is_error"), session.tool_text(0)
        denial = session.tool_result(1)
        assert denial.get("is_error") is True, denial
        transcript = README_ID.sub(
            lambda m: rule_id if m.group(1) == "con" else m.group(0), readme_transcript()
        )
        assert transcript != readme_transcript()  # the README's id was swapped for this run's
        assert session.tool_text(1) == CLIENT_PREFIX + transcript, repr(session.tool_text(1))
        # ...the re-issued edit went through, and another file in src/billing/ was not held back.
        assert not session.tool_result(2).get("is_error"), session.tool_text(2)
        assert charge.read_text(encoding="utf-8") == COMPLYING
        assert not session.tool_result(3).get("is_error"), session.tool_text(3)
        assert (space.project / "src" / "billing" / "refund.py").read_text() == SIBLING
        assert "idempotency key" not in session.after(3)

        # Step 5: record_entry made a proposal, unreviewed until the person's review.
        recorded = json.loads(session.tool_text(4))
        decision_id = str(recorded["id"])
        assert decision_id.startswith("dec-001-")
        assert "unreviewed until a person approves it" in recorded["note"]
        before = proposal[decision_id]
        assert (before["status"], before["origin"]) == ("proposed", "agent")
        assert before["summary"] == CENTS["summary"]
        # The terminal showed the whole entry and the keys; `a` approved it.
        flat = " ".join(shown_review.split())
        assert decision_id in flat
        assert CENTS["why_chosen"] in flat
        assert all(key in flat for key in ("[a]", "[r]", "[e]", "[s]", "[q]uit"))
        after = listed(space.project, env)
        assert after[decision_id]["status"] == "active"
        assert after[rule_id]["status"] == "active"
        approvals = [
            event
            for event in journal(space.project)
            if event.get("id") == decision_id and event.get("op") != "record"
        ]
        assert [e["op"] for e in approvals] == ["approve"]
        actor = approvals[0]["actor"]
        assert isinstance(actor, dict)
        assert actor["origin"] == "user"  # the person, not the agent that recorded it
        history = run_as_person(space.project, env, f"ctxkeeper history {decision_id}")
        assert re.search(r"^#2 +seq \d+ +\S+ +approve +by user \(", history, re.MULTILINE), history
        assert re.search(r"^#1 +seq \d+ +\S+ +record +by agent ", history, re.MULTILINE), history
        # The walk's last block: nothing awaits review now, and the store is sound.
        queue = json.loads(printed["ctxkeeper review --json"])
        assert (queue["results"], queue["changes"], queue["total"]) == ([], [], 0), queue
        status = printed["ctxkeeper status"]
        assert re.search(r"^active +1 +1 +0 +2$", status, re.MULTILINE), status
        assert re.search(r"^pending review +nothing awaits a person$", status, re.MULTILINE)
        assert re.search(r"^journal +chain verified", status, re.MULTILINE), status


def journal(project: Path) -> list[JSONObject]:
    path = project / ".context" / "journal.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
