"""The guidance the model reads in ``structuredContent`` (issue 25): Claude Code hands the model
the structured result, not the text block, so each result carries a ``note`` and each entry a
label, and they say what the text block says. Run through the real tool registry and
``run_tool``, the way the server answers ``tools/call``."""

from __future__ import annotations

import jsonschema
import pytest

from ctxkeeper.core.store import Store
from ctxkeeper.core.wording import counted, listed
from ctxkeeper.mcp.toolcall import run_tool
from ctxkeeper.mcp.tools import load_tools
from ctxkeeper.write.verbs import agent_actor, record_entry, user_actor
from tests.conftest import constraint_fields, decision_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject


def call(store: Store, name: str, arguments: JSONObject) -> tuple[JSONObject, str]:
    """The structured result (checked against the tool's outputSchema) and the text block."""
    spec = next(s for s in load_tools(store.root) if s.name == name)
    result = run_tool(spec, arguments)
    assert result["isError"] is False, result
    structured = result["structuredContent"]
    assert isinstance(structured, dict)
    jsonschema.validate(structured, spec.output_schema)
    content = result["content"]
    assert isinstance(content, list)
    block = content[0]
    assert isinstance(block, dict)
    return structured, str(block["text"])


def person_rule(store: Store) -> str:
    return str(record_entry(store, "constraint", constraint_fields(), actor=user_actor())["id"])


def agent_rule(store: Store) -> str:
    fields = constraint_fields(
        rule="Refund requests are retried through the outbox table",
        reason="On 2025-07-03 a refund lost in a crashed worker was never sent to the bank.",
    )
    return str(record_entry(store, "constraint", fields, actor=agent_actor("s1"))["id"])


class TestContextNote:
    def test_missing_words_and_unreviewed_labels_are_in_the_structured_result(
        self, store: Store
    ) -> None:
        person, proposal = person_rule(store), agent_rule(store)
        structured, text = call(
            store, "get_context", {"query": "idempotency key refund retention policy"}
        )
        note = str(structured["note"])
        assert "nothing stored mentions retention or policy" in note
        assert "nothing stored mentions retention or policy" in text  # the same words
        results = structured["results"]
        assert isinstance(results, list)
        labels = {str(r["id"]): str(r["label"]) for r in results if isinstance(r, dict)}
        assert labels[proposal].startswith("proposed, unreviewed: not yet approved by a person")
        assert "recorded by the agent" in labels[proposal]
        # Control: the person's rule is labelled, and not as unreviewed.
        assert labels[person].startswith("active; recorded by a person")
        assert "unreviewed" not in labels[person]
        assert "1 result is proposed and unreviewed" in note

    def test_a_question_the_store_answers_mentions_nothing_missing(self, store: Store) -> None:
        person_rule(store)
        structured, _ = call(store, "get_context", {"query": "idempotency key on a charge"})
        assert "nothing stored mentions" not in str(structured["note"])
        assert str(structured["note"]).startswith("1 entry matched")


class TestPendingChange:
    def test_an_agent_change_to_a_persons_entry_says_it_awaits_approval(self, store: Store) -> None:
        person = person_rule(store)
        updated, text = call(
            store,
            "update_entry",
            {"id": person, "updates": {"tags": ["billing"]}, "reason": "tag it for billing"},
        )
        change = str(updated["change"])
        assert change.startswith("chg-")
        expected = f"awaits a person's approval (change {change}); {person} is unchanged"
        assert expected in str(updated["note"])
        assert expected in text
        got, _ = call(store, "get_entry", {"id": person})
        assert f"pending change {change} (update of tags) awaits a person's approval" in str(
            got["label"]
        )
        assert "stay in force until then" in str(got["note"])
        queried, _ = call(store, "query_entries", {})
        labels = queried["labels"]
        assert isinstance(labels, dict)
        assert f"pending change {change}" in str(labels[person])

    def test_control_the_agents_own_proposal_changes_at_once(self, store: Store) -> None:
        proposal = agent_rule(store)
        updated, _ = call(
            store,
            "update_entry",
            {"id": proposal, "updates": {"tags": ["refunds"]}, "reason": "tag it for refunds"},
        )
        assert str(updated["note"]).startswith(f"updated {proposal} to revision 2")
        assert "awaits" not in str(updated["note"])
        got, _ = call(store, "get_entry", {"id": proposal})
        assert "pending change" not in str(got["label"])
        assert "proposed, unreviewed" in str(got["label"])


