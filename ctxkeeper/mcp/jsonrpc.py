"""JSON-RPC 2.0 over newline-delimited stdio: reading lines, checking envelopes, writing replies
to stdout and diagnostics to stderr.

Only ``json`` and ``sys`` are imported: the MCP server must answer its first request within milliseconds of
launch (mcp.md §5, a silent or slow server loses the client's start-up race).
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO, Final, Protocol

    class LineSource(Protocol):
        def readline(self, limit: int = -1, /) -> bytes: ...

    from ctxkeeper.core._types import JSONObject, JSONValue

#: Longest line accepted, newline excluded. A tool call carries entry text, not files; anything
#: longer is hostile or broken, and is skipped without being held in memory.
MAX_LINE_BYTES: Final = 4 * 1024 * 1024
_DISCARD_CHUNK: Final = 64 * 1024
#: How much of an over-long line is kept to find its id: a client writes the envelope first.
_HEAD_BYTES: Final = 64 * 1024

# JSON-RPC 2.0 §5.1 and MCP's own codes (mcp.md §4).
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022


class RpcError(Exception):
    """A message answered with a JSON-RPC error instead of a result."""

    def __init__(
        self,
        code: int,
        message: str,
        data: JSONValue = None,
        *,
        request_id: str | int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.request_id = request_id
        """The id to answer with; None when it could not be read (JSON-RPC 2.0 §5)."""

    def reply(self, request_id: str | int | None = None) -> JSONObject:
        """The error response, addressed to ``request_id`` or to the id captured at raise time."""
        error: JSONObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        answer_to = self.request_id if request_id is None else request_id
        return {"jsonrpc": "2.0", "id": answer_to, "error": error}


class Request:
    """A well-formed request (``id`` set) or notification (``id`` None)."""

    __slots__ = ("id", "method", "params")

    def __init__(self, request_id: str | int | None, method: str, params: JSONObject) -> None:
        self.id = request_id
        self.method = method
        self.params = params


class Overlong:
    """A line longer than the limit: only its start is kept, to answer it by its id."""

    __slots__ = ("head",)

    def __init__(self, head: bytes) -> None:
        self.head = head

    def request_id(self) -> str | int | None:
        """The top-level ``id`` when it is written before the line's cut, else None."""
        return _id_from_head(self.head.decode("utf-8", "replace"))


def read_lines(stream: LineSource, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | Overlong]:
    """Yield each line of ``stream`` as bytes, or an :class:`Overlong` for a line longer than
    ``limit``.

    An over-long line is consumed in chunks and dropped, so memory stays bounded by ``limit``.
    """
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            _discard_rest_of_line(stream)
            yield Overlong(line[:_HEAD_BYTES])
            continue
        yield line


