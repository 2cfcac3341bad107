"""A small JSON-Schema validator for the subset that ctxkeeper's tool input schemas use.

MCP clients do not validate tool arguments before sending them (mcp.md §10), so the server
does, with this module. It knows a closed set of keywords; a schema that uses anything else
raises :class:`SchemaError` (a ``ValueError``) naming the keyword, so no constraint is ever silently unchecked.
Deliberate differences from JSON Schema: ``integer`` accepts only JSON integers (``2.0`` is
refused, since an agent that sends it has made a mistake worth reporting) and booleans are never
numbers.
"""

from __future__ import annotations

import json

from ctxkeeper.core.errors import CtxkeeperError
from ctxkeeper.core.wording import counted

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Hashable, Iterator
    from typing import Final

    from ctxkeeper.core._types import JSONObject, JSONValue

#: Keywords that constrain a value; each has a checker below.
ASSERTIONS: Final = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
        "pattern",
    }
)
#: Keywords that only annotate (JSON Schema 2020-12 §7.7, §9); they never change the verdict.
#: ``format`` is deliberately absent: a schema author could believe it is enforced.
ANNOTATIONS: Final = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated"}
)
KNOWN_KEYWORDS: Final = ASSERTIONS | ANNOTATIONS

#: How errors describe the flaw :func:`find_lone_surrogates` finds.
LONE_SURROGATE: Final = (
    "a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not text"
)
_TYPE_NAMES: Final = ("string", "integer", "number", "boolean", "array", "object", "null")
_ARTICLE: Final = {"integer": "an integer", "array": "an array", "object": "an object"}


class SchemaError(CtxkeeperError, ValueError):
    """A tool schema uses a keyword this module does not check, or misuses one (a server bug)."""

    code = "invalid_schema"


def validate(value: JSONValue, schema: JSONObject, *, path: str = "arguments") -> list[str]:
    """Check ``value`` against ``schema`` and return readable errors (empty when valid).

    Each error starts with the JSON path of the offending value, e.g.
    ``arguments.kind: must be one of decision, constraint, pipeline``.

    :raises SchemaError: the schema uses a keyword this module does not implement, or a keyword
        holds a value of the wrong shape.
    """
    # A lone surrogate is checked first and whatever the schema says: a handler that got one
    # would fail to write it to a file or a UTF-8 reply.
    flaws = [
        f"{render_path(path, where)}: "
        + ("the property name holds" if in_key else "holds")
        + f" {LONE_SURROGATE}; send valid Unicode text"
        for where, in_key in find_lone_surrogates(value)
    ]
    try:
        return flaws + list(_check(value, schema, path))
    except RecursionError:
        # json.loads accepts nesting close to the interpreter's limit; checking it goes deeper.
        return [f"{path}: value is nested too deeply"]


def find_lone_surrogates(value: JSONValue) -> Iterator[tuple[tuple[str | int, ...], bool]]:
    """Where ``value`` holds a lone UTF-16 surrogate: each location's path and whether the
    surrogate is in an object key (the key is the path's last part) rather than a string value.

    ``json.loads`` turns an escaped ``"\\ud800"`` into one: valid JSON (RFC 8259 §8.2), but not
    Unicode text, so neither a UTF-8 file nor a UTF-8 reply can hold it.
    """
    # Iterative, because the value may be nested almost to the recursion limit.
    pending: list[tuple[JSONValue, tuple[str | int, ...]]] = [(value, ())]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str):
            if not _is_text(item):
                yield where, False
        elif isinstance(item, list):
            pending.extend((sub, (*where, index)) for index, sub in enumerate(item))
        elif isinstance(item, dict):
            for key, sub in item.items():
                if not _is_text(key):
                    yield (*where, key), True
                pending.append((sub, (*where, key)))


def render_path(base: str, where: tuple[str | int, ...]) -> str:
    """``where`` written after ``base`` the way error messages name values: ``a.b[0]["c d"]``."""
    path = base
    for part in where:
        if isinstance(part, int):
            path = f"{path}[{part}]"
        elif path:
            path = _join(path, part)
        else:
            path = part if part.isidentifier() else f"[{json.dumps(part)}]"
    return path


