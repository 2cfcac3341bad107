"""The real tool registry in-process: every tool's result matches its output schema, the
agent's surface has no human verbs, and the server's import graph never reaches review."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import jsonschema
import pytest

from ctxkeeper.core.errors import CtxkeeperError
from ctxkeeper.core.store import Store
from ctxkeeper.mcp import tools
from ctxkeeper.mcp.toolcall import run_tool
from ctxkeeper.mcp.tools import load_tools
from tests.conftest import REPO_ROOT, constraint_fields, snapshot_dir
from tests.e2e.tool_examples import EXAMPLE_CALLS, resolve

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject


def by_name(store: Store) -> dict[str, Any]:
    return {spec.name: spec for spec in load_tools(store.root)}


class TestEveryTool:
    def test_examples_match_output_schemas(self, store: Store) -> None:
        specs = by_name(store)
        recorded: str | None = None
        for name, calls in EXAMPLE_CALLS.items():
            if name not in specs:
                continue  # a fixture-registry tool
            for arguments in calls:
                result = specs[name].handler(resolve(arguments, recorded))
                jsonschema.validate(result.structured, specs[name].output_schema)
                assert result.text
                if name == "record_entry":
                    recorded = str(result.structured["id"])
        assert recorded is not None
        entry = store.get(recorded)
        assert entry["origin"] == "agent"
        assert entry["status"] == "deprecated"

    def test_project_dir_argument_wins(self, store: Store, tmp_path: Any) -> None:
        other = tmp_path / "other"
        other.mkdir()
        Store.open(str(other)).init()
        specs = by_name(store)
        specs["record_entry"].handler(
            {**EXAMPLE_CALLS["record_entry"][0], "project_dir": str(other)}
        )
        assert len(Store.open(str(other)).load().entries) == 1
        assert store.load().entries == {}

    def test_refusals_raise_for_the_server_to_report(self, store: Store) -> None:
        specs = by_name(store)
        with pytest.raises(CtxkeeperError, match="the minimum is 15"):
            specs["record_entry"].handler(
                {"kind": "constraint", "rule": "short", "reason": "x", "hardness": "hard"}
            )
        recorded = specs["record_entry"].handler(EXAMPLE_CALLS["record_entry"][0]).structured["id"]
        claim = {"id": recorded, "updates": {"origin": "user"}, "reason": "claim it is mine"}
        with pytest.raises(CtxkeeperError, match="has no field 'origin'"):
            specs["update_entry"].handler(claim)

    def test_large_query_results_are_capped(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        specs = by_name(store)
        for n in range(8):
            specs["record_entry"].handler(
                {
                    "kind": "pipeline",
                    "name": f"Nightly export {n}",
                    "purpose": f"Export the nightly batch number {n} to the partner bucket for reconciliation.",
                    "steps": [
                        "Run the export job for the batch",
                        "Check the row counts against yesterday",
                    ],
                }
            )
        monkeypatch.setattr(tools, "MAX_STRUCTURED_CHARS", 4000)
        result = specs["query_entries"].handler({})
        assert result.structured["truncated"] is True
        assert result.structured["total"] == 8
        assert 0 < len(result.structured["results"]) < 8
        assert len(json.dumps(result.structured)) <= 4000
        context = specs["get_context"].handler(
            {"query": "nightly export partner bucket", "token_budget": 20000}
        )
        assert context.truncated is True


def _text_of(result: JSONObject) -> str:
    content = result["content"]
    assert isinstance(content, list)
    block = content[0]
    assert isinstance(block, dict)
    return str(block["text"])


class TestPathArguments:
    """A NUL can be sent in JSON but no file path holds one; the model gets an argument error
    naming the argument, never an internal error."""

    @pytest.mark.parametrize(
        ("tool", "arguments", "named"),
        [
            pytest.param(
                "get_context", {"project_dir": "ROOT\x00"}, "project_dir", id="project-dir"
            ),
            pytest.param("get_context", {"path": "src/\x00x.py"}, "path", id="context-path"),
            pytest.param(
                "query_entries", {"covers_path": "/tmp/a\x00b"}, "covers_path", id="covers-path"
            ),
            pytest.param(
                "query_entries", {"scope": ["src/", "b\x00"]}, "scope[1]", id="query-scope"
            ),
            pytest.param(
                "record_entry",
                {"kind": "constraint", **constraint_fields(scope=["src/\x00billing/"])},
                "scope[0]",
                id="record-scope",
            ),
        ],
    )
    def test_nul_is_an_argument_error(
        self, store: Store, tool: str, arguments: JSONObject, named: str
    ) -> None:
        arguments = json.loads(json.dumps(arguments).replace("ROOT", store.root))
        before = snapshot_dir(store.dir)
        result = run_tool(by_name(store)[tool], arguments)
        text = _text_of(result)
        assert result["isError"] is True
        assert text.startswith("invalid_argument: ")
        assert f"{named} holds a NUL character" in text
        assert snapshot_dir(store.dir) == before
        clean = json.loads(json.dumps(arguments).replace("\\u0000", ""))
        assert run_tool(by_name(store)[tool], clean)["isError"] is False

    def test_nul_in_update_scope(self, store: Store) -> None:
        specs = by_name(store)
        recorded = specs["record_entry"].handler({"kind": "constraint", **constraint_fields()})
        entry_id = recorded.structured["id"]
        result = run_tool(
            specs["update_entry"],
            {"id": entry_id, "updates": {"scope": ["a\x00"]}, "reason": "narrow the scope"},
        )
        assert result["isError"] is True
        assert "updates.scope[0] holds a NUL character" in _text_of(result)
        assert store.get(str(entry_id))["scope"] == ["src/billing"]


class TestAgentSurface:
    def test_no_human_verbs_and_no_origin(self, store: Store) -> None:
        names = [spec.name for spec in load_tools(store.root)]
        assert names == [
            "get_context",
            "record_entry",
            "query_entries",
            "get_entry",
            "update_entry",
            "deprecate_entry",
            "get_project_summary",
            "check_drift",
            "verify_entry",
            "export_snapshot",
            "import_snapshot",
        ]
        for forbidden in ("approve", "reject", "lift", "purge", "review"):
            assert not any(forbidden in name for name in names)
        for spec in load_tools(store.root):
            properties: JSONObject = spec.input_schema["properties"]  # type: ignore[assignment]
            assert "origin" not in properties or spec.name == "query_entries"
            assert "status" not in properties or spec.name == "query_entries"

    def test_what_the_model_reads_of_the_tool_list_stays_small(self) -> None:
        """Claude Code sends each tool's name, description and input schema with every
        request, in every repository (bench/tools_list_size.py prints it against the code
        before issue 25: 7,414 characters)."""
        from ctxkeeper.mcp.toolcall import describe_tool

        listed = [describe_tool(spec) for spec in load_tools()]
        read = [{k: t[k] for k in ("name", "description", "inputSchema")} for t in listed]
        assert len(json.dumps(read)) < 6000
        for spec in load_tools():
            # record_entry's is the longest: a line per kind, and the ask for asked_as.
            assert 20 <= len(spec.description) <= 400, spec.name


GRAPH_PROBE = textwrap.dedent(
    """
    import sys, json
    sys.path.insert(0, {root!r})
    {imports}
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("ctxkeeper"))))
    """
)


def _modules_after(imports: str, project: str) -> list[str]:
    script = GRAPH_PROBE.format(root=REPO_ROOT, imports=imports.replace("PROJECT", repr(project)))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout))


class TestStructuralGate:
    def test_server_never_imports_review_even_after_every_tool_ran(self, store: Store) -> None:
        calls = textwrap.dedent(
            """
            import ctxkeeper.mcp.server
            from ctxkeeper.mcp.tools import load_tools
            from tests.e2e.tool_examples import EXAMPLE_CALLS, resolve
            specs = {s.name: s for s in load_tools(PROJECT)}
            recorded = None
            for name, examples in EXAMPLE_CALLS.items():
                for arguments in examples if name in specs else []:
                    result = specs[name].handler(resolve(arguments, recorded))
                    recorded = recorded or result.structured.get("id")
            """
        )
        loaded = _modules_after(calls, store.root)
        assert "ctxkeeper.mcp.server" in loaded
        assert "ctxkeeper.write.verbs" in loaded
        assert "ctxkeeper.cli.review" not in loaded

    def test_control_the_probe_sees_review_when_it_is_loaded(self, store: Store) -> None:
        loaded = _modules_after("import ctxkeeper.cli.app, ctxkeeper.cli.review", store.root)
        assert "ctxkeeper.cli.review" in loaded
