"""The MCP stdio server: serves a list of tools to both protocol eras (mcp.md §5-8, §17).

One process is one connection. The era is fixed by the first request (mcp.md §7): the legacy
``initialize`` handshake (revisions up to 2025-11-25) or the stateless 2026-07-28 revision, in
which every request carries its version in ``_meta`` and ``server/discover`` replaces the
handshake. Requests are handled one line at a time, in order, so every request read before EOF
is answered. Nothing heavier than ``json`` is imported before the first ``tools/...`` request:
the tool registry is a factory called on first need.
"""

from __future__ import annotations

import os
import signal
import sys

from ctxkeeper.mcp import checkpoints, jsonrpc
from ctxkeeper.mcp.jsonrpc import RpcError
from ctxkeeper.mcp.linereader import line_reader
from ctxkeeper.mcp.toolcall import describe_tool, run_tool

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import BinaryIO, Final, Literal

    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.mcp.tooldef import ToolSpec

    Era = Literal["legacy", "modern"]

SERVER_NAME: Final = "ctxkeeper"
MODERN_VERSION: Final = "2026-07-28"
#: Handshake-era revisions; ``initialize`` echoes one of these or answers the last (mcp.md §5).
HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
#: Methods whose 2026-07-28 results must say how long they may be cached (mcp.md §6).
CACHEABLE_METHODS: Final = frozenset({"server/discover", "tools/list"})

INSTRUCTIONS: Final = (
    "ctxkeeper is this repository's memory: decisions, constraints and pipelines, each with the "
    "reason behind it. Before changing a file, call get_context with its path to see the rules "
    "that cover it. When you make or learn a decision, a rule or a procedure that a later "
    "session will need, record it with record_entry and say why. Entries you write may await a "
    "person's review; never re-record what was rejected or deprecated."
)


def serve(
    stdin: BinaryIO,
    stdout: BinaryIO,
    tools: Callable[[], Sequence[ToolSpec]],
    *,
    instructions: str,
    server_version: str,
    settle: Callable[[Callable[[float], bool]], None] | None = None,
) -> int:
    """Answer JSON-RPC requests from ``stdin`` on ``stdout`` until EOF.

    :param tools: called once, on the first request that needs the tool list.
    :param settle: called after each message with a ``waiting(timeout)`` probe of stdin (see
        :mod:`ctxkeeper.mcp.checkpoints`); for a stream whose descriptor cannot be watched it
        answers False at once, so a lagging store is checkpointed after every message.
    :return: 0 after EOF; 1 when ``stdout`` can no longer be written (the client is gone).
    """
    session = Session(tools, instructions=instructions, server_version=server_version)
    reader = line_reader(stdin) if settle is not None else None
    waiting: Callable[[float], bool] = reader.waiting if reader is not None else _unknowable
    for line in jsonrpc.read_lines(reader if reader is not None else stdin):
        reply = session.handle_line(line)
        if reply is not None:
            try:
                jsonrpc.write_message(stdout, reply)
            except OSError as exc:
                jsonrpc.log(f"cannot write to stdout ({exc}); the client has gone, exiting")
                return 1
        if settle is not None:
            settle(waiting)
    return 0


def _unknowable(_timeout: float) -> bool:
    return False  # no way to tell that more input is coming: never wait on it


