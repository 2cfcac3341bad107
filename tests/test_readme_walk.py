"""The README's five-minute walk and everyday-use commands, run as written, as a person would.

The ```bash blocks of those two sections are read from README.md and run one command at a time
in a fresh git repository, against the CLI of this checkout (a ``ctxkeeper`` on PATH that runs
``python -m ctxkeeper`` with the repository root on PYTHONPATH), with no agent variables set.
A block preceded by ``<!-- readme-walk: skip, REASON -->`` needs Claude Code or a terminal and is
skipped, and counted; ``<!-- readme-walk: exit N -->`` says the block's commands exit N. The
README shows entry ids such as ``con-001-7f3a``; the test runs them as the id this run recorded
with the same kind and number, since the last four characters are random.

The transcript at the top of the README is compared with what the real PreToolUse hook tells
the agent for the walk's rule, so the README never shows text the hook does not write.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass

import pytest

from ctxkeeper.cli.agentenv import AGENT_ENV_VARS
from tests.conftest import REPO_ROOT
from tests.hook_harness import edit, hook_env, run_hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

WALK = "A five-minute walk"
EVERYDAY = "Everyday use"
MARKER = re.compile(r"<!--\s*readme-walk:\s*(.*?)\s*-->")
README_ID = re.compile(r"\b(dec|con|pip)-(\d{3})-[0-9a-f]{4}\b")
#: What a skipped block may need; anything else is a typo in the README's marker.
SKIP_REASONS = {"needs claude", "needs a terminal"}


@dataclass(frozen=True)
class Block:
    section: str
    commands: tuple[str, ...]
    skip: str | None
    exit_code: int


def readme() -> str:
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as handle:
        return handle.read()


def section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"README.md has no '## {title}' section"
    return match.group(1)


def commands(body: str) -> tuple[str, ...]:
    """One command per line, a backslash continuing it; comment-only and blank lines dropped."""
    joined = re.sub(r"\s*\\\n\s*", " ", body)
    return tuple(line for line in joined.splitlines() if line.strip() and not line.startswith("#"))


def blocks(text: str, title: str) -> list[Block]:
    found = []
    fence = re.compile(r"(?:^(<!--[^\n]*-->)\n)?^```bash\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    for match in fence.finditer(section(text, title)):
        marker = MARKER.fullmatch(match.group(1) or "")
        note = marker.group(1) if marker else ""
        skip = note.removeprefix("skip, ") if note.startswith("skip") else None
        assert skip is None or skip in SKIP_REASONS, f"unknown readme-walk marker {note!r}"
        exit_match = re.fullmatch(r"exit (\d+)", note)
        assert not note or skip or exit_match, f"unknown readme-walk marker {note!r}"
        code = int(exit_match.group(1)) if exit_match else 0
        found.append(Block(title, commands(match.group(2)), skip, code))
    return found


def person_env(shims: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in AGENT_ENV_VARS and not k.startswith(("CLAUDE", "PYTHON", "GIT_"))
    }
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = REPO_ROOT
    env["NO_COLOR"] = "1"
    return env


def make_shim(folder: Path) -> Path:
    """``ctxkeeper`` on PATH: this checkout's CLI, as the installed command runs it."""
    folder.mkdir()
    shim = folder / "ctxkeeper"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ctxkeeper "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return folder


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


