"""Writing the projections to disk: inside the project root only, never through a link, and
never over (or deleting) a file that does not carry ctxkeeper's marker."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Final

from ctxkeeper.core import fsutil, times
from ctxkeeper.core.errors import ProjectionError, UsageError
from ctxkeeper.read import projections
from ctxkeeper.read.render import visible

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.store import Store
    from ctxkeeper.read.projections import Entry

PROJECTION_FORMATS: Final = ("rules", "markdown", "agents")


@dataclass
class Report:
    """What one export did, file by file (paths relative to the project root)."""

    format: str
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    """Produced with the bytes already on disk, so left as they were."""
    deleted: list[str] = field(default_factory=list)
    skipped: list[JSONObject] = field(default_factory=list)
    """Each ``{"path": ..., "why": ...}`` or ``{"scope": ..., "ids": [...], "why": ...}``."""

    def to_json(self) -> JSONObject:
        return {
            "format": self.format,
            "written": [*self.written],
            "unchanged": [*self.unchanged],
            "deleted": [*self.deleted],
            "skipped": [*self.skipped],
        }

    def text(self) -> str:
        counts = (
            f"{len(self.written)} written, {len(self.unchanged)} unchanged, "
            f"{len(self.deleted)} deleted, {len(self.skipped)} skipped"
        )
        lines = [f"export {self.format}: {counts}"]
        lines += [f"  wrote     {visible(path)}" for path in self.written]
        lines += [f"  unchanged {visible(path)}" for path in self.unchanged]
        lines += [
            f"  deleted   {visible(path)} (a ctxkeeper projection no longer produced)"
            for path in self.deleted
        ]
        for skip in self.skipped:
            if "scope" in skip:
                ids = skip.get("ids")
                held = ", ".join(map(str, ids)) if isinstance(ids, list) else ""
                what = f"scope {visible(str(skip['scope']))!r} ({held})"
            else:
                what = visible(str(skip.get("path")))
            lines.append(f"  skipped   {what}: {skip.get('why')}")
        return "\n".join(lines)


def export_projection(store: Store, fmt: str) -> Report:
    """Write one projection of ``store``'s entries as they stand now."""
    store.require()
    entries = list(store.load().entries.values())
    root = os.path.realpath(store.root)
    if fmt == "rules":
        return write_rules(root, entries)
    if fmt == "markdown":
        return write_markdown(root, entries)
    if fmt == "agents":
        return write_agents(root, entries)
    raise UsageError(f"no projection {fmt!r}; the projections are {', '.join(PROJECTION_FORMATS)}")


# ------------------------------------------------------------------------------ safety


def _target(root: str, rel: str, *, folder: bool = False) -> str:
    """``root/rel`` after checking that no component of ``rel`` is a link, no folder on the
    way (nor ``rel`` itself when ``folder``) is a file, and the result resolves inside ``root``.

    :raise ProjectionError: when one of those fails; nothing has been written then.
    """
    path = root
    parts = rel.split("/")
    for number, part in enumerate(parts, start=1):
        path = os.path.join(path, part)
        shown = "/".join(parts[:number])
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(info.st_mode):
            raise ProjectionError(
                f"{shown} is a symbolic link (to {os.readlink(path)!r}); ctxkeeper writes "
                f"projections only into real folders and files inside the project root, never "
                f"through a link, so nothing was written. Replace {shown} with a real "
                f"{'folder' if folder or number < len(parts) else 'file'} and run again"
            )
        if (folder or number < len(parts)) and not stat.S_ISDIR(info.st_mode):
            raise ProjectionError(
                f"{shown} is a file where ctxkeeper needs a folder for {rel}; move it aside"
            )
    full = os.path.join(root, *parts)
    real = os.path.realpath(full)
    if not real.startswith(root.rstrip(os.sep) + os.sep):
        raise ProjectionError(f"{rel} resolves outside the project root {root}; nothing written")
    return full


def _make_folders(root: str, rel: str) -> None:
    path = root
    for part in rel.split("/"):
        path = os.path.join(path, part)
        if not os.path.lexists(path):
            os.mkdir(path)
    _target(root, rel, folder=True)  # refuse a link that appeared meanwhile


