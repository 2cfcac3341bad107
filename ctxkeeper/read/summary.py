"""``get_project_summary``: a budgeted overview for the start of a session."""

from __future__ import annotations

import json
from typing import Final

from ctxkeeper.core import times
from ctxkeeper.core.changes import awaiting_counts, pending_changes
from ctxkeeper.core.framing import MEMORY_END, MEMORY_HEAD, literal
from ctxkeeper.core.model import KINDS, STATUSES
from ctxkeeper.core.provenance import approvals
from ctxkeeper.core.wording import counted
from ctxkeeper.read.framed import entry_line, provenance_text
from ctxkeeper.read.guidance import awaiting_review

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ctxkeeper.core._types import JSONObject, JSONValue
    from ctxkeeper.core.store import Store

RECENT_DECISIONS: Final = 5
PENDING_LISTED: Final = 20
#: Ids listed per drift list in a summary; the counts cover the rest.
DRIFT_LISTED: Final = 12


def project_summary(
    store: Store, *, token_budget: int | None = None, with_drift: bool = False
) -> JSONObject:
    """Counts, the hard constraints in force, recent decisions and pending reviews.

    ``pending_review`` counts what awaits a person: proposed entries (``pending_ids``, counted
    in ``pending_entries``) and agent changes to entries a person recorded or approved
    (``pending_changes``, counted in ``pending_change_count``).

    Lists are cut to fit the budget (characters / 4), hard constraints first because they
    are what an agent must not break; ``truncated`` says whether anything was left out.

    ``with_drift`` runs the drift check (one ``git log`` pass) and puts its ids in ``drift``
    (see :func:`drift_summary`); otherwise ``drift`` is null.
    """
    budget = token_budget or store.config().summary_budget
    entries = list(store.load().entries.values())
    instant = times.now()
    live_now = [e for e in entries if e.get("status") == "active" and times.is_valid_at(e, instant)]
    counts: JSONObject = {
        kind: {s: n for s in STATUSES if (n := _count(entries, kind, s))} for kind in KINDS
    }
    hard = sorted(
        (e for e in live_now if e.get("kind") == "constraint" and e.get("hardness") == "hard"),
        key=lambda e: str(e["id"]),
    )
    recent = sorted(
        (e for e in live_now if e.get("kind") == "decision"),
        key=lambda e: str(e.get("updated_at")),
        reverse=True,
    )[:RECENT_DECISIONS]
    pending = sorted(str(e["id"]) for e in entries if e.get("status") == "proposed")
    changes = pending_changes(entries)
    remaining = budget * 4
    drift = drift_summary(store) if with_drift else None
    if drift is not None:
        remaining -= len(json.dumps(drift))
    approved = approvals(store.dir)
    waiting_entries, waiting_changes = awaiting_counts(entries)
    hard_items, remaining, cut_hard = _fit(hard, remaining, approved, with_scope=True)
    recent_items, remaining, cut_recent = _fit(recent, remaining, approved, with_scope=False)
    return {
        "total": len(entries),
        "counts": counts,
        "hard_constraints": hard_items,
        "recent_decisions": recent_items,
        "pending_review": waiting_entries + waiting_changes,
        "pending_entries": waiting_entries,
        "pending_change_count": waiting_changes,
        "pending_ids": list(pending[:PENDING_LISTED]),
        "pending_changes": [
            {"change": c["change"], "id": c["id"], "op": c["op"], "stale": c["stale"]}
            for c in changes[:PENDING_LISTED]
        ],
        "drift": drift,
        "truncated": cut_hard or cut_recent,
    }


