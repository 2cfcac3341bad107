"""What the agent is told about a tool result, in our words: the ``note`` and the labels.

Claude Code 2.1.332 hands the model a tool's ``structuredContent``, not its text block, so the
guidance a text rendering carries (an entry is an unreviewed proposal, a change awaits a
person's approval, nothing stored mentions a word of the question) must be in the structured
result as well. The sentences are built here once, from the verbs' results, and both the
structured result and the text block use them. Stored text never enters a note: ids, counts
and the words of the agent's own question only; an entry's fields stay in the entry.
"""

from __future__ import annotations

from ctxkeeper.core.provenance import describe
from ctxkeeper.core.wording import counted, listed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ctxkeeper.core._types import JSONValue

#: Said of every entry in a result: how to read it.
UNREVIEWED = "proposed, unreviewed: not yet approved by a person, and no hook delivers it"
STAYS = "the stored fields stay in force until then"
NOTHING_CONFIDENT = (
    "no confident match: nothing stored clearly answers this; do not treat these results as "
    "the answer"
)
WEAK = "weak match: related entries that may not answer this; check before relying on them"
APPROVE_HOW = "`ctxkeeper review` in their terminal"


def _strings(value: JSONValue) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _dicts(value: JSONValue) -> list[Mapping[str, JSONValue]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def pending_label(change: Mapping[str, JSONValue]) -> str:
    """One pending change of an entry: what it would do, and that it has not happened."""
    what = str(change.get("op"))
    fields = change.get("fields")
    if isinstance(fields, dict) and fields:
        what += f" of {', '.join(map(str, fields))}"
    return f"pending change {change.get('change')} ({what}) awaits a person's approval"


def entry_label(entry: Mapping[str, JSONValue], provenance_code: str) -> str:
    """An entry's label beside it: its status as a reader must weigh it, who stands behind
    it, and any change of it that awaits a person."""
    status = str(entry.get("status"))
    if status == "proposed":
        words = UNREVIEWED
    elif status == "superseded":
        words = f"superseded by {entry.get('superseded_by')}: history, not current practice"
    elif status in ("deprecated", "rejected"):
        words = f"tombstone ({status}): retired, not in force"
    else:
        words = status
    parts = [words, describe(provenance_code)]
    changes = _dicts(entry.get("pending_changes"))
    parts += [pending_label(c) for c in changes]
    if changes:
        parts.append(STAYS)
    return "; ".join(parts)


def missing_sentences(result: Mapping[str, JSONValue]) -> list[str]:
    """The distinctive words of a question the store does not answer (read/coverage.py):
    those nothing stored mentions at all, and those the best match leaves out."""
    missing = _strings(result.get("missing"))
    unmentioned = set(_strings(result.get("unmentioned")))
    absent = [w for w in missing if w in unmentioned]
    lacking = [w for w in missing if w not in unmentioned]
    sentences = []
    if absent:
        sentences.append(f"nothing stored mentions {listed(absent)}")
    if lacking:
        sentences.append(f"the best match does not cover {listed(lacking)}")
    return sentences


def context_note(result: Mapping[str, JSONValue], *, truncated: bool) -> str:
    """The note of a ``get_context`` answer."""
    results = _dicts(result.get("results"))
    if result.get("no_confident_match"):
        head = NOTHING_CONFIDENT
    elif result.get("weak_match"):
        head = WEAK
    elif results:
        head = f"{counted(len(results), 'entry', 'entries')} matched"
    else:
        head = "nothing matched"
    sentences = [head, *missing_sentences(result)]
    common = _strings(result.get("common_words_only"))
    if common and results:
        sentences.append(
            f"the best match shares only common words with the question ({listed(common, 'and')}): "
            "judge whether it answers it"
        )
    proposed = sum(1 for item in results if item.get("status") == "proposed")
    if proposed:
        sentences.append(
            f"{counted(proposed, 'result is', 'results are')} proposed and unreviewed (see "
            "each label)"
        )
    if result.get("withheld"):
        sentences.append("the results were withheld (abstain: withhold)")
    if result.get("budget_truncated") or truncated:
        dropped = _strings(result.get("dropped_ids"))
        sentences.append(
            "budget reached" + (f"; left out: {', '.join(dropped)}" if dropped else "")
        )
    return "; ".join(sentences)


def query_note(result: Mapping[str, JSONValue]) -> str:
    """The note of a ``query_entries`` answer."""
    total = result.get("total")
    note = f"{counted(total if isinstance(total, int) else 0, 'match', 'matches')}"
    if result.get("truncated"):
        note += " (showing the first; narrow the filters or lower limit)"
    proposed = sum(1 for e in _dicts(result.get("results")) if e.get("status") == "proposed")
    if proposed:
        note += f"; {counted(proposed, 'is', 'are')} proposed and unreviewed (see labels)"
    return note


def pending_note(result: Mapping[str, JSONValue], what: str) -> str:
    """Nothing changed yet: the agent must not act as if it had."""
    return (
        f"pending: {what} awaits a person's approval (change {result.get('change')}); "
        f"{result.get('id')} is unchanged and stays in force until they approve it with "
        "`ctxkeeper review` / `ctxkeeper approve`"
    )


def record_notes(result: Mapping[str, JSONValue]) -> list[str]:
    """What the agent must know after ``record_entry``, one sentence each."""
    entry = result.get("entry")
    status = entry.get("status") if isinstance(entry, dict) else None
    if status == "proposed":
        head = (
            f"recorded {result.get('id')} as a proposal: unreviewed until a person approves "
            f"it ({APPROVE_HOW}); until then no hook delivers it"
        )
    else:
        head = f"recorded {result.get('id')} ({status})"
    notes = [head]
    notes += [
        f"{item.get('label')}: {item.get('id')} ({item.get('status')}, similarity "
        f"{item.get('similarity')})"
        for item in _dicts(result.get("similar_entries"))
    ]
    notes += [f"superseded {old}" for old in _strings(result.get("superseded"))]
    notes += _strings(result.get("notes"))
    notes += [
        f"pending: superseding {item.get('id')} awaits a person (change {item.get('change')}); "
        f"{item.get('id')} is unchanged and stays in force until they approve {result.get('id')}"
        for item in _dicts(result.get("pending_supersession"))
    ]
    notes += [
        f"possible supersession of {maybe}: if it replaces it, record again with supersedes"
        for maybe in _strings(result.get("possible_supersession"))
    ]
    return notes


def summary_note(summary: Mapping[str, JSONValue], *, hard_delivery: str = "gate") -> str:
    """The note of ``get_project_summary``: what awaits a person, when the scoped hard
    constraints listed arrive, and what was cut."""
    total = summary.get("total")
    parts = [counted(total if isinstance(total, int) else 0, "entry", "entries")]
    waiting = awaiting_review(summary)
    if waiting:
        parts.append(f"{waiting} awaiting a person's review; proposals are not in force yet")
    scoped = sum(1 for item in _dicts(summary.get("hard_constraints")) if item.get("scope"))
    if scoped:
        held = "holds back" if hard_delivery == "gate" else "comes with"
        parts.append(
            f"{counted(scoped, 'hard constraint is', 'hard constraints are')} scoped: each "
            f"{held} the first edit of a file in its scope in a session"
        )
    if summary.get("truncated"):
        parts.append("cut to fit the budget; get_context or query_entries give more")
    return "; ".join(parts)


def awaiting_review(summary: Mapping[str, JSONValue]) -> str:
    """``1 entry and 2 changes``: what awaits a person, counted by what it is (empty when
    nothing does)."""
    entries = summary.get("pending_entries")
    changes = summary.get("pending_change_count")
    parts = []
    if isinstance(entries, int) and entries:
        parts.append(counted(entries, "entry", "entries"))
    if isinstance(changes, int) and changes:
        parts.append(counted(changes, "change", "changes"))
    return " and ".join(parts)
