"""``ctxkeeper demo``: a guided walk through ctxkeeper on a sample store in a temporary folder."""

from __future__ import annotations

import tempfile
import textwrap
from typing import Final

from ctxkeeper.core.errors import CtxkeeperError
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
        _history(say, store, ids["decision"])
        _agent_change_waits(say, store, ids["constraint"])
        _tombstone(say, store, ids["constraint"])
        _abstention(say, store)
        say(
            "\nDone. Try it on your project: `ctxkeeper init`, then `ctxkeeper add constraint --help`."
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


def _items(result: JSONObject) -> list[JSONObject]:
    items = result.get("results")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _history(say: Callable[[str], None], store: Store, decision_id: str) -> None:
    from ctxkeeper.write.verbs import get_entry, update_entry, user_actor

    _section(
        say,
        "5. Nothing is silently changed",
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


def _agent_change_waits(say: Callable[[str], None], store: Store, constraint_id: str) -> None:
    from ctxkeeper.read.rank import get_context
    from ctxkeeper.write.verbs import agent_actor, update_entry

    _section(
        say,
        "6. The agent proposes, a person decides",
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


def _tombstone(say: Callable[[str], None], store: Store, constraint_id: str) -> None:
    from ctxkeeper.write.verbs import deprecate_entry, record_entry, user_actor

    _section(
        say,
        "7. Nothing rejected comes back",
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


def _abstention(say: Callable[[str], None], store: Store) -> None:
    from ctxkeeper.read.rank import get_context

    _section(
        say,
        "8. Knowing when it does not know",
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
