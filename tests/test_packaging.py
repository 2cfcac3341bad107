"""Plugin, marketplace and registry manifests, the licence, the skill, and the isolated launcher."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys

import pytest

import ctxkeeper
from tests.e2e.claude_session import LAUNCHER, mcp_exchange
from tests.mcp_wire import REPO_ROOT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

SERVER_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
#: What the marketplace's plugin/ folder links to: what a plugin install needs to run.
PLUGIN_RUNTIME = [
    ".claude-plugin/plugin.json",
    ".mcp.json",
    "LICENSE",
    "README.md",
    "bin",
    "ctxkeeper",
    "ctxkeeper_server.py",
    "hooks",
    "skills",
]


def load(relative: str) -> JSONObject:
    with open(os.path.join(REPO_ROOT, relative), encoding="utf-8") as handle:
        document: JSONObject = json.load(handle)
    return document


def read(relative: str) -> str:
    with open(os.path.join(REPO_ROOT, relative), encoding="utf-8") as handle:
        return handle.read()


def pyproject() -> dict[str, str]:
    """The plain ``key = "value"`` lines of pyproject's [project] table (tomllib is 3.11+)."""
    table = read("pyproject.toml").split("[project]\n", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^(\w+) = "([^"]*)"$', table, re.MULTILINE))


class TestPluginManifest:
    def test_names_and_versions_the_package(self) -> None:
        manifest = load(".claude-plugin/plugin.json")
        assert manifest["name"] == "ctxkeeper"
        assert manifest["version"] == ctxkeeper.__version__
        assert manifest["license"] == "MIT"
        assert isinstance(manifest["keywords"], list)
        assert all(isinstance(k, str) for k in manifest["keywords"])
        author = manifest["author"]
        assert isinstance(author, dict)
        assert author["name"]
        for key in ("description", "homepage", "repository"):
            assert isinstance(manifest[key], str)
            assert manifest[key]

    def test_top_level_copy_is_identical(self) -> None:
        assert load("plugin.json") == load(".claude-plugin/plugin.json")

    @pytest.mark.parametrize("relative", [".claude-plugin/plugin.json", "plugin.json"])
    # con-011-1d8a
    def test_never_lists_the_default_hooks_file(self, relative: str) -> None:
        # hooks/hooks.json loads by default; naming it again is a "Duplicate hooks file" load
        # error that leaves the plugin without hooks (claude-code.md §1.3).
        manifest = load(relative)
        assert "hooks" not in manifest
        assert "hooks/hooks.json" not in json.dumps(manifest)
        # Control: the scan above does see what the manifest holds.
        assert "ctxkeeper" in json.dumps(manifest)

    def test_marketplace_offers_the_runtime_folder(self) -> None:
        market = load(".claude-plugin/marketplace.json")
        assert isinstance(market["name"], str)
        assert KEBAB.match(market["name"])
        owner = market["owner"]
        assert isinstance(owner, dict)
        assert owner["name"]
        plugins = market["plugins"]
        assert isinstance(plugins, list)
        # A plugin install copies the source folder: plugin/ holds only what runs.
        assert [(p["name"], p["source"]) for p in plugins if isinstance(p, dict)] == [
            ("ctxkeeper", "./plugin")
        ]

    def test_runtime_folder_links_only_what_runs(self) -> None:
        folder = os.path.join(REPO_ROOT, "plugin")
        held = sorted(os.listdir(folder)) + [
            f".claude-plugin/{n}" for n in os.listdir(os.path.join(folder, ".claude-plugin"))
        ]
        assert sorted(held) == sorted([*PLUGIN_RUNTIME, ".claude-plugin"])
        for relative in PLUGIN_RUNTIME:
            link = os.path.join(folder, relative)
            # Links, so the checkout keeps one copy: Claude Code copies their targets.
            assert os.path.islink(link), relative
            assert os.path.realpath(link) == os.path.realpath(os.path.join(REPO_ROOT, relative))
        # Control: what must never ship is in the checkout, just not in the folder.
        assert {"tests", "evals", "bench"} <= set(os.listdir(REPO_ROOT))


class TestRegistryManifest:
    def test_shape_of_a_pypi_stdio_server(self) -> None:
        server = load("server.json")
        assert server["$schema"] == SERVER_SCHEMA
        name = server["name"]
        assert isinstance(name, str)
        assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", name)
        description = server["description"]
        assert isinstance(description, str)
        assert 1 <= len(description) <= 100
        assert server["version"] == ctxkeeper.__version__
        repository = server["repository"]
        assert isinstance(repository, dict)
        assert repository["source"] == "github"
        assert repository["url"] == load(".claude-plugin/plugin.json")["repository"]
        packages = server["packages"]
        assert isinstance(packages, list)
        assert len(packages) == 1
        package = packages[0]
        assert isinstance(package, dict)
        assert package["registryType"] == "pypi"
        assert package["identifier"] == pyproject()["name"] == "ctxkeeper-mcp"
        assert package["version"] == server["version"]
        assert package["runtimeHint"] == "uvx"
        assert package["transport"] == {"type": "stdio"}
        assert package["packageArguments"] == [{"type": "positional", "value": "serve"}]
        # camelCase since 2025-09-16: the snake_case spellings are rejected by the registry.
        assert "registry_type" not in json.dumps(server)

    def test_readme_claims_the_server_name(self) -> None:
        # PyPI ownership check: the long description carries `mcp-name: <name>` (mcp.md §16).
        markers = re.findall(r"mcp-name:\s*(\S+)", read("README.md"))
        assert markers == [load("server.json")["name"]]


