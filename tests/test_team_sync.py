"""A team of three shares its memory through real git: a bare repository and three clones.

Clone a starts the store and pushes it; b and c clone it and import it (b with `ctxkeeper
import`, c through the SessionStart hook, as Claude Code runs it). Then everyone writes at
once, some of it to the same entries, and they sync the way people do: `git pull --no-rebase`,
`ctxkeeper import`, commit, push, round-robin, in more than one order, with git's built-in
union merge and with ctxkeeper's merge driver. Once nobody has anything new, every clone must
hold the same entries, the same team events, every version anyone wrote, and no conflict
marker; the concurrent retirements must have won where they conflicted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from ctxkeeper.cli.review import decide
from ctxkeeper.core.store import Store
from ctxkeeper.team import teamlog
from ctxkeeper.team.gitsetup import register_driver
from ctxkeeper.write.verbs import (
    agent_actor,
    deprecate_entry,
    get_entry,
    record_entry,
    update_entry,
    user_actor,
)
from tests.hook_harness import run_hook
from tests.terminal import person_env

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

SNAPSHOT = ".context/snapshot.jsonl"
MAX_ROUNDS = 3
MARKERS = (b"<<<<<<<", b"=======", b">>>>>>>")

IDEMPOTENCY = [
    "constraint",
    "--rule",
    "Every charge request carries an idempotency key",
    "--reason",
    "On 2025-02-11 a retry storm double-charged forty customers at checkout.",
    "--hardness",
    "hard",
    "--scope",
    "src/billing/",
]
BACKOFF = [
    "constraint",
    "--rule",
    "Webhook deliveries are retried with exponential backoff",
    "--reason",
    "Partners rate-limit bursts; a flat retry loop got us blocked for a whole day in May.",
    "--hardness",
    "soft",
    "--scope",
    "src/webhooks/",
]
REPLICA = [
    "constraint",
    "--rule",
    "Nightly exports read from the replica database, never the primary",
    "--reason",
    "An export on the primary locked the orders table for twenty minutes in March.",
    "--hardness",
    "hard",
    "--scope",
    "src/exports/",
]
# b restates REPLICA, not knowing that c retired it at the same time.
REPLICA_AGAIN = [
    "constraint",
    "--rule",
    "Nightly exports must read from the replica database, never the primary",
    "--reason",
    "Exports on the primary lock the orders table; we saw a twenty-minute stall.",
    "--hardness",
    "hard",
    "--scope",
    "src/exports/",
]
# The control: recorded by b in the same round, restating nothing.
INVOICES = [
    "constraint",
    "--rule",
    "Invoice PDFs are rendered on the worker queue, never in the web request",
    "--reason",
    "Rendering inside the request timed out for large merchants at month end.",
    "--hardness",
    "soft",
    "--scope",
    "src/invoices/",
]
LOCKS = [
    "decision",
    "--summary",
    "Use PostgreSQL advisory locks for the job scheduler",
    "--problem",
    "Two scheduler replicas ran the nightly invoice job at the same time.",
    "--why-chosen",
    (
        "Advisory locks live in the database we already run, release on disconnect and need "
        "no new infrastructure, unlike a separate coordination service."
    ),
]
LEASES = [
    "decision",
    "--summary",
    "Schedule jobs through the queue's leases instead of database locks",
    "--problem",
    "Advisory locks held across a failover let two replicas run the invoice job again.",
    "--why-chosen",
    (
        "The queue's leases expire on their own when a worker dies, and the queue already "
        "runs every job, so no lock outlives the replica that took it."
    ),
]
PROPOSAL = {
    "summary": "Cache currency exchange rates for one hour in the pricing service",
    "problem": "Every price lookup called the rates provider and hit its rate limit at noon.",
    "why_chosen": (
        "An hour-old rate is within the finance team's tolerance, and a cache in the service "
        "needs no new infrastructure, unlike a shared cache cluster."
    ),
}


def git_env(name: str) -> dict[str, str]:
    """A person's environment, git identity set and no global or system git config read."""
    return person_env(
        GIT_AUTHOR_NAME=name,
        GIT_AUTHOR_EMAIL=f"{name}@example.com",
        GIT_COMMITTER_NAME=name,
        GIT_COMMITTER_EMAIL=f"{name}@example.com",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
    )


