"""The official Python SDK drives the server: classic sessions (2.x and 1.x) and 2.x ``Client``.

Every server is run behind tests/e2e/tee_server.py, and every line it sends is validated
against the published schema of the revision the connection settled on.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

import pytest

from tests.e2e.sdk1_session import BOGUS_ARGUMENTS, classic_session
from tests.e2e.tool_examples import ordered_calls, resolve
from tests.mcp_wire import (
    MCP1_PYTHON,
    check_log_dir,
    check_structured,
    child_env,
    require_client,
    schemas_available,
    server_command,
    tee_command,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject, JSONValue

pytestmark = pytest.mark.slow

SERVERS = ["fixture", "real"]


class Wire:
    """One server under test: its command behind the recording relay, and the log folder."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        project = tmp_path / "project"
        project.mkdir()
        self.log_dir = str(tmp_path / "wire")
        self.command = tee_command(self.log_dir, server_command(kind, str(project)))
        self.env = child_env(HOME=str(tmp_path))

    def check_log(self) -> None:
        if schemas_available():
            assert check_log_dir(self.log_dir) > 0


@pytest.fixture(params=SERVERS)
def wire(request: pytest.FixtureRequest, tmp_path: Path) -> Wire:
    return Wire(request.param, tmp_path)


def check_classic(outcome: JSONObject) -> None:
    hello = outcome["initialize"]
    assert isinstance(hello, dict)
    assert hello["protocolVersion"] == "2025-11-25"
    assert hello["serverInfo"]["name"] == "ctxkeeper"  # type: ignore[call-overload, index]
    assert check_structured(outcome["tools"], outcome["calls"]) > 0
    bad = outcome["bad_call"]
    assert isinstance(bad, dict)
    assert bad["isError"] is True
    assert "invalid_argument" in json.dumps(bad)
    assert outcome["unknown_tool_code"] == -32602


class TestClassicSession:
    def test_sdk2(self, wire: Wire) -> None:
        check_classic(asyncio.run(classic_session(wire.command, wire.env)))
        wire.check_log()

    def test_sdk1(self, wire: Wire) -> None:
        python = require_client(MCP1_PYTHON, "the mcp 1.30.0 client venv")
        spec = json.dumps({"command": wire.command, "env": wire.env})
        done = subprocess.run(
            [python, os.path.join(os.path.dirname(__file__), "sdk1_session.py"), spec],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
        check_classic(json.loads(done.stdout))
        wire.check_log()


async def client_session(wire: Wire, mode: str) -> JSONObject:
    """Connect with the 2.x Client in ``mode``; list, call every example, then misbehave."""
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError

    params = StdioServerParameters(command=wire.command[0], args=wire.command[1:], env=wire.env)
    async with Client(params, mode=mode) as client:
        listed = (await client.list_tools()).tools
        names = [tool.name for tool in listed]
        tools: list[JSONValue] = [
            tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed
        ]
        calls: list[JSONValue] = []
        recorded: str | None = None
        for name, example in ordered_calls(names):
            arguments = resolve(example, recorded)
            result = await client.call_tool(name, arguments)
            wire_result = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            structured = wire_result.get("structuredContent")
            if recorded is None and isinstance(structured, dict):
                found = structured.get("id")
                recorded = found if isinstance(found, str) else None
            calls.append({"name": name, "arguments": arguments, "result": wire_result})
        bad = await client.call_tool(names[0], BOGUS_ARGUMENTS)
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no-such-tool", {})
        return {
            "version": client.protocol_version,
            "server": client.server_info.name if client.server_info else None,
            "instructions": client.instructions,
            "tools": tools,
            "calls": calls,
            "bad_is_error": bad.is_error,
            "unknown_code": unknown.value.error.code,
        }


class TestClient:
    @pytest.mark.parametrize(
        ("mode", "version"),
        [("auto", "2026-07-28"), ("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")],
    )
    def test_mode(self, wire: Wire, mode: str, version: str) -> None:
        outcome = asyncio.run(client_session(wire, mode))
        assert outcome["version"] == version
        if mode != "2026-07-28":
            # A pinned client never sees discover's serverInfo or instructions (mcp.md §11).
            assert outcome["server"] == "ctxkeeper"
            assert outcome["instructions"]
        assert check_structured(outcome["tools"], outcome["calls"]) > 0
        assert outcome["bad_is_error"] is True
        assert outcome["unknown_code"] == -32602
        wire.check_log()
