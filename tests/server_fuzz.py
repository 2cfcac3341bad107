"""Generate malformed and hostile MCP request lines, and check that a server survived them.

Every generated line is harmless to a real store by construction: tool calls either name no
tool or carry an argument of a type the tool's schema forbids, so argument validation must
refuse them before any verb runs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import NamedTuple

from ctxkeeper.core._types import JSONObject, JSONValue
from ctxkeeper.mcp.argcheck import type_name

MODERN = "2026-07-28"
META: JSONObject = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
NO_TOOL = "fuzz-no-such-tool"
#: A property no tool declares; schemas set additionalProperties false, so this is refused.
BOGUS_ARGUMENTS: JSONObject = {"\u0000fuzz": 1}
FINAL_ID = "final-probe"


class Sent(NamedTuple):
    """One generated line and the id its reply must (or may) carry."""

    raw: bytes
    request_id: JSONValue
    """The id the reply must carry, or None when no reply with a readable id is due."""
    required: bool = True
    """False when the line may or may not be answered with ``request_id`` (random mutations)."""


def _deep(depth: int) -> JSONValue:
    value: JSONValue = []
    for _ in range(depth):
        value = [value]
    return value


HOSTILE: list[JSONValue] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    -0.0,
    1e308,
    2**63,
    -(2**63),
    10**40,
    "",
    "x",
    "é☕\u2028",
    "\u0000",
    "\n\r\t",
    "x" * 100_000,
    [],
    [1, "2", None],
    {},
    {"a": {"b": {"c": []}}},
    {"__proto__": {"polluted": True}},
    _deep(500),
]


def _is_valid_id(value: JSONValue) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class _Builder:
    def __init__(self, era: str) -> None:
        self.era = era
        self.counter = 0
        self.lines: list[Sent] = []

    def next_id(self) -> str:
        self.counter += 1
        return f"fz-{self.counter}"

    def params(self, **fields: JSONValue) -> JSONObject:
        params: JSONObject = {"_meta": dict(META)} if self.era == "modern" else {}
        params.update(fields)
        return params

    def add(self, message: JSONValue, request_id: JSONValue, *, required: bool = True) -> None:
        raw = json.dumps(message).encode() + b"\n"
        self.lines.append(Sent(raw, request_id, required))

    def add_raw(self, raw: bytes, request_id: JSONValue = None) -> None:
        self.lines.append(Sent(raw + b"\n", request_id))

    def base_request(self, method: str) -> JSONObject:
        fields: dict[str, JSONObject] = {
            "initialize": {"protocolVersion": "2025-11-25", "capabilities": {}},
            "tools/call": {"name": NO_TOOL, "arguments": BOGUS_ARGUMENTS},
        }
        return {
            "jsonrpc": "2.0",
            "id": self.next_id(),
            "method": method,
            "params": self.params(**fields.get(method, {})),
        }


METHODS = ["initialize", "ping", "tools/list", "tools/call", "server/discover", "no/such"]


def fuzz_lines(era: str, tools: Sequence[JSONValue], *, seed: int) -> list[Sent]:
    """Hostile lines for a connection in ``era`` serving ``tools`` (tools/list entries).

    The first line opens the era; the rest attack the envelope, the params of each method,
    each tool's arguments and the framing itself.
    """
    builder = _Builder(era)
    rng = random.Random(seed)
    opening = builder.base_request("server/discover" if era == "modern" else "initialize")
    builder.add(opening, opening["id"])
    _envelope(builder)
    _params(builder)
    for tool in tools:
        assert isinstance(tool, dict)
        _arguments(builder, tool)
    _raw(builder, rng)
    _mutations(builder, rng, count=120)
    return builder.lines


def probe_lines(era: str) -> list[Sent]:
    """A last request that must be answered with a result: proof the server is alive."""
    params: JSONObject = {"_meta": META} if era == "modern" else {}
    message = {"jsonrpc": "2.0", "id": FINAL_ID, "method": "tools/list", "params": params}
    return [Sent(json.dumps(message).encode() + b"\n", FINAL_ID)]


def _envelope(builder: _Builder) -> None:
    """Each envelope field replaced by each hostile value, and each one left out."""
    for index, value in enumerate(HOSTILE):
        for field in ("jsonrpc", "id", "method", "params"):
            message = builder.base_request(METHODS[index % len(METHODS)])
            request_id = message["id"]
            message[field] = value
            if field == "id":
                request_id = value if _is_valid_id(value) else None
            builder.add(message, request_id)
    for field in ("jsonrpc", "id", "method", "params"):
        for method in METHODS:
            message = builder.base_request(method)
            request_id = None if field == "id" else message["id"]
            del message[field]
            builder.add(message, request_id)


def _params(builder: _Builder) -> None:
    """Each known params field, and each _meta key, replaced by each hostile value."""
    targets = [
        ("initialize", "protocolVersion"),
        ("initialize", "capabilities"),
        ("initialize", "clientInfo"),
        ("tools/call", "name"),
        ("tools/call", "arguments"),
        ("tools/list", "cursor"),
        ("server/discover", "_meta"),
    ]
    for value in HOSTILE:
        for method, field in targets:
            message = builder.base_request(method)
            params = message["params"]
            assert isinstance(params, dict)
            params[field] = value
            builder.add(message, message["id"])
        for key in META:
            message = builder.base_request("tools/list")
            params = message["params"]
            assert isinstance(params, dict)
            params["_meta"] = {**META, key: value}
            builder.add(message, message["id"])


def _arguments(builder: _Builder, tool: JSONObject) -> None:
    """Each property of a tool given every hostile value its schema's type forbids."""
    name = tool["name"]
    schema = tool.get("inputSchema")
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    assert isinstance(properties, dict)
    for prop, prop_schema in properties.items():
        allowed = prop_schema.get("type") if isinstance(prop_schema, dict) else None
        if allowed is None:
            continue
        allowed_names = {allowed} if isinstance(allowed, str) else set(allowed)  # type: ignore[arg-type]
        if "number" in allowed_names:
            allowed_names.add("integer")
        for value in HOSTILE:
            if type_name(value) in allowed_names:
                continue
            message = builder.base_request("tools/call")
            message["params"] = builder.params(name=name, arguments={prop: value})
            builder.add(message, message["id"])
    message = builder.base_request("tools/call")
    message["params"] = builder.params(name=name, arguments=BOGUS_ARGUMENTS)
    builder.add(message, message["id"])


