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
