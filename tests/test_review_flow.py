"""The review flow end to end: an agent in a real MCP client session against the real server
proposes changes to a person's rules, and the person decides them with the real CLI on a
pseudo-terminal. What is delivered, what the statuses are and what the journal says must be
what that person would expect at every step."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest

from ctxkeeper.core.store import Store
from tests.mcp_wire import child_env, prepare_real_store
from tests.terminal import on_terminal, person_env, require_person_ancestry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

BILLING = "src/billing/charge.py"
WEBHOOKS = "src/webhooks/send.py"
PERSON_RULES: list[list[str]] = [
    [
        "constraint",
        "--rule",
        "Every charge request carries an idempotency key",
        "--reason",
        "On 2025-02-11 a retry storm double-charged forty customers at checkout.",
        "--hardness",
        "hard",
        "--scope",
        "src/billing/",
    ],
    [
        "constraint",
        "--rule",
        "Webhook deliveries are retried with exponential backoff",
        "--reason",
        "Partners rate-limit bursts; a flat retry loop got us blocked for a whole day in May.",
        "--hardness",
        "soft",
        "--scope",
        "src/webhooks/",
    ],
    [
        "decision",
        "--summary",
        "Use PostgreSQL advisory locks for the job scheduler",
        "--problem",
        "Two scheduler replicas ran the nightly invoice job at the same time.",
        "--why-chosen",
        (
            "Advisory locks live in the database we already run, release on disconnect and "
            "need no new infrastructure, unlike a separate coordination service."
        ),
        "--scope",
        "src/scheduler/",
    ],
]
SUCCESSOR = {
    "kind": "decision",
    "summary": "Render invoices as PDF on the worker queue",
    "problem": "Rendering invoices inside the web request timed out for large merchants.",
    "why_chosen": (
        "The worker queue already retries and isolates slow jobs, so long renders no longer "
        "hold a web worker or hit the gateway timeout."
    ),
}


def person_adds(project: str, argv: list[str]) -> str:
    """A person records an entry with the real CLI (no terminal needed for add)."""
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeeper", "add", *argv, "--project-dir", project, "--json"],
        capture_output=True,
        text=True,
        env=person_env(),
        stdin=subprocess.DEVNULL,
        check=True,
        timeout=60,
    )
    return str(json.loads(done.stdout)["id"])


def person_runs(project: str, *argv: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *argv, "--project-dir", project, "--json"],
        capture_output=True,
        text=True,
        env=person_env(),
        stdin=subprocess.DEVNULL,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout)


class Agent:
    """One MCP client session, as the agent sees the server: structured result and text."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[Any, str]:
        result = await self.session.call_tool(name, arguments)
        wire = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        assert not wire.get("isError"), wire
        text = "\n".join(block.get("text", "") for block in wire["content"])
        return wire["structuredContent"], text

    async def delivered(self, path: str) -> dict[str, Any]:
        structured, _ = await self.call("get_context", {"path": path})
        return {item["id"]: item["entry"] for item in structured["results"]}


async def flow(project: str, ids: dict[str, str]) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    rule, retry, locks = ids["rule"], ids["retry"], ids["locks"]
    seen: dict[str, Any] = {}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ctxkeeper", "serve", "--project-dir", project],
        env=child_env(HOME=project),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        agent = Agent(session)
        # 1. The agent proposes three changes to the person's entries.
        seen["update"] = await agent.call(
            "update_entry",
            {
                "id": rule,
                "updates": {
                    "rule": "Charge requests carry an idempotency key where the provider needs one",
                    "hardness": "soft",
                },
                "reason": "the provider now deduplicates some charge types itself",
            },
        )
        seen["deprecate"] = await agent.call(
            "deprecate_entry",
            {"id": retry, "reason": "The partner gateway now retries deliveries for us."},
        )
        seen["supersede"] = await agent.call("record_entry", {**SUCCESSOR, "supersedes": [locks]})
        # 2. Nothing the person recorded has moved; the rules are still delivered as they were.
        seen["billing_before"] = await agent.delivered(BILLING)
        seen["webhooks_before"] = await agent.delivered(WEBHOOKS)
        seen["get_rule"] = await agent.call("get_entry", {"id": rule})
        seen["summary_before"] = await agent.call("get_project_summary", {})
        # 3. A person reviews and decides at their own terminal, while the session is open.
        successor = str(seen["supersede"][0]["id"])
        change_of_retry = str(seen["deprecate"][0]["change"])
        # The queue: skip each item (the update, the deprecation, the successor) to see them all.
        seen["review_text"] = on_terminal(project, ["review"], b"sss")
        seen["approve"] = on_terminal(project, ["approve", rule], b"y\n")
        seen["reject_retry"] = on_terminal(
            project, ["reject", change_of_retry, "--reason", "Keep our own backoff."], b"y\n"
        )
        seen["reject_successor"] = on_terminal(
            project, ["reject", successor, "--reason", "Unrelated to scheduling."], b"yes\n"
        )
        # 4. The agent, in the same session, now gets what the person decided.
        seen["billing_after"] = await agent.delivered(BILLING)
        seen["webhooks_after"] = await agent.delivered(WEBHOOKS)
        seen["summary_after"] = await agent.call("get_project_summary", {})
        seen["update_locks"] = await agent.call(
            "update_entry",
            {"id": locks, "updates": {"tags": ["scheduler"]}, "reason": "tag it for the team"},
        )
    return seen