def _id_from_head(text: str) -> str | int | None:
    # Walk the object's top-level members one by one and stop at the first that is cut off,
    # so an "id" nested inside params is never taken for the request's own. A repeated "id"
    # keeps the last one read, as json.loads does for a whole line.
    decoder = json.JSONDecoder()
    found: JSONValue = None
    at = _skip_space(text, 0)
    if not text.startswith("{", at):
        return None
    at += 1
    while True:
        try:
            key, at = decoder.raw_decode(text, _skip_space(text, at))
            at = _skip_space(text, at)
            if not text.startswith(":", at):
                break
            value, at = decoder.raw_decode(text, _skip_space(text, at + 1))
        except (ValueError, RecursionError):
            break
        if key == "id":
            found = value
        at = _skip_space(text, at)
        if not text.startswith(",", at):
            break
        at += 1
    # bool is an int subclass in Python but not an integer in JSON (mcp.md §3).
    return found if isinstance(found, str) or type(found) is int else None


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _discard_rest_of_line(stream: LineSource) -> None:
    while True:
        chunk = stream.readline(_DISCARD_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return


def parse_message(line: bytes) -> Request | None:
    """Parse one line into a request or notification.

    :return: None for a line to skip silently: blank, or a response (this server never sends
        requests, so a response answers nothing).
    :raises RpcError: the line is not JSON (-32700) or not a valid request (-32600, -32602).
    """
    text = _decode(line)
    if not text.strip():
        return None
    # After strict UTF-8 decoding only an escape can produce a lone surrogate; the substring
    # test keeps the walk for one rare.
    return _check_envelope(_load(text), escaped="\\u" in text)


def _decode(line: bytes) -> str:
    # stdio carries UTF-8 (transports §stdio); decode strictly so garbage is reported, not mangled.
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        raise RpcError(PARSE_ERROR, "Parse error: the line is not valid UTF-8") from None


def _load(text: str) -> JSONValue:
    try:
        value: JSONValue = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise RpcError(PARSE_ERROR, "Parse error: JSON nested too deeply") from None
    except ValueError as exc:
        raise RpcError(PARSE_ERROR, f"Parse error: {str(exc)[:200]}") from None
    return value


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _check_envelope(message: JSONValue, *, escaped: bool) -> Request | None:
    if isinstance(message, list):
        # Batches were removed in 2025-06-18 (mcp.md §3); one error, not one per element.
        raise RpcError(INVALID_REQUEST, "Invalid Request: batches are not supported")
    if not isinstance(message, dict):
        raise RpcError(INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    flaws = _lone_surrogates(message) if escaped else []
    if ("id",) in flaws:
        # An id that is not text cannot be echoed for the client to match (JSON-RPC 2.0 §5).
        raise RpcError(INVALID_REQUEST, f"Invalid Request: id holds {_lone_surrogate()}")
    request_id = _read_id(message)
    if message.get("jsonrpc") != "2.0":
        raise RpcError(
            INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', request_id=request_id
        )
    if "method" not in message:
        if "result" in message or "error" in message:
            return None
        raise RpcError(INVALID_REQUEST, "Invalid Request: no method", request_id=request_id)
    method = message["method"]
    if not isinstance(method, str):
        raise RpcError(
            INVALID_REQUEST, "Invalid Request: method must be a string", request_id=request_id
        )
    params = message.get("params", {})
    flaw = _blocking_surrogate(flaws, method) if flaws else None
    if flaw is not None:
        if flaw[0] == "params" and request_id is None:
            return None  # a notification is never answered, even a malformed one (mcp.md §3)
        raise _surrogate_error(flaw, request_id)
    if isinstance(params, dict):
        return Request(request_id, method, params)
    if request_id is None:
        return None  # a notification is never answered, even a malformed one (mcp.md §3)
    raise RpcError(
        INVALID_PARAMS, "Invalid params: params must be an object", request_id=request_id
    )


def _lone_surrogates(message: JSONObject) -> list[tuple[str | int, ...]]:
    # argcheck is loaded only for a line with an escape, to keep start-up at json and sys.
    from ctxkeeper.mcp.argcheck import find_lone_surrogates

    return [where for where, _ in find_lone_surrogates(message)]


def _lone_surrogate() -> str:
    from ctxkeeper.mcp.argcheck import LONE_SURROGATE

    return LONE_SURROGATE


def _blocking_surrogate(
    flaws: list[tuple[str | int, ...]], method: str
) -> tuple[str | int, ...] | None:
    # A flaw inside tools/call arguments passes on: argument problems are tool results the
    # model can act on (SEP-1303, mcp.md §1), and the tool call reports it by name.
    blocking = [
        where
        for where in flaws
        if not (method == "tools/call" and len(where) > 2 and where[:2] == ("params", "arguments"))
    ]
    return min(blocking, key=len) if blocking else None


def _surrogate_error(where: tuple[str | int, ...], request_id: str | int | None) -> RpcError:
    # The line parsed, so this is no parse error: the reply names the request and the value.
    from ctxkeeper.mcp.argcheck import render_path

    code, label = (
        (INVALID_PARAMS, "Invalid params")
        if where[0] == "params"
        else (INVALID_REQUEST, "Invalid Request")
    )
    return RpcError(
        code, f"{label}: {render_path('', where)} holds {_lone_surrogate()}", request_id=request_id
    )


def _read_id(message: JSONObject) -> str | int | None:
    if "id" not in message:
        return None
    request_id = message["id"]
    # MCP forbids null ids (mcp.md §3); bool is an int subclass in Python but not in JSON.
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    ):
        return request_id
    raise RpcError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")


def result_reply(request_id: str | int, result: JSONObject) -> JSONObject:
    """A success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def encode_message(message: JSONObject) -> bytes:
    """One message as a UTF-8 line; ``json.dumps`` never emits a raw newline (mcp.md §2)."""
    try:
        return _dumps(message, ascii_only=False).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # A handler produced a lone surrogate (e.g. from a surrogate-escaped file name); \u
        # escapes keep the line valid UTF-8 where raw encoding cannot.
        return _dumps(message, ascii_only=True).encode("ascii") + b"\n"


def _dumps(message: JSONObject, *, ascii_only: bool) -> str:
    return json.dumps(message, ensure_ascii=ascii_only, allow_nan=False, separators=(",", ":"))


def write_message(stream: BinaryIO, message: JSONObject) -> None:
    """Write one message and flush, so the client sees it at once."""
    stream.write(encode_message(message))
    stream.flush()


def log(message: str) -> None:
    """Write one diagnostic line to stderr."""
    # stdout carries protocol only (transports §stdio); everything else goes to stderr.
    sys.stderr.write(f"ctxkeeper server: {message}\n")
    sys.stderr.flush()


def log_exception(message: str) -> None:
    """Write ``message`` and the traceback being handled to stderr."""
    import traceback

    log(f"{message}\n{traceback.format_exc()}")
