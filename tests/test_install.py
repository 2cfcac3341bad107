"""The distribution installed as ``pipx`` / ``uv tool install`` would: from a clean copy of the
clone into a fresh venv (no ``-e``), then the three commands a person meets first.

pip builds the wheel in an isolated environment, fetching flit_core as pip is configured to
(an index or a local mirror); pyproject.toml accepts flit_core 3.9 to 4.x.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ctxkeeper
from tests.checkout import clean_copy
from tests.mcp_wire import HANDSHAKE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

pytestmark = pytest.mark.slow


def run(command: list[str], cwd: Path, env: dict[str, str], stdin: str = "") -> str:
    done = subprocess.run(
        command,
        input=stdin,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    return done.stdout


@pytest.fixture(scope="module")
def tool_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the distribution, built from a clean copy of this checkout."""
    base = tmp_path_factory.mktemp("install")
    source = clean_copy(base / "clone")
    venv = base / "venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    run([sys.executable, "-m", "venv", str(venv)], base, env)
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(source)], base, env)
    return venv


def person_env(venv: Path, home: Path) -> dict[str, str]:
    """A person's shell after ``uv tool install``: the tool's bin on PATH, nothing else of ours."""
    return {"PATH": f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin", "HOME": str(home)}


def test_installs_under_its_own_name_with_both_commands(tool_venv: Path, tmp_path: Path) -> None:
    probe = (
        "import importlib.metadata as m, importlib.util as u, json, ctxkeeper; "
        "d = m.distribution('ctxkeeper-mcp'); "
        "print(json.dumps({'version': d.version, 'file': ctxkeeper.__file__, "
        "'scripts': sorted(e.name for e in d.entry_points if e.group == 'console_scripts'), "
        "'tests': u.find_spec('tests') is not None, 'other': [x.metadata['Name'] for x in "
        "m.distributions() if x.metadata['Name'] == 'ctxkeeper']}))"
    )
    found = json.loads(run([str(tool_venv / "bin" / "python"), "-c", probe], tmp_path, {}))
    assert found["version"] == ctxkeeper.__version__
    assert found["scripts"] == ["ctxkeeper", "ctxkeeper-mcp"]
    # The package runs from the venv, not from the clone it was built from.
    assert str(found["file"]).startswith(str(tool_venv))
    assert found["tests"] is False
    assert found["other"] == []  # no distribution named plain ctxkeeper came along
    env = person_env(tool_venv, tmp_path)
    for script in ("ctxkeeper", "ctxkeeper-mcp"):
        shown = run([script, "--version"], tmp_path, env).strip()
        assert shown == f"ctxkeeper {ctxkeeper.__version__}"


def test_init_then_serve_over_stdio(tool_venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = person_env(tool_venv, tmp_path)
    run(["ctxkeeper", "init"], project, env)
    assert (project / ".context").is_dir()
    rule = "Applied migrations are never edited in place"
    reason = "Incident 2025-03-02: an edited migration left staging and production schemas apart"
    add = ["ctxkeeper", "add", "constraint", "--rule", rule, "--reason", reason]
    run([*add, "--hardness", "hard"], project, env)
    messages: list[JSONObject] = [
        *HANDSHAKE,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "get_project_summary", "arguments": {}},
        },
    ]
    # `uvx ctxkeeper-mcp serve` (server.json) runs this script.
    out = run(
        ["ctxkeeper-mcp", "serve"], project, env, "".join(json.dumps(m) + "\n" for m in messages)
    )
    replies = {r["id"]: r for r in map(json.loads, out.splitlines()) if "id" in r}
    assert replies[1]["result"]["serverInfo"]["version"] == ctxkeeper.__version__
    names = {tool["name"] for tool in replies[2]["result"]["tools"]}
    assert {"record_entry", "get_context", "get_project_summary"} <= names
    summary = replies[3]["result"]
    assert not summary.get("isError"), summary
    # The server reads the project it was started in: the rule the person just recorded.
    assert summary["structuredContent"]["total"] == 1
    assert rule in json.dumps(summary["structuredContent"]["hard_constraints"])