def check_schema(schema: JSONObject, *, path: str = "schema") -> None:
    """Walk all of ``schema`` and raise :class:`SchemaError` on a keyword this module lacks.

    :func:`validate` only reaches the parts of a schema that a value exercises; tests call this
    on every tool's input schema so that an unchecked keyword cannot hide in an optional branch.
    """
    _require_known(schema, path)
    for name, sub in _subschemas(schema, path):
        check_schema(sub, path=f"{path}.{name}")
    if "pattern" in schema:
        _compile(schema["pattern"], path)


def type_name(value: JSONValue) -> str:
    """The JSON type name of a parsed JSON value (``bool`` is ``boolean``, never a number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _check(value: JSONValue, schema: JSONObject, path: str) -> Iterator[str]:
    _require_known(schema, path)
    if "type" in schema:
        error = _check_type(value, schema["type"], path)
        if error:
            # The other keywords would only restate the type error.
            yield error
            return
    yield from _check_values(value, schema, path)
    if isinstance(value, str):
        yield from _check_string(value, schema, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield from _check_number(value, schema, path)
    elif isinstance(value, list):
        yield from _check_array(value, schema, path)
    elif isinstance(value, dict):
        yield from _check_object(value, schema, path)


def _require_known(schema: JSONValue, path: str) -> None:
    if not isinstance(schema, dict):
        raise SchemaError(f"{path}: a schema must be an object, not {type_name(schema)}")
    unknown = sorted(set(schema) - KNOWN_KEYWORDS)
    if unknown:
        raise SchemaError(
            f"{path}: unsupported JSON Schema keyword {unknown[0]!r}; ctxkeeper.mcp.argcheck checks "
            f"only {', '.join(sorted(ASSERTIONS))}"
        )


def _subschemas(schema: JSONObject, path: str = "schema") -> Iterator[tuple[str, JSONObject]]:
    for name, sub in _properties(schema, path).items():
        yield f"properties.{name}", sub
    for keyword in ("items", "additionalProperties"):
        nested = schema.get(keyword)
        if isinstance(nested, dict):
            yield keyword, nested


def _properties(schema: JSONObject, path: str) -> dict[str, JSONObject]:
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise SchemaError(f"{path}: 'properties' must be an object")
    return {name: _as_schema(sub, f"{path}.properties.{name}") for name, sub in properties.items()}


def _as_schema(sub: JSONValue, where: str) -> JSONObject:
    if not isinstance(sub, dict):
        raise SchemaError(f"{where}: a schema must be an object, not {type_name(sub)}")
    return sub


def _check_type(value: JSONValue, expected: JSONValue, path: str) -> str | None:
    names = [expected] if isinstance(expected, str) else expected
    if not isinstance(names, list) or not names or not all(n in _TYPE_NAMES for n in names):
        raise SchemaError(f"{path}: 'type' must be one of {', '.join(_TYPE_NAMES)} or a list")
    actual = type_name(value)
    if actual in names or (actual == "integer" and "number" in names):
        return None
    wanted = " or ".join(_ARTICLE.get(str(n), f"a {n}") for n in names)
    return f"{path}: must be {wanted}, not {_ARTICLE.get(actual, f'a {actual}')}"


def _check_values(value: JSONValue, schema: JSONObject, path: str) -> Iterator[str]:
    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list):
            raise SchemaError(f"{path}: 'enum' must be an array")
        if not any(_json_equal(value, option) for option in options):
            yield f"{path}: must be one of {', '.join(_render(o) for o in options)}"
    if "const" in schema and not _json_equal(value, schema["const"]):
        yield f"{path}: must be exactly {_render(schema['const'])}"


def _check_string(value: str, schema: JSONObject, path: str) -> Iterator[str]:
    # JSON Schema counts code points (2020-12 validation §6.3.1), which is what len() does.
    low = _bound(schema, "minLength", path)
    if low is not None and len(value) < low:
        yield f"{path}: must be at least {low} characters long (got {len(value)})"
    high = _bound(schema, "maxLength", path)
    if high is not None and len(value) > high:
        yield f"{path}: must be at most {high} characters long (got {len(value)})"
    if "pattern" in schema and _compile(schema["pattern"], path).search(value) is None:
        yield f"{path}: must match the pattern {schema['pattern']}"


def _check_number(value: float, schema: JSONObject, path: str) -> Iterator[str]:
    low = _bound(schema, "minimum", path, number=True)
    if low is not None and value < low:
        yield f"{path}: must be at least {low} (got {value})"
    high = _bound(schema, "maximum", path, number=True)
    if high is not None and value > high:
        yield f"{path}: must be at most {high} (got {value})"


def _check_array(value: list[JSONValue], schema: JSONObject, path: str) -> Iterator[str]:
    low = _bound(schema, "minItems", path)
    if low is not None and len(value) < low:
        yield f"{path}: must have at least {counted(int(low), 'item')} (got {len(value)})"
    high = _bound(schema, "maxItems", path)
    if high is not None and len(value) > high:
        yield f"{path}: must have at most {counted(int(high), 'item')} (got {len(value)})"
    if schema.get("uniqueItems") is True:
        yield from _check_unique(value, path)
    if "items" in schema:
        items = _as_schema(schema["items"], f"{path}: 'items'")
        for index, item in enumerate(value):
            yield from _check(item, items, f"{path}[{index}]")


def _check_unique(value: list[JSONValue], path: str) -> Iterator[str]:
    # Hashing a canonical form keeps this linear; a pairwise scan would let one long array
    # stall the single-threaded server.
    seen: dict[Hashable, int] = {}
    for index, item in enumerate(value):
        key = _canonical(item)
        if key in seen:
            yield f"{path}: items must be unique ({path}[{index}] repeats {path}[{seen[key]}])"
            return
        seen[key] = index


def _check_object(value: JSONObject, schema: JSONObject, path: str) -> Iterator[str]:
    required = schema.get("required", [])
    if not isinstance(required, list):
        raise SchemaError(f"{path}: 'required' must be an array")
    for name in required:
        if name not in value:
            yield f"{_join(path, str(name))}: required property is missing"
    properties = _properties(schema, path)
    extra = schema.get("additionalProperties", True)
    if not isinstance(extra, (bool, dict)):
        raise SchemaError(f"{path}: 'additionalProperties' must be a boolean or a schema")
    for name, item in value.items():
        if name in properties:
            yield from _check(item, properties[name], _join(path, name))
        elif extra is False:
            allowed = ", ".join(sorted(properties)) or "none"
            yield f"{_join(path, name)}: unknown property; allowed properties: {allowed}"
        elif isinstance(extra, dict):
            yield from _check(item, extra, _join(path, name))


def _bound(schema: JSONObject, keyword: str, path: str, *, number: bool = False) -> float | None:
    if keyword not in schema:
        return None
    bound = schema[keyword]
    if (
        isinstance(bound, bool)
        or not isinstance(bound, (int, float))
        or (isinstance(bound, float) and not number)
    ):
        raise SchemaError(f"{path}: {keyword!r} must be {'a number' if number else 'an integer'}")
    return bound


def _compile(pattern: JSONValue, path: str) -> re.Pattern[str]:
    # re costs start-up time (STYLE.md 7) and only string arguments with a pattern need it.
    import re

    if not isinstance(pattern, str):
        raise SchemaError(f"{path}: 'pattern' must be a string")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise SchemaError(f"{path}: 'pattern' {pattern!r} does not compile: {exc}") from None


def _json_equal(left: JSONValue, right: JSONValue) -> bool:
    # Python's == says True == 1 and [1] == [True]; JSON does not.
    return _canonical(left) == _canonical(right)


def _canonical(value: JSONValue) -> Hashable:
    """A hashable form in which two JSON values are equal exactly when JSON says they are."""
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, (int, float)):
        # 1 and 1.0 are the same JSON number (2020-12 core §4.2.2).
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    return (type_name(value), value)


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _render(value: JSONValue) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if name.isidentifier() else f"{path}[{json.dumps(name)}]"
