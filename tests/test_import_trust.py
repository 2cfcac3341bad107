"""Where a person's word comes from, against real git: a bare upstream and two clones.

Clone a is where the person records a hard rule and reviews the agent's proposals; clone b
receives them with `git pull`. An event that names a person counts as theirs in b only when
the snapshot on the upstream default branch holds it: a teammate's approval merged there
promotes (the control), while a forged working-tree snapshot, a forged local commit and a
file the agent hands to `import` change nothing a person approved, and what they claim waits
in review. Each door is the real one: the SessionStart hook as hooks.json runs it, the CLI as
a subprocess, MCP `import_snapshot` over stdio.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from typing import Any

from ctxkeeper.cli.review import decide
from ctxkeeper.core import changes
from ctxkeeper.core.store import Store
from ctxkeeper.team import teamlog
from ctxkeeper.write.verbs import agent_actor, record_entry, update_entry, user_actor
from tests.hook_harness import run_hook
from tests.mcp_wire import McpSession, child_env
from tests.terminal import person_env

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

SNAPSHOT = ".context/snapshot.jsonl"
AGENT = {"CLAUDECODE": "1", "AI_AGENT": "claude-code", "CLAUDE_CODE_SESSION_ID": "s1"}
RULE = {
    "rule": "Every refund request is logged with the operator id",
    "reason": "The 2025 audit found refunds nobody could attribute; the regulator asked twice.",
    "hardness": "hard",
    "scope": ["src/billing/"],
}
CACHE = {
    "summary": "Cache exchange rates for one hour in the pricing service",
    "problem": "Every price lookup called the rates provider and hit its rate limit at noon.",
    "why_chosen": (
        "An hour-old rate is within the finance team's tolerance, and a cache in the service "
        "needs no new infrastructure, unlike a shared cache cluster."
    ),
}
QUEUE = {
    "summary": "Send invoice emails through the job queue, not inline",
    "problem": "Inline invoice emails made checkout wait on the mail provider's latency.",
    "why_chosen": (
        "The job queue already retries with backoff and keeps checkout fast; a separate mail "
        "service would need its own deployment and on-call rotation."
    ),
}


def git_env(name: str) -> dict[str, str]:
    return person_env(
        GIT_AUTHOR_NAME=name,
        GIT_AUTHOR_EMAIL=f"{name}@example.com",
        GIT_COMMITTER_NAME=name,
        GIT_COMMITTER_EMAIL=f"{name}@example.com",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
    )


def git(cwd: str, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=git_env(os.path.basename(cwd)),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout.strip()


def cli(root: str, *args: str, agent: bool = False) -> Any:
    env = {**git_env("cli"), **(AGENT if agent else {})}
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *args, "--json"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, f"ctxkeeper {' '.join(args)}: {done.stderr}"
    return json.loads(done.stdout)


def session_start(root: str) -> str:
    result = run_hook(
        "SessionStart",
        {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup", "cwd": root},
        root,
    )
    assert result.returncode == 0, result.stderr
    return str(result.answer.get("systemMessage"))


def commit_and_push(root: str, message: str) -> None:
    git(root, "add", SNAPSHOT)
    git(root, "commit", "-q", "-m", message)
    git(root, "push", "-q", "origin", "HEAD:main")


class Team:
    """The bare upstream, the person's clone a and the teammate's clone b, with the ids."""

    def __init__(self, tmp_path: Path) -> None:
        self.remote = str(tmp_path / "team.git")
        git(str(tmp_path), "init", "-q", "--bare", self.remote)
        self.a, self.b = str(tmp_path / "a"), str(tmp_path / "b")
        git(str(tmp_path), "clone", "-q", self.remote, self.a)
        Store.open(self.a).init()
        store = Store.open(self.a)
        self.rule = str(record_entry(store, "constraint", RULE, actor=user_actor())["id"])
        self.cache = str(record_entry(store, "decision", CACHE, actor=agent_actor("s-a"))["id"])
        self.queue = str(record_entry(store, "decision", QUEUE, actor=agent_actor("s-a"))["id"])
        git(self.a, "add", ".context/config.json", ".context/.gitignore", SNAPSHOT)
        commit_and_push(self.a, "a: the team's memory")
        git(str(tmp_path), "clone", "-q", self.remote, self.b)
        assert "3 new entries" in session_start(self.b)
        self.check(self.b, cache="proposed", queue="proposed")

    def entries(self, root: str) -> dict[str, JSONObject]:
        return dict(Store.open(root).load().entries)

    def check(self, root: str, *, cache: str, queue: str) -> None:
        """The person's rule stands as recorded, and the proposals have these statuses."""
        entries = self.entries(root)
        rule = entries[self.rule]
        assert (rule["status"], rule["hardness"], rule["scope"], rule["rule"]) == (
            "active",
            "hard",
            ["src/billing"],
            RULE["rule"],
        )
        assert (entries[self.cache]["status"], entries[self.queue]["status"]) == (cache, queue)

    def approve_cache_in_a(self) -> None:
        """The control: a person in a approves the cache proposal, merged to main."""
        decide(Store.open(self.a), "approve", [self.cache], actor=user_actor())
        commit_and_push(self.a, "a: approve the exchange-rate cache")
        git(self.b, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")


def forge(root: str, rule: str, proposal: str, *, path: str = SNAPSHOT) -> list[str]:
    """What an agent with write access does: copy the snapshot, append a person's approval of
    its own proposal and a person's softening of the person's hard rule. Returns their ids."""
    source = os.path.join(root, SNAPSHOT)
    with open(source, encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    made = []
    person = {"origin": "user", "user": "alice"}
    edits: list[tuple[str, dict[str, Any]]] = [
        (proposal, {"status": "active"}),
        (rule, {"hardness": "soft", "scope": [], "rule": "Refunds may skip the operator id"}),
    ]
    for entry_id, change in edits:
        events = [
            line["journal"] for line in lines if line.get("journal", {}).get("id") == entry_id
        ]
        tip: dict[str, Any] = dict(teamlog.heads(events)[0])
        after: dict[str, Any] = dict(tip["after"])
        after.update(change, revision=int(after["revision"]) + 1, updated_at="2030-01-01T00:00:00Z")
        event = {
            "id": entry_id,
            "at": "2030-01-01T00:00:00Z",
            "event": secrets.token_hex(8),
            "version": 2,
            "op": "approve" if "status" in change else "update",
            "actor": person,
            "reason": "approved by the person",
            "parents": [tip["event"]],
            "after": after,
        }
        lines.append({"journal": event})
        made.append(str(event["event"]))
    with open(os.path.join(root, path), "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    return made


def waiting_for(root: str, entry_id: str) -> list[JSONObject]:
    """The pending changes on ``entry_id`` that stand for a held-back event."""
    entry = Store.open(root).load().entries[entry_id]
    return [c for c in changes.changes_of(entry) if teamlog.STANDS_FOR in c]


class TestSessionStart:
    def test_a_merged_approval_promotes_and_a_forged_working_tree_file_does_not(
        self, tmp_path: Path
    ) -> None:
        team = Team(tmp_path)
        team.approve_cache_in_a()
        approval, softening = forge(team.b, team.rule, team.queue)
        note = session_start(team.b)
        # The teammate's approval came through main: the control promotes.
        team.check(team.b, cache="active", queue="proposed")
        assert "2 events claim to be a person's and are not in the team's history" in note
        (waiting,) = waiting_for(team.b, team.rule)
        assert waiting[teamlog.STANDS_FOR] == softening
        assert waiting["fields"] == {
            "hardness": "soft",
            "scope": [],
            "rule": "Refunds may skip the operator id",
        }
        assert waiting["actor"] == {"origin": "agent", "session_id": None}
        review = cli(team.b, "review")
        assert team.rule in json.dumps(review)
        assert team.queue in json.dumps(review)
        held = {approval, softening}
        assert not held & {str(r["event"]) for r in Store.open(team.b).read_journal()}
        # Not passed on: b's rewritten snapshot names them only as what its stand-in presents.
        with open(os.path.join(team.b, SNAPSHOT), encoding="utf-8") as handle:
            shared = [json.loads(line).get("journal", {}) for line in handle]
        assert not held & {str(event.get("event")) for event in shared}
        assert {str(event.get(teamlog.STANDS_FOR)) for event in shared} >= {softening}

    def test_a_change_first_seen_on_a_branch_is_trusted_once_merged_without_duplicates(
        self, tmp_path: Path
    ) -> None:
        team = Team(tmp_path)
        reason = "The 2025 audit found refunds nobody could attribute; the regulator asked us."
        update_entry(
            Store.open(team.a), team.rule, {"reason": reason}, "exact words", actor=user_actor()
        )
        git(team.a, "checkout", "-q", "-b", "audit")
        git(team.a, "add", SNAPSHOT)
        git(team.a, "commit", "-q", "-m", "a: reword the audit reason")
        git(team.a, "push", "-q", "origin", "audit")
        git(team.b, "fetch", "-q", "origin")
        git(team.b, "merge", "-q", "--no-edit", "origin/audit")
        note = session_start(team.b)
        assert "1 event claims to be a person's" in note
        assert team.entries(team.b)[team.rule]["reason"] == RULE["reason"]
        assert [c["fields"] for c in waiting_for(team.b, team.rule)] == [{"reason": reason}]
        # The branch is merged to main: the same event now comes from the team's history.
        git(team.a, "push", "-q", "origin", "audit:main")
        git(team.b, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
        note = session_start(team.b)
        assert "claim" not in note
        mine, theirs = team.entries(team.b)[team.rule], team.entries(team.a)[team.rule]
        assert {k: v for k, v in mine.items() if v != theirs.get(k)} == {}, theirs
        assert team.entries(team.b) == team.entries(team.a)
        assert not waiting_for(team.b, team.rule)

    def test_no_remote_only_this_clones_own_events_are_a_persons(self, tmp_path: Path) -> None:
        team = Team(tmp_path)
        alone = str(tmp_path / "alone")
        os.makedirs(os.path.join(alone, ".context"))
        git(alone, "init", "-q")
        for name in ("config.json", "snapshot.jsonl"):
            shutil.copy(
                os.path.join(team.a, ".context", name), os.path.join(alone, ".context", name)
            )
        note = session_start(alone)
        assert "1 event claims to be a person's and is not in the team's history" in note
        assert team.entries(alone)[team.rule]["status"] == "proposed"
        # The control: this clone's own person writes as a person.
        own = cli(
            alone,
            "add",
            "constraint",
            *_flags(RULE, rule="Refund exports never leave the EU region"),
        )
        assert team.entries(alone)[str(own["id"])]["status"] == "active"


def _flags(fields: dict[str, Any], **override: str) -> list[str]:
    out: list[str] = []
    for key, value in {**fields, **override}.items():
        for item in value if isinstance(value, list) else [value]:
            out += [f"--{key.replace('_', '-')}", str(item)]
    return out


class TestCli:
    def test_a_forged_local_commit_is_held_and_a_person_naming_a_file_speaks_for_it(
        self, tmp_path: Path
    ) -> None:
        team = Team(tmp_path)
        team.approve_cache_in_a()
        forge(team.b, team.rule, team.queue)
        git(team.b, "commit", "-q", "-am", "b: the agent's local commit")
        report = cli(team.b, "import", agent=True)
        assert report["held_back"] == 2
        team.check(team.b, cache="active", queue="proposed")
        assert len(waiting_for(team.b, team.rule)) == 1
        # The control: a person at their terminal who names a file speaks for it.
        clone = str(tmp_path / "c")
        git(str(tmp_path), "clone", "-q", team.remote, clone)
        Store.open(clone).init()
        shutil.copy(os.path.join(team.b, SNAPSHOT), str(tmp_path / "trusted.jsonl"))
        forge(team.a, team.rule, team.queue, path="../trusted.jsonl")
        vouched = cli(clone, "import", str(tmp_path / "trusted.jsonl"))
        assert vouched["held_back"] == 0
        assert team.entries(clone)[team.queue]["status"] == "active"
        assert team.entries(clone)[team.rule]["hardness"] == "soft"


class TestMcp:
    def test_a_file_the_agent_hands_to_import_snapshot_is_held(self, tmp_path: Path) -> None:
        team = Team(tmp_path)
        team.approve_cache_in_a()
        forge(team.b, team.rule, team.queue, path=".context/forged.jsonl")
        session = McpSession(
            [sys.executable, "-m", "ctxkeeper", "serve", "--project-dir", team.b],
            env=child_env(HOME=str(tmp_path)),
        )
        try:
            control = session.call("import_snapshot", {})  # the pulled team snapshot
            forged = session.call("import_snapshot", {"path": ".context/forged.jsonl"})
        finally:
            session.close()
        assert not control.get("isError"), control
        assert not forged.get("isError"), forged
        held: list[Any] = [
            dict(result["structuredContent"])["held_back"]  # type: ignore[arg-type]
            for result in (control, forged)
        ]
        assert held == [0, 2]
        assert "claim to be a person's" in json.dumps(forged["content"])
        team.check(team.b, cache="active", queue="proposed")
        assert len(waiting_for(team.b, team.rule)) == 1


RETRIES = {
    "summary": "Retry webhook deliveries with exponential backoff up to six hours",
    "problem": "Partners' endpoints go down for maintenance and a single attempt lost events.",
    "why_chosen": (
        "Backoff spreads the retries out so a recovering endpoint is not flooded, and six "
        "hours covers every maintenance window our partners announce."
    ),
}


class TestBranchSwitch:
    def test_the_store_is_the_clones_and_the_next_write_carries_it_to_this_branch(
        self, tmp_path: Path
    ) -> None:
        """What README "Team memory through git" says a branch switch means: `git checkout`
        changes only the snapshot file; the working store keeps what was recorded on the other
        branch, and the next write on this branch puts it in this branch's snapshot, where the
        commit's diff shows it."""
        team = Team(tmp_path)
        git(team.a, "checkout", "-q", "-b", "experiment")
        tried = cli(team.a, "add", "decision", *_flags(RETRIES), agent=True)["id"]
        git(team.a, "add", SNAPSHOT)
        git(team.a, "commit", "-q", "-m", "a: try webhook retries")
        git(team.a, "checkout", "-q", "main")
        session_start(team.a)
        # The control: main's committed snapshot does not hold it, and the store still does.
        assert tried not in git(team.a, "show", f"HEAD:{SNAPSHOT}")
        assert team.entries(team.a)[tried]["status"] == "proposed"
        cli(
            team.a,
            "add",
            "decision",
            *_flags(QUEUE, summary="Send refund emails through the job queue too"),
        )
        assert tried in git(team.a, "diff", "--", SNAPSHOT)