class TestReviewFlow:
    def test_agent_proposes_person_approves_one_and_rejects_two(self, tmp_path: Path) -> None:
        require_person_ancestry()
        project = str(tmp_path / "project")
        (tmp_path / "project").mkdir()
        prepare_real_store(project)
        rule, retry, locks = (person_adds(project, argv) for argv in PERSON_RULES)
        store = Store.open(project)
        originals = {entry_id: store.get(entry_id) for entry_id in (rule, retry, locks)}
        review_before = person_runs(project, "review")
        status_before = person_runs(project, "status")

        seen = asyncio.run(flow(project, {"rule": rule, "retry": retry, "locks": locks}))

        # The MCP results say plainly that each change waits and the entry is unchanged.
        for key, target in (("update", rule), ("deprecate", retry)):
            structured, text = seen[key]
            assert structured["pending"] is True, key
            assert structured["change"].startswith("chg-")
            assert structured["entry"]["revision"] == 1
            assert "awaits a person" in text
            assert f"{target} is unchanged" in text
        structured, text = seen["supersede"]
        assert structured["superseded"] == []
        assert [item["id"] for item in structured["pending_supersession"]] == [locks]
        assert f"{locks} is unchanged" in text
        successor = str(structured["id"])

        # While they wait: the person's rules are delivered exactly as recorded.
        billing = seen["billing_before"][rule]
        assert (billing["rule"], billing["hardness"], billing["status"]) == (
            "Every charge request carries an idempotency key",
            "hard",
            "active",
        )
        assert seen["webhooks_before"][retry]["status"] == "active"
        get_rule, get_text = seen["get_rule"]
        assert [c["op"] for c in get_rule["pending_changes"]] == ["update"]
        assert "awaiting a person" in get_text
        summary, summary_text = seen["summary_before"]
        assert summary["pending_review"] == 3  # the successor (with its supersession) + 2
        assert {(c["id"], c["op"]) for c in summary["pending_changes"]} == {
            (rule, "update"),
            (retry, "deprecate"),
            (locks, "supersede"),
        }
        assert "changes awaiting a person" in summary_text
        assert review_before["total"] == 0
        assert status_before["pending_review"] == 0

        # The person's review screen showed every change with its diff, then the verdicts.
        code, review_text = seen["review_text"]
        assert code == 0, review_text
        assert seen["update"][0]["change"] in review_text
        assert "- hardness: hard" in review_text
        assert "+ hardness: soft" in review_text
        assert f"successor: {successor}" in review_text
        for key in ("approve", "reject_retry", "reject_successor"):
            code, out = seen[key]
            assert code == 0, out
            assert "[y/N]" in out
        assert "- hardness: hard" in seen["approve"][1]  # the diff was shown before the question

        # After: one change applied, two refused, and the delivered rules follow the verdicts.
        after = seen["billing_after"][rule]
        assert (after["hardness"], after["revision"]) == ("soft", 2)
        assert after["rule"].startswith("Charge requests carry an idempotency key where")
        assert seen["webhooks_after"][retry] == originals[retry]
        assert store.get(retry) == originals[retry]
        kept: Any = store.get(locks)
        assert {k: v for k, v in kept.items() if k != "pending_changes"} == originals[locks]
        assert [c["op"] for c in kept["pending_changes"]] == ["update"]
        assert store.get(successor)["status"] == "rejected"
        assert seen["summary_after"][0]["pending_review"] == 0
        # Only the agent's later proposal (below) awaits a person now.
        assert [c["id"] for c in person_runs(project, "review")["changes"]] == [locks]
        # The kept decision is live and editable again (the agent's edit is a new proposal).
        assert seen["update_locks"][0]["pending"] is True

        journal: list[Any] = list(store.read_journal())
        trail = [(r["op"], r["id"], r["actor"]["origin"]) for r in journal]
        assert trail[:3] == [
            ("record", rule, "user"),
            ("record", retry, "user"),
            ("record", locks, "user"),
        ]
        assert trail[3:12] == [
            ("propose_update", rule, "agent"),
            ("propose_deprecate", retry, "agent"),
            ("record", successor, "agent"),
            ("propose_supersede", locks, "agent"),
            ("approve_change", rule, "user"),
            ("reject_change", retry, "user"),
            ("reject", successor, "user"),
            ("reject_change", locks, "user"),
            ("propose_update", locks, "agent"),
        ]
        assert "Keep our own backoff." in str(journal[8]["reason"])
        assert "Unrelated to scheduling." in str(journal[9]["reason"])
        assert person_runs(project, "doctor")["ok"] is True