def make_repository(project: Path) -> None:
    """A small repository with code under the walk's scope, as the README assumes."""
    project.mkdir()
    git(project, "init", "-q")
    git(project, "config", "user.name", "Walk Reader")
    git(project, "config", "user.email", "reader@example.com")
    (project / "src" / "billing").mkdir(parents=True)
    (project / "src" / "billing" / "charge.py").write_text("def charge():\n    pass\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "Start the billing module")


def real_ids(project: Path, env: dict[str, str]) -> dict[str, str]:
    out = subprocess.run(
        ["ctxkeeper", "list", "--json"], cwd=project, env=env, capture_output=True, check=True
    )
    ids = [str(entry["id"]) for entry in json.loads(out.stdout)["results"]]
    return {entry_id[:7]: entry_id for entry_id in ids}


def with_real_ids(command: str, ids: dict[str, str]) -> str:
    def swap(match: re.Match[str]) -> str:
        key = match.group(0)[:7]
        assert key in ids, f"the README names {match.group(0)}, but the walk recorded no {key}"
        return ids[key]

    return README_ID.sub(swap, command)


def run_command(project: Path, env: dict[str, str], real: str) -> subprocess.CompletedProcess[str]:
    """One README command as the person's shell runs it, in the project's root."""
    return subprocess.run(
        ["bash", "-c", real],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def journal_bytes(project: Path) -> bytes:
    path = project / ".context" / "journal.jsonl"
    return path.read_bytes() if path.exists() else b""


def run_walk(tmp_path: Path) -> tuple[Path, dict[str, str], list[tuple[str, int]], list[str]]:
    """Run every runnable command of the walk and the everyday block, in README order."""
    text = readme()
    project = tmp_path / "project"
    make_repository(project)
    env = person_env(make_shim(tmp_path / "bin"))
    ran: list[tuple[str, int]] = []
    skipped: list[str] = []
    for block in (*blocks(text, WALK), *blocks(text, EVERYDAY)):
        if block.skip:
            skipped.append(block.skip)
            continue
        for command in block.commands:
            before = journal_bytes(project)
            real = with_real_ids(command, real_ids(project, env) if ran else {})
            proc = run_command(project, env, real)
            assert proc.returncode == block.exit_code, (
                f"README ({block.section}): `{command}` exited {proc.returncode}, "
                f"the README says {block.exit_code}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
            )
            if block.exit_code:
                # A refused command says why on one line and stores nothing.
                assert proc.stderr.startswith("ctxkeeper: "), proc.stderr
                assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
                assert journal_bytes(project) == before
            ran.append((command, proc.returncode))
    return project, env, ran, skipped


class TestTheWalkRunsAsWritten:
    def test_every_command_exits_as_the_readme_says(self, tmp_path: Path) -> None:
        project, env, ran, skipped = run_walk(tmp_path)
        verbs = [command.split()[1] for command, _ in ran if command.startswith("ctxkeeper ")]
        # An extraction that found nothing, or lost a section, fails here, not silently.
        assert {"init", "add", "list", "show", "status", "doctor", "verify"} <= set(verbs)
        assert len(ran) >= 12
        assert sorted(set(skipped)) == sorted(SKIP_REASONS)
        # The walk's rule was recorded by a person: active at once, as the README says.
        listing = subprocess.run(
            ["ctxkeeper", "list", "--json"], cwd=project, env=env, capture_output=True, check=True
        )
        (rule,) = [e for e in json.loads(listing.stdout)["results"] if e["kind"] == "constraint"]
        assert (rule["status"], rule["origin"], rule["hardness"]) == ("active", "user", "hard")
        assert rule["scope"] == ["src/billing"]
        # The export in the everyday block wrote what it promises.
        assert (project / ".claude" / "rules" / "ctxkeeper" / "src-billing.md").is_file()

    def test_init_writes_the_files_the_walk_says_to_commit(self, tmp_path: Path) -> None:
        project = tmp_path / "project"
        make_repository(project)
        env = person_env(make_shim(tmp_path / "bin"))
        (init,) = blocks(readme(), WALK)[0].commands
        subprocess.run(["bash", "-c", init], cwd=project, env=env, check=True, capture_output=True)
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=project,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        untracked = {line.removeprefix("?? ") for line in status.splitlines()}
        # Exactly the three files the README names; the working store stays out of git.
        assert untracked == {".context/config.json", ".context/.gitignore", ".gitattributes"}
        assert ".context/snapshot.jsonl merge=union" in (project / ".gitattributes").read_text()


class TestTheExtraction:
    def test_markers_are_recognised_and_a_plain_block_runs(self) -> None:
        text = (
            "## A five-minute walk\n\n```bash\nctxkeeper init\n```\n\n"
            "<!-- readme-walk: skip, needs claude -->\n```bash\nclaude\n```\n\n"
            "<!-- readme-walk: exit 1 -->\n```bash\nctxkeeper add x \\\n  --rule y  # why\n```\n"
            "```text\nnot a command\n```\n## Next\n```bash\nnot in the section\n```\n"
        )
        found = blocks(text, WALK)
        assert [(b.commands, b.skip, b.exit_code) for b in found] == [
            (("ctxkeeper init",), None, 0),
            (("claude",), "needs claude", 0),
            (("ctxkeeper add x --rule y  # why",), None, 1),
        ]

    def test_an_unknown_marker_fails_instead_of_running(self) -> None:
        text = "## A five-minute walk\n<!-- readme-walk: skip, needs coffee -->\n```bash\nx\n```\n"
        with pytest.raises(AssertionError, match="unknown readme-walk marker"):
            blocks(text, WALK)

    def test_a_missing_section_fails(self) -> None:
        with pytest.raises(AssertionError, match="no '## A five-minute walk' section"):
            blocks("## Something else\n```bash\nctxkeeper init\n```\n", WALK)

    def test_readme_ids_become_this_runs_ids_of_the_same_kind_and_number(self) -> None:
        ids = {"con-001": "con-001-0a0b", "dec-001": "dec-001-ffff"}
        assert with_real_ids("x con-001-7f3a dec-001-c2d9", ids) == "x con-001-0a0b dec-001-ffff"
        with pytest.raises(AssertionError, match="recorded no pip-002"):
            with_real_ids("ctxkeeper show pip-002-aaaa", ids)


def readme_transcript() -> str:
    """The first ```text block of the README: what the agent is told at a held-back edit."""
    match = re.search(r"^```text\n(.*?)^```$", readme(), re.MULTILINE | re.DOTALL)
    assert match, "README.md shows no transcript"
    return match.group(1).rstrip("\n")


class TestTheTranscriptIsTheHooksText:
    def test_the_held_back_edit_reads_as_the_readme_shows(self, tmp_path: Path) -> None:
        project, _, _, _ = run_walk(tmp_path)
        target = project / "src" / "billing" / "charge.py"
        denied = run_hook("PreToolUse", edit(target), project, env=hook_env(project))
        assert denied.denied
        (rule_id,) = re.findall(r"con-\d{3}-[0-9a-f]{4}", denied.reason)
        shown = README_ID.sub(
            lambda m: rule_id if m.group(1) == "con" else m.group(0), readme_transcript()
        )
        assert shown == denied.reason, (
            "the README's transcript is not what the hook writes today; replace it with:\n"
            + denied.reason
        )
        # The re-issued edit goes through, as the README says right after the transcript.
        again = run_hook("PreToolUse", edit(target), project, env=hook_env(project))
        assert (again.returncode, again.stdout) == (0, "")


class TestTheLinks:
    def test_every_relative_link_of_the_readme_and_docs_names_a_file_here(self) -> None:
        pages = ["README.md", *(f"docs/{name}" for name in sorted(os.listdir(f"{REPO_ROOT}/docs")))]
        checked = []
        for page in pages:
            with open(os.path.join(REPO_ROOT, page), encoding="utf-8") as handle:
                text = handle.read()
            for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", text):
                path = os.path.normpath(os.path.join(os.path.dirname(page), target))
                assert os.path.isfile(os.path.join(REPO_ROOT, path)), f"{page} links {target}"
                checked.append(path)
        # The README sends readers to the three docs pages; a dead or missing link fails above.
        assert {"docs/design.md", "docs/internals.md", "docs/performance.md"} <= set(checked)
