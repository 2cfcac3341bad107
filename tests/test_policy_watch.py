"""The review switch is never flipped silently (issue 22, section 4).

As the agent, ``sed -i 's/"review": *"agent"/"review":"off"/' .context/config.json`` turned
review off with nothing said, and config.json is committed, so a merged pull request did it in
every clone. Now a ``review`` (or ``hard_delivery``) that differs from the committed config, or
changed since the last session, is announced at SessionStart and shown by ``status``; and the
change is journaled the first time ctxkeeper sees it. Real git (a bare upstream and clones),
hooks as hooks.json runs them, the CLI as a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.conftest import REPO_ROOT, constraint_fields, decision_fields
from tests.hook_harness import hook_env, run_hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

SED = """sed -i 's/"review": *"agent"/"review":"off"/' .context/config.json"""
AGENT = {"CLAUDECODE": "1", "AI_AGENT": "claude-code", "CLAUDE_CODE_SESSION_ID": "s1"}


def _git(cwd: Path, *args: str) -> str:
    env = {**hook_env(None), "GIT_AUTHOR_NAME": "P", "GIT_AUTHOR_EMAIL": "p@example.com"}
    env.update(GIT_COMMITTER_NAME="P", GIT_COMMITTER_EMAIL="p@example.com")
    done = subprocess.run(
        ["git", *args], cwd=str(cwd), capture_output=True, text=True, env=env, check=True
    )
    return done.stdout


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *args, "--project-dir", str(project)],
        capture_output=True,
        text=True,
        env=hook_env(None, PYTHONPATH=REPO_ROOT),
        cwd=str(project),
        timeout=120,
        check=False,
    )


def _add(project: Path, kind: str, fields: dict[str, object]) -> None:
    argv = ["add", kind]
    for name, value in fields.items():
        for item in value if isinstance(value, list) else [value]:
            argv += [f"--{name.replace('_', '-')}", str(item)]
    done = _cli(project, *argv)
    assert done.returncode == 0, done.stderr


def _as_agent(project: Path, command: str) -> None:
    subprocess.run(
        ["bash", "-c", command], cwd=str(project), env={**hook_env(project), **AGENT}, check=True
    )


def _start(project: Path, session: str) -> str:
    payload: JSONObject = {"session_id": session, "source": "startup"}
    result = run_hook("SessionStart", payload, project)
    assert result.returncode == 0
    assert "ctxkeeper project memory" in result.context  # the briefing still goes out
    return str(result.answer.get("systemMessage", ""))


def _policy_records(project: Path) -> list[dict[str, Any]]:
    lines = (project / ".context" / "journal.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("id") == "config.json"]


def _repo(path: Path) -> Path:
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    assert _cli(path, "init").returncode == 0
    _add(path, "constraint", constraint_fields())
    _git(path, "add", ".context")
    _git(path, "commit", "-qm", "ctxkeeper memory")
    return path


def test_an_agent_edit_of_the_review_switch_is_announced_and_journaled(tmp_path: Path) -> None:
    project = _repo(tmp_path / "project")
    # Control: the policy as committed and as last session: nothing announced, nothing journaled.
    assert "review" not in _start(project, "s0")
    assert _start(project, "s0b") == ""
    assert _policy_records(project) == []
    status = json.loads(_cli(project, "status", "--json").stdout)["policy"]
    assert status["notes"] == []
    assert "as committed" in _cli(project, "status").stdout

    _as_agent(project, SED)
    assert '"review":"off"' in (project / ".context" / "config.json").read_text()
    message = _start(project, "s1")
    assert "review is 'off' in .context/config.json but 'agent' in the committed one (HEAD)" in (
        message
    )
    assert "apply without your review" in message
    assert "\n" not in message
    (record,) = _policy_records(project)
    assert record["op"] == "manual_edit"
    assert record["before"]["review"] == "agent"
    assert record["policy"]["review"] == "off"
    assert record["actor"]["origin"] == "unknown"  # ctxkeeper saw it; it did not make it
    text = _cli(project, "status").stdout
    assert "review 'off'" in text
    assert "committed one (HEAD)" in text
    # Still announced in the next session while it differs from the committed config, and
    # journaled once only.
    assert "review is 'off'" in _start(project, "s2")
    assert len(_policy_records(project)) == 1
    # The team snapshot never carries this clone's own bookkeeping.
    assert "config.json" not in (project / ".context" / "snapshot.jsonl").read_text()


def test_a_change_is_journaled_ahead_of_the_next_write(tmp_path: Path) -> None:
    project = _repo(tmp_path / "project")
    _add(project, "decision", decision_fields())  # control: an unchanged policy, no record
    assert _policy_records(project) == []
    _as_agent(project, SED)
    _add(
        project,
        "decision",
        decision_fields(summary="Use the outbox table for every billing event we publish"),
    )
    lines = [json.loads(x) for x in (project / ".context/journal.jsonl").read_text().splitlines()]
    assert [r["op"] for r in lines[-2:]] == ["manual_edit", "record"]
    assert lines[-2]["id"] == "config.json"
    assert "review from 'agent' to 'off'" in lines[-2]["reason"]


def test_a_merged_change_reaches_every_clone_announced(tmp_path: Path) -> None:
    origin = _repo(tmp_path / "origin-work")
    bare = tmp_path / "upstream.git"
    _git(tmp_path, "clone", "-q", "--bare", str(origin), str(bare))
    teammate = tmp_path / "teammate"
    _git(tmp_path, "clone", "-q", str(bare), str(teammate))
    assert "review" not in _start(teammate, "t0")
    # The agent's edit, committed and merged upstream (a pull request a reviewer let through).
    author = tmp_path / "author"
    _git(tmp_path, "clone", "-q", str(bare), str(author))
    _as_agent(author, SED)
    _git(author, "commit", "-qam", "tidy config")
    _git(author, "push", "-q", "origin", "main")
    _git(teammate, "pull", "-q", "--ff-only")
    message = _start(teammate, "t1")
    assert "review changed from 'agent' to 'off' since the last session" in message
    (record,) = _policy_records(teammate)
    assert record["policy"]["review"] == "off"
    # Control: the next session, with nothing changed again, is quiet about it.
    assert "review" not in _start(teammate, "t2")
