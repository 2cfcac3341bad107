"""Start ctxkeeper's MCP server from this plugin's own files (``python3 -I ctxkeeper_server.py``).

``python3 -m ctxkeeper`` puts the working directory first on ``sys.path``, so a project holding
its own ``ctxkeeper/`` (or a ``json.py``) would run that code the moment the session started
there. ``-I`` keeps the working directory, the script directory and ``PYTHON*`` variables off
the path; this file then adds exactly one directory, the plugin root it lives in (con-010-aa87).
"""

import os
import sys

if sys.version_info < (3, 10):  # noqa: UP036 - the message is the point on an old python3
    sys.stderr.write(f"ctxkeeper needs Python 3.10 or newer; python3 here is {sys.version}\n")
    raise SystemExit(1)

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

# Imported only now: it must come from the plugin root added above.
from ctxkeeper.mcp.server import main

# The project root comes from CLAUDE_PROJECT_DIR, which Claude Code exports to plugin servers.
raise SystemExit(main(sys.argv[1:]))