def drift_summary(store: Store) -> JSONObject:
    """Drift as a summary carries it: the ``drifted`` and ``orphaned`` ids of active entries
    (the first :data:`DRIFT_LISTED` of each) with their counts, and whether git was read."""
    from ctxkeeper.read.drift import check_drift

    report = check_drift(store)
    # Only what the hooks may deliver: a proposed entry is never injected (DESIGN.md).
    active = {
        str(r.get("id"))
        for r in _ids(report.get("results"))
        if isinstance(r, dict) and r.get("status") == "active"
    }
    drifted = [str(i) for i in _ids(report.get("drifted")) if i in active]
    orphaned = [str(i) for i in _ids(report.get("orphaned")) if i in active]
    unseen = [str(i) for i in _ids(report.get("unseen")) if i in active]
    return {
        "git": bool(report.get("git")),
        "drifted_count": len(drifted),
        "drifted": list(drifted[:DRIFT_LISTED]),
        "orphaned_count": len(orphaned),
        "orphaned": list(orphaned[:DRIFT_LISTED]),
        "unseen_count": len(unseen),
    }


def _ids(value: JSONValue | None) -> list[JSONValue]:
    return value if isinstance(value, list) else []


def drift_line(drift: JSONValue) -> str | None:
    """The model's one compact line on drift (ids only), or None when nothing drifted."""
    if not isinstance(drift, dict):
        return None
    parts = []
    for key, label in (
        ("drifted", "scope changed since verified"),
        ("orphaned", "scope path gone"),
    ):
        ids = [str(i) for i in _ids(drift.get(key))]
        count = drift.get(f"{key}_count")
        if ids:
            more = count - len(ids) if isinstance(count, int) and count > len(ids) else 0
            parts.append(f"{label}: {', '.join(ids)}" + (f" (+{more} more)" if more else ""))
    if not parts:
        return None
    return "drift (re-read before relying on them; check_drift details): " + "; ".join(parts)


def _count(entries: Iterable[JSONObject], kind: str, status: str) -> int:
    return sum(1 for e in entries if e.get("kind") == kind and e.get("status") == status)


def _fit(
    entries: list[JSONObject], remaining: int, approved: dict[str, str], *, with_scope: bool
) -> tuple[list[JSONValue], int, bool]:
    items: list[JSONValue] = []
    for entry in entries:
        item: JSONObject = {
            "id": entry["id"],
            "line": entry_line(entry, approved),
            "provenance": provenance_text(entry, approved),
        }
        if with_scope:
            item["scope"] = entry.get("scope")
            item["reason"] = entry.get("reason")
        size = len(json.dumps(item, ensure_ascii=False))
        if size > remaining:
            return items, remaining, True
        remaining -= size
        items.append(item)
    return items, remaining, False


def render_summary(summary: JSONObject, *, hard_delivery: str = "gate") -> str:
    """The summary as text. A scoped hard constraint is listed with its reason and when it
    comes in full: at the first edit of a file in its scope (held back there with
    ``hard_delivery`` ``gate``)."""
    total = summary.get("total")
    head = counted(total if isinstance(total, int) else 0, "entry", "entries")
    waiting = awaiting_review(summary)
    lines = [f"{head}; {waiting or 'nothing'} awaiting review"]
    changes = summary.get("pending_changes")
    if isinstance(changes, list) and changes:
        lines.append(
            "changes awaiting a person (the entries stay as they are until then): "
            + ", ".join(
                f"{c['op']} of {c['id']} ({c['change']})" for c in changes if isinstance(c, dict)
            )
        )
    hard = summary.get("hard_constraints")
    recent = summary.get("recent_decisions")
    listed = [
        (title, [item for item in items if isinstance(item, dict)])
        for title, items in (("hard constraints in force:", hard), ("recent decisions:", recent))
        if isinstance(items, list) and items
    ]
    when = (
        "the first edit of a file in its scope in a session is held back with it"
        if hard_delivery == "gate"
        else "it arrives in full next to the first edit of a file in its scope"
    )
    if listed:
        lines.append(MEMORY_HEAD)
        for title, items in listed:
            lines.append(title)
            for item in items:
                lines.append(f"  {item['line']}")
                if item.get("scope") and item.get("reason"):
                    lines.append(f"      reason: {literal(item.get('reason'))}")
                    lines.append(f"      ({when})")
        lines.append(MEMORY_END)
    drift = drift_line(summary.get("drift"))
    if drift:
        lines.append(drift)
    if summary.get("truncated"):
        lines.append("(cut to fit the budget; use get_context or query_entries for more)")
    return "\n".join(lines)
