"""``ctxkeeper demo``: a guided walk through ctxkeeper on a sample store in a temporary folder."""

from __future__ import annotations

import tempfile
import textwrap
from typing import Final

from ctxkeeper.core.errors import CtxkeeperError
from ctxkeeper.core.wording import counted
from ctxkeeper.read import render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.store import Store

#: The sample project's memory: what a payments team might have written down.
SAMPLE: Final[list[tuple[str, dict[str, object]]]] = [
    (
        "constraint",
        {
            "rule": "Every call to the payment provider carries an idempotency key",
            "reason": (
                "On 2025-02-11 a retry storm after a provider timeout double-charged 40 "
                "customers; the provider only deduplicates requests that carry a key."
            ),
            "hardness": "hard",
            "scope": ["src/billing/"],
            "tags": ["billing", "payments", "retries"],
        },
    ),
    (
        "decision",
        {
            "summary": "Use PostgreSQL advisory locks to keep the invoice job single-run",
            "problem": (
                "Two scheduler replicas both ran the nightly invoice job and sent duplicate "
                "invoices to customers."
            ),
            "why_chosen": (
                "Advisory locks live in the database we already operate, are released when the "
                "holder disconnects, and need no new service to run or monitor."
            ),
            "alternatives": ["Redis locks: one more service to operate and fail over"],
            "scope": ["src/jobs/invoices.py"],
            "tags": ["scheduler", "postgres"],
        },
    ),
    (
        "pipeline",
        {
            "name": "Release",
            "purpose": "Ship a tagged build to production with a tested rollback point.",
            "steps": [
                "Tag the release commit on main",
                "Run the smoke suite against staging",
                "Promote the staging image to production",
            ],
            "tags": ["release"],
        },
    ),
]


def run_demo(say: Callable[[str], None]) -> int:
    """Build the sample store and narrate each capability; return 0 when every step behaved."""
    from ctxkeeper.core.store import Store

    with tempfile.TemporaryDirectory(prefix="ctxkeeper-demo-") as folder:
        store = Store.open(folder)
        store.init()
        _section(
            say,
            "1. A store",
            f"`ctxkeeper init` made {store.dir}: config.json and a "
            ".gitignore that keeps the working store out of git.",
        )
        _thin_entry(say, store)
        ids = _record_sample(say, store)
        _delivery(say, store)
        _held_back(say, store)
        _history(say, store, ids["decision"])
        change = _agent_change_waits(say, store, ids["constraint"])
        _review(say, store, change)
        _tombstone(say, store, ids["constraint"])
        _abstention(say, store)
        _team(say, store, folder)
        say(
            "\nDone. Try it on your project: `ctxkeeper init`, then `ctxkeeper add constraint "
            "--help`. In Claude Code the plugin does the delivery: `claude plugin marketplace "
            "add` with this repository, then `claude plugin install ctxkeeper@ctxkeeper`."
        )
    return 0


def _section(say: Callable[[str], None], title: str, text: str) -> None:
    say(f"\n== {title} ==")
    say(textwrap.fill(text, width=96))


def _thin_entry(say: Callable[[str], None], store: Store) -> None:
    from ctxkeeper.write.verbs import record_entry, user_actor

    _section(
        say,
        "2. Thin entries are refused",
        "Every kind has field floors; an entry that "
        "does not explain itself is rejected and nothing is stored.",
    )
    try:
        record_entry(
            store,
            "constraint",
            {"rule": "Be careful with billing", "reason": "bugs", "hardness": "hard"},
            actor=user_actor(),
        )
    except CtxkeeperError as exc:
        say(f"  refused: {exc}")
    else:  # pragma: no cover - the floors make this unreachable; say so loudly if it happens
        raise AssertionError("a thin entry was accepted")


def _record_sample(say: Callable[[str], None], store: Store) -> dict[str, str]:
    from ctxkeeper.write.verbs import record_entry, user_actor

    _section(
        say,
        "3. Recording what the team knows",
        "A hard constraint with the incident "
        "behind it, a decision with its alternatives, and a release pipeline.",
    )
    ids: dict[str, str] = {}
    for kind, fields in SAMPLE:
        result = record_entry(store, kind, fields, actor=user_actor())
        entry = result["entry"]
        assert isinstance(entry, dict)
        ids[kind] = str(result["id"])
        say("  " + render.one_line(entry))
    return ids


