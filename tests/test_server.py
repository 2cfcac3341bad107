"""Tests for ctxkeeper.mcp.server and ctxkeeper.mcp.jsonrpc: framing, both eras, tools, hostile input."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import types
from collections.abc import Callable, Sequence

import pytest

from ctxkeeper.core._types import JSONObject, JSONValue
from ctxkeeper.core.errors import PreviouslyRejectedError
from ctxkeeper.mcp import jsonrpc, server, toolcall
from ctxkeeper.mcp.tooldef import ToolResult, ToolSpec
from tests.fixture_tools import HUGE_CHARS, load_fixture_tools
from tests.mcp_wire import (
    REAL_SERVER_MISSING,
    child_env,
    hash_tree,
    real_server_available,
    response_errors,
    schemas_available,
    server_command,
)
from tests.server_fuzz import check_replies, fuzz_lines, probe_lines

MODERN = "2026-07-28"
META: JSONObject = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
Registry = Callable[[], Sequence[ToolSpec]]


# -- helpers ---------------------------------------------------------------------------------


def request(method: str, request_id: JSONValue = 1, **params: JSONValue) -> JSONObject:
    message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params:
        message["params"] = params
    return message


def modern(method: str, request_id: JSONValue = 1, **params: JSONValue) -> JSONObject:
    return request(method, request_id, _meta=META, **params)


def initialize(version: str = "2025-11-25", request_id: JSONValue = 0) -> JSONObject:
    return request(
        "initialize",
        request_id,
        protocolVersion=version,
        capabilities={},
        clientInfo={"name": "test", "version": "1"},
    )


def line(message: JSONValue | bytes | str) -> bytes:
    if isinstance(message, bytes):
        return message if message.endswith(b"\n") else message + b"\n"
    if isinstance(message, str):
        return message.encode() + b"\n"
    return json.dumps(message).encode() + b"\n"


def run(
    *messages: JSONValue | bytes | str, tools: Registry = load_fixture_tools
) -> list[JSONObject]:
    """Feed ``messages`` to serve() in-process and return the parsed replies."""
    stdout = io.BytesIO()
    stdin = io.BytesIO(b"".join(line(m) for m in messages))
    assert server.serve(stdin, stdout, tools, instructions="test", server_version="9.9.9") == 0
    raw = stdout.getvalue()
    assert raw == b"" or raw.endswith(b"\n")
    return [json.loads(reply) for reply in raw.splitlines()]


def one(*messages: JSONValue | bytes | str, tools: Registry = load_fixture_tools) -> JSONObject:
    """The last reply of a run, which must have produced exactly len(requests) replies."""
    replies = run(*messages, tools=tools)
    assert replies, "no reply"
    return replies[-1]


def error_of(reply: JSONObject) -> tuple[int, JSONValue]:
    error = reply["error"]
    assert isinstance(error, dict), reply
    code = error["code"]
    assert isinstance(code, int)
    return code, reply["id"]


def result_of(reply: JSONObject) -> JSONObject:
    result = reply.get("result")
    assert isinstance(result, dict), reply
    return result


def text_of(result: JSONObject) -> str:
    content = result["content"]
    assert isinstance(content, list)
    block = content[0]
    assert isinstance(block, dict)
    text = block["text"]
    assert isinstance(text, str)
    return text


def assert_schema_valid(reply: JSONObject, method: str | None, revision: str) -> None:
    if schemas_available():
        assert response_errors(reply, method, revision) == []


def call(name: str, arguments: JSONValue, *, era: str = "legacy") -> JSONObject:
    """The tools/call result (not the JSON-RPC envelope) for one call."""
    if era == "modern":
        reply = one(modern("tools/call", 1, name=name, arguments=arguments))
    else:
        reply = one(initialize(), request("tools/call", 1, name=name, arguments=arguments))
    assert_schema_valid(reply, "tools/call", MODERN if era == "modern" else "2025-11-25")
    return result_of(reply)


def single_tool(handler: Callable[[JSONObject], ToolResult], **schema: JSONValue) -> Registry:
    input_schema: JSONObject = {"type": "object", **schema}
    spec = ToolSpec(
        name="t",
        title="T",
        description="test tool",
        input_schema=input_schema,
        output_schema={"type": "object"},
        read_only=True,
        destructive=False,
        idempotent=True,
        handler=handler,
    )
    return lambda: [spec]


# -- framing ---------------------------------------------------------------------------------


class TestFraming:
    def test_one_line_per_reply_and_flush_each(self) -> None:
        class CountingOut(io.BytesIO):
            flushes = 0

            def flush(self) -> None:
                self.flushes += 1

        out = CountingOut()
        stdin = io.BytesIO(line(request("ping", 1)) + line(request("ping", 2)))
        server.serve(stdin, out, load_fixture_tools, instructions="", server_version="1")
        assert out.getvalue() == (
            b'{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc":"2.0","id":2,"result":{}}\n'
        )
        assert out.flushes == 2

    @pytest.mark.parametrize("blank", [b"", b"   ", b"\t", b"\r"])
    def test_blank_lines_are_skipped(self, blank: bytes) -> None:
        assert run(blank, request("ping")) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]

    def test_crlf_and_missing_final_newline(self) -> None:
        stdin = io.BytesIO(json.dumps(request("ping", 1)).encode() + b"\r\n{}")
        stdin = io.BytesIO(stdin.getvalue().replace(b"{}", json.dumps(request("ping", 2)).encode()))
        out = io.BytesIO()
        server.serve(stdin, out, load_fixture_tools, instructions="", server_version="1")
        assert [json.loads(x)["id"] for x in out.getvalue().splitlines()] == [1, 2]

    def test_empty_input_exits_cleanly(self) -> None:
        assert run() == []

    def test_non_ascii_is_sent_as_utf8(self) -> None:
        out = io.BytesIO()
        message = request("tools/call", 1, name="echo", arguments={"text": "café ☕"})
        server.serve(
            io.BytesIO(line(message)), out, load_fixture_tools, instructions="", server_version="1"
        )
        assert "café ☕".encode() in out.getvalue()

    def test_lone_surrogate_output_falls_back_to_ascii(self) -> None:
        encoded = jsonrpc.encode_message({"text": "bad \udcff"})
        assert encoded == b'{"text":"bad \\udcff"}\n'

    def test_closed_stdout_ends_with_status_1(self, capsys: pytest.CaptureFixture[str]) -> None:
        class Closed(io.BytesIO):
            def write(self, data: object) -> int:
                raise BrokenPipeError(32, "Broken pipe")

        stdin = io.BytesIO(line(request("ping")))
        rc = server.serve(stdin, Closed(), load_fixture_tools, instructions="", server_version="1")
        assert rc == 1
        assert "client has gone" in capsys.readouterr().err


class TestLineLimit:
    def test_read_lines_boundaries(self) -> None:
        data = b"12345\n123456\nabc\n1234567890123\nend"
        lines = list(jsonrpc.read_lines(io.BytesIO(data), limit=5))
        assert [x if isinstance(x, bytes) else ("overlong", x.head) for x in lines] == [
            b"12345\n",
            ("overlong", b"123456"),
            b"abc\n",
            ("overlong", b"123456"),
            b"end",
        ]

    def test_overlong_line_at_eof(self) -> None:
        [only] = list(jsonrpc.read_lines(io.BytesIO(b"x" * 20), limit=5))
        assert isinstance(only, jsonrpc.Overlong)

    def test_exact_limit_without_newline_is_a_line(self) -> None:
        assert list(jsonrpc.read_lines(io.BytesIO(b"x" * 5), limit=5)) == [b"xxxxx"]

    @pytest.mark.parametrize(
        ("start", "answered_to"),
        [
            pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"ping",', 7, id="int-id"),
            pytest.param(b'{ "id" : "call-9" , "jsonrpc":"2.0",', "call-9", id="text-id"),
            # The controls: an id the line's start does not hold cannot be answered to.
            pytest.param(b'{"jsonrpc":"2.0","method":"ping",', None, id="id-after-the-cut"),
            pytest.param(b'{"params":{"id":3},"jsonrpc":"2.0",', None, id="nested-id-only"),
            pytest.param(b'{"id":true,"jsonrpc":"2.0",', None, id="id-not-text-or-int"),
            pytest.param(b'[{"id":7},', None, id="not-an-object"),
        ],
    )
    def test_overlong_line_is_answered_by_its_id_and_skipped(
        self, start: bytes, answered_to: JSONValue
    ) -> None:
        huge = start + b'"pad":"' + b"a" * jsonrpc.MAX_LINE_BYTES
        replies = run(huge + b'"}', request("ping", 8))
        assert error_of(replies[0]) == (jsonrpc.INVALID_REQUEST, answered_to)
        assert "longer than" in str(replies[0]["error"])
        assert replies[1] == {"jsonrpc": "2.0", "id": 8, "result": {}}
        assert len(replies) == 2

    def test_line_just_under_the_limit_is_parsed(self) -> None:
        prefix = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"'
        padding = b"a" * (jsonrpc.MAX_LINE_BYTES - len(prefix) - 3)
        assert run(prefix + padding + b'"}}') == [{"jsonrpc": "2.0", "id": 7, "result": {}}]


# -- envelope --------------------------------------------------------------------------------


class TestParseErrors:
    @pytest.mark.parametrize(
        "raw",
        [
            pytest.param(b"{", id="truncated"),
            pytest.param(b"not json", id="text"),
            pytest.param(b"\xff\xfe{}", id="invalid-utf8"),
            pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\xc3"}', id="invalid-utf8-inside"),
            pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping","x":NaN}', id="nan"),
            pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping","x":Infinity}', id="inf"),
            pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping","x":-Infinity}', id="-inf"),
            pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deep-array"),
            pytest.param(b'{"a":' * 50_000 + b"1" + b"}" * 50_000, id="deep-object"),
            pytest.param(b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', id="int"),
            pytest.param(b"\xef\xbb\xbf{}", id="bom"),
            pytest.param(b'{"a":1,}', id="trailing-comma"),
        ],
    )
    def test_parse_error_then_alive(self, raw: bytes) -> None:
        replies = run(raw, request("ping", 2))
        assert error_of(replies[0]) == (jsonrpc.PARSE_ERROR, None)
        assert_schema_valid(replies[0], None, "2025-11-25")
        assert replies[1]["id"] == 2

    def test_valid_surrogate_pair_is_fine(self) -> None:
        message = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\\ud83d\\ude00"}}'
        assert run(message) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


class TestLoneSurrogates:
    """An escaped lone surrogate parses as JSON (RFC 8259 §8.2), so the id stays readable: the
    reply names the request and says which value is not Unicode text."""

    def test_in_tool_arguments_is_an_argument_error_for_the_model(self) -> None:
        raw = (
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo",'
            b'"arguments":{"text":"\\ud800"}}}'
        )
        control = request("tools/call", 8, name="echo", arguments={"text": "\U0001f600"})
        replies = run(initialize(), raw, control)
        assert replies[1]["id"] == 7
        result = result_of(replies[1])
        assert result["isError"] is True
        assert "invalid_argument" in text_of(result)
        assert "arguments.text: holds a lone UTF-16 surrogate" in text_of(result)
        assert_schema_valid(replies[1], "tools/call", "2025-11-25")
        assert result_of(replies[2])["isError"] is False

    def test_in_an_argument_name(self) -> None:
        raw = (
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo",'
            b'"arguments":{"text":"hi","\\udc00x":1}}}'
        )
        result = result_of(one(initialize(), raw))
        assert result["isError"] is True
        assert 'arguments["\\udc00x"]: the property name holds a lone' in text_of(result)

    @pytest.mark.parametrize(
        ("raw", "code", "request_id", "where"),
        [
            pytest.param(
                b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\\ud800"}}',
                jsonrpc.INVALID_PARAMS,
                1,
                "params.x",
                id="params-value",
            ),
            pytest.param(
                b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\\ud800":1}}',
                jsonrpc.INVALID_PARAMS,
                1,
                'params["\\ud800"]',
                id="params-key",
            ),
            pytest.param(
                b'{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"e\\udfff"}}',
                jsonrpc.INVALID_PARAMS,
                "a",
                "params.name",
                id="tool-name",
            ),
            pytest.param(
                b'{"jsonrpc":"2.0","id":2,"method":"tools/call",'
                b'"params":{"name":"echo","arguments":"\\ud800"}}',
                jsonrpc.INVALID_PARAMS,
                2,
                "params.arguments",
                id="arguments-not-an-object",
            ),
            pytest.param(
                b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo",'
                b'"arguments":{"text":"\\ud800"},"_meta":{"k":"\\udc00"}}}',
                jsonrpc.INVALID_PARAMS,
                3,
                "params._meta.k",
                id="meta-beside-arguments",
            ),
            pytest.param(
                b'{"jsonrpc":"2.0","id":1,"method":"\\udc00"}',
                jsonrpc.INVALID_REQUEST,
                1,
                "method",
                id="method",
            ),
            pytest.param(
                b'{"jsonrpc":"2.0","\\ud800":1,"id":4,"method":"ping"}',
                jsonrpc.INVALID_REQUEST,
                4,
                '["\\ud800"]',
                id="top-level-key",
            ),
            pytest.param(
                b'{"jsonrpc":"2.0","id":"\\udfff","method":"ping"}',
                jsonrpc.INVALID_REQUEST,
                None,
                "id",
                id="id-itself",
            ),
        ],
    )
    def test_outside_arguments_is_a_protocol_error_with_the_id(
        self, raw: bytes, code: int, request_id: JSONValue, where: str
    ) -> None:
        replies = run(raw, request("ping", 9))
        assert error_of(replies[0]) == (code, request_id)
        error = replies[0]["error"]
        assert isinstance(error, dict)
        assert f"{where} holds a lone UTF-16 surrogate" in str(error["message"])
        assert_schema_valid(replies[0], None, "2025-11-25")
        assert replies[1] == {"jsonrpc": "2.0", "id": 9, "result": {}}

    def test_a_notification_is_not_answered(self) -> None:
        raw = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"r":"\\ud800"}}'
        assert run(raw, request("ping", 9)) == [{"jsonrpc": "2.0", "id": 9, "result": {}}]


class TestInvalidRequests:
    @pytest.mark.parametrize(
        "message",
        [
            pytest.param([request("ping")], id="batch"),
            pytest.param([], id="empty-batch"),
            pytest.param(b'"string"', id="string"),
            pytest.param(5, id="number"),
            pytest.param(None, id="null"),
            pytest.param({"jsonrpc": "2.0", "id": None, "method": "ping"}, id="null-id"),
            pytest.param({"jsonrpc": "2.0", "id": True, "method": "ping"}, id="bool-id"),
            pytest.param({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, id="float-id"),
            pytest.param({"jsonrpc": "2.0", "id": 1.0, "method": "ping"}, id="integral-float-id"),
            pytest.param({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, id="object-id"),
            pytest.param({"jsonrpc": "2.0", "id": [1], "method": "ping"}, id="array-id"),
            pytest.param({"jsonrpc": "1.0", "method": "ping"}, id="broken-notification"),
        ],
    )
    def test_answered_with_null_id(self, message: JSONValue) -> None:
        replies = run(message)
        assert len(replies) == 1
        assert error_of(replies[0]) == (jsonrpc.INVALID_REQUEST, None)
        assert_schema_valid(replies[0], None, "2025-11-25")

    @pytest.mark.parametrize(
        "message",
        [
            pytest.param({"id": 3, "method": "ping"}, id="no-jsonrpc"),
            pytest.param({"jsonrpc": "1.0", "id": 3, "method": "ping"}, id="jsonrpc-1"),
            pytest.param({"jsonrpc": 2.0, "id": 3, "method": "ping"}, id="jsonrpc-number"),
            pytest.param({"jsonrpc": "2.0", "id": 3}, id="no-method"),
            pytest.param({"jsonrpc": "2.0", "id": 3, "method": 5}, id="method-number"),
            pytest.param({"jsonrpc": "2.0", "id": 3, "method": None}, id="method-null"),
        ],
    )
    def test_answered_with_the_id(self, message: JSONValue) -> None:
        assert error_of(one(message)) == (jsonrpc.INVALID_REQUEST, 3)

    @pytest.mark.parametrize("params", [[1], "x", 5, True])
    def test_params_not_an_object(self, params: JSONValue) -> None:
        reply = one({"jsonrpc": "2.0", "id": "a", "method": "ping", "params": params})
        assert error_of(reply) == (jsonrpc.INVALID_PARAMS, "a")

    def test_null_params_is_invalid(self) -> None:
        reply = one({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": None})
        assert error_of(reply) == (jsonrpc.INVALID_PARAMS, 4)

    @pytest.mark.parametrize("request_id", ["abc", "", 0, -1, 2**63, "x" * 1000])
    def test_ids_are_echoed_exactly(self, request_id: JSONValue) -> None:
        assert one(request("ping", request_id)) == {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {},
        }


class TestNoReply:
    @pytest.mark.parametrize(
        "message",
        [
            pytest.param({"jsonrpc": "2.0", "method": "notifications/initialized"}, id="init"),
            pytest.param(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
                id="cancelled",
            ),
            pytest.param({"jsonrpc": "2.0", "method": "no/such"}, id="unknown"),
            pytest.param({"jsonrpc": "2.0", "method": "x", "params": [1]}, id="bad-params"),
            pytest.param({"jsonrpc": "2.0", "id": 5, "result": {}}, id="response"),
            pytest.param({"jsonrpc": "2.0", "id": 5, "error": {"code": 1}}, id="error-response"),
            pytest.param({"jsonrpc": "2.0", "method": "tools/call", "params": {}}, id="call"),
        ],
    )
    def test_silent(self, message: JSONValue) -> None:
        assert run(message) == []


# -- eras ------------------------------------------------------------------------------------


class TestLegacyEra:
    @pytest.mark.parametrize("version", server.HANDSHAKE_VERSIONS)
    def test_initialize_echoes_supported_versions(self, version: str) -> None:
        reply = one(initialize(version))
        result = result_of(reply)
        assert result == {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "ctxkeeper", "version": "9.9.9"},
            "instructions": "test",
        }
        assert_schema_valid(reply, "initialize", version)

    @pytest.mark.parametrize("version", ["2099-01-01", MODERN, ""])
    def test_initialize_answers_latest_for_unknown(self, version: str) -> None:
        assert result_of(one(initialize(version)))["protocolVersion"] == "2025-11-25"

    @pytest.mark.parametrize("params", [{}, {"protocolVersion": 20251125}])
    def test_initialize_needs_a_version(self, params: JSONObject) -> None:
        reply = one({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        assert error_of(reply) == (jsonrpc.INVALID_PARAMS, 1)

    def test_full_handshake(self) -> None:
        replies = run(
            initialize(),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            request("ping", 1),
            request("tools/list", 2),
        )
        assert [r["id"] for r in replies] == [0, 1, 2]
        assert replies[1]["result"] == {}
        assert_schema_valid(replies[1], "ping", "2025-11-25")
        assert "resultType" not in result_of(replies[2])

    def test_requests_before_initialize_are_served(self) -> None:
        replies = run(request("ping", 1), request("tools/list", 2))
        assert replies[0]["result"] == {}
        assert len(result_of(replies[1])["tools"]) == 3  # type: ignore[arg-type]

    def test_enveloped_request_on_legacy_connection(self) -> None:
        reply = one(initialize(), modern("tools/list", 2))
        assert error_of(reply) == (jsonrpc.INVALID_REQUEST, 2)

    def test_discover_on_legacy_connection(self) -> None:
        reply = one(initialize(), request("server/discover", 2))
        assert error_of(reply) == (jsonrpc.METHOD_NOT_FOUND, 2)

    def test_initialize_with_meta_opens_legacy(self) -> None:
        first = request("initialize", 0, protocolVersion="2025-11-25", capabilities={}, _meta=META)
        replies = run(first, request("ping", 2))
        assert result_of(replies[0])["protocolVersion"] == "2025-11-25"
        assert replies[1]["result"] == {}

    def test_progress_token_meta_stays_legacy(self) -> None:
        replies = run(request("tools/list", 1, _meta={"progressToken": 1}), request("ping", 2))
        assert "resultType" not in result_of(replies[0])
        assert replies[1]["result"] == {}

    @pytest.mark.parametrize("method", ["resources/list", "prompts/list", "logging/setLevel", ""])
    def test_unknown_method(self, method: str) -> None:
        reply = one(initialize(), request(method, 9))
        assert error_of(reply) == (jsonrpc.METHOD_NOT_FOUND, 9)
        assert_schema_valid(reply, method, "2025-11-25")

    def test_unknown_method_name_is_capped(self) -> None:
        reply = one(request("x" * 10_000, 1))
        assert len(json.dumps(reply)) < 300


class TestModernEra:
    def test_discover(self) -> None:
        reply = one(modern("server/discover"))
        assert result_of(reply) == {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "instructions": "test",
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {
                "io.modelcontextprotocol/serverInfo": {"name": "ctxkeeper", "version": "9.9.9"}
            },
        }
        assert_schema_valid(reply, "server/discover", MODERN)

    def test_tools_list_is_cacheable(self) -> None:
        reply = one(modern("tools/list"))
        result = result_of(reply)
        assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == (
            "complete",
            0,
            "public",
        )
        assert_schema_valid(reply, "tools/list", MODERN)

    def test_tools_call_is_stamped_but_not_cacheable(self) -> None:
        result = call("echo", {"text": "hi"}, era="modern")
        assert result["resultType"] == "complete"
        assert "io.modelcontextprotocol/serverInfo" in result["_meta"]  # type: ignore[operator]
        assert "ttlMs" not in result

    def test_error_results_are_stamped(self) -> None:
        result = call("echo", {}, era="modern")
        assert result["isError"] is True
        assert result["resultType"] == "complete"

    @pytest.mark.parametrize(
        "meta",
        [
            pytest.param(None, id="no-meta"),
            pytest.param({"io.modelcontextprotocol/protocolVersion": MODERN}, id="no-caps"),
            pytest.param(
                {
                    "io.modelcontextprotocol/protocolVersion": 2026,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
                id="version-not-string",
            ),
            pytest.param(
                {
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": [],
                },
                id="caps-not-object",
            ),
            pytest.param("meta", id="meta-not-object"),
        ],
    )
    def test_missing_meta_is_invalid_params(self, meta: JSONValue) -> None:
        later = request("tools/list", 2) if meta is None else request("tools/list", 2, _meta=meta)
        reply = one(modern("server/discover"), later)
        assert error_of(reply) == (jsonrpc.INVALID_PARAMS, 2)
        assert_schema_valid(reply, "tools/list", MODERN)

    @pytest.mark.parametrize("version", ["2025-11-25", "2099-01-01", ""])
    def test_unknown_version(self, version: str) -> None:
        meta = {**META, "io.modelcontextprotocol/protocolVersion": version}
        reply = one(request("server/discover", 1, _meta=meta))
        assert reply["error"] == {
            "code": -32022,
            "message": f"Unsupported protocol version: {version!r}",
            "data": {"supported": [MODERN], "requested": version},
        }
        assert_schema_valid(reply, "server/discover", MODERN)

    def test_initialize_on_modern_connection(self) -> None:
        reply = one(modern("server/discover"), initialize("2025-11-25", 2))
        assert error_of(reply) == (jsonrpc.UNSUPPORTED_PROTOCOL_VERSION, 2)
        assert reply["error"]["data"] == {"supported": [MODERN], "requested": "2025-11-25"}  # type: ignore[call-overload, index]

    def test_initialize_without_version_on_modern_connection(self) -> None:
        reply = one(modern("server/discover"), request("initialize", 2))
        assert reply["error"]["data"]["requested"] == ""  # type: ignore[call-overload, index]

    @pytest.mark.parametrize("method", ["ping", "logging/setLevel", "resources/list", "nope"])
    def test_removed_and_unknown_methods(self, method: str) -> None:
        reply = one(modern(method))
        assert error_of(reply) == (jsonrpc.METHOD_NOT_FOUND, 1)
        assert_schema_valid(reply, method, MODERN)

    def test_unknown_method_checked_before_meta(self) -> None:
        reply = one(modern("server/discover"), request("nope", 2))
        assert error_of(reply) == (jsonrpc.METHOD_NOT_FOUND, 2)

    def test_first_request_fixes_the_era_even_when_refused(self) -> None:
        meta = {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
        replies = run(request("tools/list", 1, _meta=meta), initialize("2025-11-25", 2))
        assert error_of(replies[1]) == (jsonrpc.UNSUPPORTED_PROTOCOL_VERSION, 2)

    def test_notifications_and_invalid_lines_do_not_fix_the_era(self) -> None:
        replies = run(
            {"jsonrpc": "2.0", "method": "notifications/x", "params": {"_meta": META}},
            {"jsonrpc": "2.0", "id": None, "method": "tools/list", "params": {"_meta": META}},
            b"garbage",
            initialize(),
        )
        assert result_of(replies[-1])["protocolVersion"] == "2025-11-25"


# -- tools -----------------------------------------------------------------------------------


def tools_list_tokens(specs: Sequence[ToolSpec]) -> int:
    """Rough token count of a tools/list result (4 characters a token)."""
    return len(json.dumps([toolcall.describe_tool(spec) for spec in specs])) // 4


def _real_registry(tmp_path: str) -> Registry:
    if not real_server_available():
        pytest.skip(REAL_SERVER_MISSING)
    import importlib

    load_tools: Callable[[str], Sequence[ToolSpec]] = importlib.import_module(
        "ctxkeeper.mcp.tools"
    ).load_tools
    return lambda: load_tools(tmp_path)


@pytest.fixture(params=["fixture", "real"])
def registry(request: pytest.FixtureRequest, tmp_path: object) -> Registry:
    """Each tool registry the server serves: the fixture one and, once it exists, the real one."""
    if request.param == "fixture":
        return load_fixture_tools
    return _real_registry(str(tmp_path))


class TestRegistry:
    """Checks over any registry; they apply to the real tools as soon as they exist."""

    def test_tools_list_is_under_3000_tokens(self, registry: Registry) -> None:
        assert tools_list_tokens(registry()) < 3000

    def test_input_schemas_use_only_checked_keywords(self, registry: Registry) -> None:
        from ctxkeeper.mcp import argcheck

        for spec in registry():
            argcheck.check_schema(spec.input_schema, path=f"{spec.name}.inputSchema")

    def test_names_and_schemas_are_portable(self, registry: Registry) -> None:
        import re

        for spec in registry():
            # The conformance suite's rule, stricter than the spec's (mcp.md §8).
            assert re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", spec.name), spec.name
            assert spec.description.strip(), spec.name
            assert spec.title.strip(), spec.name
            assert spec.input_schema.get("type") == "object", spec.name
            assert spec.output_schema.get("type") == "object", spec.name
            assert spec.input_schema.get("additionalProperties") is False, spec.name

    def test_listing_validates_against_every_revision(self, registry: Registry) -> None:
        if not schemas_available():
            pytest.skip("the published MCP schemas are not next to the repository")
        reply = one(request("tools/list", 1), tools=registry)
        for revision in server.HANDSHAKE_VERSIONS:
            assert_schema_valid(reply, "tools/list", revision)


class TestToolsList:
    def test_entries(self) -> None:
        tools = result_of(one(request("tools/list")))["tools"]
        assert isinstance(tools, list)
        assert [t["name"] for t in tools] == ["echo", "add_note", "sum_numbers"]  # type: ignore[call-overload, index]
        echo = tools[0]
        assert echo == {
            "name": "echo",
            "title": "Echo text",
            "description": "Return the given text, repeated and tagged. Test fixture.",
            "inputSchema": load_fixture_tools()[0].input_schema,
            "outputSchema": load_fixture_tools()[0].output_schema,
            "annotations": {
                "title": "Echo text",
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }

    def test_factory_is_lazy_and_called_once(self) -> None:
        calls: list[int] = []

        def factory() -> list[ToolSpec]:
            calls.append(1)
            return load_fixture_tools()

        run(initialize(), request("ping", 1), tools=factory)
        run(modern("server/discover"), tools=factory)
        assert calls == []
        run(
            request("tools/list", 1),
            request("tools/list", 2),
            request("tools/call", 3),
            tools=factory,
        )
        assert calls == [1]

    def test_cursor_is_refused(self) -> None:
        assert error_of(one(request("tools/list", 1, cursor="abc"))) == (jsonrpc.INVALID_PARAMS, 1)

    def test_null_cursor_is_ignored(self) -> None:
        assert "tools" in result_of(one(request("tools/list", 1, cursor=None)))

    def test_failing_factory_is_an_internal_error_and_retried(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        attempts: list[int] = []

        def factory() -> list[ToolSpec]:
            attempts.append(1)
            raise OSError("store unreadable")

        replies = run(request("tools/list", 1), request("tools/list", 2), tools=factory)
        assert [error_of(r) for r in replies] == [
            (jsonrpc.INTERNAL_ERROR, 1),
            (jsonrpc.INTERNAL_ERROR, 2),
        ]
        assert "store unreadable" not in json.dumps(replies)
        assert "store unreadable" in capsys.readouterr().err
        assert len(attempts) == 2

    def test_duplicate_names_are_refused(self) -> None:
        reply = one(request("tools/list", 1), tools=lambda: load_fixture_tools() * 2)
        assert error_of(reply) == (jsonrpc.INTERNAL_ERROR, 1)


class TestToolsCall:
    def test_success(self) -> None:
        result = call("echo", {"text": "hi", "times": 2, "tags": ["a", "b-1"], "shout": True})
        assert result == {
            "content": [{"type": "text", "text": "HIHI"}],
            "structuredContent": {"text": "HIHI", "tags": ["a", "b-1"]},
            "isError": False,
        }

    def test_structured_content_matches_output_schema(self) -> None:
        from jsonschema import Draft202012Validator

        calls: dict[str, JSONObject] = {
            "echo": {"text": "x"},
            "add_note": {"note": "abc"},
            "sum_numbers": {"numbers": [1, 2.5], "round_to": None},
        }
        for spec in load_fixture_tools():
            result = call(spec.name, calls[spec.name])
            assert result["isError"] is False
            Draft202012Validator(spec.output_schema).validate(result["structuredContent"])

    @pytest.mark.parametrize(
        ("name", "arguments", "expected"),
        [
            pytest.param("echo", {}, "arguments.text: required property is missing", id="missing"),
            pytest.param("echo", None, "arguments.text: required property is missing", id="null"),
            pytest.param(
                "echo",
                {"text": "x", "times": "2"},
                "arguments.times: must be an integer",
                id="type",
            ),
            pytest.param("echo", {"text": "x", "tags": ["A"]}, "must match the pattern", id="re"),
            pytest.param("add_note", {"note": "abc", "x": 1}, "unknown property", id="extra"),
            pytest.param("add_note", {"note": "abc", "outcome": "boom"}, "one of", id="enum"),
            pytest.param("sum_numbers", {"numbers": [True]}, "must be a number", id="bool"),
        ],
    )
    def test_bad_arguments_are_tool_errors(
        self, name: str, arguments: JSONValue, expected: str
    ) -> None:
        for era in ("legacy", "modern"):
            result = call(name, arguments, era=era)
            assert result["isError"] is True
            text = text_of(result)
            assert text.startswith(f"invalid_argument: {name} was not run")
            assert expected in text
            assert "structuredContent" not in result

    def test_many_argument_errors_are_summarised(self) -> None:
        numbers: list[JSONValue] = ["x"] * 15
        text = text_of(call("sum_numbers", {"numbers": numbers}))
        assert text.count("\n- arguments.numbers[") == 10
        assert text.endswith("- ... and 5 more")

    @pytest.mark.parametrize(
        "params",
        [
            pytest.param({}, id="no-name"),
            pytest.param({"name": 5}, id="name-number"),
            pytest.param({"name": None}, id="name-null"),
            pytest.param({"name": "echo", "arguments": [1]}, id="arguments-array"),
            pytest.param({"name": "echo", "arguments": "text=hi"}, id="arguments-string"),
        ],
    )
    def test_malformed_params(self, params: JSONObject) -> None:
        assert error_of(one(request("tools/call", 4, **params))) == (jsonrpc.INVALID_PARAMS, 4)

    def test_unknown_tool(self) -> None:
        reply = one(initialize(), request("tools/call", 5, name="nope", arguments={}))
        assert error_of(reply) == (jsonrpc.INVALID_PARAMS, 5)
        assert reply["error"]["message"] == (  # type: ignore[call-overload, index]
            "Unknown tool: nope; available tools: echo, add_note, sum_numbers"
        )
        assert_schema_valid(reply, "tools/call", "2025-11-25")

    def test_refusal_is_a_tool_error_with_its_code(self) -> None:
        result = call("add_note", {"note": "abc", "outcome": "refused"})
        assert result == {
            "content": [
                {
                    "type": "text",
                    "text": "invalid_state: add_note refused: the notebook is frozen; "
                    "record a new note instead",
                }
            ],
            "isError": True,
        }

    def test_message_already_starting_with_its_code_is_not_doubled(self) -> None:
        def refuse(_arguments: JSONObject) -> ToolResult:
            raise PreviouslyRejectedError("dec-001-abcd", "rejected", "not wanted", 0.93)

        reply = one(request("tools/call", 1, name="t", arguments={}), tools=single_tool(refuse))
        assert text_of(result_of(reply)).startswith("previously_rejected: this matches dec-001")

    def test_crash_is_masked_and_logged(self, capsys: pytest.CaptureFixture[str]) -> None:
        result = call("add_note", {"note": "abc", "outcome": "crash"})
        assert result["isError"] is True
        assert text_of(result).startswith("internal_error: add_note failed unexpectedly")
        assert "secret internal detail" not in json.dumps(result)
        assert "secret internal detail" in capsys.readouterr().err

    def test_huge_result_is_replaced(self, capsys: pytest.CaptureFixture[str]) -> None:
        for era in ("legacy", "modern"):
            result = call("add_note", {"note": "abc", "outcome": "huge"}, era=era)
            assert result["isError"] is True
            text = text_of(result)
            assert text.startswith("output_too_large: add_note produced")
            assert "Narrow the request" in text
            assert len(json.dumps(result)) < 1000
        assert f"{HUGE_CHARS}" in str(HUGE_CHARS)
        assert "over 80000" in capsys.readouterr().err

    def test_result_at_the_cap_passes(self) -> None:
        overhead = len(json.dumps(toolcall.run_tool(_sized_spec(0), {})))
        just_fits = _sized_spec(toolcall.MAX_RESULT_CHARS - overhead)
        assert toolcall.run_tool(just_fits, {})["isError"] is False
        assert toolcall.run_tool(_sized_spec(toolcall.MAX_RESULT_CHARS), {})["isError"] is True

    def test_unserialisable_result_is_an_internal_error(self) -> None:
        def bad(_arguments: JSONObject) -> ToolResult:
            return ToolResult({"ids": {1, 2}}, "x")  # type: ignore[dict-item]  # the bug under test

        reply = one(request("tools/call", 1, name="t", arguments={}), tools=single_tool(bad))
        assert text_of(result_of(reply)).startswith("internal_error:")

    def test_unsupported_schema_keyword_is_an_internal_error(self) -> None:
        def never(_arguments: JSONObject) -> ToolResult:  # pragma: no cover - not reached
            raise AssertionError

        tools = single_tool(never, properties={"when": {"type": "string", "format": "date"}})
        reply = one(request("tools/call", 1, name="t", arguments={"when": "x"}), tools=tools)
        assert text_of(result_of(reply)).startswith("internal_error: t failed")

    def test_handler_gets_validated_arguments(self) -> None:
        seen: list[JSONObject] = []

        def record(arguments: JSONObject) -> ToolResult:
            seen.append(arguments)
            return ToolResult({}, "ok")

        one(request("tools/call", 1, name="t", arguments={"a": 1}), tools=single_tool(record))
        one(request("tools/call", 1, name="t"), tools=single_tool(record))
        assert seen == [{"a": 1}, {}]


def _sized_spec(chars: int) -> ToolSpec:
    return ToolSpec(
        name="sized",
        title="Sized",
        description="returns a text of a given size",
        input_schema={"type": "object"},
        output_schema={"type": "object"},
        read_only=True,
        destructive=False,
        idempotent=True,
        handler=lambda _arguments: ToolResult({}, "y" * chars),
    )


class TestUnexpectedErrors:
    def test_dispatch_bug_is_an_internal_error(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        def broken(_self: object, _params: JSONObject) -> JSONObject:
            raise KeyError("bug")

        monkeypatch.setattr(server.Session, "_initialize", broken)
        replies = run(initialize(), request("ping", 2))
        assert error_of(replies[0]) == (jsonrpc.INTERNAL_ERROR, 0)
        assert replies[1]["result"] == {}
        assert "KeyError" in capsys.readouterr().err


# -- main ------------------------------------------------------------------------------------


class _Stdio(io.TextIOWrapper):
    """A text stream over a BytesIO, standing in for sys.stdin/sys.stdout."""

    def __init__(self, data: bytes = b"") -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")


class TestMain:
    def test_serves_the_real_registry_for_the_project_dir(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        seen: list[str | None] = []
        fake = types.ModuleType("ctxkeeper.mcp.tools")

        def load_tools(project_dir: str | None) -> list[ToolSpec]:
            seen.append(project_dir)
            return load_fixture_tools()

        fake.load_tools = load_tools  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "ctxkeeper.mcp.tools", fake)
        stdout = _Stdio()
        monkeypatch.setattr(sys, "stdin", _Stdio(line(request("tools/list", 1))))
        monkeypatch.setattr(sys, "stdout", stdout)
        assert server.main(["--project-dir", "/some/where"]) == 0
        reply = json.loads(stdout.buffer.getvalue())  # type: ignore[attr-defined]
        assert [t["name"] for t in reply["result"]["tools"]] == ["echo", "add_note", "sum_numbers"]
        assert seen == ["/some/where"]

    def test_keyboard_interrupt(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def interrupted(*_args: object, **_kwargs: object) -> int:
            raise KeyboardInterrupt

        monkeypatch.setattr(server, "serve", interrupted)
        monkeypatch.setattr(sys, "stdout", _Stdio())
        assert server.main([]) == 130

    def test_unwritable_stdout_is_pointed_at_devnull(self, monkeypatch: pytest.MonkeyPatch) -> None:
        read_end, write_end = os.pipe()

        class Broken(_Stdio):
            def flush(self) -> None:
                raise BrokenPipeError(32, "Broken pipe")

            def fileno(self) -> int:
                return write_end

        monkeypatch.setattr(sys, "stdout", Broken())
        try:
            server._drop_unwritable_stdout()
            os.write(write_end, b"x")
            os.close(write_end)
            assert os.read(read_end, 1) == b""  # the pipe's write end now goes to /dev/null
        finally:
            os.close(read_end)

    def test_module_runs_as_a_script(self, tmp_path: object) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "ctxkeeper.mcp.server", "--project-dir", str(tmp_path)],
            input=line(modern("server/discover", 1)) + line(initialize()),
            capture_output=True,
            env=child_env(),
            timeout=30,
            check=True,
        )
        replies = [json.loads(x) for x in done.stdout.splitlines()]
        assert replies[0]["result"]["supportedVersions"] == [MODERN]
        assert replies[1]["error"]["code"] == -32022
        assert done.stderr == b""


# -- fuzz ------------------------------------------------------------------------------------


class TestFuzz:
    @pytest.mark.parametrize("era", ["legacy", "modern"])
    def test_in_process(self, era: str) -> None:
        tools = [toolcall.describe_tool(spec) for spec in load_fixture_tools()]
        sent = fuzz_lines(era, tools, seed=1) + probe_lines(era)
        assert len(sent) >= 500
        out = io.BytesIO()
        stdin = io.BytesIO(b"".join(item.raw for item in sent))
        rc = server.serve(stdin, out, load_fixture_tools, instructions="", server_version="1")
        assert rc == 0
        check_replies(sent, out.getvalue())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fixture", "real"])
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_fuzz_through_a_subprocess(kind: str, era: str, tmp_path: object) -> None:
    """The same fuzz through a real pipe; the real server's store must not change at all."""
    project_dir = os.path.join(str(tmp_path), "project")
    os.makedirs(project_dir)
    command = server_command(kind, project_dir)
    before = hash_tree(project_dir)
    listing = subprocess.run(
        command,
        input=line(request("tools/list", 1)),
        capture_output=True,
        env=child_env(HOME=str(tmp_path)),
        timeout=60,
        check=True,
    )
    tools = json.loads(listing.stdout)["result"]["tools"]
    sent = fuzz_lines(era, tools, seed=2) + probe_lines(era)
    done = subprocess.run(
        command,
        input=b"".join(item.raw for item in sent),
        capture_output=True,
        env=child_env(HOME=str(tmp_path)),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    check_replies(sent, done.stdout)
    assert hash_tree(project_dir) == before