def _own_file(path: str, rel: str) -> str | None:
    """Why a file at ``path`` is not one ctxkeeper may read and replace (None: it may)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link; ctxkeeper never writes through or removes a link"
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file; move {rel} aside"
    if info.st_nlink > 1:
        return f"it has {info.st_nlink} hard links; ctxkeeper rewrites only files it alone owns"
    return None


def _read(path: str, rel: str) -> bytes | None:
    """A root-level file's bytes (None when absent), refusing what ``_own_file`` refuses."""
    if not os.path.lexists(path):
        return None
    problem = _own_file(path, rel)
    if problem is not None:
        raise ProjectionError(f"{rel} is {problem}; nothing was written")
    return fsutil.read_bytes(path)


def _put(report: Report, path: str, rel: str, data: bytes, old: bytes | None) -> None:
    if old == data:
        report.unchanged.append(rel)
        return
    fsutil.write_atomic(path, data)
    report.written.append(rel)


# ------------------------------------------------------------------------------ writers


def write_rules(root: str, entries: Iterable[Entry]) -> Report:
    """``.claude/rules/ctxkeeper/``: write the produced files, delete marked ones no longer
    produced, and leave (and report) every file without the marker."""
    folder_rel = projections.RULES_DIR
    projection = projections.render_rules(entries, instant=times.now())
    report = Report("rules")
    report.skipped += [
        {"scope": s.scope, "ids": list(s.ids), "why": s.why} for s in projection.skipped
    ]
    folder = _target(root, folder_rel, folder=True)
    # 1. What is there: marked files are ctxkeeper's; anything else is left alone.
    present: dict[str, bytes] = {}
    foreign: dict[str, str] = {}
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    for name in (n for n in names if n.endswith(".md")):
        path, rel = os.path.join(folder, name), f"{folder_rel}/{name}"
        problem = _own_file(path, rel)
        data = fsutil.read_bytes(path) if problem is None else None
        if data is not None and projections.is_marked_rules(data):
            present[name] = data
        else:
            foreign[name] = problem or (
                "no ctxkeeper marker, so someone else wrote it; left as it is"
            )
    # 2. Write what is produced, unless a file without the marker holds the name.
    if projection.files and not os.path.isdir(folder):
        _make_folders(root, folder_rel)
    for name, text in sorted(projection.files.items()):
        rel = f"{folder_rel}/{name}"
        if name in foreign:
            why = foreign.pop(name)
            report.skipped.append(
                {"path": rel, "why": f"{why}; ctxkeeper would write this file: move it aside"}
            )
            continue
        _put(report, os.path.join(folder, name), rel, text.encode(), present.get(name))
    # 3. Delete marked files no longer produced; report the foreign ones.
    for name in sorted(set(present) - set(projection.files)):
        os.unlink(os.path.join(folder, name))
        report.deleted.append(f"{folder_rel}/{name}")
    if report.deleted:
        fsutil.fsync_dir(folder)
    report.skipped += [{"path": f"{folder_rel}/{n}", "why": why} for n, why in foreign.items()]
    return report


def write_markdown(root: str, entries: Iterable[Entry]) -> Report:
    """``DECISIONS.md``, refusing to replace one that lacks the marker on its first line."""
    rel = projections.MARKDOWN_FILE
    path = _target(root, rel)
    old = _read(path, rel)
    if old is not None and not projections.is_marked_markdown(old):
        raise ProjectionError(
            f"{rel} exists and was not written by `ctxkeeper export markdown` (its first line "
            f"is not the marker {projections.MARKDOWN_MARKER!r}); nothing was written. Rename "
            f"or move your {rel} aside and run again"
        )
    text = projections.render_markdown(entries, instant=times.now())
    report = Report("markdown")
    _put(report, path, rel, text.encode(), old)
    return report


def write_agents(root: str, entries: Iterable[Entry]) -> Report:
    """``AGENTS.md``: replace only the text between the markers (append it when absent)."""
    rel = projections.AGENTS_FILE
    path = _target(root, rel)
    old = _read(path, rel)
    section = projections.render_agents(entries, instant=times.now())
    data = projections.splice_agents(old, section)
    report = Report("agents")
    _put(report, path, rel, data, old)
    return report