class Session:
    """The state of one stdio connection: its era and the loaded tool catalog."""

    def __init__(
        self,
        tools: Callable[[], Sequence[ToolSpec]],
        *,
        instructions: str,
        server_version: str,
    ) -> None:
        self._load_tools = tools
        self._catalog: _Catalog | None = None
        self._era: Era | None = None
        self._instructions = instructions
        self._server_info: JSONObject = {"name": SERVER_NAME, "version": server_version}

    def handle_line(self, line: bytes | jsonrpc.Overlong) -> JSONObject | None:
        """The reply to one input line, or None when it gets none (notifications, blanks)."""
        if isinstance(line, jsonrpc.Overlong):
            # Answered by its id when the line's start names one, as other malformed requests
            # are, so the client can fail that one call instead of waiting on it.
            return RpcError(
                jsonrpc.INVALID_REQUEST,
                f"Invalid Request: line longer than {jsonrpc.MAX_LINE_BYTES} bytes, skipped",
                request_id=line.request_id(),
            ).reply()
        try:
            request = jsonrpc.parse_message(line)
        except RpcError as exc:
            return exc.reply()
        if request is None or request.id is None:
            # Notifications (initialized, cancelled...) never get a reply (mcp.md §3). A
            # sequential server only sees a cancel after answering, which the spec allows (§9).
            return None
        try:
            return jsonrpc.result_reply(request.id, self._dispatch(request))
        except RpcError as exc:
            return exc.reply(request.id)
        except Exception:  # noqa: BLE001  # no input may kill the server; details go to stderr
            jsonrpc.log_exception(f"internal error while handling {request.method[:100]!r}")
            return RpcError(
                jsonrpc.INTERNAL_ERROR, "Internal error; details are in the server's stderr log"
            ).reply(request.id)

    def _dispatch(self, request: jsonrpc.Request) -> JSONObject:
        if self._era is None:
            self._era = _era_of(request)
        if self._era == "modern":
            return self._dispatch_modern(request)
        return self._dispatch_legacy(request)

    def _dispatch_legacy(self, request: jsonrpc.Request) -> JSONObject:
        method, params = request.method, request.params
        handlers: dict[str, Callable[[JSONObject], JSONObject]] = {
            "initialize": self._initialize,
            "ping": lambda _params: {},
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
        }
        handler = handlers.get(method)
        if handler is None:
            raise _method_not_found(method)
        if META_VERSION in _meta_of(params) and method != "initialize":
            # The SDK's dual-era loop does the same (mcp.md §7): one era per process. The
            # handshake itself is answered whatever its _meta says, as the SDK's era rule does.
            raise RpcError(
                jsonrpc.INVALID_REQUEST,
                "Invalid Request: this connection began with the initialize handshake; "
                f"{MODERN_VERSION} requests need a new connection",
            )
        return handler(params)

    def _dispatch_modern(self, request: jsonrpc.Request) -> JSONObject:
        method, params = request.method, request.params
        if method == "initialize":
            requested = params.get("protocolVersion")
            raise _unsupported_version(requested if isinstance(requested, str) else "")
        handlers: dict[str, Callable[[JSONObject], JSONObject]] = {
            "server/discover": self._discover,
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
        }
        handler = handlers.get(method)
        if handler is None:
            # ping and logging/setLevel were removed in 2026-07-28 (mcp.md §6).
            raise _method_not_found(method)
        _check_modern_meta(params)
        result = handler(params)
        return self._stamp(method, result)

    def _stamp(self, method: str, result: JSONObject) -> JSONObject:
        # 2026-07-28: every result has resultType and SHOULD name the server (mcp.md §6).
        result["resultType"] = "complete"
        result["_meta"] = {META_SERVER_INFO: dict(self._server_info)}
        if method in CACHEABLE_METHODS:
            # The tool list is fixed for the life of the process and holds no user data.
            result["ttlMs"] = 0
            result["cacheScope"] = "public"
        return result

    def _initialize(self, params: JSONObject) -> JSONObject:
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise RpcError(
                jsonrpc.INVALID_PARAMS,
                "Invalid params: initialize needs params.protocolVersion, a string",
            )
        # An unknown version is answered with our latest, not refused (lifecycle §version).
        version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": dict(self._server_info),
            "instructions": self._instructions,
        }

    def _discover(self, _params: JSONObject) -> JSONObject:
        return {
            "supportedVersions": [MODERN_VERSION],
            "capabilities": {"tools": {}},
            "instructions": self._instructions,
        }

    def _list_tools(self, params: JSONObject) -> JSONObject:
        if params.get("cursor") is not None:
            # One page, never a nextCursor, so no cursor can be valid (pagination §errors).
            raise RpcError(jsonrpc.INVALID_PARAMS, "Invalid params: unknown cursor")
        return {"tools": list(self._tools().listing)}

    def _call_tool(self, params: JSONObject) -> JSONObject:
        name = params.get("name")
        if not isinstance(name, str):
            raise RpcError(jsonrpc.INVALID_PARAMS, "Invalid params: params.name must be a string")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(
                jsonrpc.INVALID_PARAMS, "Invalid params: params.arguments must be an object"
            )
        catalog = self._tools()
        spec = catalog.by_name.get(name)
        if spec is None:
            raise RpcError(
                jsonrpc.INVALID_PARAMS,
                f"Unknown tool: {name[:100]}; available tools: {', '.join(catalog.by_name)}",
            )
        return run_tool(spec, arguments)

    def _tools(self) -> _Catalog:
        if self._catalog is None:
            self._catalog = _Catalog(self._load_tools())
        return self._catalog


