"""Scope coverage: which repo-relative paths an entry's scopes cover (the one implementation)."""

from __future__ import annotations

import os
import posixpath

from ctxkeeper.core.errors import UsageError

# Hooks import this module before every edit (con-001-5f40): no `typing`, `re` or `pathlib`.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["covers", "normalize_scope", "relative_path", "scope_covers", "specificity"]

_SCOPE_HINT = (
    "a scope is a path relative to the project root, such as 'src/billing/' or 'src/app.py' "
    "(an absolute path inside the project root is accepted too); leave the scope list empty "
    "for the whole project"
)
# Scopes are path prefixes; a pattern would be stored literally and cover nothing.
_GLOB_CHARS = frozenset("*?[")


def _glob_refusal(scope: str) -> UsageError:
    parts = scope.replace("\\", "/").split("/")
    fixed = []
    for part in parts:
        if _GLOB_CHARS.intersection(part):
            break
        if part not in ("", "."):
            fixed.append(part)
    suggestion = (
        f"use the directory it starts in, {'/'.join(fixed) + '/'!r}, instead"
        if fixed
        else "use a directory such as 'src/', or an empty scope list for project-wide"
    )
    return UsageError(
        f"scope {scope!r} is a glob pattern, but a scope is a plain path prefix (a directory or "
        f"a file) and a pattern would cover no file; {suggestion}. ({_SCOPE_HINT}.)"
    )


def _clean(path: str) -> str:
    # Agents on Windows or copying from logs send backslashes; normpath resolves `.`, `..` and
    # repeated slashes lexically, except that POSIX keeps a leading `//`, which we collapse too.
    path = posixpath.normpath(path.replace("\\", "/"))
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    return path


def _escapes(rel_path: str) -> bool:
    return rel_path == ".." or rel_path.startswith(("../", "/"))


def _under(path: str, root: str) -> str | None:
    # Both arguments are clean absolute paths; compare whole components, never string prefixes.
    if path == root:
        return ""
    prefix = root if root == "/" else root + "/"
    if path.startswith(prefix):
        return path[len(prefix) :]
    return None


def relative_path(path: str, root: str) -> str | None:
    """Return the repo-relative canonical form of a file path; None when it escapes the root.

    :param path: a path relative to ``root``, or an absolute path. A relative path is
        normalised on its own, so ``../repo/x`` counts as escaping even if it climbs back in.
    :param root: the project root; made absolute against the working directory if needed.
    :return: ``"src/app.py"`` style (``""`` for the root itself), or None.
    """
    path = _clean(path)
    if not path.startswith("/"):
        return None if _escapes(path) else ("" if path == "." else path)
    root = _clean(root)
    if not root.startswith("/"):
        root = _clean(os.path.abspath(root))
    rel = _under(path, root)
    if rel is not None:
        return rel
    # Only now pay for file-system calls: the two spellings may differ by symlinks only
    # (/tmp vs /private/tmp on macOS). Try the lexical path against the real root first so
    # symlinks inside the project are not resolved unless that is the only way to match.
    real_root = os.path.realpath(root)
    rel = _under(path, real_root)
    if rel is None:
        rel = _under(os.path.realpath(path), real_root)
    return rel


def _foreign_absolute(scope: str) -> str:
    """What an absolute path this platform does not read as one looks like, or ""."""
    if len(scope) >= 2 and scope[1] == ":" and scope[0].isascii() and scope[0].isalpha():
        return "a Windows drive path"
    if scope.replace("\\", "/").split("/", 1)[0] == "~":
        return "a home-directory path (a shell expands '~', ctxkeeper does not)"
    return ""


def normalize_scope(scope: str, root: str | None = None) -> str:
    """Return the canonical repo-relative form of a scope, no trailing slash; "" = whole project.

    :param root: the project root, needed only to accept an absolute scope inside it.
    :raises UsageError: when the scope escapes the project root, is a glob pattern, or is
        absolute without ``root``.
    """
    if _GLOB_CHARS.intersection(scope):
        raise _glob_refusal(scope)
    foreign = _foreign_absolute(scope)
    if foreign:
        # Stored as given, these would read as a folder named 'C:' or '~' and cover nothing.
        raise UsageError(f"scope {scope!r} is {foreign}, not a path in this project; {_SCOPE_HINT}")
    cleaned = _clean(scope)
    if cleaned.startswith("/"):
        if root is None:
            raise UsageError(
                f"scope {scope!r} is an absolute path, which is accepted only where the project "
                "root is known (here it is not); give it relative to the project root, such as "
                "'src/billing/'"
            )
        rel = relative_path(cleaned, root)
        if rel is None:
            raise UsageError(f"scope {scope!r} is outside the project root {root!r}; {_SCOPE_HINT}")
        return rel
    if _escapes(cleaned):
        raise UsageError(f"scope {scope!r} climbs out of the project root; {_SCOPE_HINT}")
    return "" if cleaned == "." else cleaned


def scope_covers(scope: str, rel_path: str) -> bool:
    """Return True when one canonical scope covers one canonical repo-relative path."""
    # Defensive: an escaping path must not slip through the project-wide scope.
    if _escapes(rel_path):
        return False
    return scope == "" or rel_path == scope or rel_path.startswith(scope + "/")


def covers(scopes: Sequence[str], rel_path: str | None) -> bool:
    """Return True when an entry with these canonical scopes covers the path.

    Empty ``scopes`` means project-wide; a None path (one that escaped the root) is never covered.
    """
    if rel_path is None:
        return False
    if not scopes:
        return scope_covers("", rel_path)
    return any(scope_covers(scope, rel_path) for scope in scopes)


def specificity(scopes: Sequence[str], rel_path: str) -> int:
    """Return how closely the scopes cover the path, so ranking can prefer the narrowest rule.

    :return: the number of components of the longest covering scope; 0 for project-wide,
        -1 when nothing covers the path.
    """
    best = -1
    for scope in scopes or ("",):
        if scope_covers(scope, rel_path):
            best = max(best, scope.count("/") + 1 if scope else 0)
    return best