def _delivery(say: Callable[[str], None], store: Store) -> None:
    from ctxkeeper.read.rank import get_context

    _section(
        say,
        "4. The right rule for the file being edited",
        "Before an edit, the agent "
        "(or the PreToolUse hook) asks for the entries whose scope covers the file. Scopes "
        "match whole path components: src/billing/ covers src/billing/charge.py, not "
        "src/billing_legacy/charge.py.",
    )
    for path in ("src/billing/charge.py", "src/billing_legacy/charge.py"):
        result = get_context(store, {"path": path})
        found = [str(item["id"]) for item in _items(result)]
        say(f"  {path}: {', '.join(found) or 'nothing applies'}")


#: The edit the agent attempts in the demo: Claude Code's PreToolUse input for an Edit.
DEMO_EDIT: Final = "src/billing/charge.py"


def _held_back(say: Callable[[str], None], store: Store) -> None:
    """The headline: the real edit gate (the plugin's PreToolUse hook) on the sample store."""
    _section(
        say,
        "5. The first edit of a governed file is held back",
        "In Claude Code the ctxkeeper plugin's PreToolUse hook sees each edit before it runs. "
        "The first edit in a session of a file a hard constraint covers is denied, with the "
        "rule as the reason, so the agent reads the rule before the change lands; it then "
        "re-issues a compliant edit, which goes through. Here the demo plays Claude Code: it "
        "starts the hook's gate with the input an Edit gives it, on the sample store.",
    )
    first = _run_gate(store)
    answer = first.get("hookSpecificOutput") if first else None
    if not isinstance(answer, dict) or answer.get("permissionDecision") != "deny":
        raise AssertionError(f"the first edit of {DEMO_EDIT} was not held back: {first}")
    say(f"  the agent's first Edit of {DEMO_EDIT}: held back (permissionDecision deny)")
    say("  what the agent reads:")
    say(textwrap.indent(str(answer.get("permissionDecisionReason")), "  | "))
    again = _run_gate(store)
    say(f"  the same Edit re-issued: {'goes through' if again is None else again}")


def _run_gate(store: Store) -> JSONObject | None:
    """One PreToolUse call of the edit gate, in a process of its own as Claude Code starts
    hooks: the Edit's JSON on stdin, the project in ``CLAUDE_PROJECT_DIR``; its answer."""
    import json
    import os
    import subprocess
    import sys

    import ctxkeeper

    payload = {
        "session_id": "demo",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": os.path.join(store.root, DEMO_EDIT)},
    }
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(ctxkeeper.__file__)))
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeeper.plugin.editgate"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=package_parent,
        env={**os.environ, "CLAUDE_PROJECT_DIR": store.root, "PYTHONPATH": package_parent},
        timeout=60,
        check=True,
    )
    if not done.stdout.strip():
        return None
    answer = json.loads(done.stdout)
    assert isinstance(answer, dict)
    return answer


def _items(result: JSONObject) -> list[JSONObject]:
    items = result.get("results")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _history(say: Callable[[str], None], store: Store, decision_id: str) -> None:
    from ctxkeeper.write.verbs import get_entry, update_entry, user_actor

    _section(
        say,
        "6. Nothing is silently changed",
        "An update needs a reason; the journal keeps "
        "the before-value, the actor and the reason of every revision.",
    )
    update_entry(
        store,
        decision_id,
        {
            "alternatives": [
                "Redis locks: one more service to operate and fail over",
                "A leader-election sidecar: heavier than the problem",
            ]
        },
        "Recorded the sidecar option we also rejected",
        actor=user_actor(),
    )
    history = get_entry(store, decision_id)["history"]
    assert isinstance(history, list)
    say(textwrap.indent(render.history(history), "  "))


def _agent_change_waits(say: Callable[[str], None], store: Store, constraint_id: str) -> str:
    from ctxkeeper.read.rank import get_context
    from ctxkeeper.write.verbs import agent_actor, update_entry

    _section(
        say,
        "7. The agent proposes, a person decides",
        "An agent's change to a rule a person recorded is only a proposal: the rule stays "
        "exactly as it was, and is still delivered, until a person approves the change with "
        "`ctxkeeper approve` in their own terminal.",
    )
    result = update_entry(
        store,
        constraint_id,
        {"hardness": "soft", "rule": "Calls to the payment provider may skip the idempotency key"},
        "The provider is said to deduplicate retries now",
        actor=agent_actor(),
    )
    say(f"  agent's update_entry: pending={result['pending']}, change {result['change']}")
    live = store.get(constraint_id)
    say(f"  {constraint_id} in force: [{live['hardness']}] {live['rule']}")
    found = [str(i["id"]) for i in _items(get_context(store, {"path": "src/billing/charge.py"}))]
    say(f"  still delivered for src/billing/charge.py: {constraint_id in found}")
    return str(result["change"])