def _raw(builder: _Builder, rng: random.Random) -> None:
    """Framing attacks: blank lines, garbage bytes, bad UTF-8, bad JSON, deep nesting."""
    for blank in (b"", b"   ", b"\t\t", b"\r"):
        builder.add_raw(blank)
    for _ in range(20):
        garbage = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        builder.add_raw(garbage.replace(b"\n", b" "))
    for raw in (
        b"\xff",
        b"\xc3\x28",
        b"\xed\xa0\x80",  # a UTF-8-encoded surrogate
        b"\xc0\xaf",  # an overlong encoding
        b"\xef\xbb\xbf{}",  # a byte-order mark
        b"{",
        b"}",
        b"[",
        b"]",
        b"null",
        b"true",
        b"1",
        b'"str"',
        b"[]",
        b"{}",
        b"[{}]",
        b'[{"jsonrpc":"2.0","id":"b1","method":"ping"}]',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":Infinity}}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":-Infinity}}',
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping",}',
        b"{'jsonrpc':'2.0','id':1,'method':'ping'}",
        b'{jsonrpc:"2.0",id:1,method:"ping"}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping"} // comment',
        b'{"jsonrpc":"2.0","id":1,"method":"pi\x01ng"}',
        b'{"jsonrpc":"2.0","id":1e2,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b"[" * 100_000,
    ):
        builder.add_raw(raw)
    # An over-long line is skipped, but answered by the id its start names.
    builder.add_raw(
        b'{"jsonrpc":"2.0","id":"fz-long","method":"ping","params":{"x":"'
        + b"a" * (4 * 1024 * 1024 + 10)
        + b'"}}',
        "fz-long",
    )
    # Lines that parse and carry a readable id, each of which must be answered.
    builder.add_raw(b'{"jsonrpc":"2.0","id":"dup-a","id":"dup-b","method":"ping"}', "dup-b")
    # A lone surrogate parses (RFC 8259 §8.2), so the id is readable and answered.
    builder.add_raw(b'{"jsonrpc":"2.0","id":"fz-s1","method":"\\udc00"}', "fz-s1")
    builder.add_raw(
        b'{"jsonrpc":"2.0","id":"fz-s2","method":"ping","params":{"\\ud800":1}}', "fz-s2"
    )
    builder.add_raw(
        b'{"jsonrpc":"2.0","id":"fz-s3","method":"tools/call","params":{"name":"x",'
        b'"arguments":{"a":"\\udfff"}}}',
        "fz-s3",
    )
    builder.add_raw(b'{"jsonrpc":"2.0","id":-0,"method":"no/such"}', 0)
    builder.add_raw(b'{"jsonrpc":"2.0","id":' + b"7" * 300 + b',"method":"nope"}', int("7" * 300))
    builder.add_raw(
        b'{"jsonrpc":"2.0","id":"fz-big","method":"tools/list","params":{"x":"'
        + b"b" * 1_000_000
        + b'"}}',
        "fz-big",
    )


