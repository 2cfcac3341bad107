"""The shape of one MCP tool: its schemas, annotations and the verb behind it."""

from __future__ import annotations

from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxkeeper.core._types import JSONObject


@dataclass(frozen=True)
class ToolResult:
    """What a tool handler returns on success."""

    structured: JSONObject
    """Sent as ``structuredContent``; must match the tool's ``output_schema``."""
    text: str
    """A readable rendering sent as the ``content`` text block."""
    truncated: bool = False
    """True when the handler cut the result to stay under the host's output limit."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool as listed by ``tools/list`` and dispatched by ``tools/call``.

    The handler receives arguments already validated against ``input_schema`` and raises
    :class:`ctxkeeper.core.errors.CtxkeeperError` for a refused operation, which the server turns
    into an ``isError`` result carrying the message.
    """

    name: str
    title: str
    description: str
    input_schema: JSONObject
    output_schema: JSONObject
    read_only: bool
    destructive: bool
    idempotent: bool
    handler: Callable[[JSONObject], ToolResult]
    open_world: bool = False
    """ctxkeeper tools touch only the local store, never the outside world."""
