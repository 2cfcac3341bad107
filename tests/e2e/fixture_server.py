"""Serve the fixture tool registry (tests/fixture_tools.py) over stdio for the e2e tests."""

from __future__ import annotations

import os
import sys

# Run as a script by real clients: make the repository root and tests/ importable.
_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(_TESTS))

from ctxkeeper.mcp.server import INSTRUCTIONS, serve  # after the sys.path setup


def main() -> int:
    """Serve the fixture tools until EOF."""
    from tests.fixture_tools import load_fixture_tools

    return serve(
        sys.stdin.buffer,
        sys.stdout.buffer,
        load_fixture_tools,
        instructions=INSTRUCTIONS,
        server_version="0.0.0-fixture",
    )


if __name__ == "__main__":
    raise SystemExit(main())
