"""Shared helpers for the benchmarks: the interpreter, the scratch venvs, and varied stores.

Both systems run on the same interpreter, each from its own virtual environment made the same
way (``python3 -m venv``), so neither pays the base interpreter's site ``.pth`` files and
neither gets a cleaner start than the other. Context Keeper 0.19 is installed into its venv
from PyPI by pip (never vendored); ctxkeeper is put on its venv's path by a ``.pth`` line
pointing at this checkout (what an editable install does), so the code measured is the code
here.
"""

from __future__ import annotations

import glob
import json
import os
import random
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from ctxkeeper.core import times
from ctxkeeper.core.model import clean_fields, contract_floors, new_entry
from ctxkeeper.core.store import Store
from ctxkeeper.write import derived  # noqa: F401  # writes refresh the index, as every door's do
from ctxkeeper.write.verbs import user_actor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

    from ctxkeeper.core._types import JSONObject, JSONValue

PEER_SPEC = "context-keeper-mcp==0.19.*"
PEER_VENV = os.path.join(ROOT, ".cache", "peer-ck019")
OURS_VENV = os.path.join(ROOT, ".cache", "bench-ctxkeeper")


class StdioServer:
    """One MCP server process over stdio, spoken to one request at a time (a JSON-RPC message
    a line each way), as both the peer benchmark and the load run drive theirs."""

    def __init__(
        self, argv: list[str], env: dict[str, str], cwd: str, *, stderr: IO[bytes] | None = None
    ) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=cwd
        )
        self.next_id = 0

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def request(self, method: str, params: JSONObject) -> JSONObject:
        """The result of one request; RuntimeError when the server exits or answers an error."""
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the server exited ({self.proc.poll()}) during {method}")
        reply: JSONObject = json.loads(line)
        if "result" not in reply:
            raise RuntimeError(f"{method} failed: {line[:300]!r}")
        result = reply["result"]
        assert isinstance(result, dict)
        return result

    def close(self, timeout: float = 60) -> int:
        """End the server by closing its input; its exit code."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=timeout)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code

    def _send(self, message: JSONObject) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()


def real_python3() -> str:
    """The interpreter ``python3`` on PATH resolves to, by its own path.

    Version managers put a shell-script shim first on PATH (pyenv's costs ~100 ms a start
    here), which would inflate the baseline and flatter every ratio.
    """
    found = subprocess.run(
        ["python3", "-c", "import sys; print(getattr(sys, '_base_executable', sys.executable))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return found.stdout.strip() or "python3"


PYTHON = real_python3()


def _site_packages(venv: str) -> str:
    found = glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))
    if not found:
        raise SystemExit(f"no site-packages in {venv}")
    return found[0]


def _venv_python(venv: str) -> str:
    return os.path.join(venv, "bin", "python3")


def _make_venv(venv: str) -> None:
    if not os.path.exists(_venv_python(venv)):
        subprocess.run([PYTHON, "-m", "venv", venv], check=True)


def peer_venv() -> str:
    """Install the peer into its scratch venv (once); return that venv's python."""
    _make_venv(PEER_VENV)
    if not os.path.exists(os.path.join(_site_packages(PEER_VENV), "server.py")):
        pip = os.path.join(PEER_VENV, "bin", "pip")
        subprocess.run([pip, "install", "--quiet", PEER_SPEC], check=True)
    return _venv_python(PEER_VENV)


def peer_site() -> str:
    """The peer's site-packages (its server.py and hooks/ live at the top level)."""
    return _site_packages(PEER_VENV)


def ours_venv() -> str:
    """A venv made the same way as the peer's, with this checkout on its path; its python."""
    _make_venv(OURS_VENV)
    pth = os.path.join(_site_packages(OURS_VENV), "ctxkeeper-checkout.pth")
    wanted = ROOT + "\n"
    current = None
    if os.path.exists(pth):
        with open(pth, encoding="utf-8") as handle:
            current = handle.read()
    if current != wanted:
        with open(pth, "w", encoding="utf-8") as handle:
            handle.write(wanted)
    return _venv_python(OURS_VENV)


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without Claude's or Python's variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PYTHON"))}
    env.update(extra)
    return env


# ------------------------------------------------------------------------ varied entries

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def _corpus() -> list[JSONObject]:
    entries: list[JSONObject] = []
    for path in sorted(glob.glob(os.path.join(ROOT, "evals", "corpus", "*.jsonl"))):
        with open(path, encoding="utf-8") as handle:
            entries.extend(json.loads(line) for line in handle if line.strip())
    return entries