class TestLicence:
    def test_mit_everywhere(self) -> None:
        text = read("LICENSE")
        assert text.startswith("MIT License\n")
        assert "Permission is hereby granted, free of charge" in text
        assert pyproject()["license"] == "MIT"
        assert load(".claude-plugin/plugin.json")["license"] == "MIT"


class TestSkill:
    def test_frontmatter_names_it_and_says_when_to_load(self) -> None:
        text = read("skills/ctxkeeper/SKILL.md")
        match = re.match(r"---\n(.*?)\n---\n", text, re.DOTALL)
        assert match, "SKILL.md starts with a frontmatter block"
        fields = dict(line.split(": ", 1) for line in match.group(1).splitlines())
        assert fields["name"] == "ctxkeeper"
        assert fields["description"].startswith("Use when")

    @pytest.mark.parametrize(
        "needle",
        [
            pytest.param("get_context", id="check-before-re-deciding"),
            pytest.param("`reason` (40", id="constraint-floor"),
            pytest.param("`why_chosen` (60", id="decision-floor"),
            pytest.param("incident", id="reason-names-the-incident"),
            pytest.param("`proposed`", id="a-person-approves"),
            pytest.param("re-issue the edit", id="gate-denial"),
        ],
    )
    def test_covers(self, needle: str) -> None:
        assert needle in read("skills/ctxkeeper/SKILL.md")


class TestHookDeclarations:
    """Every hook starts isolated from the project (con-010-aa87) and without site (speed)."""

    def test_every_command_runs_a_plugin_script_isolated(self) -> None:
        with open(os.path.join(REPO_ROOT, "hooks", "hooks.json"), encoding="utf-8") as handle:
            declared = json.load(handle)["hooks"]
        commands = [
            handler["command"]
            for groups in declared.values()
            for group in groups
            for handler in group["hooks"]
        ]
        assert len(commands) >= 6  # control: the walk found the handlers
        shape = re.compile(r'^python3 -I -S "\$\{CLAUDE_PLUGIN_ROOT\}/hooks/([a-z_]+\.py)"$')
        for command in commands:
            match = shape.match(command)
            assert match, command
            assert os.path.isfile(os.path.join(REPO_ROOT, "hooks", match.group(1))), command
        assert all(
            handler.get("timeout", 600) <= 30
            for g in declared.values()
            for grp in g
            for handler in grp["hooks"]
        )


class TestMcpDeclaration:
    def test_starts_the_launcher_isolated_by_absolute_path(self) -> None:
        servers = load(".mcp.json")["mcpServers"]
        assert isinstance(servers, dict)
        server = servers["ctxkeeper"]
        assert isinstance(server, dict)
        assert server["command"] == "python3"
        assert server["args"] == ["-I", "${CLAUDE_PLUGIN_ROOT}/ctxkeeper_server.py"]
        assert "env" not in server
        assert os.path.isfile(LAUNCHER)


HOSTILE_FILES = {
    "ctxkeeper/__init__.py": "pkg-init",
    "ctxkeeper/__main__.py": "pkg-main",
    "ctxkeeper/mcp/server.py": "pkg-server",
    "json.py": "json",
    "scope.py": "scope",
}


def hostile_project(root: Path) -> Path:
    """A cloned repository whose Python files write a marker when imported or run."""
    for relative, marker in HOSTILE_FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"import os\nopen(os.path.join({str(root)!r}, 'ran-{marker}'), 'w').close()\n",
            encoding="utf-8",
        )
    return root


def markers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("ran-"))


