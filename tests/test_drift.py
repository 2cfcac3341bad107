"""Drift, verification and staleness against real git repositories in tmp_path.

Every repository here is made with the ``git`` binary (identity and dates through the
environment, never the global config); entries are written with the real verbs; the CLI runs
as a subprocess where a person would meet it, and the hooks as Claude Code starts them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

import pytest

from ctxkeeper.core import driftcache, githead, gitlog
from ctxkeeper.core.errors import StateError
from ctxkeeper.core.scope import covers
from ctxkeeper.core.store import Store
from ctxkeeper.read.drift import check_drift, drift_text, scopescan, stale_entries
from ctxkeeper.read.summary import project_summary, render_summary
from ctxkeeper.write.exchange import import_snapshot
from ctxkeeper.write.verbs import (
    agent_actor,
    deprecate_entry,
    record_entry,
    update_entry,
    user_actor,
    verify_entry,
)
from tests.conftest import REPO_ROOT, constraint_fields, decision_fields
from tests.hook_harness import edit, run_hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary")

#: More distinct verified commits than one merge-base is worth (read.drift.MERGE_BASE_MAX).
MANY = 33
#: Commit times start here and step a minute per commit, so "after created_at" is certain.
_CLOCK = [int(time.time()) + 3600]


def git(repo: Path, *args: str, date: int | None = None) -> str:
    stamp = f"@{date} +0000" if date is not None else f"@{_tick()} +0000"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_DATE": stamp,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return proc.stdout.strip()


def _tick() -> int:
    _CLOCK[0] += 60
    return _CLOCK[0]


def write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def commit(repo: Path, message: str, files: dict[str, str], *, date: int | None = None) -> str:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, date=date)
    return git(repo, "rev-parse", "HEAD")


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "-c", "init.defaultBranch=main", "init", "-q")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = new_repo(tmp_path / "repo")
    Store.open(str(root)).init()
    commit(
        root,
        "start",
        {
            "src/auth/login.py": "login = 1\n",
            "src/auth_legacy/old.py": "old = 1\n",
            "src/billing/pay.py": "pay = 1\n",
            "README.md": "hello\n",
        },
        date=int(time.time()) - 86400,  # before any entry here was created
    )
    return root


def add(store: Store, scope: list[str], rule: str, *, agent: bool = False) -> str:
    actor = agent_actor("s1") if agent else user_actor()
    fields = constraint_fields(scope=scope, rule=rule)
    return str(record_entry(store, "constraint", fields, actor=actor)["id"])


def by_id(report: JSONObject) -> dict[str, Any]:
    results = report["results"]
    assert isinstance(results, list)
    return {str(r["id"]): r for r in results if isinstance(r, dict)}


def shas(result: Any) -> list[str]:
    return [str(c["sha"]) for c in result["commits"]]


def list_of(value: object) -> list[Any]:
    assert isinstance(value, list)
    return value


def notes(report: JSONObject) -> str:
    found = report["notes"]
    assert isinstance(found, list)
    return " | ".join(map(str, found))


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *args, "--project-dir", str(root)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": REPO_ROOT},
        timeout=60,
        check=False,
    )


class TestDrift:
    def test_two_commits_in_scope_drift_a_commit_elsewhere_does_not(self, repo: Path) -> None:
        store = Store.open(str(repo))
        auth = add(store, ["src/auth/"], "Every login path checks the session token")
        billing = add(store, ["src/billing/"], "Every charge carries an idempotency key")
        assert store.get(auth)["verified_sha"] == git(repo, "rev-parse", "HEAD")

        commit(repo, "docs only", {"README.md": "hello again\n"})
        # A sibling directory whose name starts the same is not inside src/auth/.
        commit(repo, "legacy tidy", {"src/auth_legacy/old.py": "old = 2\n"})
        quiet = by_id(check_drift(store))
        assert quiet[auth]["commit_count"] == 0
        assert quiet[auth]["commits"] == []

        first = commit(repo, "auth: refresh tokens", {"src/auth/login.py": "login = 2\n"})
        second = commit(repo, "auth: new file", {"src/auth/mfa.py": "mfa = 1\n"})
        report = check_drift(store)
        results = by_id(report)
        assert results[auth]["commit_count"] == 2
        assert shas(results[auth]) == [second, first]
        assert [c["subject"] for c in results[auth]["commits"]] == [
            "auth: new file",
            "auth: refresh tokens",
        ]
        assert results[billing]["commit_count"] == 0
        assert report["drifted"] == [auth]
        assert report["git"] is True
        assert results[auth]["since"] == {
            "basis": "verified_sha",
            "sha": store.get(auth)["verified_sha"],
            "at": store.get(auth)["created_at"],
        }

    @pytest.mark.parametrize("bounded", [True, False], ids=["merge-base", "head-only"])
    def test_since_is_ancestry_not_dates(
        self, repo: Path, monkeypatch: pytest.MonkeyPatch, bounded: bool
    ) -> None:
        """A side branch's commit, dated before the verification but merged after it, is new
        to the entry; an old-dated commit the verification already contained is not."""
        from ctxkeeper.read import drift

        if not bounded:
            monkeypatch.setattr(drift, "MERGE_BASE_MAX", 0)
        store = Store.open(str(repo))
        git(repo, "checkout", "-q", "-b", "side")
        early = _CLOCK[0] - 86400 * 30
        side = commit(repo, "side: auth change", {"src/auth/side.py": "s = 1\n"}, date=early)
        git(repo, "checkout", "-q", "main")
        commit(repo, "main: auth change", {"src/auth/login.py": "login = 3\n"})
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
        results = by_id(check_drift(store))
        assert shas(results[entry]) == [side]

    def test_verified_on_a_branch_head_does_not_contain(self, repo: Path) -> None:
        """Verified on a feature branch, read on main: what main has that the branch did not
        counts, the shared history does not, and the branch's own commits are not HEAD's."""
        store = Store.open(str(repo))
        shared = commit(repo, "auth before the branch", {"src/auth/login.py": "login = 2\n"})
        git(repo, "checkout", "-q", "-b", "feature")
        commit(repo, "feature: auth", {"src/auth/feature.py": "f = 1\n"})
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        # Many starting points take the path that reads HEAD's history alone.
        for n in range(MANY):
            add(store, ["src/billing/"], f"Billing rule number {n} holds for every charge")
            commit(repo, f"feature: billing {n}", {"src/billing/pay.py": f"pay = {n}\n"})
        git(repo, "checkout", "-q", "main")
        on_main = commit(repo, "main: auth", {"src/auth/login.py": "login = 3\n"})
        results = by_id(check_drift(store))
        assert shas(results[entry]) == [on_main]
        assert shared not in shas(results[entry])
        assert results[entry]["unseen"] is False
        assert results[entry]["since"]["basis"] == "verified_sha"

    def test_a_renamed_directory_is_orphaned_with_its_new_path(self, repo: Path) -> None:
        store = Store.open(str(repo))
        moved = add(store, ["src/auth/"], "Every login path checks the session token")
        gone = add(store, ["src/billing/pay.py"], "Every charge carries an idempotency key")
        stays = add(store, ["README.md"], "The readme names the supported Python versions")
        git(repo, "mv", "src/auth", "src/login")
        git(repo, "rm", "-q", "src/billing/pay.py")
        commit(repo, "move auth to login, drop billing", {})
        report = check_drift(store)
        results = by_id(report)
        assert results[moved]["orphaned_scope"] == [{"path": "src/auth", "suggested": "src/login"}]
        assert results[gone]["orphaned_scope"] == [
            {"path": "src/billing/pay.py", "suggested": None}
        ]
        assert results[stays]["orphaned_scope"] == []
        assert set(map(str, list_of(report["orphaned"]))) == {moved, gone}
        assert "git saw it renamed to src/login" in drift_text(report)

    def test_a_scope_for_a_file_not_yet_written_is_not_orphaned(self, repo: Path) -> None:
        store = Store.open(str(repo))
        future = add(store, ["src/auth/sso.py"], "Single sign-on goes through the gateway")
        removed = add(store, ["src/auth/login.py"], "Every login path checks the session token")
        git(repo, "rm", "-q", "src/auth/login.py")
        commit(repo, "drop login", {})
        results = by_id(check_drift(store))
        assert results[future]["orphaned_scope"] == []
        assert results[removed]["orphaned_scope"] == [
            {"path": "src/auth/login.py", "suggested": None}
        ]

    def test_untrusted_subjects_and_file_names_are_parsed_by_position(self, repo: Path) -> None:
        store = Store.open(str(repo))
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        control = add(store, ["src/billing/"], "Every charge carries an idempotency key")
        odd = "src/auth/\x1eR100\tx\nM.py"
        write(repo, {odd: "x\n"})
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "evil \x1f\x1e\x1b[31m subject\n\nbody")
        results = by_id(check_drift(store))
        [found] = results[entry]["commits"]
        assert found["subject"] == "evil [31m subject"
        assert results[control]["commit_count"] == 0

    def test_matching_agrees_with_the_one_scope_implementation(self) -> None:
        scopes = {"src/auth": 1, "src": 1, "api/hooks": 1, "src/auth/login.py": 1}
        paths = ["src/auth/login.py", "src/auth_legacy/x.py", "api/webhooks/send.py", "api/hooks"]
        for path in paths:
            assert set(scopescan(path, scopes)) == {s for s in scopes if covers([s], path)}
        assert scopescan("src/auth/login.py", scopes) != []

    def test_commit_lists_are_capped_newest_first_with_a_total(self, repo: Path) -> None:
        store = Store.open(str(repo))
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        made = [commit(repo, f"auth {n}", {"src/auth/login.py": f"v{n}\n"}) for n in range(4)]
        results = by_id(check_drift(store, shown=2))
        assert results[entry]["commit_count"] == 4
        assert shas(results[entry]) == made[:1:-1]

    def test_a_project_in_a_subdirectory_matches_its_own_paths(self, tmp_path: Path) -> None:
        top = new_repo(tmp_path / "mono")
        commit(top, "start", {"svc/src/auth/a.py": "a\n", "src/auth/other.py": "o\n"})
        project = top / "svc"
        store = Store.open(str(project))
        store.init()
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        commit(top, "outside the project", {"src/auth/other.py": "o2\n"})
        inside = commit(top, "inside the project", {"svc/src/auth/a.py": "a2\n"})
        results = by_id(check_drift(store))
        assert shas(results[entry]) == [inside]


class TestVerify:
    def test_verify_clears_drift_and_is_journaled(self, repo: Path) -> None:
        store = Store.open(str(repo))
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        commit(repo, "auth change", {"src/auth/login.py": "login = 2\n"})
        assert by_id(check_drift(store))[entry]["commit_count"] == 1
        before = store.get(entry)
        # An agent may verify a person's entry directly: it changes no rule text.
        result = verify_entry(store, entry, actor=agent_actor("s1"))
        head = git(repo, "rev-parse", "HEAD")
        assert result["verified_sha"] == head
        after = store.get(entry)
        assert after["verified_sha"] == head
        assert isinstance(after["verified_at"], str)
        assert after["revision"] == before["revision"]
        assert after["updated_at"] == before["updated_at"]
        last = store.history(entry)[-1]
        assert last["op"] == "verify"
        assert last["actor"] == {"origin": "agent", "session_id": "s1"}
        assert by_id(check_drift(store))[entry]["commit_count"] == 0
        commit(repo, "auth again", {"src/auth/login.py": "login = 3\n"})
        assert by_id(check_drift(store))[entry]["commit_count"] == 1

    def test_cli_verify_then_drift(self, repo: Path) -> None:
        store = Store.open(str(repo))
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        commit(repo, "auth change", {"src/auth/login.py": "login = 2\n"})
        drifted = cli(repo, "drift", "--json")
        assert drifted.returncode == 0, drifted.stderr
        assert json.loads(drifted.stdout)["drifted"] == [entry]
        text = cli(repo, "drift")
        assert "auth change" in text.stdout
        assert "1 drifted" in text.stdout
        verified = cli(repo, "verify", entry)
        assert verified.returncode == 0, verified.stderr
        assert f"verified {entry} at {git(repo, 'rev-parse', 'HEAD')[:12]}" in verified.stdout
        assert json.loads(cli(repo, "drift", "--json").stdout)["drifted"] == []
        assert store.history(entry)[-1]["actor"] == user_actor()

    def test_retired_and_superseded_entries_are_refused(self, repo: Path) -> None:
        store = Store.open(str(repo))
        retired = add(store, ["src/auth/"], "Every login path checks the session token")
        live = add(store, ["src/billing/"], "Every charge carries an idempotency key")
        deprecate_entry(
            store, retired, "the auth service moved out of this repo", actor=user_actor()
        )
        with pytest.raises(StateError, match="tombstone"):
            verify_entry(store, retired, actor=user_actor())
        refused = cli(repo, "verify", retired)
        assert refused.returncode == 1
        assert "tombstone" in refused.stderr
        successor = record_entry(
            store,
            "constraint",
            constraint_fields(scope=["src/billing/"], rule="Every charge carries a request id"),
            actor=user_actor(),
            supersedes=[live],
        )["id"]
        with pytest.raises(StateError, match=str(successor)):
            verify_entry(store, live, actor=user_actor())
        assert cli(repo, "verify", str(successor)).returncode == 0
        assert cli(repo, "verify", "con-999-0000").returncode == 1
        assert cli(repo, "verify", "not-an-id").returncode == 2

    def test_an_update_keeps_verification_and_verify_keeps_the_revision(self, repo: Path) -> None:
        store = Store.open(str(repo))
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        verify_entry(store, entry, actor=user_actor())
        verified = store.get(entry)
        update_entry(
            store, entry, {"tags": ["auth"]}, "tag it for the auth review", actor=user_actor()
        )
        updated = store.get(entry)
        assert updated["revision"] == 2
        assert updated["verified_sha"] == verified["verified_sha"]
        assert updated["verified_at"] == verified["verified_at"]

    def test_verify_travels_in_the_team_snapshot(self, repo: Path, tmp_path: Path) -> None:
        a = Store.open(str(repo))
        entry = add(a, ["src/auth/"], "Every login path checks the session token")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "share memory")
        clone = tmp_path / "clone"
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
        b = Store.open(str(clone))
        b.init()
        import_snapshot(b, actor=user_actor())
        assert b.get(entry)["verified_at"] is None
        verify_entry(a, entry, actor=user_actor())  # auto_export refreshes a's snapshot
        shutil.copy(repo / ".context" / "snapshot.jsonl", clone / ".context" / "snapshot.jsonl")
        report = import_snapshot(b, actor=user_actor())
        assert report["updated"] == [entry]
        mine, theirs = a.get(entry), b.get(entry)
        assert theirs["verified_at"] == mine["verified_at"]
        assert theirs["verified_sha"] == mine["verified_sha"] == git(repo, "rev-parse", "HEAD")
        assert theirs["revision"] == 1
        assert theirs["status"] == "active"
        ops = [r["op"] for r in b.history(entry)]
        assert ops[-1] == "verify", ops
        assert b.history(entry)[-1]["event"] == a.history(entry)[-1]["event"]
        # A second import adds nothing: the verify event is known by its identity.
        again = import_snapshot(b, actor=user_actor())
        assert again["events_added"] == 0


class TestHonestAnswers:
    def test_a_shallow_clone_says_what_it_could_not_see(self, repo: Path, tmp_path: Path) -> None:
        origin = Store.open(str(repo))
        old = add(origin, ["src/auth/"], "Every login path checks the session token")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "share memory")
        for n in range(3):
            commit(repo, f"auth {n}", {"src/auth/login.py": f"v{n}\n"})
        shallow = tmp_path / "shallow"
        subprocess.run(
            ["git", "clone", "-q", "--depth", "2", f"file://{repo}", str(shallow)], check=True
        )
        store = Store.open(str(shallow))
        store.init()
        import_snapshot(store, actor=user_actor())
        fresh = add(store, ["src/billing/"], "Every charge carries an idempotency key")
        report = check_drift(store)
        results = by_id(report)
        assert report["shallow"] is True
        assert results[old]["unseen"] is True
        assert "shallow" in str(results[old]["note"])
        assert report["unseen"] == [old]
        assert "--unshallow" in notes(report)
        # What it could see it still reports: the two visible commits touching the scope.
        assert results[old]["commit_count"] == 2
        assert results[fresh]["unseen"] is False
        assert results[fresh]["since"]["basis"] == "verified_sha"

    def test_a_history_past_the_cap_is_reported_unseen(
        self, repo: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from ctxkeeper.read import drift

        store = Store.open(str(repo))
        old = add(store, ["src/auth/"], "Every login path checks the session token")
        for n in range(3):
            commit(repo, f"other {n}", {"README.md": f"v{n}\n"})
        recent = add(store, ["src/auth/"], "Sessions expire after thirty minutes idle")
        touched = commit(repo, "auth", {"src/auth/login.py": "login = 5\n"})
        monkeypatch.setattr(drift, "MAX_COMMITS", 2)
        monkeypatch.setattr(drift, "MERGE_BASE_MAX", 0)  # as with many starting points
        report = check_drift(store)
        results = by_id(report)
        assert results[old]["unseen"] is True
        assert "older than the commits read" in str(results[old]["note"])
        assert "2 commits" in notes(report)
        assert results[recent]["unseen"] is False
        assert shas(results[recent]) == [touched]

    def test_without_git_only_days_and_a_note(self, tmp_path: Path) -> None:
        plain = tmp_path / "plain"
        plain.mkdir()
        assert githead.find_git_dir(str(plain)) is None
        store = Store.open(str(plain))
        store.init()
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        assert store.get(entry)["verified_sha"] is None
        report = check_drift(store, now=time.time() + 3 * 86400 + 5)
        result = by_id(report)[entry]
        assert report["git"] is False
        assert "no git" in notes(report)
        assert result["days_since_verified"] == 3
        assert result["commit_count"] is None
        assert result["since"]["basis"] == "created_at"
        verified = verify_entry(store, entry, actor=user_actor())
        assert verified["verified_sha"] is None
        assert isinstance(verified["verified_at"], str)
        assert store.history(entry)[-1]["op"] == "verify"
        text = cli(plain, "drift")
        assert text.returncode == 0
        assert "no git" in text.stdout

    def test_an_entry_never_verified_by_sha_counts_by_time_and_says_so(self, repo: Path) -> None:
        store = Store.open(str(repo))
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        control = add(store, ["src/auth/"], "Sessions expire after thirty minutes idle")
        # As if recorded before ctxkeeper stamped verified_sha: hand-edit it away, as a
        # teammate's older ctxkeeper would have left it.
        update = store.get(entry)
        data = json.loads((repo / ".context" / "entries.json").read_text())
        for item in data["entries"]:
            if item["id"] == entry:
                item["verified_sha"] = None
        (repo / ".context" / "entries.json").write_text(json.dumps(data, indent=2))
        assert update["verified_sha"] is not None
        after = commit(repo, "auth change", {"src/auth/login.py": "login = 9\n"})
        results = by_id(check_drift(store))
        assert results[entry]["since"]["basis"] == "created_at"
        assert "created_at" in str(results[entry]["note"])
        assert shas(results[entry]) == [after]
        assert results[control]["since"]["basis"] == "verified_sha"
        assert results[control]["commit_count"] == 1

    def test_a_repository_without_commits(self, tmp_path: Path) -> None:
        empty = new_repo(tmp_path / "empty")
        store = Store.open(str(empty))
        store.init()
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        assert store.get(entry)["verified_sha"] is None
        report = check_drift(store)
        assert report["git"] is True
        assert "no commit yet" in notes(report)
        assert by_id(report)[entry]["days_since_verified"] == 0


class TestStale:
    def test_stale_reports_and_never_deletes(self, repo: Path) -> None:
        store = Store.open(str(repo))
        old = add(store, ["src/auth/"], "Every login path checks the session token")
        record_entry(store, "decision", decision_fields(), actor=user_actor())
        later = time.time() + 10 * 86400
        report = stale_entries(store, 5, now=later)
        assert report["total"] == 2
        assert old in {r["id"] for r in list_of(report["results"]) if isinstance(r, dict)}
        assert stale_entries(store, 20, now=later)["total"] == 0
        verify_entry(store, old, actor=user_actor())
        # Verified now: counted from verified_at, which is where the basis says it starts.
        found = list_of(stale_entries(store, 5, now=later)["results"])
        [again] = [r for r in found if isinstance(r, dict) and r["id"] == old]
        assert again["basis"] == "verified_at"
        before = (repo / ".context" / "entries.json").read_bytes()
        listed = cli(repo, "stale", "--days", "0", "--json")
        assert listed.returncode == 0, listed.stderr
        assert old in [r["id"] for r in json.loads(listed.stdout)["results"]]
        assert (repo / ".context" / "entries.json").read_bytes() == before
        assert cli(repo, "stale", "--days", "-1").returncode == 2
        assert cli(repo, "stale").returncode == 2


class TestHooksAndSummary:
    def test_session_start_and_the_edit_gate_report_drift(self, repo: Path) -> None:
        store = Store.open(str(repo))
        drifting = add(store, ["src/auth/"], "Every login path checks the session token")
        proposed = add(store, ["src/auth/"], "Passwords are hashed with argon2id", agent=True)
        commit(repo, "auth 1", {"src/auth/login.py": "login = 2\n"})
        commit(repo, "auth 2", {"src/auth/login.py": "login = 3\n"})
        steady = add(store, ["src/auth/login.py"], "Login errors never say which field was wrong")

        start = run_hook("SessionStart", {"session_id": "s1", "source": "startup"}, repo)
        assert start.returncode == 0, start.stderr
        assert "1 entry drifted since verified" in str(start.answer["systemMessage"])
        assert f"scope changed since verified: {drifting}" in start.context
        assert proposed not in start.context  # a proposed entry is never injected
        assert steady not in start.context.split("scope changed since verified:")[1]

        gate = run_hook("PreToolUse", edit(repo / "src" / "auth" / "login.py"), repo)
        assert gate.denied
        lines = {
            line.split(" ")[1]: line for line in gate.reason.splitlines() if line.startswith("- ")
        }
        assert "; drifted: 2 commits touched its scope" in lines[drifting]
        assert "drifted" not in lines[steady]

        # A new commit makes the cache stale: the gate then says nothing about drift.
        commit(repo, "auth 3", {"src/auth/login.py": "login = 4\n"})
        again = run_hook("PreToolUse", edit(repo / "src" / "auth" / "login.py", session="s2"), repo)
        assert again.denied
        assert drifting in again.reason
        assert "; drifted" not in again.reason

    def test_the_cache_is_keyed_by_head_and_store(self, repo: Path) -> None:
        store = Store.open(str(repo))
        entry = add(store, ["src/auth/"], "Every login path checks the session token")
        commit(repo, "auth", {"src/auth/login.py": "login = 2\n"})
        check_drift(store)
        assert driftcache.read(store.dir, str(repo)) == ({entry: 1}, set())
        check_drift(store, [entry])  # a partial check leaves the cache as it was
        assert driftcache.read(store.dir, str(repo))[0] == {entry: 1}
        verify_entry(store, entry, actor=user_actor())
        assert driftcache.read(store.dir, str(repo)) == ({}, set())

    def test_summary_carries_drift_ids_within_budget(self, repo: Path) -> None:
        store = Store.open(str(repo))
        ids = [
            add(store, ["src/auth/"], f"Auth rule number {n} holds for every route")
            for n in range(15)
        ]
        commit(repo, "auth", {"src/auth/login.py": "login = 2\n"})
        summary = project_summary(store, with_drift=True, token_budget=300)
        drift = summary["drift"]
        assert isinstance(drift, dict)
        assert drift["drifted_count"] == 15
        assert len(list_of(drift["drifted"])) == 12
        text = render_summary(summary)
        assert "(+3 more)" in text
        assert ids[0] in text
        assert project_summary(store)["drift"] is None


class TestHead:
    def test_head_read_as_data_matches_git(self, repo: Path, tmp_path: Path) -> None:
        assert githead.read_head(str(repo)) == git(repo, "rev-parse", "HEAD")
        git(repo, "pack-refs", "--all")
        assert githead.read_head(str(repo / "src")) == git(repo, "rev-parse", "HEAD")
        git(repo, "worktree", "add", "-q", "-b", "other", str(tmp_path / "wt"))
        commit(tmp_path / "wt", "in the worktree", {"x.txt": "x\n"})
        assert githead.read_head(str(tmp_path / "wt")) == git(tmp_path / "wt", "rev-parse", "HEAD")
        assert githead.read_head(str(tmp_path / "wt")) != githead.read_head(str(repo))
        git(repo, "checkout", "-q", "--detach")
        assert githead.read_head(str(repo)) == git(repo, "rev-parse", "HEAD")

    def test_parse_log_stops_at_garbage_and_keeps_what_came_before(self) -> None:
        sha = "a" * 40
        good = f"\x1e{sha}\x1f\x1f100\x1fsubject\0\nM\0src/a.py\0".encode()
        commits = gitlog.parse_log(good + b"\x1enot-a-header\0M\0b\0")
        assert [c.sha for c in commits] == [sha]
        assert commits[0].paths == ["src/a.py"]


class TestGitReadsAreHardened:
    """What the review of the drift code found: each read stands on the project's own
    repository, within its time, and never passes a short or foreign answer for the truth."""

    def test_a_large_packed_refs_is_read_whole(self, repo: Path) -> None:
        head = git(repo, "rev-parse", "HEAD")
        git(repo, "checkout", "-q", "-b", "zz-last")
        refs = "".join(f"{head} refs/heads/branch-{n:05d}\n" for n in range(1500))
        packed = repo / ".git" / "packed-refs"
        packed.write_text(
            f"# pack-refs with: peeled fully-peeled sorted\n{refs}{head} refs/heads/zz-last\n"
        )
        (repo / ".git" / "refs" / "heads" / "zz-last").unlink()
        assert packed.stat().st_size > 64 * 1024
        assert githead.read_head(str(repo)) == head == git(repo, "rev-parse", "HEAD")

    def test_an_inherited_git_dir_does_not_redirect_the_pass(
        self, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        other = new_repo(tmp_path / "other")
        commit(other, "elsewhere", {"src/auth/x.py": "x\n"})
        store = Store.open(str(repo))
        entry_id = add(store, ["src/auth/"], "Sessions expire after thirty minutes idle")
        commit(repo, "touch auth", {"src/auth/login.py": "login = 2\n"})
        monkeypatch.setenv("GIT_DIR", str(other / ".git"))  # as inside a git hook
        result = by_id(check_drift(store))[entry_id]
        assert [c["subject"] for c in result["commits"]] == ["touch auth"]

    def test_a_spent_time_budget_stops_git_before_it_starts(self, repo: Path) -> None:
        assert gitlog.probe(str(repo)).head is not None  # the control: within no budget
        with gitlog.within(0.0), pytest.raises(gitlog.GitError, match="ran out"):
            gitlog.probe(str(repo))
        assert gitlog.probe(str(repo)).head is not None  # the budget ends with the block

    def test_unreadable_log_output_is_an_error_not_an_empty_history(
        self, repo: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        commits = gitlog.log(str(repo), [git(repo, "rev-parse", "HEAD")], relative=False)
        assert [c.subject for c in commits] == ["start"]

        class Broken(gitlog._LogParser):
            def finish(self) -> list[gitlog.Commit]:
                self.broken = True
                return []

        monkeypatch.setattr(gitlog, "_LogParser", Broken)
        with pytest.raises(gitlog.GitError, match="could not read"):
            gitlog.log(str(repo), [git(repo, "rev-parse", "HEAD")], relative=False)
