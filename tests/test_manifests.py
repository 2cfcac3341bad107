"""Every manifest names the same distribution and version (issue 25).

PyPI's ``ctxkeeper`` is an unrelated project, so the distribution is ``ctxkeeper-mcp`` while the
import package, the command and the plugin stay ``ctxkeeper``. Six files carry the name or the
version; :func:`disagreements` reads them all, and the tests make each one disagree in turn.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from ctxkeeper.plugin import clihint
from tests.mcp_wire import REPO_ROOT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

DISTRIBUTION = "ctxkeeper-mcp"
PLUGIN = "ctxkeeper"
FILES = [
    "pyproject.toml",
    "server.json",
    "README.md",
    ".claude-plugin/plugin.json",
    "plugin.json",
    ".claude-plugin/marketplace.json",
    "ctxkeeper/__init__.py",
]


def _table(text: str, name: str) -> dict[str, str]:
    """The plain ``key = "value"`` lines of one TOML table (tomllib is 3.11+)."""
    parts = text.split(f"\n[{name}]\n", 1)
    if len(parts) < 2:
        return {}
    body = parts[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([\w-]+) = "([^"]*)"$', body, re.MULTILINE))


def _json(root: str, relative: str) -> dict[str, object]:
    with open(os.path.join(root, relative), encoding="utf-8") as handle:
        loaded = json.load(handle)
    assert isinstance(loaded, dict), relative
    return loaded


def _text(root: str, relative: str) -> str:
    with open(os.path.join(root, relative), encoding="utf-8") as handle:
        return handle.read()


def disagreements(root: str) -> list[str]:
    """What in the manifests under ``root`` disagrees on the distribution, the plugin name or
    the version (empty when they agree). The version's reference is ``ctxkeeper.__version__``."""
    found: list[str] = []

    def expect(where: str, got: object, wanted: object) -> None:
        if got != wanted:
            found.append(f"{where}: {got!r}, expected {wanted!r}")

    match = re.search(
        r'^__version__ = "([^"]+)"$', _text(root, "ctxkeeper/__init__.py"), re.MULTILINE
    )
    version = match.group(1) if match else None
    if version is None:
        found.append("ctxkeeper/__init__.py: no __version__")

    toml = _text(root, "pyproject.toml")
    project = _table(toml, "project")
    expect("pyproject.toml [project] name", project.get("name"), DISTRIBUTION)
    scripts = _table(toml, "project.scripts")
    # The command people type, and the one `uvx <distribution>` runs.
    for script in (PLUGIN, DISTRIBUTION):
        expect(f"pyproject.toml script {script}", scripts.get(script), "ctxkeeper.cli:main")
    expect("pyproject.toml [tool.flit.module]", _table(toml, "tool.flit.module"), {"name": PLUGIN})

    server = _json(root, "server.json")
    expect("server.json version", server.get("version"), version)
    packages = server.get("packages")
    package = packages[0] if isinstance(packages, list) and packages else {}
    assert isinstance(package, dict)
    expect("server.json packages[0].identifier", package.get("identifier"), DISTRIBUTION)
    expect("server.json packages[0].version", package.get("version"), version)
    markers = re.findall(r"mcp-name:\s*(\S+)", _text(root, "README.md"))
    expect("README.md mcp-name marker", markers, [server.get("name")])

    for relative in (".claude-plugin/plugin.json", "plugin.json"):
        manifest = _json(root, relative)
        expect(f"{relative} name", manifest.get("name"), PLUGIN)
        expect(f"{relative} version", manifest.get("version"), version)

    market = _json(root, ".claude-plugin/marketplace.json")
    entries = market.get("plugins")
    entry = entries[0] if isinstance(entries, list) and len(entries) == 1 else {}
    assert isinstance(entry, dict)
    expect("marketplace.json plugins[0].name", entry.get("name"), PLUGIN)
    expect("marketplace.json plugins[0].version", entry.get("version"), version)
    return found


def test_every_manifest_agrees() -> None:
    assert disagreements(REPO_ROOT) == []


def test_the_hint_names_the_distribution() -> None:
    # SessionStart's install command for a person without the CLI (ctxkeeper/plugin/clihint.py).
    assert clihint.DISTRIBUTION == DISTRIBUTION
    assert f"uv tool install {DISTRIBUTION}" == clihint.INSTALL


def _copy(tmp_path: Path) -> str:
    root = tmp_path / "repo"
    for relative in FILES:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(REPO_ROOT, relative), root / relative)
    return str(root)


#: One edit per file that breaks agreement: (file, text, replacement, what is then reported).
SKEWS = [
    ("pyproject.toml", 'name = "ctxkeeper-mcp"', 'name = "ctxkeeper"', "[project] name"),
    ("pyproject.toml", 'ctxkeeper-mcp = "ctxkeeper.cli:main"\n', "", "script ctxkeeper-mcp"),
    ("server.json", '"identifier": "ctxkeeper-mcp"', '"identifier": "ctxkeeper"', "identifier"),
    ("server.json", '"version": "{v}",\n  "websiteUrl"', '"version": "9.9.9",\n  "websiteUrl"', "server.json version"),
    ("README.md", "mcp-name: io.github.ctxkeeper/ctxkeeper", "mcp-name: io.github.x/y", "mcp-name"),
    (".claude-plugin/plugin.json", '"version": "{v}"', '"version": "9.9.9"', ".claude-plugin/plugin.json version"),
    ("plugin.json", '"version": "{v}"', '"version": "9.9.9"', "plugin.json version"),
    (".claude-plugin/marketplace.json", '"version": "{v}"', '"version": "9.9.9"', "marketplace.json plugins[0].version"),
    ("ctxkeeper/__init__.py", '__version__ = "{v}"', '__version__ = "9.9.9"', "version"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("relative", "old", "new", "reported"),
    [pytest.param(*skew, id=f"{skew[0]}:{skew[3]}") for skew in SKEWS],
)
def test_a_file_out_of_step_is_named(
    tmp_path: Path, relative: str, old: str, new: str, reported: str
) -> None:
    import ctxkeeper

    root = _copy(tmp_path)
    assert disagreements(root) == []  # control: the copy agrees before the edit
    path = os.path.join(root, relative)
    text = _text(root, relative)
    old = old.format(v=ctxkeeper.__version__)
    assert old in text, (relative, old)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace(old, new.format(v=ctxkeeper.__version__), 1))
    found = disagreements(root)
    assert found, relative
    assert any(reported in line for line in found), found
