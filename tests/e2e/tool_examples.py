"""Example arguments for every tool, used by the real-client tests to call each one.

``EXAMPLE_CALLS`` maps a tool name to the argument objects to call it with, in order; tools
are called in the order of this dict, so a tool that needs an entry comes after
``record_entry``. A string argument equal to ``RECORDED_ID`` is replaced by the ``id`` the first
successful call returned in its ``structuredContent`` (see :func:`resolve`). Every listed
tool must appear here, and every example must succeed (``isError`` false) with
``structuredContent`` that matches the tool's ``outputSchema``.

Pure data and the standard library only: the 1.x SDK session imports it from another venv.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject, JSONValue

RECORDED_ID = "$recorded_id"

_DECISION: JSONObject = {
    "kind": "decision",
    "summary": "Serve MCP over stdio with a hand-written JSON-RPC loop",
    "problem": "The plugin must run from a plain checkout with only python3, so no SDK can be "
    "installed.",
    "why_chosen": "A sequential standard-library loop answers every request in order, starts "
    "in tens of milliseconds and needs nothing from PyPI at run time.",
    "alternatives": ["The official SDK: pulls in pydantic, anyio and more at run time"],
    "scope": ["ctxkeeper/mcp/server.py"],
    "tags": ["mcp", "e2e-example"],
}

EXAMPLE_CALLS: dict[str, list[JSONObject]] = {
    # The fixture registry (tests/fixture_tools.py).
    "echo": [{"text": "hello"}, {"text": "é☕", "times": 3, "tags": ["a", "b-2"], "shout": True}],
    "add_note": [{"note": "remember the milk"}, {"note": "abc", "outcome": "stored"}],
    "sum_numbers": [{"numbers": [1, 2.5, -3]}, {"numbers": [0.125], "round_to": 2}],
    # The real registry (ctxkeeper/mcp/tools.py).
    "record_entry": [_DECISION],
    "get_context": [
        {"query": "stdio JSON-RPC loop", "path": "ctxkeeper/mcp/server.py"},
        {"kinds": ["constraint"], "token_budget": 500},
    ],
    "query_entries": [{}, {"kinds": ["decision"], "tags_any": ["mcp"], "limit": 5}],
    "get_entry": [{"id": RECORDED_ID}],
    "update_entry": [
        {
            "id": RECORDED_ID,
            "updates": {"tags": ["mcp", "e2e-example", "updated"]},
            "reason": "add a tag so the example exercises update_entry",
        }
    ],
    "get_project_summary": [{}, {"token_budget": 400}],
    "check_drift": [{}, {"ids": [RECORDED_ID]}],
    "verify_entry": [{"id": RECORDED_ID}],
    "export_snapshot": [{}, {"path": ".context/team-copy.jsonl"}],
    "import_snapshot": [{}, {"path": ".context/team-copy.jsonl"}],
    "deprecate_entry": [
        {"id": RECORDED_ID, "reason": "the e2e example retires the entry it recorded"}
    ],
}


def resolve(arguments: JSONObject, recorded_id: str | None) -> JSONObject:
    """``arguments`` with every ``RECORDED_ID`` string replaced by ``recorded_id``."""

    def swap(value: JSONValue) -> JSONValue:
        if value == RECORDED_ID:
            if recorded_id is None:
                raise LookupError("an example needs an id, but no earlier call returned one")
            return recorded_id
        if isinstance(value, list):
            return [swap(item) for item in value]
        if isinstance(value, dict):
            return {key: swap(item) for key, item in value.items()}
        return value

    return {key: swap(item) for key, item in arguments.items()}


def ordered_calls(tool_names: list[str]) -> list[tuple[str, JSONObject]]:
    """(tool, example arguments) for every listed tool, in ``EXAMPLE_CALLS`` order.

    :raises KeyError: a listed tool has no example; add one above.
    """
    missing = [name for name in tool_names if not EXAMPLE_CALLS.get(name)]
    if missing:
        raise KeyError(
            f"no example arguments for {missing}; add them to tests/e2e/tool_examples.py"
        )
    return [
        (name, arguments)
        for name, examples in EXAMPLE_CALLS.items()
        if name in tool_names
        for arguments in examples
    ]
