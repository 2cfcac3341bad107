from __future__ import annotations

from ctxkeeper.cli.demo import run_demo


class TestDemo:
    def test_walkthrough_shows_each_capability(self) -> None:
        lines: list[str] = []
        assert run_demo(lines.append) == 0
        text = "\n".join(lines)
        assert "refused: constraint field 'reason' is 4 characters; the minimum is 40" in text
        assert "src/billing/charge.py: con-001-" in text
        assert "src/billing_legacy/charge.py: nothing applies" in text
        assert "update by user" in text
        assert "+ alternatives:" in text
        assert "agent's update_entry: pending=True, change chg-" in text
        assert "[hard] Every call to the payment provider" in text
        assert "still delivered for src/billing/charge.py: True" in text
        assert "refused: previously_rejected" in text
        # The person's review: an agent's proposal approved, one rejected and refused again.
        assert "(status proposed)" in text
        assert "person approved dec-002-" in text
        assert "the agent records it again, reworded: refused: previously_rejected" in text
        assert "(rejected; similarity" in text
        # The team side: a fresh clone imports the snapshot and holds the same entries.
        assert "teammate: from the team snapshot: 5 new entries" in text
        assert "both clones hold the same 5 entries: True" in text
        assert "'what is our Postgres backup retention policy?': no confident match" in text
        assert "'how do we keep the invoice job from running twice?': answer: dec-001-" in text

    def test_shows_the_held_back_first_edit_and_the_plugin(self) -> None:
        said: list[str] = []
        assert run_demo(said.append) == 0
        text = "\n".join(said)
        lines = text.splitlines()
        held = lines.index(
            "  the agent's first Edit of src/billing/charge.py: held back (permissionDecision deny)"
        )
        # The exact text the edit hook gives the agent, quoted line by line.
        reason = [line[4:] for line in lines[held + 2 :] if line.startswith("  | ")]
        assert reason[0] == (
            'ctxkeeper: "src/billing/charge.py" is governed by 1 hard constraint; this edit was '
            "held back before it ran, so that you read it in full before changing it:"
        )
        assert '    rule: "Every call to the payment provider carries an idempotency key"' in reason
        assert reason[-1].startswith("The same edit may be re-issued once it complies with it")
        # The control: the re-issued edit of the same file goes through.
        assert "  the same Edit re-issued: goes through" in lines
        assert "claude plugin install ctxkeeper@ctxkeeper" in text
