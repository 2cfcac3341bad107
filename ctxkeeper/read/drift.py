"""Drift: which entries' scopes changed in git since a person or agent last said they hold.

For every live entry with a scope: the commits that touched a path its scope covers since its
``verified_sha`` (reachable from HEAD and not from that commit: ancestry, not dates), the scope
paths that no longer exist (with the path git saw them renamed to, when it did), and the days
since ``verified_at``. One ``git log`` pass serves the whole store: its parents give the
ancestry, and paths are matched with the one scope implementation (whole components).

An entry with no ``verified_sha`` (recorded outside git, or before ctxkeeper stamped it) counts
the commits made after its ``verified_at``, else its ``created_at``, and says so. Where the
answer cannot be exact (no git; a shallow clone or another clone's commit that this one does
not hold) the result says what could not be seen instead of reporting zero.
"""

from __future__ import annotations

import os
import time
from typing import Final

from ctxkeeper.core import driftcache, fsutil, gitlog, scopeindex, times
from ctxkeeper.core.errors import CtxkeeperError, NotFoundError, UsageError
from ctxkeeper.core.model import check_id
from ctxkeeper.core.scope import normalize_scope, scope_covers
from ctxkeeper.core.wording import counted
from ctxkeeper.read.render import headline, visible

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.gitlog import Commit, Repo
    from ctxkeeper.core.store import Store

#: Commits listed per entry (newest first); ``commit_count`` has the total.
COMMITS_SHOWN: Final = 10
LIVE: Final = frozenset({"active", "proposed"})
_DAY: Final = 86400
_RENAME_HOPS: Final = 3
#: The most commits one pass reads when nothing bounds it (the newest): a long history is
#: not read whole at every session start; what lies beyond is reported as not seen.
MAX_COMMITS: Final = 20_000
#: The most starting points worth a ``git merge-base --octopus`` to bound the pass.
MERGE_BASE_MAX: Final = 32


def scopes_of(entry: Mapping[str, JSONValue]) -> list[str]:
    """An entry's canonical scopes; a stored scope that does not normalise is left out."""
    raw = entry.get("scope")
    found: list[str] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, str):
            continue
        try:
            scope = normalize_scope(item)
        except UsageError:
            continue
        if scope and scope not in found:
            found.append(scope)
    return found


def _instant(value: JSONValue) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return times.parse_time(value, field="time").timestamp()
    except CtxkeeperError:
        return None


class _Item:
    """One entry under check, and what the pass found for it."""

    def __init__(self, entry: Mapping[str, JSONValue]) -> None:
        self.entry = entry
        self.id = str(entry.get("id"))
        self.scopes = scopes_of(entry)
        sha = entry.get("verified_sha")
        self.sha = sha if gitlog.is_sha(sha) else None
        verified = _instant(entry.get("verified_at"))
        self.basis = "verified_at" if verified is not None else "created_at"
        self.since = verified if verified is not None else _instant(entry.get("created_at"))
        self.since_text = entry.get(self.basis)
        self.by_sha = False
        self.touched: list[int] = []
        self.removed: set[str] = set()
        """Scopes under which the history shows a path deleted or renamed away."""
        self.commits: list[int] | None = None
        self.unseen = False
        self.note: str | None = None


