"""The CLI where plugin users are: bin/ctxkeeper and SessionStart's line for the person.

A person who installed only the plugin has no ``ctxkeeper`` on PATH. bin/ctxkeeper runs the CLI
from the plugin's own files with only python3, and SessionStart names it (and the install
command) to the person, once per session start, when no other ``ctxkeeper`` is on PATH.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from ctxkeeper.plugin.clihint import HINT_NO_BIN, INSTALL, cli_hint, on_path
from tests.hook_harness import hook_env, make_store, run_hook
from tests.mcp_wire import REPO_ROOT, person_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

LAUNCHER = os.path.join(REPO_ROOT, "bin", "ctxkeeper")


def path_without_cli() -> str:
    """The caller's PATH minus every folder holding a ``ctxkeeper`` (CI activates a venv that
    has one); python3 stays reachable."""
    folders = os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    kept = [f for f in folders if f and not os.path.exists(os.path.join(f, "ctxkeeper"))]
    return os.pathsep.join(kept)


def start(project: Path, path: str, source: str = "startup") -> str:
    """SessionStart's systemMessage, the hook run as hooks.json runs it, with PATH ``path``."""
    payload: JSONObject = {"session_id": "s1", "hook_event_name": "SessionStart", "source": source}
    result = run_hook("SessionStart", payload, project, env=hook_env(project, PATH=path))
    assert result.returncode == 0, result.stderr
    assert result.context.startswith("ctxkeeper project memory")  # control: it briefed
    return str(result.answer.get("systemMessage", ""))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    make_store(root)
    return root


class TestSessionStartHint:
    def test_names_the_plugins_own_command_which_runs(self, project: Path) -> None:
        lacking = start(project, path_without_cli())
        having = start(project, person_path())
        assert "ctxkeeper" not in having  # control: a person with the CLI is told nothing
        assert "\n" not in lacking
        assert INSTALL in lacking
        assert "pipx install ctxkeeper-mcp" in lacking
        named = re.findall(r"run it from the plugin as `([^`]+)`", lacking)
        assert named == [LAUNCHER]
        # The exact command runs, from any folder, with only python3 on PATH.
        done = subprocess.run(
            [named[0], "status"],
            cwd=project,
            env={"PATH": path_without_cli(), "HOME": str(project)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    def test_the_plugins_own_bin_on_path_does_not_count(
        self, project: Path, tmp_path: Path
    ) -> None:
        # Claude Code may put the plugin's bin/ on the hook's PATH; the person's shell lacks it.
        own = start(project, os.pathsep.join([os.path.dirname(LAUNCHER), path_without_cli()]))
        other = tmp_path / "elsewhere"
        other.mkdir()
        (other / "ctxkeeper").symlink_to(LAUNCHER)
        elsewhere = start(project, os.pathsep.join([str(other), path_without_cli()]))
        assert INSTALL in own
        assert elsewhere == ""

    @pytest.mark.parametrize("source", ["resume", "clear", "compact"])
    def test_only_as_the_session_starts(self, project: Path, source: str) -> None:
        assert INSTALL in start(project, path_without_cli(), "startup")  # control
        assert INSTALL not in start(project, path_without_cli(), source)


class TestOnPath:
    def test_a_file_that_is_not_executable_is_no_command(self, tmp_path: Path) -> None:
        plain = tmp_path / "plain"
        plain.mkdir()
        (plain / "ctxkeeper").write_text("#!/bin/sh\n", encoding="utf-8")
        runnable = tmp_path / "runnable"
        runnable.mkdir()
        (runnable / "ctxkeeper").symlink_to(LAUNCHER)
        own_bin = str(tmp_path / "own")
        assert not on_path({"PATH": f"{plain}{os.pathsep}"}, own_bin)
        assert on_path({"PATH": f"{plain}{os.pathsep}{runnable}"}, own_bin)

    def test_a_plugin_without_its_launcher_names_the_install_only(self, tmp_path: Path) -> None:
        bare = cli_hint({"PATH": ""}, str(tmp_path))
        full = cli_hint({"PATH": ""}, REPO_ROOT)
        assert bare == HINT_NO_BIN.format(
            install=INSTALL, install_else="pipx install ctxkeeper-mcp"
        )
        assert full is not None
        assert LAUNCHER in full

    def test_in_process_the_plugin_root_is_the_packages_parent(self, tmp_path: Path) -> None:
        linked = tmp_path / "linked"
        linked.mkdir()
        (linked / "ctxkeeper").symlink_to(LAUNCHER)
        assert cli_hint({"PATH": str(linked)}) is None
        hint = cli_hint({"PATH": str(tmp_path)})
        assert hint is not None
        assert f"`{LAUNCHER}`" in hint


def write_trap(root: Path) -> None:
    """A project whose own ``ctxkeeper`` package marks that it was imported."""
    package = root / "ctxkeeper"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        f"open({str(root / 'ran')!r}, 'w').close()\n", encoding="utf-8"
    )


class TestLauncher:
    def test_inits_a_project_and_never_imports_the_projects_code(self, tmp_path: Path) -> None:
        clone = tmp_path / "clone"
        write_trap(clone)
        env = {"PATH": path_without_cli(), "HOME": str(tmp_path), "PYTHONPATH": str(clone)}
        done = subprocess.run(
            [LAUNCHER, "init"],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert (clone / ".context").is_dir()
        assert not (clone / "ran").exists()
        # Control: python3 without -I in that folder does import the project's package.
        subprocess.run(
            ["python3", "-c", "import ctxkeeper"], cwd=clone, env=env, timeout=60, check=False
        )
        assert (clone / "ran").exists()

    def test_runs_through_a_link_from_another_folder(self, tmp_path: Path) -> None:
        links = tmp_path / "local-bin"
        links.mkdir()
        (links / "ctxkeeper").symlink_to(LAUNCHER)
        (links / "ck").symlink_to(links / "ctxkeeper")  # a link to the link
        import ctxkeeper

        for name in ("ctxkeeper", "ck"):
            done = subprocess.run(
                [str(links / name), "--version"],
                cwd=tmp_path,
                env={"PATH": path_without_cli(), "HOME": str(tmp_path)},
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip() == f"ctxkeeper {ctxkeeper.__version__}"