def _mutations(builder: _Builder, rng: random.Random, *, count: int) -> None:
    """Valid-looking requests with one to three random byte edits after the id."""
    for _ in range(count):
        message = builder.base_request(rng.choice(METHODS))
        request_id = message.pop("id")
        head = b'{"id":' + json.dumps(request_id).encode() + b","
        body = bytearray(json.dumps(message).encode()[1:])
        for _ in range(rng.randint(1, 3)):
            position = rng.randrange(len(body))
            action = rng.randrange(3)
            if action == 0:
                body[position] = rng.choice([b for b in range(256) if b != 0x0A])
            elif action == 1:
                del body[position]
            else:
                body.insert(position, rng.choice(b'{}[]",:\\0-e'))
        builder.lines.append(Sent(head + bytes(body) + b"\n", request_id, required=False))


def check_replies(sent: Sequence[Sent], raw: bytes) -> None:
    """Every reply is one well-formed response; each request built with a readable id is
    answered exactly once, no reply names an id never sent, and the final probe got a result."""
    replies = [json.loads(reply) for reply in raw.splitlines()]
    answered: dict[str, int] = {}
    for reply in replies:
        _check_shape(reply)
        key = json.dumps(reply["id"])
        answered[key] = answered.get(key, 0) + 1
    required: dict[str, int] = {}
    optional: dict[str, int] = {}
    for item in sent:
        if item.request_id is not None:
            counts = required if item.required else optional
            key = json.dumps(item.request_id)
            counts[key] = counts.get(key, 0) + 1
    for key, count in answered.items():
        if key == "null":
            continue
        low, high = required.get(key, 0), required.get(key, 0) + optional.get(key, 0)
        assert low <= count <= high, f"id {key[:80]} answered {count} times, expected {low}-{high}"
    missing = [key for key in required if key not in answered]
    assert not missing, f"requests never answered: {missing[:5]}"
    physical_lines = sum(item.raw.count(b"\n") for item in sent)
    assert len(replies) <= physical_lines
    last = replies[-1]
    assert last["id"] == FINAL_ID, last
    assert "result" in last, last


def _check_shape(reply: JSONValue) -> None:
    assert isinstance(reply, dict), reply
    assert reply["jsonrpc"] == "2.0", reply
    assert ("result" in reply) != ("error" in reply), reply
    error = reply.get("error")
    if error is not None:
        assert isinstance(error, dict), reply
        assert isinstance(error["code"], int), reply
        assert isinstance(error["message"], str), reply