def check_drift(
    store: Store,
    ids: Sequence[str] | None = None,
    *,
    shown: int = COMMITS_SHOWN,
    now: float | None = None,
) -> JSONObject:
    """Drift of the given entries (default: every live entry with a scope).

    Returns ``results`` (one per scoped entry: ``id``, ``kind``, ``status``, ``scope``,
    ``since``, ``commits``, ``commit_count``, ``orphaned_scope``, ``days_since_verified``,
    ``unseen``, ``note``), ``drifted``, ``orphaned`` and ``unseen`` (ids), ``git``, ``head``,
    ``shallow`` and ``notes``. A whole-store check refreshes the per-edit hook's cache.
    """
    stamp = driftcache.entries_stamp(store.dir)
    entries = store.load().entries
    notes: list[str] = []
    if ids:
        chosen = []
        for entry_id in dict.fromkeys(ids):
            check_id(entry_id)
            if entry_id not in entries:
                store.get(entry_id)  # raises, naming a purge where there was one
                raise NotFoundError(entry_id)
            chosen.append(entries[entry_id])
        unscoped = [str(e["id"]) for e in chosen if not scopes_of(e)]
        if unscoped:
            notes.append(
                f"{', '.join(unscoped)}: project-wide (no scope), so no path can drift; "
                "verify_entry still records that it holds"
            )
    else:
        chosen = [e for e in entries.values() if e.get("status") in LIVE]
    every = [_Item(e) for e in sorted(chosen, key=lambda e: str(e.get("id")))]
    items = [item for item in every if item.scopes]
    instant = time.time() if now is None else now
    repo: Repo | None = None
    log: list[Commit] = []
    try:
        repo = gitlog.probe(store.root)
    except gitlog.GitError as exc:
        notes.append(
            f"no git history here ({exc}): only days_since_verified is reported; the commits "
            "touching each scope, and scope paths removed, cannot be checked"
        )
    if repo is not None and repo.head is None:
        notes.append("the repository has no commit yet: nothing can have drifted")
    if repo is not None and repo.head is not None and items:
        try:
            log = _one_pass(store.root, repo, items, notes)
        except gitlog.GitError as exc:
            notes.append(f"the git history could not be read ({exc}): commits not checked")
            for item in items:
                item.commits = None
            log = []
    renames = _renames(log)
    rendered: dict[int, JSONObject] = {}
    results: list[JSONValue] = [
        _result(store.root, item, log, renames, instant, shown, rendered, git=bool(repo))
        for item in items
    ]
    if repo is not None and repo.shallow:
        unseen = sum(1 for item in items if item.unseen)
        notes.append(
            "this is a shallow clone: "
            + (
                f"{counted(unseen, 'entry was', 'entries were')} verified before the "
                "history it holds (unseen: true); `git fetch --unshallow` lets them be checked"
                if unseen
                else "every entry's starting point is within the history it holds"
            )
        )
    drifted = {i.id: len(i.commits) for i in items if i.commits}
    orphaned: list[JSONValue] = [
        str(r["id"])
        for r in results
        if isinstance(r, dict) and isinstance(r.get("orphaned_scope"), list) and r["orphaned_scope"]
    ]
    report: JSONObject = {
        "results": results,
        "total": len(results),
        "drifted": [*sorted(drifted)],
        "orphaned": orphaned,
        "unseen": [*(i.id for i in items if i.unseen)],
        "git": repo is not None,
        "head": repo.head if repo is not None else None,
        "shallow": bool(repo is not None and repo.shallow),
        "notes": list(notes),
    }
    if not ids and repo is not None and repo.head is not None:
        _write_cache(store, repo.head, stamp, drifted, [str(i) for i in orphaned])
    return report


def _write_cache(
    store: Store, head: str, stamp: list[int], drifted: dict[str, int], orphaned: list[str]
) -> None:
    """Refresh the hook's cache, unless the store changed while the check ran."""
    if driftcache.entries_stamp(store.dir) != stamp or not os.path.isdir(store.path("cache")):
        return
    try:
        data = driftcache.render(head, stamp, drifted, orphaned)
        fsutil.write_atomic(driftcache.cache_path(store.dir), data, durable=False)
    except OSError:
        pass  # a derived file: the next check writes it again


