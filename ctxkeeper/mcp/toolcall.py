"""Running one MCP tool call: argument checks, the handler, and the result the model reads.

Every failure becomes a ``tools/call`` result with ``isError: true`` whose text starts with a
machine-readable code, so the model can correct itself (SEP-1303, mcp.md §8). Only the
protocol-level failures (unknown tool, malformed params) are JSON-RPC errors, raised by the
server before it gets here.
"""

from __future__ import annotations

import errno
import json

from ctxkeeper.mcp.jsonrpc import log, log_exception

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.mcp.tooldef import ToolSpec

#: Serialized size cap of one tool result. Claude Code refuses output over 25,000 tokens
#: (mcp.md §15); at about 4 characters a token this leaves room for the host's own framing.
MAX_RESULT_CHARS: Final = 80_000
_SHOWN_ARGUMENT_ERRORS: Final = 10


def describe_tool(spec: ToolSpec) -> JSONObject:
    """The ``tools/list`` entry of one tool; all four hints explicit, since the defaults are
    pessimistic (mcp.md §8)."""
    return {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "outputSchema": spec.output_schema,
        "annotations": {
            "title": spec.title,
            "readOnlyHint": spec.read_only,
            "destructiveHint": spec.destructive,
            "idempotentHint": spec.idempotent,
            "openWorldHint": spec.open_world,
        },
    }


def run_tool(spec: ToolSpec, arguments: JSONObject) -> JSONObject:
    """Validate ``arguments``, run the handler and build the ``tools/call`` result.

    Every failure is a result with ``isError`` the model can read and act on (SEP-1303, mcp.md
    §8): bad arguments, refused operations, handler bugs and oversized output alike.
    """
    from ctxkeeper.core.errors import CtxkeeperError
    from ctxkeeper.mcp import argcheck

    try:
        problems = argcheck.validate(arguments, spec.input_schema)
        if problems:
            return _argument_error(spec.name, problems)
        outcome = spec.handler(arguments)
        result: JSONObject = {
            "content": [{"type": "text", "text": outcome.text}],
            "structuredContent": outcome.structured,
            "isError": False,
        }
        size = len(json.dumps(result, ensure_ascii=False, allow_nan=False))
    except argcheck.SchemaError:
        return _internal_error(spec.name)
    except CtxkeeperError as exc:
        return error_result(exc.code, str(exc))
    except OSError as exc:  # a full disk, a read-only or unwritable .context/
        return _storage_error(spec.name, exc)
    except Exception:  # noqa: BLE001  # a handler bug must not crash the server
        return _internal_error(spec.name)
    if size > MAX_RESULT_CHARS:
        return _too_large(spec.name, size)
    return result


def error_result(code: str, message: str) -> JSONObject:
    """An ``isError`` tool result whose text starts with the machine-readable ``code``."""
    text = message if message.startswith(f"{code}:") else f"{code}: {message}"
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _argument_error(tool: str, problems: list[str]) -> JSONObject:
    shown = problems[:_SHOWN_ARGUMENT_ERRORS]
    more = len(problems) - len(shown)
    lines = "\n".join(f"- {problem}" for problem in shown)
    tail = f"\n- ... and {more} more" if more else ""
    return error_result(
        "invalid_argument",
        f"{tool} was not run; fix these arguments and call it again "
        f"(the tool's inputSchema lists every field):\n{lines}{tail}",
    )


#: What the user can do about the file system refusing the store (errno: advice).
_OS_ADVICE: Final = {
    errno.ENOSPC: "the disk is full: ask the user to free some space",
    errno.EDQUOT: "the disk quota is used up: ask the user to free some space",
    errno.EROFS: "the file system is read-only: ask the user to make .context/ writable",
    errno.EACCES: "permission denied: ask the user to check the permissions of .context/",
    errno.EPERM: "permission denied: ask the user to check the permissions of .context/",
}


def _storage_error(tool: str, exc: OSError) -> JSONObject:
    """The file system refused the store: say which file and why, not "unexpectedly"."""
    log(f"tool {tool!r}: {exc}")
    where = f" ({exc.filename})" if isinstance(exc.filename, str) else ""
    advice = _OS_ADVICE.get(exc.errno or 0, "ask the user to run `ctxkeeper doctor`")
    return error_result(
        "storage_error",
        f"{tool} could not use the store{where}: {exc.strerror or exc}; {advice}. Retrying "
        "will fail the same way until then.",
    )


def _internal_error(tool: str) -> JSONObject:
    log_exception(f"tool {tool!r} failed")
    return error_result(
        "internal_error",
        f"{tool} failed unexpectedly inside ctxkeeper (details are in the server's stderr log). "
        "Tell the user; retrying with the same arguments will likely fail the same way.",
    )


def _too_large(tool: str, size: int) -> JSONObject:
    # In principle a handler bug (handlers cap themselves); the host must be protected anyway.
    log(f"tool {tool!r} produced {size} characters of output, over {MAX_RESULT_CHARS}")
    return error_result(
        "output_too_large",
        f"{tool} produced {size} characters of output, more than the {MAX_RESULT_CHARS} this "
        "server sends at once. Narrow the request: pass a smaller limit or token_budget, filter "
        "by kinds, tags, status or path, or ask for fewer ids.",
    )
