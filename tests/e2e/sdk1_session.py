"""Drive a stdio MCP server with the SDK's classic ``ClientSession`` and print what it saw.

Works with the 1.x line (run by the e2e tests with the ``mcp1`` venv's python in the clients
cache, ``tests/mcp_wire.py:clients_dir``))
and with 2.x (imported in-process). Attributes differ between the lines (camelCase in 1.x,
snake_case in 2.x), so every result is read as wire JSON via ``model_dump(by_alias=True)``
(mcp.md §11).

Usage: python sdk1_session.py '{"command": [...], "env": {...}}'
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

# Run as a script from another venv: make the repository root importable for tool_examples.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.e2e.tool_examples import ordered_calls, resolve

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pydantic import BaseModel

    from ctxkeeper.core._types import JSONObject

BOGUS_ARGUMENTS: JSONObject = {"\u0000bogus": 1}


def _wire(model: BaseModel) -> JSONObject:
    dumped: JSONObject = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


async def classic_session(command: list[str], env: dict[str, str]) -> JSONObject:
    """Handshake, list tools, call each with its examples, then one bad and one unknown call."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        hello = _wire(await session.initialize())
        tools = _wire(await session.list_tools())["tools"]
        assert isinstance(tools, list)
        names = [str(tool["name"]) for tool in tools if isinstance(tool, dict)]
        calls: list[JSONObject] = []
        recorded: str | None = None
        for name, example in ordered_calls(names):
            arguments = resolve(example, recorded)
            result = _wire(await session.call_tool(name, arguments))
            structured = result.get("structuredContent")
            if recorded is None and isinstance(structured, dict):
                found = structured.get("id")
                recorded = found if isinstance(found, str) else None
            calls.append({"name": name, "arguments": arguments, "result": result})
        bad = _wire(await session.call_tool(names[0], BOGUS_ARGUMENTS))
        unknown_code: int | None = None
        try:
            await session.call_tool("no-such-tool", {})
        except Exception as exc:  # noqa: BLE001  # McpError in 1.x, MCPError in 2.x
            unknown_code = getattr(getattr(exc, "error", None), "code", None)
    return {
        "initialize": hello,
        "tools": tools,
        "calls": calls,  # type: ignore[dict-item]  # list[JSONObject] is a JSON array
        "bad_call": bad,
        "unknown_tool_code": unknown_code,
    }


def main(argv: list[str]) -> int:
    """Run one session as described by the JSON in ``argv[0]`` and print the outcome."""
    spec = json.loads(argv[0])
    outcome = asyncio.run(classic_session(spec["command"], spec["env"]))
    print(json.dumps(outcome))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
