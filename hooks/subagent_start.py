"""SubagentStart hook: the constraints-only block for a subagent."""

import os
import sys

# Started as `python3 -I`; the plugin root goes first on sys.path (see pre_tool_use.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    from ctxkeeper.plugin.hookio import run
    from ctxkeeper.plugin.sessionhooks import subagent_start
except Exception:  # noqa: BLE001 - a broken install must not disturb the session (fail open)
    raise SystemExit(0) from None
raise SystemExit(run("SubagentStart", subagent_start))
