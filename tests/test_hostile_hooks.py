"""Hostile hook stdin, for every hook script as Claude Code starts it (a subprocess): empty, not
JSON, not UTF-8, JSON of the wrong type, 10 MB, and each field a hook reads given the wrong
type. Every one fails open: exit 0, nothing on stdout or stderr, one line naming the event in
.context/cache/hook-errors.log, and every other byte of the store as it was. In each test a
valid call to the same hook in the same project is the control: it does answer.

(tests/test_hooks.py TestFailOpen covers PreToolUse's edit path on its own; here it is every
hook, and the store is compared byte for byte.)
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import pytest

from ctxkeeper.core import scopeindex
from ctxkeeper.core.store import Store
from ctxkeeper.plugin.hookio import ERROR_LOG
from tests.conftest import snapshot_dir
from tests.hook_harness import SCRIPTS, add_constraint, bash, edit, make_store, run_hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

TEN_MB = 10 << 20
#: Stdin that is not a JSON object, whatever the event.
NOT_AN_OBJECT: dict[str, bytes] = {
    "empty": b"",
    "whitespace": b" \n\t\r\n",
    "not-json": b"{session_id: s1}",
    "truncated": b'{"session_id": "s1", "source": "sta',
    "invalid-utf8": b'{"session_id": "\xff\xfe\xc3("}',
    "utf16": '{"session_id": "s1"}'.encode("utf-16"),
    "nul-bytes": b"\x00" * 64,
    "json-list": b'[{"session_id": "s1"}]',
    "json-number": b"42",
    "json-string": b'"session_id"',
    "json-null": b"null",
    "json-true": b"true",
    "nan": b'{"session_id": NaN}',
    "10MB-garbage": b"x" * TEN_MB,
    "10MB-json-list": b'["' + b"a" * TEN_MB + b'"]',
}


def _valid(event: str, project: Path) -> JSONObject:
    """A call each hook answers in the fixture project (PreToolUse with its deliberate denial)."""
    if event == "PreToolUse":
        return edit(project / "api" / "users.py")
    if event == "PostToolUse":
        payload = bash('git commit -m "Never call the billing API without a key"', event=event)
        payload["tool_response"] = {"stdout": "[main 1a2b3c4] Never call", "stderr": ""}
        return payload
    if event == "SubagentStart":
        return {"session_id": "s1", "agent_id": "agent-7", "hook_event_name": event}
    if event == "PreCompact":
        return {"session_id": "s1", "trigger": "manual", "hook_event_name": event}
    return {"session_id": "s1", "source": "startup", "hook_event_name": event}


#: Per event, a field it reads set to a value of the wrong type (dotted: inside tool_input).
WRONG_FIELDS: list[tuple[str, str, object, str]] = [
    ("PreToolUse", "session_id", 5, "session_id"),
    ("PreToolUse", "session_id", ["s1"], "session_id"),
    ("PreToolUse", "agent_id", 7, "agent_id"),
    ("PreToolUse", "tool_input", "api/users.py", "tool_input"),
    ("PreToolUse", "tool_input", [], "tool_input"),
    ("PreToolUse", "tool_input.file_path", {"path": "api/users.py"}, "file_path"),
    ("PreToolUse", "tool_input.file_path", ["x" * TEN_MB], "file_path"),
    ("PostToolUse", "tool_input", ["git", "commit"], "command"),
    ("PostToolUse", "tool_input.command", ["git", "commit", "-m", "Never X"], "command"),
    ("PostToolUse", "tool_input.command", 0, "command"),
    ("SessionStart", "session_id", 5, "session_id"),
    ("SessionStart", "session_id", {"id": "s1"}, "session_id"),
    ("SessionStart", "session_id", ["x" * TEN_MB], "session_id"),
    ("SessionStart", "agent_id", False, "agent_id"),
    ("SubagentStart", "session_id", None, "session_id"),
    ("SubagentStart", "agent_id", 5, "agent_id"),
    ("SubagentStart", "agent_id", ["agent-7"], "agent_id"),
    ("PreCompact", "session_id", 1.5, "session_id"),
    ("PreCompact", "agent_id", {}, "agent_id"),
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a hard rule on api/, a project-wide hard rule, a proposal awaiting review
    (so PreCompact has a note to give), and a teammate's snapshot not yet imported (so a
    SessionStart that ran too far would change the store). Built once; each test copies it."""
    base = tmp_path_factory.mktemp("hostile-hooks")
    root = base / "project"
    root.mkdir()
    store = make_store(root)
    add_constraint(store, scope=["api/"], rule="API handlers validate input first")
    add_constraint(store, scope=[], rule="Secrets never appear in committed files")
    add_constraint(store, agent=True, scope=["db/"], rule="Migrations are reversible always")
    teammate = base / "teammate"
    teammate.mkdir()
    other = make_store(teammate)
    add_constraint(other, scope=["web/"], rule="Templates escape every user value")
    ours = root / ".context" / "snapshot.jsonl"
    theirs = (teammate / ".context" / "snapshot.jsonl").read_bytes().splitlines(keepends=True)
    # What git's union merge leaves: our lines, then theirs (their header line once more).
    ours.write_bytes(ours.read_bytes() + b"".join(theirs[1:]))
    return root