class TestRecordNote:
    def test_a_proposal_says_it_is_unreviewed_and_not_delivered(self, store: Store) -> None:
        fields: JSONObject = {"kind": "constraint", **constraint_fields()}  # type: ignore[dict-item]
        structured, text = call(store, "record_entry", fields)
        note = str(structured["note"])
        assert note.startswith(f"recorded {structured['id']} as a proposal: unreviewed")
        assert "no hook delivers it" in note
        assert note in text

    def test_with_review_off_it_is_active(self, store: Store) -> None:
        config = store.path("config.json")
        with open(config, encoding="utf-8") as handle:
            text = handle.read()
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(text.replace('"review": "agent"', '"review": "off"'))
        fields: JSONObject = {"kind": "decision", **decision_fields()}  # type: ignore[dict-item]
        structured, _ = call(store, "record_entry", fields)
        assert str(structured["note"]) == f"recorded {structured['id']} (active)"


class TestSummaryCounts:
    def test_entries_and_changes_are_counted_apart(self, store: Store) -> None:
        person = person_rule(store)
        agent_rule(store)
        for tag in ("a", "b"):
            call(
                store,
                "update_entry",
                {"id": person, "updates": {"tags": [tag]}, "reason": f"tag it {tag} please"},
            )
        structured, text = call(store, "get_project_summary", {})
        assert structured["pending_review"] == 3
        assert "1 entry and 2 changes awaiting review" in text
        assert "1 entry and 2 changes awaiting a person's review" in str(structured["note"])
        assert "3 entries awaiting review" not in text
        assert text.startswith("2 entries; ")
        note = str(structured["note"])
        assert "1 hard constraint is scoped: each holds back the first edit of a file" in note
        # Control: a project-wide hard constraint is not counted as scoped.
        record_entry(
            store,
            "constraint",
            constraint_fields(
                rule="Secrets never appear in committed files",
                reason="A token committed in 2024 was scraped from the public mirror in an hour.",
                scope=[],
            ),
            actor=user_actor(),
        )
        again, _ = call(store, "get_project_summary", {})
        hard = again["hard_constraints"]
        assert isinstance(hard, list)
        assert len(hard) == 2
        assert "1 hard constraint is scoped" in str(again["note"])


class TestWording:
    @pytest.mark.parametrize(
        ("count", "expected"),
        [
            pytest.param(0, "0 entries", id="zero"),
            pytest.param(1, "1 entry", id="one"),
            pytest.param(2, "2 entries", id="two"),
        ],
    )
    def test_counted(self, count: int, expected: str) -> None:
        assert counted(count, "entry", "entries") == expected

    def test_listed(self) -> None:
        assert listed([]) == ""
        assert listed(["a"]) == "a"
        assert listed(["a", "b"]) == "a or b"
        assert listed(["a", "b", "c"], "and") == "a, b and c"

    @pytest.mark.parametrize(
        ("ids", "expected", "wrong"),
        [
            pytest.param(["a"], "1 new entry, 0 updated (1 awaits review", "1 new entries", id="1"),
            pytest.param(
                ["a", "b"], "2 new entries, 0 updated (2 await review", "2 new entry,", id="2"
            ),
        ],
    )
    def test_what_arrived_from_the_team(self, ids: list[str], expected: str, wrong: str) -> None:
        from ctxkeeper.write.exchange import summary_line

        line = summary_line({"added": list(ids), "updated": [], "awaiting_review": list(ids)})
        assert expected in line
        assert wrong not in line


class TestRetiredLabels:
    def test_superseded_and_tombstone_entries_say_they_are_not_in_force(self, store: Store) -> None:
        from ctxkeeper.write.verbs import deprecate_entry

        old = person_rule(store)
        new = str(
            record_entry(
                store,
                "constraint",
                constraint_fields(
                    rule="Every charge and refund request carries an idempotency key",
                    reason="On 2025-06-02 a refund retry paid one customer twice; refunds need it.",
                ),
                actor=user_actor(),
                supersedes=[old],
            )["id"]
        )
        gone = str(record_entry(store, "decision", decision_fields(), actor=user_actor())["id"])
        deprecate_entry(
            store, gone, "The scheduler runs as a single replica now", actor=user_actor()
        )
        queried, _ = call(store, "query_entries", {})
        labels = queried["labels"]
        assert isinstance(labels, dict)
        assert str(labels[old]).startswith(f"superseded by {new}: history, not current practice")
        assert str(labels[gone]).startswith("tombstone (deprecated): retired, not in force")
        assert str(labels[new]).startswith("active; ")  # control


class TestLongPaths:
    def test_a_path_past_the_limit_is_an_argument_error(self, store: Store) -> None:
        from ctxkeeper.mcp.tools import PATH_MAX

        spec = next(s for s in load_tools(store.root) if s.name == "get_context")
        long = run_tool(spec, {"path": "a/" * (PATH_MAX // 2) + "x.py"})
        assert long["isError"] is True
        assert "path is 4,100 characters long; a path may have at most 4,096" in str(
            long["content"]
        )
        assert run_tool(spec, {"path": "a/x.py"})["isError"] is False
