"""The MCP Inspector CLI (TypeScript SDK client) lists and calls every tool in each era."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.e2e.tool_examples import ordered_calls, resolve
from tests.mcp_wire import (
    INSPECTOR,
    REPO_ROOT,
    check_log_dir,
    check_structured,
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

ERAS = ["legacy", "auto", "modern"]


class Inspector:
    """Runs ``inspector --cli`` against one server, recording the wire in ``log_dir``."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.binary = require_client(INSPECTOR, "@modelcontextprotocol/inspector 2.12.0")
        project = tmp_path / "project"
        project.mkdir()
        self.home = str(tmp_path / "home")
        self.log_dir = str(tmp_path / "wire")
        self.server = tee_command(self.log_dir, server_command(kind, str(project)))

    def run(self, *options: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        # The Inspector gives the server only a default environment (mcp.md §12): pass
        # PYTHONPATH with -e. HOME keeps its ~/.mcp-inspector state out of the real home.
        command = [
            self.binary,
            "--cli",
            "--format",
            "json",
            "-e",
            f"PYTHONPATH={REPO_ROOT}",
            *options,
            "--",
            *self.server,
        ]
        done = subprocess.run(
            command,
            capture_output=True,
            cwd=REPO_ROOT,
            env={"HOME": self.home, "PATH": _path()},
            timeout=120,
            check=False,
        )
        if check:
            assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-3000:])
        return done

    def result(self, *options: str) -> JSONObject:
        outcome = json.loads(self.run(*options).stdout)
        assert isinstance(outcome, dict)
        result = outcome["result"]
        assert isinstance(result, dict)
        return result

    def check_log(self) -> None:
        if schemas_available():
            assert check_log_dir(self.log_dir) > 0


def _path() -> str:
    import os

    return os.environ.get("PATH", "/usr/bin:/bin")


@pytest.fixture(params=["fixture", "real"])
def inspector(request: pytest.FixtureRequest, tmp_path: Path) -> Inspector:
    return Inspector(request.param, tmp_path)


@pytest.mark.parametrize("era", ERAS)
def test_list_and_call_every_tool(inspector: Inspector, era: str) -> None:
    tools = inspector.result("--protocol-era", era, "--method", "tools/list")["tools"]
    assert isinstance(tools, list)
    names = [str(tool["name"]) for tool in tools if isinstance(tool, dict)]
    calls: list[JSONValue] = []
    recorded: str | None = None
    for name, example in ordered_calls(names):
        arguments = resolve(example, recorded)
        result = inspector.result(
            "--protocol-era",
            era,
            "--method",
            "tools/call",
            "--tool-name",
            name,
            "--tool-args-json",
            json.dumps(arguments),
        )
        structured = result.get("structuredContent")
        if recorded is None and isinstance(structured, dict):
            found = structured.get("id")
            recorded = found if isinstance(found, str) else None
        if era != "legacy":
            # The era settled on 2026-07-28; the Inspector prints results without resultType,
            # which the wire log check below verifies instead.
            assert "io.modelcontextprotocol/serverInfo" in result["_meta"]  # type: ignore[operator]
        calls.append({"name": name, "arguments": arguments, "result": result})
    assert check_structured(tools, calls) > 0
    inspector.check_log()


@pytest.mark.parametrize("era", ERAS)
def test_bad_arguments_are_a_tool_error(inspector: Inspector, era: str) -> None:
    tools = inspector.result("--protocol-era", era, "--method", "tools/list")["tools"]
    assert isinstance(tools, list)
    assert isinstance(tools[0], dict)
    first = str(tools[0]["name"])
    done = inspector.run(
        "--protocol-era",
        era,
        "--method",
        "tools/call",
        "--tool-name",
        first,
        "--tool-args-json",
        json.dumps({"\u0000bogus": 1}),
        check=False,
    )
    # Exit 5 is the Inspector's "tool returned isError" (mcp.md §12).
    assert done.returncode == 5, (done.stdout[-2000:], done.stderr[-2000:])
    inspector.check_log()


def test_strict_schema_lint(inspector: Inspector) -> None:
    done = inspector.run("--strict", "-q", "--method", "tools/list")
    assert json.loads(done.stdout)["result"]["tools"]
    inspector.check_log()