class _Catalog:
    """The tools of one process: their ``tools/list`` entries and lookup by name."""

    def __init__(self, specs: Sequence[ToolSpec]) -> None:
        self.by_name: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in self.by_name:
                raise ValueError(f"two tools are named {spec.name!r}")
            self.by_name[spec.name] = spec
        # Factory order, so every connection sees the same list (mcp.md §6).
        self.listing: tuple[JSONObject, ...] = tuple(describe_tool(spec) for spec in specs)


def _era_of(request: jsonrpc.Request) -> Era:
    # The SDK's rule (mcp.md §7): the protocolVersion key, not the presence of _meta, is the
    # signal, since legacy requests may carry _meta.progressToken.
    if request.method != "initialize" and META_VERSION in _meta_of(request.params):
        return "modern"
    return "legacy"


def _meta_of(params: JSONObject) -> JSONObject:
    meta = params.get("_meta")
    return meta if isinstance(meta, dict) else {}


def _check_modern_meta(params: JSONObject) -> None:
    meta = _meta_of(params)
    version = meta.get(META_VERSION)
    if not isinstance(version, str) or not isinstance(meta.get(META_CAPABILITIES), dict):
        # 2026-07-28 basic §_meta: both keys are required on every request.
        raise RpcError(
            jsonrpc.INVALID_PARAMS,
            f"Invalid params: {MODERN_VERSION} requests need params._meta with "
            f"{META_VERSION} (a string) and {META_CAPABILITIES} (an object)",
        )
    if version != MODERN_VERSION:
        raise _unsupported_version(version)


def _unsupported_version(requested: str) -> RpcError:
    requested = requested[:100]
    return RpcError(
        jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version: {requested!r}",
        {"supported": [MODERN_VERSION], "requested": requested},
    )


def _method_not_found(method: str) -> RpcError:
    return RpcError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method[:100]}")


class _ServeArgs:
    project_dir: str | None = None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ctxkeeper serve`` and ``python3 -m ctxkeeper.mcp.server``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="ctxkeeper serve",
        description="Serve ctxkeeper's MCP tools over stdio (JSON-RPC, one message per line).",
    )
    parser.add_argument(
        "--project-dir",
        help="project root (default: $CLAUDE_PROJECT_DIR, else the git top level, else the cwd)",
    )
    args = parser.parse_args(argv, _ServeArgs())
    project_dir = args.project_dir

    def load() -> Sequence[ToolSpec]:
        # Imported on first need, so initialize and server/discover are answered before the
        # verbs (and what they import) load.
        import importlib

        tools_module = importlib.import_module("ctxkeeper.mcp.tools")
        specs: Sequence[ToolSpec] = tools_module.load_tools(project_dir)
        checkpoints.enable()  # a long-running process: checkpoints by the rule, and on close
        return specs

    from ctxkeeper import __version__

    # The client ends a session by closing stdin, then SIGTERM (mcp.md §2): either way the
    # store is checkpointed on the way out (a SIGKILL leaves the tail to the journal).
    previous = signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        return serve(
            sys.stdin.buffer,
            sys.stdout.buffer,
            load,
            instructions=INSTRUCTIONS,
            server_version=__version__,
            settle=checkpoints.settle,
        )
    except KeyboardInterrupt:
        return 130
    finally:
        checkpoints.finish()
        signal.signal(signal.SIGTERM, previous)
        _drop_unwritable_stdout()


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _drop_unwritable_stdout() -> None:
    # After the client closed its end, bytes left in stdout's buffer would make interpreter
    # shutdown print "Exception ignored ... BrokenPipeError" and exit 120.
    try:
        sys.stdout.flush()
    except OSError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


if __name__ == "__main__":
    raise SystemExit(main())