def _one_pass(root: str, repo: Repo, items: list[_Item], notes: list[str]) -> list[Commit]:
    """Run the one ``git log`` and give each item the indices of the commits it must count."""
    assert repo.head is not None
    relative = bool(repo.prefix)
    cut = False
    side: dict[str, tuple[str, ...]] = {}
    boundary: set[str] = set()
    shas = sorted({i.sha for i in items if i.sha})
    base = None
    held: set[str] = set()
    if 0 < len(shas) <= MERGE_BASE_MAX and all(i.sha for i in items):
        # Everything each entry must count lies above a common ancestor of their starting
        # points: the pass need not read the history below it. (With many starting points
        # git's octopus merge-base costs more than the history it would save reading.)
        held = gitlog.present(root, shas)
        base = gitlog.merge_base(root, shas) if len(held) == len(shas) else None
    if base is not None:
        log = gitlog.log(root, [repo.head, *sorted(held)], [base], relative=relative)
    else:
        # No common ancestor to stop at (a starting point this clone lacks, or none found):
        # the pass is bounded, as it is for entries without a verified commit.
        log = gitlog.log(root, [repo.head], relative=relative, limit=MAX_COMMITS + 1)
        if len(log) > MAX_COMMITS:
            del log[MAX_COMMITS:]
            cut = True
            notes.append(
                f"the history is longer than {MAX_COMMITS} commits; only the newest were read, "
                "so entries verified before them are reported as unseen"
            )
        listed = {commit.sha for commit in log}
        held = {sha for sha in shas if sha in listed}
        outside = [sha for sha in shas if sha not in listed]
        if outside:
            # Verified on a branch HEAD does not contain (or beyond the cap): the graph from
            # those commits down to HEAD's history, parents only, says what they reach.
            present = gitlog.present(root, outside)
            if present:
                side, boundary = gitlog.side_graph(root, sorted(present), repo.head)
                held |= {sha for sha in present if sha in side}
    missing = 0
    for item in items:
        if item.sha is not None and item.sha in held:
            item.by_sha = True
        elif item.sha is not None:
            missing += 1
            item.unseen = True
            why = (
                "older than the commits read"
                if cut
                else "older than its shallow history"
                if repo.shallow
                else "another clone or rewritten history"
            )
            item.note = (
                f"verified at {item.sha[:12]}, which this clone does not hold ({why}); "
                f"counted by time since its {item.basis} instead"
            )
    if missing and not repo.shallow and not cut:
        notes.append(
            f"{counted(missing, 'entry was', 'entries were')} verified at commits this "
            "clone does not hold (unseen: true); their commits are counted by time"
        )
    _assign(repo.head, log, items, shallow=repo.shallow or cut, side=side, boundary=boundary)
    return log


def _assign(
    head: str,
    log: list[Commit],
    items: list[_Item],
    *,
    shallow: bool,
    side: Mapping[str, tuple[str, ...]] | None = None,
    boundary: set[str] | None = None,
) -> None:
    """Each item's commits: those touching its scopes, reachable from HEAD, and not from its
    ``verified_sha`` (or, counted by time, made after its starting time).

    :param side: commits outside HEAD's history (with their parents) leading from a
        ``verified_sha`` there down to ``boundary``, the commits of HEAD's history they reach.
    """
    side = side or {}
    by_scope: dict[str, list[_Item]] = {}
    for item in items:
        for scope in item.scopes:
            by_scope.setdefault(scope, []).append(item)
    touching: list[int] = []
    seen: dict[str, list[str]] = {}  # a path's covering scopes, worked out once per path
    hits: dict[str, list[int]] = {}  # scope: the commits touching it
    for index, commit in enumerate(log):
        keys_hit: set[str] = set()
        for path in commit.paths:
            keys = seen.get(path)
            if keys is None:
                keys = seen[path] = scopescan(path, by_scope)
            keys_hit.update(keys)
        if keys_hit:
            touching.append(index)
            for key in keys_hit:
                hits.setdefault(key, []).append(index)
        for path in commit.removed:
            keys = seen.get(path)
            if keys is None:
                keys = seen[path] = scopescan(path, by_scope)
            for key in keys:
                for item in by_scope[key]:
                    item.removed.add(key)
    for key, indices in hits.items():
        for item in by_scope[key]:
            if len(item.scopes) == 1:
                item.touched = indices
            else:
                item.touched = sorted({*item.touched, *indices})
    bit = {index: 1 << n for n, index in enumerate(touching)}
    wanted = {head} | {i.sha for i in items if i.by_sha and i.sha} | (boundary or set())
    reach = _reach(log, bit, wanted)
    from_head = reach.get(head, 0)
    for sha in {i.sha for i in items if i.by_sha and i.sha and i.sha in side}:
        reach[sha] = _side_reach(sha, side, reach)
    oldest = min((c.time for c in log), default=None)
    for item in items:
        if item.by_sha and item.sha:
            fresh = from_head & ~reach.get(item.sha, 0)
            item.commits = [i for i in item.touched if fresh & bit[i]]
            continue
        since = item.since
        item.commits = [
            i for i in item.touched if from_head & bit[i] and (since is None or log[i].time > since)
        ]
        if shallow and oldest is not None and (since is None or since < oldest):
            item.unseen = True
            item.note = item.note or (
                f"no history before {gitlog.iso(oldest)} is visible here (a shallow clone, or "
                f"the {MAX_COMMITS}-commit cap), and this entry counts from its {item.basis}"
                + (f" ({item.since_text})" if isinstance(item.since_text, str) else "")
            )
        elif item.note is None:
            item.note = f"no verified_sha: counted by commit time since its {item.basis}"


