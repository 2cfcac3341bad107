"""Test helpers for the MCP wire: server commands, schema checks of logged traffic, store hashes.

Shared by tests/test_server.py and the real-client tests in tests/e2e/.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from ctxkeeper.core._types import JSONObject, JSONValue

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
E2E_DIR = os.path.join(REPO_ROOT, "tests", "e2e")
FIXTURE_SERVER = os.path.join(E2E_DIR, "fixture_server.py")
TEE_SERVER = os.path.join(E2E_DIR, "tee_server.py")
#: The published schema.json of each revision, kept next to (never inside) the repository.
SCHEMA_DIR = os.path.join(os.path.dirname(REPO_ROOT), "shared", "reference", "mcp-schema")
MODERN = "2026-07-28"

#: A client's start of a session on the wire: ``initialize``, then ``notifications/initialized``.
HANDSHAKE: list[JSONObject] = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "ctxkeeper-tests", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]

#: The result definition each method's reply must match (mcp.md §13).
RESULT_DEFINITIONS = {
    "initialize": "InitializeResult",
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "ping": "EmptyResult",
}


@functools.cache
def _person_bin() -> str:
    """A folder of the person's own holding ``ctxkeeper`` (a link to this checkout's
    bin/ctxkeeper, as someone who linked it into ~/.local/bin has it); removed at exit."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="ctxkeeper-person-bin-")
    atexit.register(shutil.rmtree, folder, True)
    os.symlink(os.path.join(REPO_ROOT, "bin", "ctxkeeper"), os.path.join(folder, "ctxkeeper"))
    return folder


def person_path() -> str:
    """PATH for hooks run as for a person with the CLI installed (SessionStart then names no
    other way to it; tests/test_cli_hint.py covers the person without it)."""
    return os.pathsep.join([_person_bin(), os.environ.get("PATH", "/usr/bin:/bin")])


REAL_SERVER_MISSING = "ctxkeeper/mcp/tools.py (the real tool registry) is not there yet"


def real_server_available() -> bool:
    """Whether the real tool registry exists, so ``ctxkeeper serve`` can serve tools."""
    return importlib.util.find_spec("ctxkeeper.mcp.tools") is not None


def child_env(**extra: str) -> dict[str, str]:
    """A minimal environment for a server child; the SDK passes nothing else (mcp.md §2)."""
    env = {"PYTHONPATH": REPO_ROOT, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env.update(extra)
    return env


def prepare_real_store(project_dir: str) -> None:
    """Create an empty ctxkeeper store in ``project_dir`` with the real CLI."""
    subprocess.run(
        [sys.executable, "-m", "ctxkeeper", "init", "--project-dir", project_dir],
        check=True,
        capture_output=True,
        env=child_env(HOME=project_dir),
        cwd=project_dir,
        timeout=60,
    )


def server_command(kind: str, project_dir: str) -> list[str]:
    """The command that starts the ``fixture`` or the ``real`` server."""
    if kind == "fixture":
        return [sys.executable, FIXTURE_SERVER]
    if not real_server_available():
        pytest.skip(REAL_SERVER_MISSING)
    prepare_real_store(project_dir)
    return [sys.executable, "-m", "ctxkeeper", "serve", "--project-dir", project_dir]


def tee_command(log_dir: str, command: list[str]) -> list[str]:
    """``command`` behind the recording relay, which logs every line to ``log_dir``."""
    return [sys.executable, TEE_SERVER, log_dir, *command]


def hash_tree(root: str) -> dict[str, str]:
    """SHA-256 of every file under ``root``, keyed by relative path."""
    digests: dict[str, str] = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                digests[os.path.relpath(path, root)] = hashlib.sha256(handle.read()).hexdigest()
    return digests


# -- schema validation ----------------------------------------------------------------------


def schemas_available() -> bool:
    """Whether the published schemas can be read (they live outside the repository)."""
    return os.path.isdir(SCHEMA_DIR)


@functools.cache
def _load_schema(revision: str) -> JSONObject:
    with open(os.path.join(SCHEMA_DIR, f"{revision}.json"), encoding="utf-8") as handle:
        schema: JSONObject = json.load(handle)
    return schema


def definition_errors(instance: JSONValue, revision: str, definition: str) -> list[str]:
    """Errors of ``instance`` against one definition of a revision's schema.json."""
    from jsonschema.validators import validator_for

    schema = _load_schema(revision)
    key = "$defs" if "$defs" in schema else "definitions"
    wrapper = {"$ref": f"#/{key}/{definition}", key: schema[key]}
    validator = validator_for(schema)(wrapper)
    return [f"{definition}: {error.message}" for error in validator.iter_errors(instance)]


def _error_definition(revision: str) -> str:
    schema = _load_schema(revision)
    definitions = schema.get("$defs") or schema.get("definitions")
    assert isinstance(definitions, dict)
    return "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in definitions else "JSONRPCError"


def response_errors(message: JSONObject, method: str | None, revision: str) -> list[str]:
    """Schema errors of one server response to a request for ``method`` under ``revision``."""
    if "error" in message:
        if message.get("id") is None:
            # JSON-RPC 2.0 §5 demands id null when the id could not be read, which MCP's
            # RequestId type does not allow; check the rest of the shape.
            message = {**message, "id": 0}
        return definition_errors(message, revision, _error_definition(revision))
    result = message.get("result")
    definition = RESULT_DEFINITIONS.get(method or "")
    if definition is None:
        return [f"a result for {method!r}, which the server should not answer with a result"]
    return definition_errors(result, revision, definition)


def check_log_dir(log_dir: str) -> int:
    """Validate every server line logged by tee_server.py; return how many were checked."""
    checked = 0
    for name in sorted(os.listdir(log_dir)):
        checked += check_connection_log(os.path.join(log_dir, name))
    return checked


def check_connection_log(path: str) -> int:
    """Validate the server lines of one logged connection against its revision's schema."""
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    requests: dict[str, str] = {}
    replies: list[tuple[JSONObject, str | None]] = []
    for record in records:
        message = json.loads(record["line"])
        assert isinstance(message, dict), f"{path}: not a JSON object: {record['line'][:200]}"
        key = json.dumps(message.get("id"))
        if record["from"] == "client":
            if "method" in message and "id" in message:
                requests[key] = message["method"]
        else:
            # The server never sends requests or notifications over stdio (mcp.md §2).
            assert "method" not in message, f"{path}: server sent a request: {record['line']}"
            replies.append((message, requests.get(key)))
    revision = _revision_of(replies)
    problems = [
        f"{path} ({revision}, {method}): {problem}: {json.dumps(message)[:300]}"
        for message, method in replies
        for problem in response_errors(message, method, revision)
    ]
    assert not problems, "\n".join(problems)
    return len(replies)


def _revision_of(replies: list[tuple[JSONObject, str | None]]) -> str:
    """The revision a connection settled on: modern after a discover result, else the
    version the initialize result named."""
    for message, method in replies:
        result = message.get("result")
        if method == "server/discover" and isinstance(result, dict):
            return MODERN
        if method == "initialize" and isinstance(result, dict):
            return str(result["protocolVersion"])
    return MODERN


# -- real clients ---------------------------------------------------------------------------


def clients_dir() -> str:
    """Where tests/e2e/install_clients.sh puts the clients: a per-user cache outside every
    checkout (reused across clones, never copied by a plugin install), overridable."""
    chosen = os.environ.get("CTXKEEPER_CLIENTS_DIR")
    if chosen:
        return chosen
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "ctxkeeper-test-clients")