class TestLauncherIsolation:
    def test_project_code_never_runs_while_the_server_answers(self, tmp_path: Path) -> None:
        project = hostile_project(tmp_path / "clone")
        subprocess.run(
            [sys.executable, "-m", "ctxkeeper", "init", "--project-dir", str(project)],
            cwd=REPO_ROOT,
            env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
            check=True,
            capture_output=True,
            timeout=60,
        )
        # PYTHONPATH pointing into the clone too: -I must ignore it.
        env = {
            "PATH": os.environ.get("PATH", ""),
            "CLAUDE_PROJECT_DIR": str(project),
            "PYTHONPATH": str(project),
        }
        replies = mcp_exchange(
            str(project),
            [
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "get_project_summary", "arguments": {}},
                },
            ],
            env=env,
        )
        tools = replies[1]["result"]
        assert isinstance(tools, dict)
        listed = tools["tools"]
        assert isinstance(listed, list)
        names = {t["name"] for t in listed if isinstance(t, dict)}
        assert {"record_entry", "get_context"} <= names
        summary = replies[2]["result"]
        assert isinstance(summary, dict)
        assert not summary.get("isError"), summary
        assert markers(project) == []

    @pytest.mark.parametrize(
        ("command", "expected"),
        [
            # The old declaration: `-m` puts the working directory (the clone) first.
            pytest.param(["-m", "ctxkeeper", "serve"], "ran-pkg-init", id="python-m-in-project"),
            # The launcher without -I: PYTHONPATH (the clone) comes before the standard library.
            pytest.param([LAUNCHER], "ran-json", id="launcher-without-isolation"),
        ],
    )
    def test_control_the_trap_fires_without_isolation(
        self, tmp_path: Path, command: list[str], expected: str
    ) -> None:
        project = hostile_project(tmp_path / "clone")
        subprocess.run(
            [sys.executable, *command],
            input=b"",
            cwd=project,
            env={
                "PATH": os.environ.get("PATH", ""),
                "CLAUDE_PROJECT_DIR": str(project),
                "PYTHONPATH": f"{project}{os.pathsep}{REPO_ROOT}",
            },
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert expected in markers(project)


# Issue 9's layout: each layer may import only the layers listed before it (README,
# "Development"), so the MCP door never reaches the person's door and core stands alone.
LAYERS = ("core", "team", "write", "read", "mcp", "cli", "plugin")


def _layers_imported(source: str) -> set[str]:
    """The ctxkeeper layers a module's source imports, lazy and typing-only imports included."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if len(parts) > 1 and parts[0] == "ctxkeeper" and parts[1] in LAYERS:
                found.add(parts[1])
    return found


def _ctxkeeper_modules_after(module: str) -> list[str]:
    """The ctxkeeper modules a fresh interpreter holds after importing ``module``."""
    listing = "print(*sorted(m for m in sys.modules if m.split('.')[0] == 'ctxkeeper'))"
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys, {module}; {listing}"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.split()


class TestLayout:
    """con-012-6598: layers import only earlier layers; layer packages import nothing."""

    def test_no_layer_imports_a_later_one(self) -> None:
        upward = []
        seen = set()
        for layer in LAYERS:
            folder = os.path.join(REPO_ROOT, "ctxkeeper", layer)
            for name in sorted(os.listdir(folder)):
                if name.endswith(".py"):
                    imported = _layers_imported(read(os.path.join("ctxkeeper", layer, name)))
                    seen |= imported
                    later = LAYERS[LAYERS.index(layer) + 1 :]
                    upward += [f"{layer}/{name} imports {it}" for it in imported if it in later]
        assert upward == []
        # Control: the walk reads real imports, every layer but the last is imported by some.
        assert seen >= set(LAYERS[:-1])

    def test_control_an_upward_import_is_seen(self) -> None:
        source = "def f():\n    from ctxkeeper.cli import review\n    import ctxkeeper.mcp.server\n"
        assert _layers_imported(source) == {"cli", "mcp"}
        assert _layers_imported("from ctxkeeper import __version__\n") == set()

    @pytest.mark.parametrize("layer", [pytest.param(layer, id=layer) for layer in LAYERS])
    def test_layer_package_imports_nothing(self, layer: str) -> None:
        # Hooks import ctxkeeper.core and ctxkeeper.plugin on every tool call (con-001-5f40):
        # a layer's __init__.py is its docstring, plus for cli the console script's lazy main.
        body = ast.parse(read(os.path.join("ctxkeeper", layer, "__init__.py"))).body
        docstring, rest = body[0], body[1:]
        assert isinstance(docstring, ast.Expr), layer
        assert isinstance(docstring.value, ast.Constant), layer
        assert isinstance(docstring.value.value, str), layer
        if layer != "cli":
            assert rest == []
        assert _ctxkeeper_modules_after(f"ctxkeeper.{layer}") == ["ctxkeeper", f"ctxkeeper.{layer}"]

    def test_control_the_listing_sees_a_module_import(self) -> None:
        loaded = _ctxkeeper_modules_after("ctxkeeper.core.scope")
        assert loaded == [
            "ctxkeeper",
            "ctxkeeper.core",
            "ctxkeeper.core.errors",
            "ctxkeeper.core.scope",
        ]

    def test_console_script_target_runs(self) -> None:
        script = dict(re.findall(r'^(\w+) = "([^"]*)"$', read("pyproject.toml"), re.MULTILINE))
        module, function = script["ctxkeeper"].split(":")
        code = f"import sys; from {module} import {function}; sys.exit({function}(['--version']))"
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert ctxkeeper.__version__ in proc.stdout
