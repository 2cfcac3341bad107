"""The person's way to the ``ctxkeeper`` command when it is not on their PATH.

Claude Code puts a plugin's ``bin/`` on its Bash tool's PATH, not on the person's shell: a
person who installed only the plugin has no ``ctxkeeper`` to run init, review or approve with.
SessionStart then names the plugin's own ``bin/ctxkeeper`` and the install command.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

#: The distribution on PyPI (the import package and the command stay ``ctxkeeper``; PyPI's
#: ``ctxkeeper`` is an unrelated project). tests/test_manifests.py holds it to pyproject.toml.
DISTRIBUTION = "ctxkeeper-mcp"
INSTALL = f"uv tool install {DISTRIBUTION}"
INSTALL_ELSE = f"pipx install {DISTRIBUTION}"
PROGRAM = "ctxkeeper"
HINT = (
    "ctxkeeper: no `ctxkeeper` command on your PATH; run it from the plugin as `{command}` "
    "(e.g. `{command} review`), or install it with `{install}` (or `{install_else}`)."
)
HINT_NO_BIN = (
    "ctxkeeper: no `ctxkeeper` command on your PATH; install it with `{install}` "
    "(or `{install_else}`)."
)


def plugin_root() -> str:
    """The directory holding the running ``ctxkeeper`` package: the plugin root for hooks."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def on_path(environ: Mapping[str, str], own_bin: str) -> bool:
    """Whether PATH offers an executable ``ctxkeeper`` other than the plugin's own ``bin/``
    (Claude Code may put that one on the hook's PATH too; the person's shell lacks it)."""
    for folder in environ.get("PATH", "").split(os.pathsep):
        if not folder or _same_dir(folder, own_bin):
            continue
        candidate = os.path.join(folder, PROGRAM)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return True
    return False


def cli_hint(environ: Mapping[str, str], root: str | None = None) -> str | None:
    """One line for the person when ``ctxkeeper`` is not on PATH; None when it is."""
    import shlex

    own_bin = os.path.join(root or plugin_root(), "bin")
    if on_path(environ, own_bin):
        return None
    launcher = os.path.join(own_bin, PROGRAM)
    if not os.access(launcher, os.X_OK):
        return HINT_NO_BIN.format(install=INSTALL, install_else=INSTALL_ELSE)
    return HINT.format(command=shlex.quote(launcher), install=INSTALL, install_else=INSTALL_ELSE)