def run_git(cwd: str, name: str, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=git_env(name),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, f"git {' '.join(args)} in {cwd}: {done.stdout}{done.stderr}"
    return done.stdout.strip()


class Clone:
    """One teammate's work tree, with what that teammate wrote tracked as it happens."""

    def __init__(self, root: str, name: str) -> None:
        self.root = root
        self.name = name
        self.own_events: set[str] = set()
        """The team events this teammate's own writes made."""
        self.versions: dict[str, list[JSONObject]] = {}
        """Every version of an entry this teammate's writes produced, by entry id."""
        self.widest_merge = 0
        """The most lines one entry had in a snapshot `git pull` left (union: two or more)."""

    def git(self, *args: str) -> str:
        return run_git(self.root, self.name, *args)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ctxkeeper", *args],
            cwd=self.root,
            env=git_env(self.name),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    def cli_json(self, *args: str) -> Any:
        done = self.cli(*args, "--json")
        assert done.returncode == 0, f"{self.name}: ctxkeeper {' '.join(args)}: {done.stderr}"
        return json.loads(done.stdout)

    @property
    def store(self) -> Store:
        return Store.open(self.root)

    def journal(self) -> list[dict[str, Any]]:
        path = os.path.join(self.root, ".context", "journal.jsonl")
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def event_ids(self) -> set[str]:
        """The journal's event identities, less this clone's own import resolutions."""
        return {str(r["event"]) for r in self.journal() if not teamlog.is_resolution(r)}

    def state(self) -> tuple[dict[str, JSONObject], set[str]]:
        return dict(self.store.load().entries), self.event_ids()

    def writing(self) -> _Writing:
        return _Writing(self)

    def add(self, argv: list[str], *more: str) -> str:
        with self.writing():
            return str(self.cli_json("add", *argv, *more)["id"])

    def commit(self, message: str) -> bool:
        self.git("add", SNAPSHOT)
        staged = subprocess.run(
            ["git", "diff", "--cached", "--quiet"],
            cwd=self.root,
            env=git_env(self.name),
            check=False,
        )
        if staged.returncode == 0:
            return False
        self.git("commit", "-q", "-m", message)
        return True

    def sync(self) -> bool:
        """Pull, import, commit, push; True when anything changed here."""
        head, before = self.git("rev-parse", "HEAD"), self.state()
        self.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
        if self.git("rev-parse", "HEAD") != head:  # something arrived: merge it in
            self.widest_merge = max(self.widest_merge, widest_entry(self.root))
            self.cli_json("import")
        self.commit(f"{self.name}: import the team snapshot")
        pushed = self.git("rev-parse", "HEAD") != self.git("rev-parse", "origin/main")
        if pushed:
            self.git("push", "-q", "origin", "HEAD:main")
        return pushed or (self.git("rev-parse", "HEAD"), self.state()) != (head, before)


class _Writing:
    """Around one write: the team events it made, and the versions it left, are the clone's."""

    def __init__(self, clone: Clone) -> None:
        self.clone = clone
        self.before: set[str] = set()

    def __enter__(self) -> None:
        self.before = self.clone.event_ids()

    def __exit__(self, *exc: object) -> None:
        for record in self.clone.journal():
            if str(record["event"]) in self.before or teamlog.is_resolution(record):
                continue
            self.clone.own_events.add(str(record["event"]))
            after = record.get("after")
            if isinstance(after, dict):
                self.clone.versions.setdefault(str(record["id"]), []).append(after)


def widest_entry(root: str) -> int:
    counts: dict[str, int] = {}
    with open(os.path.join(root, SNAPSHOT), encoding="utf-8") as handle:
        for line in handle:
            value = json.loads(line) if line.strip() else {}
            if "entry" in value:
                entry_id = str(value["entry"]["id"])
                counts[entry_id] = counts.get(entry_id, 0) + 1
    return max(counts.values(), default=0)


def session_start(clone: Clone) -> JSONObject:
    """The SessionStart hook exactly as Claude Code runs it in this clone."""
    result = run_hook(
        "SessionStart",
        {
            "session_id": "s",
            "hook_event_name": "SessionStart",
            "source": "startup",
            "cwd": clone.root,
        },
        clone.root,
    )
    assert result.returncode == 0, result.stderr
    return result.answer


def sync_rounds(clones: list[Clone], order: str) -> int:
    """Round-robin syncs until a round changes nothing anywhere; the rounds it took."""
    by_name = {clone.name: clone for clone in clones}
    for rounds in range(1, MAX_ROUNDS + 1):
        changed = [by_name[name].sync() for name in order]
        if not any(changed):
            return rounds
    raise AssertionError(f"the clones still changed after {MAX_ROUNDS} sync rounds")


def no_conflict_markers(root: str) -> list[str]:
    found: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                data = handle.read()
            found.extend(f"{path}: {m.decode()}" for m in MARKERS if m in data)
    return found


@pytest.fixture
def team(tmp_path: Path) -> dict[str, Clone]:
    """Clone a's store with four entries, pushed; b imported it, c got it at SessionStart."""
    remote = str(tmp_path / "team.git")
    run_git(str(tmp_path), "a", "init", "-q", "--bare", remote)
    clones: dict[str, Clone] = {}
    a = clones["a"] = Clone(str(tmp_path / "a"), "a")
    run_git(str(tmp_path), "a", "clone", "-q", remote, a.root)
    done = a.cli("init")
    assert done.returncode == 0, done.stderr
    for argv in (IDEMPOTENCY, BACKOFF, REPLICA, LOCKS):
        a.add(argv)
    a.git("add", ".context/config.json", ".context/.gitignore", SNAPSHOT, ".gitattributes")
    a.git("commit", "-q", "-m", "a: start the team's memory")
    a.git("push", "-q", "origin", "HEAD:main")
    for name in ("b", "c"):
        clone = clones[name] = Clone(str(tmp_path / name), name)
        run_git(str(tmp_path), name, "clone", "-q", remote, clone.root)
    report = clones["b"].cli_json("import")
    assert (report["events_added"], len(report["added"])) == (4, 4)
    answer = session_start(clones["c"])
    assert "from the team snapshot: 4 new entries" in str(answer.get("systemMessage")), answer
    return clones


def ids_by_rule(clone: Clone) -> dict[str, str]:
    entries = clone.store.load().entries.values()
    return {str(e.get("rule") or e.get("summary")): str(e["id"]) for e in entries}


@pytest.mark.parametrize("order", ["abc", "cba"])
@pytest.mark.parametrize("driver", [False, True], ids=["union", "driver"])
def test_three_clones_converge_through_git(
    team: dict[str, Clone], order: str, driver: bool
) -> None:
    a, b, c = team["a"], team["b"], team["c"]
    clones = [a, b, c]
    if driver:
        for clone in clones:
            register_driver(clone.root)
    ids = ids_by_rule(a)
    assert ids_by_rule(b) == ids == ids_by_rule(c)
    charge, backoff, replica, locks = (
        ids[IDEMPOTENCY[2]],
        ids[BACKOFF[2]],
        ids[REPLICA[2]],
        ids[LOCKS[2]],
    )
    person = user_actor()

    # -- everyone writes at once ---------------------------------------------------------
    with a.writing():  # the same rule edited in a and in b
        update_entry(
            a.store,
            charge,
            {"reason": "A retry storm on 2025-02-11 double-charged forty customers in an hour."},
            "the incident report gave the real numbers",
            actor=person,
        )
    with a.writing():  # retired in a while b re-asserts it
        deprecate_entry(
            a.store,
            backoff,
            "Webhooks moved to the partner's queue, which retries deliveries on its own.",
            actor=person,
        )
    with a.writing():  # edited in a while c supersedes it
        update_entry(
            a.store,
            locks,
            {"problem": "Two scheduler replicas ran the nightly invoice job twice in one night."},
            "the problem statement was too vague",
            actor=person,
        )
    assert a.cli_json("export", "snapshot")["written"] is True

    with b.writing():
        update_entry(
            b.store,
            charge,
            {"hardness": "soft", "tags": ["billing"]},
            "the gateway now deduplicates; a lint warning is enough",
            actor=person,
        )
    with b.writing():
        update_entry(
            b.store,
            backoff,
            {"reason": "Partners still rate-limit bursts; the backoff is what keeps us unblocked."},
            "re-assert: the partners confirmed their limits",
            actor=person,
        )
    restating = b.add(REPLICA_AGAIN)
    control = b.add(INVOICES)

    with c.writing():
        deprecate_entry(
            c.store,
            replica,
            "The exports moved to the warehouse, which has no primary to protect.",
            actor=person,
        )
    successor = c.add(LEASES, "--supersedes", locks)
    with c.writing():
        proposed = record_entry(c.store, "decision", PROPOSAL, actor=agent_actor("s-c"))
    proposal, entry = str(proposed["id"]), proposed["entry"]
    assert isinstance(entry, dict)
    assert entry["status"] == "proposed"

    for clone in clones:
        assert clone.commit(f"{clone.name}: this round's memory")
        assert clone.own_events, clone.name

    rounds = sync_rounds(clones, order)
    assert rounds <= MAX_ROUNDS

    # -- a person in a approves the proposal c's agent made --------------------------------
    assert a.store.get(proposal)["status"] == "proposed"
    with a.writing():
        decide(a.store, "approve", [proposal], actor=person)
    assert a.commit("a: approve the exchange-rate cache")
    assert sync_rounds(clones, order) <= MAX_ROUNDS

    # -- everyone holds the same thing ----------------------------------------------------
    listed = [clone.cli_json("list")["results"] for clone in clones]
    assert listed[0] == listed[1] == listed[2]
    entries = {str(e["id"]): e for e in listed[0]}
    assert len(entries) == 8

    events = [clone.event_ids() for clone in clones]
    assert events[0] == events[1] == events[2]
    written = set().union(*(clone.own_events for clone in clones))
    derived = events[0] - written
    # The only event nobody wrote: the retirement of b's restatement, which the clone holding
    # the tombstone derived on import, the same in every clone.
    retirements = [r for r in c.journal() if str(r["event"]) in derived]
    assert [(r["op"], r["id"], r["actor"]["origin"]) for r in retirements] == [
        ("deprecate", restating, "import")
    ]
    assert events[0] == written | derived

    # No version lost: every version anyone wrote is in every clone's history of its entry.
    # Each entry two clones wrote is read with `ctxkeeper history --json` in one clone (a
    # different one for each); the rest through the function behind it, to keep this fast.
    contested = sorted(i for i in entries if sum(i in clone.versions for clone in clones) > 1)
    assert {charge, backoff, locks} <= set(contested)
    by_cli = {entry_id: clones[n % 3].name for n, entry_id in enumerate(contested)}
    for clone in clones:
        for entry_id in sorted({*a.versions, *b.versions, *c.versions}):
            if by_cli.get(entry_id) == clone.name:
                history = clone.cli_json("history", entry_id)["history"]
            else:
                history = get_entry(clone.store, entry_id)["history"]
            kept = [item["after"] for item in history if isinstance(item["after"], dict)]
            for writer in clones:
                for version in writer.versions.get(entry_id, []):
                    assert version in kept, (clone.name, entry_id, version["revision"])
                    assert version["revision"] in {v["revision"] for v in kept}
        assert no_conflict_markers(clone.root) == []

    # The same rule edited twice: one edit wins, the other is history.
    assert entries[charge]["revision"] == 2
    assert entries[charge]["status"] == "active"
    # Retired in a, re-asserted in b: the retirement wins.
    assert entries[backoff]["status"] == "deprecated"
    assert "partner's queue" in str(entries[backoff]["status_reason"])
    # Edited in a, superseded in c: superseded, pointing at its successor.
    assert (entries[locks]["status"], entries[locks]["superseded_by"]) == (
        "superseded",
        successor,
    )
    assert entries[successor]["status"] == "active"
    # Retired in c, restated in b: the restatement is retired too; the control is not.
    assert entries[replica]["status"] == "deprecated"
    assert entries[restating]["status"] == "deprecated"
    assert replica in str(entries[restating]["status_reason"])
    assert entries[control]["status"] == "active"
    # c's agent proposed, a's person approved: active everywhere.
    assert entries[proposal]["status"] == "active"

    # The merges really went the way the parameter says.
    widest = max(clone.widest_merge for clone in clones)
    assert widest == 1 if driver else widest >= 2

    for clone in clones:
        done = clone.cli("doctor")
        assert done.returncode == 0, (clone.name, done.stdout, done.stderr)


def test_import_twice_in_a_row_changes_nothing(team: dict[str, Clone]) -> None:
    a, b = team["a"], team["b"]
    a.add(INVOICES)
    assert a.commit("a: invoices rule")
    a.git("push", "-q", "origin", "HEAD:main")
    b.add(REPLICA_AGAIN)
    assert b.commit("b: restated replica rule")
    b.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")

    journal = os.path.join(b.root, ".context", "journal.jsonl")
    first = b.cli_json("import")
    assert first["events_added"] == 1
    assert first["added"] == [ids_by_rule(a)[INVOICES[2]]]
    with open(journal, "rb") as handle:
        after_first = handle.read()
    second = b.cli_json("import")
    with open(journal, "rb") as handle:
        after_second = handle.read()
    assert second["events_added"] == 0
    assert second["unchanged"] is True
    assert after_second == after_first