CLIENTS_DIR = clients_dir()
MCP1_PYTHON = os.path.join(CLIENTS_DIR, "mcp1", "bin", "python")
INSPECTOR = os.path.join(CLIENTS_DIR, "inspector", "node_modules", ".bin", "mcp-inspector")
INSTALL_HINT = "run `sh tests/e2e/install_clients.sh`"


def require_client(path: str, what: str) -> str:
    """``path`` if the client is installed; otherwise skip, or fail when CI demands clients."""
    if os.path.exists(path):
        return path
    reason = f"{what} is not installed at {path}; {INSTALL_HINT}"
    if os.environ.get("CTXKEEPER_REQUIRE_CLIENTS") == "1":
        pytest.fail(f"CTXKEEPER_REQUIRE_CLIENTS=1 but {reason}")
    pytest.skip(reason)


def check_structured(tools: JSONValue, calls: JSONValue) -> int:
    """Each call succeeded and its structuredContent matches the tool's outputSchema."""
    from jsonschema import Draft202012Validator

    assert isinstance(tools, list)
    assert isinstance(calls, list)
    schemas = {t["name"]: t["outputSchema"] for t in tools if isinstance(t, dict)}
    for record in calls:
        assert isinstance(record, dict)
        result = record["result"]
        assert isinstance(result, dict)
        assert not result.get("isError"), f"{record['name']} {record['arguments']}: {result}"
        Draft202012Validator(schemas[record["name"]]).validate(result["structuredContent"])
    return len(calls)


class McpSession:
    """The real ``ctxkeeper serve`` over stdio (the legacy handshake), one call at a time."""

    def __init__(self, command: list[str], *, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=REPO_ROOT,
        )
        self.next_id = 0
        init = self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "faults", "version": "1"},
            },
        )
        assert "result" in init, init
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: JSONObject) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: JSONObject) -> JSONObject:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its output"
        reply: JSONObject = json.loads(line)
        assert reply.get("id") == self.next_id, reply
        return reply

    def call(self, name: str, arguments: JSONObject) -> JSONObject:
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        assert isinstance(result, dict)
        return result

    def close(self) -> str:
        """End the session (EOF on stdin) and return what the server logged."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        assert self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            err = self.proc.stderr.read().decode()
            self.proc.stderr.close()
        assert self.proc.returncode == 0, err
        return err