@pytest.fixture
def project(template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(template, root, symlinks=True, ignore=shutil.ignore_patterns(ERROR_LOG))
    # The copy has new inodes, so the caches a hook keeps warm are stale: warm them again, as
    # hooks that already ran in this project would have (a failing hook must not rebuild them).
    store = Store.open(str(root))
    store.load()
    scopeindex.open_index(store.dir)
    return root


def _store_bytes(project: Path) -> dict[str, bytes]:
    files = snapshot_dir(str(project / ".context"))
    files.pop(os.path.join("cache", ERROR_LOG), None)
    return files


def _log_lines(project: Path) -> list[str]:
    path = project / ".context" / "cache" / ERROR_LOG
    return path.read_text().splitlines() if path.exists() else []


def _fails_open(project: Path, event: str, stdin: bytes, says: str) -> None:
    before = _store_bytes(project)
    result = run_hook(event, stdin, project)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    lines = _log_lines(project)
    assert len(lines) == 1, lines
    assert f"{event}: " in lines[0]
    assert says in lines[0], lines[0]
    assert len(lines[0]) <= 500  # a 10 MB value is never copied into the log
    assert _store_bytes(project) == before


def _answers(project: Path, event: str) -> JSONObject:
    """The control: a valid call to the same hook in the same project gives a JSON answer."""
    result = run_hook(event, _valid(event, project), project)
    assert result.returncode == 0
    assert result.stdout.endswith("\n")
    answer = json.loads(result.stdout)
    assert isinstance(answer, dict)
    return answer


@pytest.mark.parametrize("name", sorted(NOT_AN_OBJECT))
@pytest.mark.parametrize("event", sorted(SCRIPTS))
def test_stdin_that_is_not_an_object_fails_open(project: Path, event: str, name: str) -> None:
    says = {"empty": "stdin is empty", "whitespace": "stdin is empty"}.get(name, "stdin is")
    _fails_open(project, event, NOT_AN_OBJECT[name], says)
    assert _answers(project, event)


def _with(payload: JSONObject, dotted: str, value: object) -> JSONObject:
    changed: JSONObject = json.loads(json.dumps(payload))
    holder: Any = changed
    *outer, last = dotted.split(".")
    for key in outer:
        holder = holder[key]
    holder[last] = value
    return changed


@pytest.mark.parametrize(
    ("event", "field", "value", "says"),
    [
        pytest.param(e, f, v, s, id=f"{e}-{f}-{type(v).__name__}-{n}")
        for n, (e, f, v, s) in enumerate(WRONG_FIELDS)
    ],
)
def test_a_field_of_the_wrong_type_fails_open(
    project: Path, event: str, field: str, value: object, says: str
) -> None:
    payload = _with(_valid(event, project), field, value)
    _fails_open(project, event, json.dumps(payload).encode(), says)
    answer = _answers(project, event)
    if event == "PreToolUse":
        specific = answer["hookSpecificOutput"]
        assert isinstance(specific, dict)
        assert specific["permissionDecision"] == "deny"  # the deliberate answer


def test_bash_guard_with_a_wrong_command_type_fails_open(project: Path) -> None:
    payload = bash("ctxkeeper approve con-001-abcd")
    _fails_open(
        project,
        "PreToolUse",
        json.dumps(_with(payload, "tool_input.command", 3)).encode(),
        "command",
    )
    # Control: the same call with the command as a string is denied (a human verb).
    result = run_hook("PreToolUse", payload, project)
    assert result.denied


def test_session_start_control_imports_the_teammate_snapshot(project: Path) -> None:
    # The fixture's arriving snapshot is real: a valid SessionStart imports it, so the failed
    # calls above (store unchanged) did stop before the import.
    entries = project / ".context" / "entries.json"
    rule = b"Templates escape every user value"
    assert rule not in entries.read_bytes()
    answer = _answers(project, "SessionStart")
    assert rule in entries.read_bytes()
    assert "ctxkeeper" in str(answer.get("systemMessage"))


def test_a_hook_without_a_store_reads_nothing(tmp_path: Path) -> None:
    # Outside a project with .context/ a hook never even reads stdin: garbage leaves no trace.
    bare = tmp_path / "bare"
    bare.mkdir()
    for event in sorted(SCRIPTS):
        result = run_hook(event, NOT_AN_OBJECT["10MB-garbage"], bare)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert list(bare.iterdir()) == []
    # Control: with a store, the same garbage is logged.
    make_store(bare)
    shutil.rmtree(bare / ".context" / "cache", ignore_errors=True)
    result = run_hook("SessionStart", b"{", bare)
    assert (result.returncode, result.stdout) == (0, "")
    assert len(_log_lines(bare)) == 1
