"""Run the real hook scripts: as Claude Code does (a subprocess) or in-process (for coverage)."""

from __future__ import annotations

import io
import json
import os
import runpy
import subprocess
import sys
from contextlib import redirect_stdout

from ctxkeeper.core.store import Store
from ctxkeeper.write.verbs import agent_actor, record_entry, user_actor
from tests.conftest import REPO_ROOT, constraint_fields
from tests.mcp_wire import person_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

HOOKS_DIR = os.path.join(REPO_ROOT, "hooks")
SCRIPTS = {
    "PreToolUse": "pre_tool_use.py",
    "PostToolUse": "post_tool_use.py",
    "SessionStart": "session_start.py",
    "SubagentStart": "subagent_start.py",
    "PreCompact": "pre_compact.py",
}


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    @property
    def answer(self) -> JSONObject:
        value = json.loads(self.stdout)
        assert isinstance(value, dict)
        return value

    @property
    def specific(self) -> JSONObject:
        value = self.answer["hookSpecificOutput"]
        assert isinstance(value, dict)
        return value

    @property
    def denied(self) -> bool:
        return bool(self.stdout) and self.specific.get("permissionDecision") == "deny"

    @property
    def reason(self) -> str:
        return str(self.specific["permissionDecisionReason"])

    @property
    def context(self) -> str:
        return str(self.specific.get("additionalContext", ""))


def hook_env(project: Path | str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PYTHON"))}
    if project is not None:
        env["CLAUDE_PROJECT_DIR"] = str(project)
    env["CLAUDE_PLUGIN_ROOT"] = REPO_ROOT
    env["PATH"] = person_path()
    env.update(extra)
    return env


def run_hook(
    event: str,
    payload: JSONObject | bytes | str,
    project: Path | str | None,
    *,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    inprocess: bool = False,
) -> Result:
    """Run one hook script on one stdin payload, the way hooks.json starts it."""
    if isinstance(payload, dict):
        data = json.dumps(payload).encode()
    else:
        data = payload.encode() if isinstance(payload, str) else payload
    script = os.path.join(HOOKS_DIR, SCRIPTS[event])
    environ = env if env is not None else hook_env(project)
    if inprocess:
        return _run_inprocess(script, data, environ)
    proc = subprocess.run(
        [sys.executable, "-I", "-S", script],
        input=data,
        capture_output=True,
        cwd=str(cwd or project or REPO_ROOT),
        env=environ,
        timeout=60,
        check=False,
    )
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def _run_inprocess(script: str, data: bytes, environ: dict[str, str]) -> Result:
    saved_env = dict(os.environ)
    saved_stdin = sys.stdin
    out = io.StringIO()
    code = 0
    try:
        os.environ.clear()
        os.environ.update(environ)
        sys.stdin = _Stdin(data)  # only .buffer is read
        with redirect_stdout(out):
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        sys.stdin = saved_stdin
        os.environ.clear()
        os.environ.update(saved_env)
    return Result(code, out.getvalue(), "")


def edit(
    path: Path | str, *, session: str = "s1", tool: str = "Edit", **more: object
) -> JSONObject:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    payload: JSONObject = {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": {key: str(path)},
        "tool_use_id": "toolu_1",
    }
    payload.update(more)  # type: ignore[arg-type]
    return payload


def bash(command: str, *, session: str = "s1", event: str = "PreToolUse") -> JSONObject:
    return {
        "session_id": session,
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }


def make_store(project: Path) -> Store:
    store = Store.open(str(project))
    store.init()
    return store


def add_constraint(store: Store, *, agent: bool = False, **fields: object) -> str:
    """Record a constraint through the real verb; a person's is active, an agent's proposed."""
    actor = agent_actor("s-agent") if agent else user_actor()
    result = record_entry(store, "constraint", constraint_fields(**fields), actor=actor)
    return str(result["id"])
