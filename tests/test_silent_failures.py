"""Fail open, not silent (issue 22, section 4): SessionStart tells the person when memory
delivery is off, why, and how to fix it.

A journal line that does not parse, or a symbolic link planted where the store's cache
belongs, used to make every hook fail open with nothing but a line in hook-errors.log. The
hooks still fail open; SessionStart now says so in one ``systemMessage``. A link where the
scope index belongs is replaced by a real directory (never followed) and the gate holds.
Hooks run as hooks.json starts them (tests/hook_harness.py).
"""

from __future__ import annotations

import shutil

import pytest

from tests.hook_harness import add_constraint, edit, make_store, run_hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

START: JSONObject = {"session_id": "s1", "source": "startup", "hook_event_name": "SessionStart"}


def _start(project: Path, session: str = "s1") -> tuple[str, str]:
    """SessionStart's systemMessage and additionalContext (empty when absent)."""
    result = run_hook("SessionStart", {**START, "session_id": session}, project)
    assert result.returncode == 0
    assert result.stderr == ""
    if not result.stdout:
        return "", ""
    answer = result.answer
    return str(answer.get("systemMessage", "")), result.context if "hookSpecificOutput" in (
        answer
    ) else ""


class TestBadJournalLine:
    def test_session_start_says_delivery_is_off_and_how_to_fix_it(self, project: Path) -> None:
        store = make_store(project)
        add_constraint(store, scope=[])
        # Control: an intact store briefs the session and says nothing is off.
        message, context = _start(project, "s0")
        assert "ctxkeeper project memory" in context
        assert "delivery is off" not in message
        with open(project / ".context" / "journal.jsonl", "ab") as handle:
            handle.write(b"{not json}\n")
        message, context = _start(project)
        assert context == ""
        assert message.startswith("ctxkeeper: memory delivery is off for this session")
        assert "journal.jsonl" in message
        assert "ctxkeeper doctor" in message
        assert "\n" not in message
        log = (project / ".context" / "cache" / "hook-errors.log").read_text()
        assert "SessionStart" in log  # still logged too


class TestPlantedLinks:
    def test_a_linked_cache_is_refused_and_the_person_told(
        self, project: Path, tmp_path: Path
    ) -> None:
        store = make_store(project)
        add_constraint(store, scope=["api/"])
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "keep.txt").write_text("mine")
        cache = project / ".context" / "cache"
        shutil.rmtree(cache)
        cache.symlink_to(elsewhere)
        message, context = _start(project)
        assert context == ""
        assert "memory delivery is off" in message
        assert ".context/cache is a symbolic link" in message
        assert "`rm .context/cache`" in message
        # Failing open: the edit hook stays silent, and nothing went through the link.
        edited = run_hook("PreToolUse", edit(project / "api" / "a.py"), project)
        assert (edited.returncode, edited.stdout) == (0, "")
        assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"]
        # Control: the fix the line names brings delivery back.
        cache.unlink()
        message, context = _start(project, "s2")
        assert "delivery is off" not in message
        assert "ctxkeeper project memory" in context
        assert run_hook("PreToolUse", edit(project / "api" / "a.py", session="s2"), project).denied

    def test_a_linked_scope_index_is_replaced_and_the_gate_holds(
        self, project: Path, tmp_path: Path
    ) -> None:
        store = make_store(project)
        rule = add_constraint(store, scope=["api/"])
        elsewhere = tmp_path / "shipped-index"
        elsewhere.mkdir()
        (elsewhere / "meta.json").write_text('{"version": 2}')
        index = project / ".context" / "cache" / "scope-index"
        shutil.rmtree(index)
        index.symlink_to(elsewhere)
        message, context = _start(project)
        assert "ctxkeeper project memory" in context
        assert "scope-index was a symbolic link" in message
        assert not index.is_symlink()
        assert (elsewhere / "meta.json").read_text() == '{"version": 2}'
        result = run_hook("PreToolUse", edit(project / "api" / "a.py"), project)
        assert result.denied
        assert rule in result.reason
        # Control: with the real directory in place, the next session hears nothing of it.
        message, _ = _start(project, "s3")
        assert "symbolic link" not in message


@pytest.mark.parametrize("stdin", [b"", b"{not json", b'{"session_id": 5}'])
def test_bad_stdin_stays_silent(project: Path, stdin: bytes) -> None:
    # Claude Code's input, not the person's store: silent (logged), as before.
    store = make_store(project)
    add_constraint(store, scope=[])
    with open(project / ".context" / "journal.jsonl", "ab") as handle:
        handle.write(b"{not json}\n")
    result = run_hook("SessionStart", stdin, project)
    assert (result.returncode, result.stdout) == (0, "")
    # Control: a valid stdin in the same project is told.
    assert "delivery is off" in _start(project)[0]
