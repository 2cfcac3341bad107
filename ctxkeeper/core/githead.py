"""Read a repository's HEAD commit as data: ``.git/HEAD``, loose refs and ``packed-refs``.

No subprocess, so recording an entry can stamp ``verified_sha`` and the per-edit hook can tell
whether the drift cache is current, for the cost of two or three small file reads. Layouts this
reader does not know (reftable, a ``GIT_DIR`` elsewhere) answer "unknown", and callers that may
run git then ask ``git rev-parse HEAD`` (ctxkeeper.core.gitlog).

Import-light on purpose (con-001-5f40): ``os`` only.
"""

from __future__ import annotations

import os

__all__ = ["UNKNOWN", "current_head", "find_git_dir", "is_sha", "read_head"]

#: ``read_head`` could not read this layout as data; ask git itself.
UNKNOWN = "unknown"
_HEX = frozenset("0123456789abcdef")
_MAX_HOPS = 5
_MAX_READ = 1 << 16


def is_sha(text: str) -> bool:
    """A full commit id (SHA-1 or SHA-256), lowercase hex."""
    return len(text) in (40, 64) and _HEX.issuperset(text)


#: A ``packed-refs`` of many branches is large; past this, git is asked instead.
_MAX_PACKED = 1 << 24


class _TooLargeError(Exception):
    """A file was larger than this reader reads: the answer is ``UNKNOWN``, never a guess."""


def _read(path: str, limit: int = _MAX_READ) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        raise _TooLargeError(path)
    return data.decode("utf-8", "replace")


def find_git_dir(root: str) -> str | None:
    """The git directory of the repository holding ``root`` (a ``.git`` directory, or the one
    a ``.git`` file names, as in worktrees and submodules); None outside any repository."""
    here = os.path.abspath(root)
    while True:
        dot_git = os.path.join(here, ".git")
        if os.path.isdir(dot_git):
            return dot_git
        if os.path.isfile(dot_git):
            text = _read(dot_git) or ""
            if text.startswith("gitdir:"):
                target = text[len("gitdir:") :].strip()
                return os.path.normpath(os.path.join(here, target))
            return None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _packed(common: str, ref: str) -> str | None:
    text = _read(os.path.join(common, "packed-refs"), _MAX_PACKED)
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith(("#", "^")):
            continue
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha
    return None


def read_head(root: str) -> str | None:
    """HEAD's commit sha; None when there is no repository or no commit yet; ``UNKNOWN`` when
    the layout cannot be read as data."""
    try:
        return _read_head(root)
    except _TooLargeError:
        return UNKNOWN


def _read_head(root: str) -> str | None:
    git_dir = find_git_dir(root)
    if git_dir is None:
        return None
    common_text = _read(os.path.join(git_dir, "commondir"))
    common = (
        os.path.normpath(os.path.join(git_dir, common_text.strip())) if common_text else git_dir
    )
    text = _read(os.path.join(git_dir, "HEAD"))
    if text is None:
        return UNKNOWN
    for _ in range(_MAX_HOPS):
        value = text.strip()
        if is_sha(value):
            return value
        if not value.startswith("ref:"):
            return UNKNOWN
        ref = value[len("ref:") :].strip()
        if not ref.startswith("refs/") or ".." in ref.split("/"):
            return UNKNOWN
        if ref == "refs/heads/.invalid":  # the reftable format's placeholder
            return UNKNOWN
        loose = _read(os.path.join(git_dir, ref))
        if loose is None and common != git_dir:
            loose = _read(os.path.join(common, ref))
        if loose is not None:
            text = loose
            continue
        packed = _packed(common, ref)
        if packed is None:
            return None  # an unborn branch: no commit yet
        text = packed
    return UNKNOWN


def current_head(root: str) -> str | None:
    """HEAD's commit for ``verified_sha``: read as data, with ``git rev-parse`` only for a
    layout this reader does not know; None outside git or before the first commit."""
    head = read_head(root)
    if head == UNKNOWN:
        from ctxkeeper.core.gitlog import head_sha  # the subprocess half, only when needed

        return head_sha(root)
    return head
