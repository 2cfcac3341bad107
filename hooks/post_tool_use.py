"""PostToolUse hook on Bash: after a decision-like commit, suggest recording it (never writes)."""

import os
import sys

# Started as `python3 -I`; the plugin root goes first on sys.path (see pre_tool_use.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    from ctxkeeper.plugin.commitnote import handle
    from ctxkeeper.plugin.hookio import run
except Exception:  # noqa: BLE001 - a broken install must not disturb the session (fail open)
    raise SystemExit(0) from None
raise SystemExit(run("PostToolUse", handle))
