"""A loopback stand-in for the Messages API that plays a scripted model to the real Claude Code.

Each ``POST /v1/messages`` is answered with Server-Sent Events (claude-code.md §5.3). The step is
the number of assistant messages already in the request, so the stand-in keeps no conversation
state and a retried request gets the same answer. Every request body is logged for assertions.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from types import TracebackType

    from ctxkeeper.core._types import JSONObject, JSONValue


class ToolCall:
    """One scripted ``tool_use`` block; a ``name`` starting ``__`` is an MCP tool suffix."""

    def __init__(self, name: str, tool_input: Mapping[str, object]) -> None:
        self.name = name
        self.tool_input = tool_input

    def resolve(self, body: JSONObject) -> str:
        """The full tool name: ``name``, or the one offered tool ending in the suffix."""
        if not self.name.startswith("__"):
            return self.name
        tools = body.get("tools")
        offered = (
            [t.get("name") for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
        )
        matches = [n for n in offered if isinstance(n, str) and n.endswith(self.name)]
        # An unresolved suffix goes out as written, so the client answers "No such tool" and the
        # test sees the failure in the next request rather than in a stand-in traceback.
        return matches[0] if len(matches) == 1 else self.name


class ModelStandin:
    """Serves ``script`` on 127.0.0.1 (a free port); use as a context manager."""

    def __init__(self, script: Sequence[Sequence[ToolCall] | str]) -> None:
        self.script = list(script)
        self.requests: list[JSONObject] = []
        self.unexpected: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ModelStandin:  # noqa: PYI034 - Self needs 3.11
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def log(self, body: JSONObject) -> None:
        with self._lock:
            self.requests.append(body)

    def note(self, what: str) -> None:
        with self._lock:
            self.unexpected.append(what)

    def answer(self, body: JSONObject) -> bytes:
        """The SSE stream for the step this request is at."""
        messages = body.get("messages")
        step = (
            sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
            if isinstance(messages, list)
            else 0
        )
        planned = self.script[step] if step < len(self.script) else "done"
        model = body.get("model")
        return sse_stream(planned, body, str(model) if model else "claude-standin", step)


def sse_stream(planned: Sequence[ToolCall] | str, body: JSONObject, model: str, step: int) -> bytes:
    """One assistant message as Server-Sent Events, in the documented event order."""
    events: list[tuple[str, JSONValue]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_standin_{step}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                },
            },
        )
    ]
    if isinstance(planned, str):
        events += _block(0, {"type": "text", "text": ""}, {"type": "text_delta", "text": planned})
        stop = "end_turn"
    else:
        for index, call in enumerate(planned):
            start: JSONObject = {
                "type": "tool_use",
                "id": f"toolu_standin_{step}_{index}",
                "name": call.resolve(body),
                "input": {},
            }
            delta: JSONObject = {
                "type": "input_json_delta",
                "partial_json": json.dumps(call.tool_input),
            }
            events += _block(index, start, delta)
        stop = "tool_use"
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


def _block(index: int, start: JSONObject, delta: JSONObject) -> list[tuple[str, JSONValue]]:
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _handler_for(standin: ModelStandin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?", 1)[0]
            if path == "/v1/messages/count_tokens":
                self._send(200, "application/json", b'{"input_tokens": 1000}')
                return
            if path != "/v1/messages":
                standin.note(f"POST {self.path}")
                self._send(404, "application/json", b'{"error": "not found"}')
                return
            body = json.loads(raw)
            standin.log(body)
            self._send(200, "text/event-stream", standin.answer(body))

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0].startswith("/v1/models"):
                self._send(200, "application/json", b'{"data": [], "has_more": false}')
                return
            standin.note(f"GET {self.path}")
            self._send(404, "application/json", b'{"error": "not found"}')

        def do_HEAD(self) -> None:
            standin.note(f"HEAD {self.path}")
            self._send(404, "application/json", b"")

        def _send(self, status: int, content_type: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            """Keep the test output clean; requests are logged in ``standin.requests``."""

    return Handler
