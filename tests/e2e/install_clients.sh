#!/bin/sh
# Install the real MCP clients the e2e tests drive (test-only; never product dependencies).
# They go to a per-user cache outside the repository, so a plugin install from a checkout never
# copies them and every clone reuses one install:
#   $CTXKEEPER_CLIENTS_DIR, default ${XDG_CACHE_HOME:-$HOME/.cache}/ctxkeeper-test-clients
# (tests/mcp_wire.py:clients_dir finds them the same way), holding
#   mcp1/       a venv with the 1.x Python SDK (classic ClientSession only)
#   inspector/  the MCP Inspector CLI (TypeScript SDK client)
#   claude/     Claude Code, pinned (request layout changes between releases)
# Idempotent: an install that is already at the pinned version is left alone.
# Usage: sh tests/e2e/install_clients.sh [PYTHON]   (PYTHON defaults to python3)
set -eu

MCP1_VERSION="1.30.0"
INSPECTOR_VERSION="2.12.0"
CLAUDE_VERSION="2.1.332"

clients=${CTXKEEPER_CLIENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxkeeper-test-clients}
python=${1:-python3}
mkdir -p "$clients"

mcp1="$clients/mcp1"
if "$mcp1/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP1_VERSION')" 2>/dev/null; then
    echo "mcp $MCP1_VERSION already installed in $mcp1"
else
    "$python" -m venv "$mcp1"
    "$mcp1/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP1_VERSION"
    echo "installed mcp $MCP1_VERSION in $mcp1"
fi

inspector="$clients/inspector"
installed="$inspector/node_modules/@modelcontextprotocol/inspector/package.json"
if [ -f "$installed" ] && grep -q "\"version\": \"$INSPECTOR_VERSION\"" "$installed"; then
    echo "@modelcontextprotocol/inspector $INSPECTOR_VERSION already installed in $inspector"
else
    mkdir -p "$inspector"
    [ -f "$inspector/package.json" ] || printf '{"name": "ctxkeeper-e2e-clients", "private": true}\n' > "$inspector/package.json"
    # HOME stays the caller's; npm's cache is kept beside the installs so CI can cache one folder.
    npm install --prefix "$inspector" --no-audit --no-fund --loglevel=error \
        --cache "$clients/npm-cache" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
    echo "installed @modelcontextprotocol/inspector $INSPECTOR_VERSION in $inspector"
fi

claude="$clients/claude"
installed="$claude/node_modules/@anthropic-ai/claude-code/package.json"
if [ -f "$installed" ] && grep -q "\"version\": \"$CLAUDE_VERSION\"" "$installed" \
    && "$claude/node_modules/.bin/claude" --version >/dev/null 2>&1; then
    echo "@anthropic-ai/claude-code $CLAUDE_VERSION already installed in $claude"
else
    mkdir -p "$claude"
    [ -f "$claude/package.json" ] || printf '{"name": "ctxkeeper-e2e-claude", "private": true}\n' > "$claude/package.json"
    # The native binary comes as a per-platform optional dependency linked by a postinstall
    # step, so neither optional dependencies nor install scripts may be turned off here.
    npm install --prefix "$claude" --no-audit --no-fund --loglevel=error \
        --cache "$clients/npm-cache" "@anthropic-ai/claude-code@$CLAUDE_VERSION"
    "$claude/node_modules/.bin/claude" --version
    echo "installed @anthropic-ai/claude-code $CLAUDE_VERSION in $claude"
fi
