"""Hook plumbing: find the store, read stdin, fail open, write one ASCII-safe JSON answer.

Every hook goes through :func:`run`. In a project without ``.context/`` it returns at once,
before reading stdin (the plugin is installed per user and runs in every repository). Any
error inside a hook, including stdin that is not what Claude Code documents, ends with exit 0,
no output, and one line in ``.context/cache/hook-errors.log``: a hook never blocks an edit by
failing (DESIGN.md, "Hooks").

Import-light on purpose (con-001-5f40): ``json``, ``os`` and ``sys`` only (``time`` is built in).
"""

from __future__ import annotations

import os
import sys

from ctxkeeper.core import jsonlite as json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import BinaryIO, TextIO

    from ctxkeeper.core._types import JSONObject

    Handler = Callable[["HookContext"], "JSONObject | None"]
    Refused = Callable[[str], "JSONObject | None"]

#: Stdin beyond this is refused (fail open) instead of parsed: a Write of a huge file is
#: still far below it, and memory stays bounded whatever is piped in.
MAX_STDIN = 64 << 20
ERROR_LOG = "hook-errors.log"
_ERROR_LOG_CAP = 256 << 10
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class HookInputError(Exception):
    """Stdin that is not the JSON object Claude Code documents for this event."""


def utc_now() -> str:
    """The current instant as ctxkeeper stores times, without importing datetime."""
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def store_dir(root: str) -> str | None:
    """``root/.context`` when it is a real directory (a symlink is refused: untrusted repo)."""
    path = os.path.join(root, ".context")
    try:
        if os.path.islink(path) or not os.path.isdir(path):
            return None
        cache = os.path.join(path, "cache")
        if os.path.islink(cache):
            return None
    except (OSError, ValueError):
        return None
    return path


def store_refusal(root: str) -> str | None:
    """Why :func:`store_dir` refuses an existing store at ``root`` (None: it does not, or there
    is no store): a symbolic link where ``.context`` or its cache belongs."""
    path = os.path.join(root, ".context")
    try:
        if os.path.islink(path):
            return ".context is a symbolic link"
        if os.path.isdir(path) and os.path.islink(os.path.join(path, "cache")):
            return ".context/cache is a symbolic link"
    except (OSError, ValueError):
        return None
    return None


class HookContext:
    """One hook call: the project root, its store and the parsed stdin object."""

    def __init__(self, event: str, root: str, context_dir: str, payload: JSONObject) -> None:
        self.event = event
        self.root = root
        self.context_dir = context_dir
        self.cache_dir = os.path.join(context_dir, "cache")
        self.payload = payload

    def text(self, key: str, *, required: bool = True) -> str | None:
        """A string field of stdin; a missing or mistyped required one is an input error."""
        value = self.payload.get(key)
        if isinstance(value, str) and value:
            return value
        if required or (value is not None and not isinstance(value, str)):
            # An optional field of the wrong type is not "absent": agent_id 5 is no subagent's
            # id, and reading it as the main session would mark the main session's ledger.
            raise HookInputError(f"stdin field {key!r} is missing or not a string")
        return None

    def ledger(self) -> str:
        """This session's delivery ledger (a subagent's own when ``agent_id`` is present)."""
        from ctxkeeper.plugin.ledger import ledger_path

        session = self.text("session_id")
        assert session is not None
        return ledger_path(self.cache_dir, session, self.text("agent_id", required=False))


def log_error(context_dir: str, event: str, message: str) -> None:
    """Append one line to the hook error log; never raises."""
    try:
        cache = os.path.join(context_dir, "cache")
        os.makedirs(cache, exist_ok=True)
        path = os.path.join(cache, ERROR_LOG)
        try:
            if os.lstat(path).st_size > _ERROR_LOG_CAP:
                os.replace(path, path + ".1")
        except FileNotFoundError:
            pass
        line = " ".join(f"{utc_now()} {event}: {message}".split())[:500] + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        pass


def _read_payload(stdin: BinaryIO) -> JSONObject:
    data = stdin.read(MAX_STDIN + 1)
    if len(data) > MAX_STDIN:
        raise HookInputError(f"stdin is larger than {MAX_STDIN >> 20} MiB; ignored")
    if not data.strip():
        raise HookInputError("stdin is empty")
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise HookInputError(f"stdin is not JSON ({type(exc).__name__})") from None
    if not isinstance(payload, dict):
        raise HookInputError("stdin is JSON but not an object")
    return payload


def run(
    event: str,
    handler: Handler,
    *,
    stdin: BinaryIO | None = None,
    stdout: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    refused: Refused | None = None,
) -> int:
    """Run one hook; always return 0 (the hook's answer, if any, is JSON on stdout).

    :param refused: the answer for a store the hooks refuse to use (see :func:`store_refusal`);
        without it such a store is treated as no store at all (silence).
    """
    env = os.environ if environ is None else environ
    root = env.get("CLAUDE_PROJECT_DIR") or None
    context_dir = store_dir(root) if root else None
    if root and context_dir is None:
        return _refused(root, refused, stdout)
    try:
        payload = _read_payload(stdin or sys.stdin.buffer)
    except (HookInputError, OSError, MemoryError) as exc:
        if context_dir is not None:
            log_error(context_dir, event, str(exc))
        return 0
    if root is None:
        cwd = payload.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            return 0
        root = cwd
        context_dir = store_dir(root)
        if context_dir is None:
            return _refused(root, refused, stdout)
    assert context_dir is not None
    try:
        answer = handler(HookContext(event, root, context_dir, payload))
        if answer is not None:
            out = stdout or sys.stdout
            out.write(json.dumps(answer) + "\n")
            out.flush()
    except Exception as exc:  # noqa: BLE001 - fail open is the contract: log, never block.
        log_error(context_dir, event, f"{type(exc).__name__}: {exc}")
    return 0


def _refused(root: str, refused: Refused | None, stdout: TextIO | None) -> int:
    """Fail open on a store the hooks refuse, saying so when the hook can tell the person."""
    reason = store_refusal(root) if refused is not None else None
    if reason is None or refused is None:
        return 0
    try:
        answer = refused(reason)
        if answer is not None:
            out = stdout or sys.stdout
            out.write(json.dumps(answer) + "\n")
            out.flush()
    except Exception:  # noqa: BLE001, S110 - nowhere to log: the store is the refused one
        pass
    return 0
