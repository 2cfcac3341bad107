"""The switches in ``config.json`` that decide what a person must see: watched, journaled, told.

``review`` decides whether the agent's changes to a person's rules wait for that person, and
``hard_delivery`` whether hard constraints hold back edits. Both live in a file anyone (the agent
through its shell, a merged pull request) can edit. ctxkeeper journals a change of either the
first time it sees one (before the next write, or at session start), compares them with the
version of ``config.json`` committed at ``HEAD``, and tells the person at SessionStart and in
``ctxkeeper status`` (issue 22, section 4).

What was last journaled and last announced is machine-local (``.context/cache/policy-seen.json``);
when that file is gone, the journal's own last policy record stands in for it, so deleting the
cache does not hide a change from the journal.
"""

from __future__ import annotations

import json
import os
from typing import Final

from ctxkeeper.core import fsutil
from ctxkeeper.core.config import CONFIG_VERSION, Config, parse_config
from ctxkeeper.core.errors import CtxkeeperError, StoreError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ctxkeeper.core._types import JSONObject

    Policy = dict[str, str]

WATCHED: Final = ("review", "hard_delivery")
SEEN_FILE: Final = "policy-seen.json"
#: The id of the journal records of a policy change (a local id: teamlog.LOCAL_IDS).
POLICY_ID: Final = "config.json"
#: Who changed the file is not known: it was edited outside ctxkeeper, which only saw it.
OBSERVER: Final = {"origin": "unknown", "user": None, "seen_by": "ctxkeeper"}
#: What each watched value means for the person, when it is not the default.
MEANING: Final = {
    ("review", "off"): "the agent's changes to entries in force apply without your review",
    ("hard_delivery", "context"): "hard constraints no longer hold back the edits they govern",
}


def policy_of(config: Config) -> Policy:
    return {"review": config.review, "hard_delivery": config.hard_delivery}


def _seen_path(context_dir: str) -> str:
    return os.path.join(context_dir, "cache", SEEN_FILE)


def _read_seen(context_dir: str) -> dict[str, Policy]:
    try:
        data = fsutil.read_bytes(_seen_path(context_dir))
        doc = json.loads(data) if data else {}
    except (StoreError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("version") != CONFIG_VERSION:
        return {}
    return {k: v for k, v in doc.items() if k in ("journaled", "announced") and _is_policy(v)}


def _is_policy(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(k), str) for k in WATCHED)


def _remember(context_dir: str, name: str, policy: Policy) -> None:
    """Best effort (a cache): a lost file falls back on the journal (see the module doc)."""
    seen: dict[str, object] = {**_read_seen(context_dir), name: dict(policy)}
    seen["version"] = CONFIG_VERSION
    try:
        os.makedirs(os.path.dirname(_seen_path(context_dir)), exist_ok=True)
        data = json.dumps(seen, sort_keys=True).encode()
        fsutil.write_atomic(_seen_path(context_dir), data, durable=False)
    except (OSError, StoreError):
        pass


def last_journaled(context_dir: str, read_journal: Callable[[], list[JSONObject]]) -> Policy:
    """The policy the journal last recorded: from the cache, else from the journal's last
    policy record, else the defaults (a store that never journaled one has always had them)."""
    seen = _read_seen(context_dir).get("journaled")
    if seen is not None:
        return seen
    for record in reversed(read_journal()):
        after = record.get("policy")
        if record.get("id") == POLICY_ID and _is_policy(after):
            assert isinstance(after, dict)
            return {k: str(after[k]) for k in WATCHED}
    return policy_of(Config())


def change_event(
    context_dir: str, config: Config, read_journal: Callable[[], list[JSONObject]], *, at: str
) -> JSONObject | None:
    """The journal event for a policy that changed since the journal last recorded it (None:
    unchanged). The caller journals it, then calls :func:`journaled`."""
    from ctxkeeper.core import journal

    now, before = policy_of(config), last_journaled(context_dir, read_journal)
    if now == before:
        return None
    changes = [f"{k} from {before[k]!r} to {now[k]!r}" for k in WATCHED if before[k] != now[k]]
    event = journal.make_event(
        op="manual_edit",
        entry_id=POLICY_ID,
        before=dict(before),
        after=None,
        actor=dict(OBSERVER),
        reason=(
            f".context/config.json changed {' and '.join(changes)} outside ctxkeeper (seen "
            "before the next write or session start; who edited it is not known)"
        ),
        at=at,
    )
    event["policy"] = dict(now)
    return event


def journaled(context_dir: str, config: Config) -> None:
    _remember(context_dir, "journaled", policy_of(config))


def committed(root: str, context_dir: str) -> Policy | None:
    """The policy of ``config.json`` as committed at ``HEAD`` (None: no git, no commit, the file
    not in it, or not readable as a config)."""
    from ctxkeeper.core import gitlog

    rel = os.path.relpath(os.path.join(context_dir, "config.json"), root).replace(os.sep, "/")
    try:
        status, data = gitlog.run_git(root, ["show", f"HEAD:./{rel}"])
    except gitlog.GitError:
        return None
    if status != 0:
        return None
    try:
        return policy_of(parse_config(data, f"HEAD:{rel}"))
    except CtxkeeperError:
        return None


def notes(now: Policy, committed_policy: Policy | None, previous: Policy | None) -> list[str]:
    """What the person is told about the watched switches; empty when they are as committed
    and as in the previous session."""
    found: list[str] = []
    for key in WATCHED:
        value = now[key]
        meaning = MEANING.get((key, value))
        tail = f": {meaning}" if meaning else ""
        if committed_policy is not None and committed_policy[key] != value:
            found.append(
                f"{key} is {value!r} in .context/config.json but {committed_policy[key]!r} in "
                f"the committed one (HEAD){tail}"
            )
        elif previous is not None and previous[key] != value:
            found.append(
                f"{key} changed from {previous[key]!r} to {value!r} since the last session{tail}"
            )
    return found


def session_notes(root: str, context_dir: str, config: Config) -> list[str]:
    """:func:`notes` for a session start, which then counts as the last session."""
    now = policy_of(config)
    previous = _read_seen(context_dir).get("announced")
    found = notes(now, committed(root, context_dir), previous)
    _remember(context_dir, "announced", now)
    return found


def needs_journal(context_dir: str, config: Config) -> bool:
    """Cheap: does the cache say the journal has not recorded this policy yet?"""
    seen = _read_seen(context_dir).get("journaled")
    return seen != policy_of(config) if seen is not None else True


def status(root: str, context_dir: str, config: Config) -> JSONObject:
    """The watched switches for ``ctxkeeper status`` (read-only)."""
    now = policy_of(config)
    committed_policy = committed(root, context_dir)
    previous = _read_seen(context_dir).get("announced")
    told = notes(now, committed_policy, previous)
    return {
        **now,
        "committed": dict(committed_policy) if committed_policy is not None else None,
        "notes": [*told],
    }


def describe(policy: Mapping[str, object]) -> str:
    return ", ".join(f"{key} {policy.get(key)!r}" for key in WATCHED)