#: An agent's proposal a person turns down in the demo's review, and its rewording.
_BAD_PROPOSAL: Final[dict[str, object]] = {
    "rule": "Retry failed payment provider calls immediately in a tight loop",
    "reason": "Proposed by an agent after a timeout: retrying at once seemed the fastest fix.",
    "hardness": "soft",
    "scope": ["src/billing/"],
}
_REWORDED: Final[dict[str, object]] = {
    **_BAD_PROPOSAL,
    "rule": "Failed payment provider calls are retried immediately, in a tight loop",
}


def _review(say: Callable[[str], None], store: Store, change: str) -> None:
    from ctxkeeper.cli.review import approve, reject
    from ctxkeeper.write.verbs import agent_actor, record_entry, user_actor

    _section(
        say,
        "8. A person reviews",
        "What the agent records starts proposed. In `ctxkeeper review` (an interactive queue "
        "in the person's terminal) a person approves, rejects with a reason, or edits each "
        "proposal; a rejected one becomes a tombstone the agent cannot record again.",
    )
    good = record_entry(
        store,
        "decision",
        {
            "summary": "Refunds go through the same idempotent charge client",
            "problem": "Refund calls were written against the provider SDK directly, without keys.",
            "why_chosen": (
                "One client means one place that attaches idempotency keys and logs provider "
                "errors, so refunds get the retry safety charges already have."
            ),
        },
        actor=agent_actor(),
    )
    bad = record_entry(store, "constraint", _BAD_PROPOSAL, actor=agent_actor())
    say(f"  agent proposed {good['id']} and {bad['id']} (status proposed)")
    approve(store, [str(good["id"])], actor=user_actor())
    reason = "Tight retry loops are what caused the double charges; back off instead."
    reject(store, [str(bad["id"]), change], reason, actor=user_actor())
    say(f"  person approved {good['id']}; rejected {bad['id']} and the change {change}")
    try:
        record_entry(store, "constraint", _REWORDED, actor=agent_actor())
    except CtxkeeperError as exc:
        say(f"  the agent records it again, reworded: refused: {exc}")
    else:
        raise AssertionError("a rejected proposal was recorded again")


def _tombstone(say: Callable[[str], None], store: Store, constraint_id: str) -> None:
    from ctxkeeper.write.verbs import deprecate_entry, record_entry, user_actor

    _section(
        say,
        "9. Nothing rejected comes back",
        "Deprecating a rule makes it a tombstone; "
        "recording the same rule again, even reworded, is refused with the reason.",
    )
    deprecate_entry(
        store,
        constraint_id,
        "The provider now deduplicates by order id on its side.",
        actor=user_actor(),
    )
    try:
        record_entry(
            store,
            "constraint",
            {
                "rule": "Each payment provider call must carry an idempotency key",
                "reason": "Retries after provider timeouts charged customers twice in February.",
                "hardness": "hard",
                "scope": ["src/billing/"],
            },
            actor=user_actor(),
        )
    except CtxkeeperError as exc:
        say(f"  refused: {exc}")
    else:
        say("  (the reworded rule was accepted: the tombstone threshold missed it)")


def _team(say: Callable[[str], None], store: Store, folder: str) -> None:
    import os
    import shutil

    from ctxkeeper.core.store import Store
    from ctxkeeper.write.exchange import import_snapshot, summary_line
    from ctxkeeper.write.verbs import user_actor

    _section(
        say,
        "11. Team memory through git",
        "Every write refreshed .context/snapshot.jsonl, the file a team commits. A teammate's "
        "fresh clone holds only that file and config.json; its session start imports them.",
    )
    clone = os.path.join(folder, "teammate")
    os.makedirs(os.path.join(clone, ".context"))
    for name in ("config.json", "snapshot.jsonl"):
        shutil.copy(store.path(name), os.path.join(clone, ".context", name))
    theirs = Store.open(clone)
    report = import_snapshot(theirs, actor=user_actor())
    say(f"  teammate: {summary_line(report)}")
    same = theirs.load().entries == store.load().entries
    held = counted(len(store.load().entries), "entry", "entries")
    say(f"  both clones hold the same {held}: {same}")


def _abstention(say: Callable[[str], None], store: Store) -> None:
    from ctxkeeper.read.rank import get_context

    _section(
        say,
        "10. Knowing when it does not know",
        "Retrieval reports top_relevance and "
        "no_confident_match, so an agent is told when nothing stored answers its question.",
    )
    for question in (
        "how do we keep the invoice job from running twice?",
        "what is our Postgres backup retention policy?",
    ):
        result = get_context(store, {"query": question})
        top = _items(result)
        best = str(top[0]["id"]) if top else "nothing"
        verdict = "no confident match" if result["no_confident_match"] else f"answer: {best}"
        say(f"  {question!r}: {verdict} (top_relevance {result['top_relevance']})")
