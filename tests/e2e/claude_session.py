"""Drive the real Claude Code CLI headless against the model stand-in (claude-code.md §5).

A :class:`Workspace` is one fresh ``HOME`` and one project; :meth:`Workspace.run` starts
``claude -p`` with a scripted model and returns what the client sent and did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.e2e.model_standin import ModelStandin, ToolCall
from tests.mcp_wire import CLIENTS_DIR, HANDSHAKE, REPO_ROOT, person_path, require_client

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject, JSONValue

CLAUDE = os.path.join(CLIENTS_DIR, "claude", "node_modules", ".bin", "claude")
CLAUDE_WHAT = "@anthropic-ai/claude-code 2.1.332"
LAUNCHER = os.path.join(REPO_ROOT, "ctxkeeper_server.py")
MCP_PREFIX = "mcp__plugin_ctxkeeper_ctxkeeper__"
#: One claude run takes about 2 s; this bounds a hung one.
RUN_TIMEOUT = 120


def claude_binary() -> str:
    """The pinned CLI, or skip (fail under ``CTXKEEPER_REQUIRE_CLIENTS=1``)."""
    return require_client(CLAUDE, CLAUDE_WHAT)


def base_env(home: str) -> dict[str, str]:
    """An ``env -i``-style environment: nothing of the caller's but PATH (§5.2)."""
    return {
        # The person has the CLI on PATH (SessionStart's hint for one who has not is
        # tests/test_cli_hint.py's).
        "PATH": person_path(),
        "HOME": home,
        "LANG": "C.UTF-8",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }


class Session:
    """What one ``claude -p`` run sent to the model and printed."""

    def __init__(self, requests: list[JSONObject], done: subprocess.CompletedProcess[str]) -> None:
        self.requests = requests
        self.returncode = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr

    def result(self) -> JSONObject:
        """The final ``--output-format json`` object."""
        outcome = json.loads(self.stdout)
        assert isinstance(outcome, dict), self.stdout[-2000:]
        return outcome

    def blocks(self, kind: str) -> list[JSONObject]:
        """Every content block of ``kind`` in the last request (it carries the whole history)."""
        found: list[JSONObject] = []
        for message in _messages(self.requests[-1]):
            content = message.get("content")
            if isinstance(content, list):
                found += [b for b in content if isinstance(b, dict) and b.get("type") == kind]
        return found

    def tool_result(self, step: int, index: int = 0) -> JSONObject:
        """The result the client returned for scripted call ``index`` of ``step``."""
        wanted = f"toolu_standin_{step}_{index}"
        for block in self.blocks("tool_result"):
            if block.get("tool_use_id") == wanted:
                return block
        raise AssertionError(f"no tool_result for {wanted}: {self.tail()}")

    def tool_text(self, step: int, index: int = 0) -> str:
        """The text of that tool result."""
        return content_text(self.tool_result(step, index).get("content"))

    def after(self, step: int) -> str:
        """Everything the client added to the conversation after the model's ``step`` turn
        (the tool results and the hook context next to them), as JSON text."""
        before = self.request_at(step)
        later = self.request_at(step + 1)
        return json.dumps(_messages(later)[len(_messages(before)) :])

    def request_at(self, step: int) -> JSONObject:
        """The (last) request the model answered at ``step``."""
        matching = [r for r in self.requests if _assistant_count(r) == step]
        assert matching, f"no request at step {step}: {self.tail()}"
        return matching[-1]

    def sent(self, step: int | None = None) -> str:
        """A request (default: all of them) as JSON text, to search for markers (§5.6)."""
        chosen = self.requests if step is None else [self.request_at(step)]
        return json.dumps(chosen)

    def tail(self) -> str:
        return f"rc={self.returncode} stdout={self.stdout[-1500:]!r} stderr={self.stderr[-1500:]!r}"


class Workspace:
    """A fresh ``HOME`` and a project directory under ``tmp_path``."""

    def __init__(self, tmp_path: Path) -> None:
        self.claude = claude_binary()
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.project = tmp_path / "project"
        self.project.mkdir()

    def run(
        self,
        script: Sequence[Sequence[ToolCall] | str],
        *,
        plugin_dir: str | None = REPO_ROOT,
        prompt: str = "go",
    ) -> Session:
        """One headless session with ``script`` as the model."""
        with ModelStandin(script) as model:
            env = base_env(str(self.home))
            env.update(
                ANTHROPIC_BASE_URL=model.base_url,
                ANTHROPIC_API_KEY="sk-ant-test-000",
                CLAUDE_CODE_MCP_STARTUP_WAIT_MS="15000",
                ENABLE_TOOL_SEARCH="false",
                # --dangerously-skip-permissions refuses root without it (§5.2).
                IS_SANDBOX="1",
            )
            command = [self.claude, "-p", prompt]
            if plugin_dir is not None:
                command += ["--plugin-dir", plugin_dir]
            command += [
                "--dangerously-skip-permissions",
                "--output-format",
                "json",
                "--debug-file",
                str(self.home / "debug.log"),
            ]
            done = subprocess.run(
                command,
                cwd=self.project,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
                check=False,
            )
            assert not model.unexpected, model.unexpected
            session = Session(list(model.requests), done)
        assert session.returncode == 0, session.tail()
        assert session.requests, session.tail()
        return session

    def plugin(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``claude plugin ARGS`` with this workspace's HOME (no model needed)."""
        done = subprocess.run(
            [self.claude, "plugin", *args],
            cwd=self.project,
            env=base_env(str(self.home)),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done

    # -- the project's store, written the way a person and an agent write it ----------------

    def cli(self, *args: str) -> JSONValue:
        """``ctxkeeper ARGS --json`` run by a person (origin user) on this project."""
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ctxkeeper",
                *args,
                "--project-dir",
                str(self.project),
                "--json",
            ],
            cwd=REPO_ROOT,
            env={**base_env(str(self.home)), "PYTHONPATH": REPO_ROOT},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return json.loads(done.stdout) if done.stdout.strip() else None

    def agent_record(self, arguments: JSONObject) -> JSONObject:
        """``record_entry`` through the plugin's MCP server (origin agent), outside Claude Code."""
        replies = mcp_exchange(
            str(self.project),
            [
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "record_entry", "arguments": arguments},
                }
            ],
        )
        result = replies[-1]["result"]
        assert isinstance(result, dict)
        assert not result.get("isError"), result
        structured = result["structuredContent"]
        assert isinstance(structured, dict)
        return structured


def mcp_exchange(
    project: str,
    calls: list[JSONObject],
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> list[JSONObject]:
    """Start the launcher as ``.mcp.json`` does, initialize, send ``calls``; return the replies."""
    lines = "".join(json.dumps(m) + "\n" for m in [*HANDSHAKE, *calls])
    done = subprocess.run(
        [sys.executable, "-I", LAUNCHER],
        input=lines,
        cwd=cwd or project,
        env=env or {"PATH": os.environ.get("PATH", ""), "CLAUDE_PROJECT_DIR": project},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(replies) == 1 + len(calls), (done.stdout[-2000:], done.stderr[-2000:])
    return replies


def content_text(content: JSONValue) -> str:
    """A tool_result's content (a string, or a list of text blocks) as one string."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _messages(body: JSONObject) -> list[JSONObject]:
    messages = body.get("messages")
    assert isinstance(messages, list)
    return [m for m in messages if isinstance(m, dict)]


def _assistant_count(body: JSONObject) -> int:
    return sum(1 for m in _messages(body) if m.get("role") == "assistant")