def scopescan(path: str, by_scope: Mapping[str, object]) -> list[str]:
    """The scopes in ``by_scope`` that cover ``path`` (its ancestors and itself), each checked
    with :func:`ctxkeeper.core.scope.scope_covers`."""
    return [
        key
        for key in scopeindex.candidate_keys(path)
        if key and key in by_scope and scope_covers(key, path)
    ]


def _side_reach(start: str, side: Mapping[str, tuple[str, ...]], reach: Mapping[str, int]) -> int:
    """What a commit outside HEAD's history reaches of it: the union over the commits of
    HEAD's history its side graph leads to."""
    found = 0
    stack, visited = [start], {start}
    while stack:
        for parent in side.get(stack.pop(), ()):
            if parent in visited:
                continue
            visited.add(parent)
            if parent in side:
                stack.append(parent)
            else:
                found |= reach.get(parent, 0)
    return found


def _parents_first(log: list[Commit], position: Mapping[str, int]) -> list[int]:
    """The indices of ``log`` with every commit after its parents (git's date order is not
    that when clocks are skewed): a depth-first post-order, without recursion."""
    # Usually git's order already is that, read backwards: one look says so.
    if all(
        position.get(parent, len(log)) > index
        for index, commit in enumerate(log)
        for parent in commit.parents
    ):
        return list(range(len(log) - 1, -1, -1))
    order: list[int] = []
    done = [False] * len(log)
    # A parent already on the path is skipped: only a replaced or grafted history could loop.
    open_ = [False] * len(log)
    for start in range(len(log)):
        if done[start]:
            continue
        stack = [(start, 0)]
        open_[start] = True
        while stack:
            index, next_parent = stack.pop()
            parents = log[index].parents
            while next_parent < len(parents):
                at = position.get(parents[next_parent])
                next_parent += 1
                if at is not None and not done[at] and not open_[at]:
                    stack.append((index, next_parent))
                    stack.append((at, 0))
                    open_[at] = True
                    break
            else:
                done[index] = True
                open_[index] = False
                order.append(index)
    return order


def _reach(log: list[Commit], bit: Mapping[int, int], wanted: set[str]) -> dict[str, int]:
    """For each commit in ``wanted``: the bits of the touching commits it reaches (itself
    included), over the history in ``log``. Bitsets are freed as soon as every child has used
    them, so memory follows the width of the history."""
    position = {commit.sha: index for index, commit in enumerate(log)}
    children = [0] * len(log)
    for commit in log:
        for parent in commit.parents:
            at = position.get(parent)
            if at is not None:
                children[at] += 1
    sets: dict[int, int] = {}
    found: dict[str, int] = {}
    for index in _parents_first(log, position):
        commit = log[index]
        value = bit.get(index, 0)
        for parent in commit.parents:
            at = position.get(parent)
            if at is None:
                continue
            value |= sets.get(at, 0)
            children[at] -= 1
            if children[at] == 0:
                sets.pop(at, None)
        if commit.sha in wanted:
            found[commit.sha] = value
        if children[index]:
            sets[index] = value
    return found


def _renames(log: list[Commit]) -> list[tuple[str, str]]:
    """Every rename in the pass, newest commit first."""
    order = sorted(range(len(log)), key=lambda i: (-log[i].time, i))
    return [pair for i in order for pair in log[i].renames]


