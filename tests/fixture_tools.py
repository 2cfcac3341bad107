"""A small tool registry for the server tests: one well-behaved tool and every failure mode.

- ``echo``: read-only, exercises most schema keywords, returns what it was given.
- ``add_note``: a write; ``outcome`` makes it refuse (CtxkeeperError), crash (a plain
  exception) or return a result far over the server's size cap.
- ``sum_numbers``: numbers, a nullable field and integer bounds.
"""

from __future__ import annotations

from ctxkeeper.core._types import JSONObject, JSONValue
from ctxkeeper.core.errors import StateError
from ctxkeeper.mcp.tooldef import ToolResult, ToolSpec

HUGE_CHARS = 200_000

ECHO_INPUT: JSONObject = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "maxLength": 200, "description": "what to echo"},
        "times": {"type": "integer", "minimum": 1, "maximum": 3, "default": 1},
        "tags": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
            "uniqueItems": True,
            "maxItems": 5,
        },
        "shout": {"type": "boolean"},
    },
    "required": ["text"],
    "additionalProperties": False,
}
ECHO_OUTPUT: JSONObject = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["text", "tags"],
    "additionalProperties": False,
}

NOTE_INPUT: JSONObject = {
    "type": "object",
    "properties": {
        "note": {"type": "string", "minLength": 3},
        "outcome": {"enum": ["stored", "refused", "crash", "huge"]},
    },
    "required": ["note"],
    "additionalProperties": False,
}
NOTE_OUTPUT: JSONObject = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "note": {"type": "string"}},
    "required": ["id", "note"],
}

SUM_INPUT: JSONObject = {
    "type": "object",
    "properties": {
        "numbers": {
            "type": "array",
            "items": {"type": "number", "minimum": -1e9, "maximum": 1e9},
            "minItems": 1,
            "maxItems": 100,
        },
        "round_to": {"type": ["integer", "null"], "minimum": 0, "maximum": 6},
    },
    "required": ["numbers"],
    "additionalProperties": False,
}
SUM_OUTPUT: JSONObject = {
    "type": "object",
    "properties": {"total": {"type": "number"}, "count": {"type": "integer"}},
    "required": ["total", "count"],
}


def _echo(arguments: JSONObject) -> ToolResult:
    text = str(arguments["text"]) * int(arguments.get("times", 1))  # type: ignore[arg-type]  # validated integer
    if arguments.get("shout"):
        text = text.upper()
    tags = arguments.get("tags", [])
    return ToolResult({"text": text, "tags": tags}, text)


def _add_note(arguments: JSONObject) -> ToolResult:
    outcome = arguments.get("outcome", "stored")
    note = str(arguments["note"])
    if outcome == "refused":
        raise StateError("add_note refused: the notebook is frozen; record a new note instead")
    if outcome == "crash":
        raise RuntimeError("secret internal detail that must not reach the client")
    if outcome == "huge":
        note = "x" * HUGE_CHARS
    return ToolResult({"id": "note-001", "note": note}, f"stored note-001: {note}")


def _sum_numbers(arguments: JSONObject) -> ToolResult:
    numbers: list[JSONValue] = arguments["numbers"]  # type: ignore[assignment]  # validated array
    total = float(sum(n for n in numbers if isinstance(n, (int, float))))
    places = arguments.get("round_to")
    if isinstance(places, int):
        total = round(total, places)
    return ToolResult({"total": total, "count": len(numbers)}, f"{total} ({len(numbers)} numbers)")


def load_fixture_tools() -> list[ToolSpec]:
    """The fixture registry, in its listing order."""
    return [
        ToolSpec(
            name="echo",
            title="Echo text",
            description="Return the given text, repeated and tagged. Test fixture.",
            input_schema=ECHO_INPUT,
            output_schema=ECHO_OUTPUT,
            read_only=True,
            destructive=False,
            idempotent=True,
            handler=_echo,
        ),
        ToolSpec(
            name="add_note",
            title="Add a note",
            description="Store a note. outcome selects a failure mode. Test fixture.",
            input_schema=NOTE_INPUT,
            output_schema=NOTE_OUTPUT,
            read_only=False,
            destructive=False,
            idempotent=False,
            handler=_add_note,
        ),
        ToolSpec(
            name="sum_numbers",
            title="Sum numbers",
            description="Add up numbers, optionally rounded. Test fixture.",
            input_schema=SUM_INPUT,
            output_schema=SUM_OUTPUT,
            read_only=True,
            destructive=False,
            idempotent=True,
            handler=_sum_numbers,
        ),
    ]
