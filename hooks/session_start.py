"""SessionStart hook: the project summary and project-wide hard constraints; re-arms delivery after compaction."""

import os
import sys

# Started as `python3 -I`; the plugin root goes first on sys.path (see pre_tool_use.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    from ctxkeeper.plugin.hookio import run
    from ctxkeeper.plugin.sessionhooks import refused_store, session_start_or_notice
except Exception:  # noqa: BLE001 - a broken install must not disturb the session (fail open)
    raise SystemExit(0) from None
raise SystemExit(run("SessionStart", session_start_or_notice, refused=refused_store))
