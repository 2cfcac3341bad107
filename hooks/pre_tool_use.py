"""PreToolUse hook: the constraint gate for Edit/Write/NotebookEdit, the human-verb guard for Bash."""

import os
import sys

# Started as `python3 -I`: neither the project's directory nor PYTHONPATH is on sys.path, and
# the plugin root goes first, so nothing in the project can stand in for ctxkeeper's modules.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.plugin.hookio import HookContext


def _handle(ctx: "HookContext") -> "JSONObject | None":
    if ctx.payload.get("tool_name") == "Bash":
        from ctxkeeper.plugin import bashguard

        return bashguard.handle(ctx)
    from ctxkeeper.plugin import editgate

    return editgate.handle(ctx)


try:
    from ctxkeeper.plugin.hookio import run
except Exception:  # noqa: BLE001 - a broken install must not block edits (fail open)
    raise SystemExit(0) from None
raise SystemExit(run("PreToolUse", _handle))
