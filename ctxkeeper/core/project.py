"""Find the project root and its ``.context/`` store directory, refusing unsafe layouts."""

from __future__ import annotations

import os

from ctxkeeper.core.errors import UnsafeStoreError, UsageError
from ctxkeeper.core.fsutil import check_not_link

CONTEXT_DIR = ".context"


def find_root(project_dir: str | None = None) -> str:
    """The project root: ``project_dir``, else ``CLAUDE_PROJECT_DIR``, else the git top-level
    of the working directory, else the working directory (DESIGN.md, "The store")."""
    chosen = project_dir or os.environ.get("CLAUDE_PROJECT_DIR")
    if chosen:
        root = os.path.realpath(os.path.expanduser(chosen))
        if not os.path.isdir(root):
            raise UsageError(f"project directory {chosen!r} does not exist or is not a directory")
        return root
    cwd = os.path.realpath(os.getcwd())
    return _git_top(cwd) or cwd


def _git_top(start: str) -> str | None:
    # Walking up for `.git` (a directory, or a file in worktrees and submodules) gives git's
    # top-level without paying for a subprocess on every hook call.
    current = start
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def context_dir(root: str) -> str:
    """``root/.context`` after checking it is a real directory inside the root (or absent)."""
    path = os.path.join(root, CONTEXT_DIR)
    check_not_link(path)
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise UnsafeStoreError(f"{path} exists but is not a directory")
        if os.path.dirname(os.path.realpath(path)) != os.path.realpath(root):
            raise UnsafeStoreError(f"{path} resolves outside the project root {root}")
    return path