def _exists(root: str, rel: str) -> bool:
    try:
        return os.path.lexists(os.path.join(root, rel))
    except (ValueError, OSError):
        return False


def suggest(
    root: str, scope: str, renames: list[tuple[str, str]], hops: int = _RENAME_HOPS
) -> str | None:
    """Where git saw ``scope`` renamed to, if that path exists now (following later renames)."""
    counts: dict[str, int] = {}
    for old, new in renames:
        if not scope_covers(scope, old):
            continue
        if old == scope:
            target = new
        else:
            tail = old[len(scope) :]
            if not new.endswith(tail) or len(new) <= len(tail):
                continue
            target = new[: -len(tail)]
        try:
            target.encode("utf-8")
        except UnicodeEncodeError:
            continue
        if target and target != scope:
            counts[target] = counts.get(target, 0) + 1
    if not counts:
        return None
    ranked = sorted(counts, key=lambda t: -counts[t])  # stable: the newest first among equals
    for target in ranked:
        if _exists(root, target):
            return target
    if hops > 0:
        return suggest(root, ranked[0], renames, hops - 1)
    return None


def _result(
    root: str,
    item: _Item,
    log: list[Commit],
    renames: list[tuple[str, str]],
    instant: float,
    shown: int,
    rendered: dict[int, JSONObject],
    *,
    git: bool,
) -> JSONObject:
    # Gone, not merely absent: a scope may name a file still to be written (the edit gate
    # covers new files), so only a path the history shows deleted or renamed away counts.
    orphaned: list[JSONValue] = [
        {"path": scope, "suggested": suggest(root, scope, renames)}
        for scope in item.scopes
        if scope in item.removed and not _exists(root, scope)
    ]
    days = int((instant - item.since) // _DAY) if item.since is not None else None
    listed: list[JSONValue] = []
    count: int | None = None
    if item.commits is not None:
        newest = sorted(item.commits, key=lambda i: (-log[i].time, i))
        count = len(newest)
        listed = []
        for i in newest[:shown]:
            item_of = rendered.get(i)
            if item_of is None:  # a commit listed for many entries is rendered once
                commit = log[i]
                item_of = rendered[i] = {
                    "sha": commit.sha,
                    "subject": commit.subject,
                    "at": gitlog.iso(commit.time),
                }
            listed.append(dict(item_of))
    note = item.note
    if not git:
        note = "no git: commits and removed scope paths not checked"
    return {
        "id": item.id,
        "kind": item.entry.get("kind"),
        "status": item.entry.get("status"),
        "scope": list(item.scopes),
        "since": {
            "basis": "verified_sha" if item.by_sha else item.basis,
            "sha": item.sha,
            "at": item.since_text if isinstance(item.since_text, str) else None,
        },
        "commits": listed,
        "commit_count": count,
        "orphaned_scope": orphaned,
        "days_since_verified": days,
        "unseen": item.unseen,
        "note": note,
    }


def compact(report: Mapping[str, JSONValue]) -> JSONObject:
    """The few facts a summary carries: ids only."""
    return {
        "git": report.get("git"),
        "head": report.get("head"),
        "drifted": report.get("drifted"),
        "orphaned": report.get("orphaned"),
        "unseen": report.get("unseen"),
    }


def drift_text(report: Mapping[str, JSONValue], *, verbose: bool = False) -> str:
    """The report for a reader: a count line, then each entry that drifted, lost a scope path
    or could not be fully checked (every entry with ``verbose``), then the notes."""
    results = [r for r in _list(report.get("results")) if isinstance(r, dict)]
    drifted = _list(report.get("drifted"))
    orphaned = _list(report.get("orphaned"))
    unseen = _list(report.get("unseen"))
    head = f"{counted(len(results), 'scoped entry', 'scoped entries')} checked"
    if report.get("git"):
        head += f"; {len(drifted)} drifted"
    head += f"; {len(orphaned)} with missing scope paths"
    if unseen:
        head += f"; {len(unseen)} not fully checked (unseen)"
    lines = [head]
    for result in results:
        entry_id = result.get("id")
        listed = entry_id in drifted or entry_id in orphaned or entry_id in unseen
        if not (listed or verbose or not report.get("git")):
            continue
        lines.append(_entry_line(result))
        lines.extend(
            f"    {str(commit.get('sha'))[:12]} {str(commit.get('at'))[:10]} "
            f"{visible(str(commit.get('subject')))}"
            for commit in _list(result.get("commits"))
            if isinstance(commit, dict)
        )
        count = result.get("commit_count")
        shown = len(_list(result.get("commits")))
        if isinstance(count, int) and count > shown:
            lines.append(f"    ... and {count - shown} older")
        for gone in _list(result.get("orphaned_scope")):
            if isinstance(gone, dict):
                moved = gone.get("suggested")
                where = f"; git saw it renamed to {moved}" if moved else ""
                text = f"    scope path {gone.get('path')} no longer exists{where}"
                lines.append(visible(text))
        if result.get("note") and (result.get("unseen") or verbose):
            lines.append(f"    note: {result.get('note')}")
    lines.extend(f"note: {note}" for note in _list(report.get("notes")))
    if drifted or orphaned:
        lines.append(
            "Re-read these entries against the code; `ctxkeeper verify ID` (or verify_entry) "
            "records one that still holds, an update or deprecation one that does not."
        )
    return "\n".join(lines)


def _entry_line(result: Mapping[str, JSONValue]) -> str:
    scope = visible(", ".join(str(s) for s in _list(result.get("scope"))))
    since = result.get("since")
    basis = since.get("basis") if isinstance(since, dict) else None
    sha = since.get("sha") if isinstance(since, dict) else None
    count = result.get("commit_count")
    days = result.get("days_since_verified")
    parts = [f"- {result.get('id')} ({result.get('kind')}, scope {scope}):"]
    if isinstance(count, int):
        start = f"verified {str(sha)[:12]}" if basis == "verified_sha" else f"its {basis}"
        parts.append(f"{counted(count, 'commit')} since {start}")
    if isinstance(days, int):
        parts.append(f"({counted(days, 'day')} since verified)")
    return " ".join(parts)


def _list(value: JSONValue | None) -> list[JSONValue]:
    return value if isinstance(value, list) else []


def stale_entries(store: Store, days: int, *, now: float | None = None) -> JSONObject:
    """Live entries not verified (or, never verified, created) for ``days`` days or more,
    oldest first: a report; ctxkeeper never deletes anything for age."""
    if days < 0:
        raise UsageError("--days must be 0 or more")
    instant = time.time() if now is None else now
    found: list[tuple[float, str, JSONObject]] = []
    for entry in store.load().entries.values():
        if entry.get("status") not in LIVE:
            continue
        verified = _instant(entry.get("verified_at"))
        basis = "verified_at" if verified is not None else "created_at"
        since = verified if verified is not None else _instant(entry.get("created_at"))
        if since is None:
            continue
        age = int((instant - since) // _DAY)
        if age >= days:
            item: JSONObject = {
                "id": entry.get("id"),
                "kind": entry.get("kind"),
                "status": entry.get("status"),
                "days_since_verified": age,
                "basis": basis,
                "line": headline(entry)[:120],
            }
            found.append((since, str(entry.get("id")), item))
    found.sort(key=lambda t: (t[0], t[1]))
    results: list[JSONValue] = [item for _, _, item in found]
    return {"days": days, "results": results, "total": len(results)}


def stale_text(report: Mapping[str, JSONValue]) -> str:
    results = [r for r in _list(report.get("results")) if isinstance(r, dict)]
    days = report.get("days")
    lines = [f"{counted(len(results), 'live entry', 'live entries')} not verified for {days}+ days"]
    lines.extend(
        f"- {r.get('id')} ({r.get('kind')}, {r.get('status')}): {r.get('days_since_verified')} "
        f"days since its {r.get('basis')}; {visible(str(r.get('line')))}"
        for r in results
    )
    if results:
        lines.append(
            "A report only: nothing was changed. `ctxkeeper verify ID` records one that still "
            "holds; one that does not is deprecated or superseded, never deleted for age."
        )
    return "\n".join(lines)