def _strings(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


class Varied:
    """Entries whose texts differ the way a real store's do.

    Every text is a fresh draw of words from the eval corpus's own word stream (so common
    words are common and rare ones rare), around a few made-up module names, so no two
    entries are restatements of each other and the similarity check has real work to do.
    """

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        corpus = _corpus()
        self.words = [
            w.lower()
            for entry in corpus
            for name in ("summary", "rule", "problem", "reason", "why_chosen", "purpose")
            if isinstance(entry.get(name), str)
            for w in _WORD.findall(str(entry[name]))
        ]
        self.tags = sorted({str(t) for entry in corpus for t in _strings(entry.get("tags"))})

    def text(self, words: int, n: int) -> str:
        picked = [self.rng.choice(self.words) for _ in range(words)]
        picked.insert(self.rng.randrange(len(picked)), f"module{n}")
        return " ".join(picked).capitalize() + "."

    def fields(self, n: int) -> tuple[str, JSONObject]:
        """The kind and the fields of the n-th entry (decisions, constraints, pipelines)."""
        kind = ("decision", "constraint", "pipeline")[n % 3]
        scope: list[JSONValue] = [f"src/pkg{n % 50}/mod{n % 997}/"]
        tags: list[JSONValue] = list(self.rng.sample(self.tags, 2))
        if kind == "decision":
            return kind, {
                "summary": self.text(12, n),
                "problem": self.text(22, n),
                "why_chosen": self.text(30, n),
                "scope": scope,
                "tags": tags,
            }
        if kind == "constraint":
            return kind, {
                "rule": self.text(11, n),
                "reason": self.text(22, n),
                "hardness": self.rng.choice(["hard", "soft"]),
                "scope": scope,
                "tags": tags,
            }
        return kind, {
            "name": f"job-{n}-{self.rng.choice(self.words)}",
            "purpose": self.text(20, n),
            "steps": [self.text(8, n) for _ in range(3)],
            "scope": scope,
            "tags": tags,
        }


PREFIX = {"decision": "dec", "constraint": "con", "pipeline": "pip"}


def build_ours(project: str, items: list[tuple[str, JSONObject]]) -> float:
    """Write the entries through one real store transaction; return seconds taken.

    The journal, ``entries.json`` and the caches are written by the real write path; the
    similarity check of ``record_entry`` is skipped for the bulk load (it is measured on the
    writes the benchmark times).
    """
    started = time.perf_counter()
    store = Store.open(project)
    store.init()
    floors = contract_floors()
    at = times.now_iso()
    actor = user_actor()
    with store.transaction() as tx:
        for n, (kind, fields) in enumerate(items):
            entry_id = f"{PREFIX[kind]}-{n + 1:03d}-{n % 65536:04x}"
            entry = new_entry(
                kind,
                clean_fields(kind, fields, floors),
                entry_id=entry_id,
                status="active",
                origin="user",
                at=at,
            )
            tx.put("record", entry_id, entry, actor=actor, reason=None, at=at)
    return time.perf_counter() - started


_PEER_FILES = {"decision": "decisions", "constraint": "constraints", "pipeline": "pipelines"}


def peer_entry(n: int, kind: str, fields: JSONObject, at: str) -> JSONObject:
    """The same entry in Context Keeper 0.19's own shape (its record handlers' fields)."""
    common: JSONObject = {
        "tags": fields.get("tags", []),
        "related_to": [],
        "retrieval_hints": [],
        "origin": "user",
        "status": "active",
        "superseded_by": None,
        "created_at": at,
        "updated_at": at,
        "verified_at": at,
        "verified_sha": None,
    }
    scopes = _strings(fields.get("scope"))
    scope = scopes[0] if scopes else "global"
    if kind == "decision":
        own: JSONObject = {
            "id": f"dec-{n + 1:03d}",
            "summary": fields["summary"],
            "problem": fields["problem"],
            "why_chosen": fields["why_chosen"],
            "what_we_tried": "",
            "tradeoffs": "",
            "alternatives": [],
            "constraints_created": [],
            "schema_version": 4,
        }
    elif kind == "constraint":
        own = {
            "id": f"con-{n + 1:03d}",
            "rule": fields["rule"],
            "reason": fields["reason"],
            "triggering_incident": "",
            "enforced_by": "",
            "scope": scope,
            "hardness": "absolute" if fields["hardness"] == "hard" else "advisory",
        }
    else:
        own = {
            "id": f"pipe-{n + 1:03d}",
            "name": fields["name"],
            "purpose": fields["purpose"],
            "when_to_invoke": "",
            "steps": [
                {"order": i + 1, "action": s} for i, s in enumerate(_strings(fields.get("steps")))
            ],
            "constraints": [],
        }
    return {**own, **common}


def build_peer(project: str, items: list[tuple[str, JSONObject]]) -> None:
    """The same entries in Context Keeper 0.19's store files (``.context/<kind>s.json``)."""
    folder = os.path.join(project, ".context")
    os.makedirs(folder, exist_ok=True)
    at = times.now_iso()
    files: dict[str, list[JSONObject]] = {name: [] for name in _PEER_FILES.values()}
    for n, (kind, fields) in enumerate(items):
        files[_PEER_FILES[kind]].append(peer_entry(n, kind, fields, at))
    for name, entries in files.items():
        with open(os.path.join(folder, f"{name}.json"), "w", encoding="utf-8") as handle:
            json.dump(entries, handle, indent=2)  # the layout its own writes leave
