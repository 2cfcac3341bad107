"""What a purge reached and what it could not: the honest half of forgetting (dec-020-b077).

A purge removes an entry's text from this clone's store, journal and snapshot. Copies it cannot
reach are reported with what a person would run next; nothing here claims an erasure that was
not performed, so the report is built by looking, not from what the purge meant to do.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Final

from ctxkeeper.core.model import ID_PATTERN
from ctxkeeper.core.wording import counted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONValue
    from ctxkeeper.core.store import Store

#: Shorter strings (a tag, a hardness) say nothing on their own and match by accident.
_MEANINGFUL: Final = 12
SNAPSHOT_PATH: Final = ".context/snapshot.jsonl"


def texts_of(entry: Mapping[str, JSONValue]) -> list[str]:
    """The entry's own text: the strings a purge must make disappear."""
    found: list[str] = []
    for name, value in entry.items():
        if name in ("id", "kind", "status", "origin", "hardness") or name.endswith("_at"):
            continue
        items = value if isinstance(value, list) else [value]
        found.extend(v for v in items if isinstance(v, str) and len(v) >= _MEANINGFUL)
    return found


def _forms(text: str) -> list[bytes]:
    # As written raw (UTF-8) and as a JSON string body (newlines, quotes escaped).
    return list(dict.fromkeys([text.encode(), json.dumps(text, ensure_ascii=False)[1:-1].encode()]))


def files_holding(directory: str, texts: list[str], entry_id: str | None = None) -> list[str]:
    """Files under ``directory`` that still hold any of ``texts`` (paths relative to it).

    With ``entry_id``, a JSON file is read record by record and only text outside every other
    entry's records counts: another live entry may quote the purged text, and its records are
    not this purge's to report (a person told to hand-edit them would destroy that entry).
    """
    needles = [form for text in texts for form in _forms(text)]
    holding: list[str] = []
    for folder, _, names in os.walk(directory):
        for name in sorted(names):
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if not any(needle in data for needle in needles):
                continue
            if entry_id is None or _own_records_hold(data, texts, entry_id):
                holding.append(os.path.relpath(path, directory))
    return sorted(holding)


def _own_records_hold(data: bytes, texts: list[str], entry_id: str) -> bool:
    """Whether ``data`` holds a text in ``entry_id``'s records or outside any entry's; a file
    that is not JSON or JSON lines is judged by its bytes (it holds the text)."""
    values = _json_values(data)
    if values is None:
        return True
    return any(_holds(value, texts, entry_id, None) for value in values)


def _json_values(data: bytes) -> list[JSONValue] | None:
    try:
        text = data.decode("utf-8")
        try:
            return [json.loads(text)]
        except ValueError:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
    except (ValueError, RecursionError):
        return None


def _holds(value: JSONValue, texts: list[str], entry_id: str, owner: str | None) -> bool:
    # A record names its entry in an "id" field (entries, journal and snapshot lines) or as
    # its first item (the scope index's rows); what it holds is that entry's.
    if isinstance(value, dict):
        named = value.get("id")
        if isinstance(named, str) and ID_PATTERN.match(named):
            owner = named
        items: list[JSONValue] = list(value.values())
    elif isinstance(value, list):
        first = value[0] if value else None
        if isinstance(first, str) and ID_PATTERN.match(first):
            owner = first
        items = value
    elif isinstance(value, str):
        return owner in (None, entry_id) and any(text in value for text in texts)
    else:
        return False
    return any(_holds(item, texts, entry_id, owner) for item in items)


def _indexed(directory: str, entry_id: str) -> list[str]:
    """The search index, when it still lists the entry: it holds its terms, not its text."""
    from ctxkeeper.read.textindex import CACHE_FILE

    relative = os.path.join("cache", CACHE_FILE)
    try:
        with open(os.path.join(directory, relative), "rb") as handle:
            listed = json.loads(handle.read()).get("ids")
    except (OSError, ValueError, AttributeError, RecursionError):
        return []
    return [relative] if isinstance(listed, list) and entry_id in listed else []


def _git(root: str, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", root, *args], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def commits_holding(root: str, texts: list[str]) -> list[str]:
    """Commits whose snapshot added one of ``texts`` (git's pickaxe), newest first."""
    if not texts or _git(root, "rev-parse", "--is-inside-work-tree") is None:
        return []
    found: dict[str, None] = {}
    for text in texts[:3]:
        out = _git(root, "log", "--all", "--format=%h", "-S", text, "--", SNAPSHOT_PATH)
        for sha in (out or "").split():
            found.setdefault(sha, None)
    return list(found)


def report(store: Store, entry_id: str, texts: list[str]) -> list[str]:
    """One line per place: what now holds none of the text, and what still does."""
    lines = []
    holding = sorted({*files_holding(store.dir, texts, entry_id), *_indexed(store.dir, entry_id)})
    if "snapshot.jsonl" in holding:
        # The purge wrote the store and journal but could not refresh the snapshot (a full
        # disk): that file is the purge's own to finish, not one to edit by hand.
        holding.remove("snapshot.jsonl")
        lines.append(
            "not yet removed: .context/snapshot.jsonl still holds its text (the refresh after "
            "the purge failed, see above); `ctxkeeper export snapshot` rewrites it without the "
            "entry once it can write"
        )
    if holding:
        lines.append(
            f"still holding its text under .context/: {', '.join(holding)} (not made by this "
            "purge's write; delete or edit these files by hand)"
        )
    elif not lines:
        lines.append(
            f"removed: no file under .context/ holds its text any more (the entries, the "
            f"journal, where its records keep digests, and the snapshot); a re-record of "
            f"{entry_id}'s value stays refused"
        )
    commits = commits_holding(store.root, texts)
    if commits:
        lines.append(
            f"not reached: {counted(len(commits), 'commit')} in git history "
            f"{'holds' if len(commits) == 1 else 'hold'} it in {SNAPSHOT_PATH} "
            f"(e.g. {commits[0]}); rewriting history takes `git filter-repo --replace-text "
            "FILE` or BFG, then a force push every clone must follow"
        )
    lines.append(
        "not reached: teammates' clones keep their copies until they pull and run "
        f"`ctxkeeper purge {entry_id} --reason ...` themselves"
    )
    return lines
