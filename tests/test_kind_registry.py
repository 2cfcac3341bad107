"""A fourth kind, registered by a fixture and never written into the source, goes through every
door the kind table feeds: record (MCP) -> get_context -> export -> import into a clone ->
DECISIONS.md (CLI), and the CLI's flags and prompts take its fields."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxkeeper.cli.app import main
from ctxkeeper.core import model
from ctxkeeper.core.errors import ValidationError
from ctxkeeper.core.model import FieldSpec, KindSpec
from ctxkeeper.core.store import Store
from ctxkeeper.mcp.toolcall import run_tool
from ctxkeeper.mcp.tools import load_tools
from ctxkeeper.read import projections
from ctxkeeper.team.snapshotformat import _CHECKED_FIELDS
from tests.conftest import decision_fields
from tests.test_team_sync import git_env, run_git

INCIDENT = KindSpec(
    name="incident",
    prefix="inc",
    title="Incidents",
    fields=(
        FieldSpec("title", "title: what broke", floor=12, search_weight=3.0, coverage_credit=1.0),
        FieldSpec(
            "impact",
            "impact: who it hurt and for how long",
            floor=30,
            multiline=True,
            search_weight=1.5,
            coverage_credit=1.0,
        ),
        FieldSpec(
            "followups",
            "follow-up",
            floor=1,
            item_floor=8,
            item_key="followup",
            is_list=True,
            sequence=True,
            search_weight=0.8,
        ),
    ),
    headline="title",
    rationale="impact",
    rationale_label="Impact",
    similar_primary=("title",),
    similar_secondary=("impact",),
    mcp_line="incident: title (12+), impact (30+), followups (8+ each).",
    projection_rank=3,
)
TITLE = "Nightly backup job silently skipped the orders shard"
IMPACT = "Two days of orders had no restorable copy until the cron path was fixed."
FOLLOWUPS = ["Alert when a backup writes zero bytes", "Restore one shard weekly as a drill"]


@pytest.fixture
def incident_kind() -> Iterator[KindSpec]:
    model.register_kind(INCIDENT)
    # The snapshot parser keeps a per-kind table of its own, built at import (issue 24, item 3
    # moves it into ctxkeeper/team/ to read the spec); this fills it for the kind under test.
    _CHECKED_FIELDS[INCIDENT.name] = frozenset(model.EDITABLE_FIELDS[INCIDENT.name]) - {
        "valid_from",
        "valid_until",
    }
    try:
        yield INCIDENT
    finally:
        del _CHECKED_FIELDS[INCIDENT.name]
        model.unregister_kind(INCIDENT.name)


def _call(root: str, tool: str, arguments: dict[str, Any]) -> Any:
    spec = {spec.name: spec for spec in load_tools(root)}[tool]
    result = run_tool(spec, arguments)
    assert not result.get("isError"), result
    return result["structuredContent"]


def test_a_registered_kind_travels_every_door(
    incident_kind: KindSpec,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in git_env("a").items():
        monkeypatch.setenv(name, value)
    remote = str(tmp_path / "team.git")
    run_git(str(tmp_path), "a", "init", "-q", "--bare", remote)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    run_git(str(tmp_path), "a", "clone", "-q", remote, ours)
    assert main(["--project-dir", ours, "init"]) == 0
    # A person records it (active at once), with the kind's own flags.
    followups = [arg for item in FOLLOWUPS for arg in ("--followups", item)]
    add = ["add", "incident", "--title", TITLE, "--impact", IMPACT, *followups]
    assert main(["--project-dir", ours, "--json", *add]) == 0
    (entry_id,) = Store.open(ours).load().entries
    assert entry_id.startswith("inc-001-")
    assert model.kind_of_id(entry_id) == "incident"
    # A decision recorded alongside: the control that the question below picks one of two.
    _call(ours, "record_entry", {"kind": "decision", **decision_fields()})

    context = _call(ours, "get_context", {"query": "orders backup skipped"})
    results = context["results"]
    assert isinstance(results, list)
    assert [r["id"] for r in results][:1] == [entry_id]
    assert context["no_confident_match"] is False

    _call(ours, "export_snapshot", {})
    run_git(ours, "a", "add", ".context")
    run_git(ours, "a", "commit", "-q", "-m", "a: the team's memory")
    run_git(ours, "a", "push", "-q", "origin", "HEAD:main")
    run_git(str(tmp_path), "a", "clone", "-q", remote, theirs)
    imported = _call(theirs, "import_snapshot", {})
    assert entry_id in imported["added"]
    copy = Store.open(theirs).load().entries[entry_id]
    assert (copy["kind"], copy["title"], copy["followups"]) == ("incident", TITLE, FOLLOWUPS)
    assert model.stored_problems(copy) == []

    assert main(["--project-dir", theirs, "export", "markdown"]) == 0
    capsys.readouterr()
    text = (Path(theirs) / projections.MARKDOWN_FILE).read_text()
    section = text.split("## Incidents in force", 1)[1].split("## Retired", 1)[0]
    assert f"- {TITLE} (`{entry_id}`)" in section
    assert f"  - Impact: {IMPACT}" in section
    assert "    2. Restore one shard weekly as a drill" in section
    # The built-in kinds keep their sections; the agent's decision awaits review, unlisted.
    assert "## Decisions in force" in text
    assert str(decision_fields()["summary"]) not in text


def test_the_agent_records_it_through_the_tool_schema(
    incident_kind: KindSpec, store: Store
) -> None:
    tools = {spec.name: spec for spec in load_tools(store.root)}
    record = tools["record_entry"]
    assert "incident: title (12+)" in record.description
    fields: dict[str, Any] = {"title": TITLE, "impact": IMPACT, "followups": FOLLOWUPS}
    result = run_tool(record, {"kind": "incident", **fields})
    assert not result.get("isError"), result
    # The same call without the kind's list is refused by its floor, nothing stored.
    refused = run_tool(record, {"kind": "incident", "title": TITLE + " again", "impact": IMPACT})
    assert refused.get("isError")
    assert "followups" in str(refused["content"])
    (entry,) = store.load().entries.values()
    assert (entry["status"], entry["origin"]) == ("proposed", "agent")


def test_the_cli_takes_the_kind_flags_and_prompts_for_the_rest(
    incident_kind: KindSpec, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = iter([IMPACT, FOLLOWUPS[0], ""])
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return next(answers)

    monkeypatch.setattr("ctxkeeper.cli.app._interactive", lambda: True)
    monkeypatch.setattr("builtins.input", ask)
    assert main(["--project-dir", store.root, "add", "incident", "--title", TITLE]) == 0
    assert asked == [
        "impact: who it hurt and for how long: ",
        "follow-up 1 (empty line to finish): ",
        "follow-up 2 (empty line to finish): ",
    ]
    (entry,) = store.load().entries.values()
    assert (entry["title"], entry["impact"], entry["followups"]) == (TITLE, IMPACT, FOLLOWUPS[:1])
    # A flag of another kind's field is refused, naming this kind's own fields.
    code = main(["--project-dir", store.root, "add", "incident", "--rule", "x" * 20])
    assert code == 2


def test_the_floors_of_the_spec_hold(incident_kind: KindSpec) -> None:
    floors = model.contract_floors()
    assert floors["incident"] == {"title": 12, "impact": 30, "followups": 1, "followup": 8}
    with pytest.raises(ValidationError, match=r"followups\[0\]"):
        model.clean_fields(
            "incident", {"title": TITLE, "impact": IMPACT, "followups": ["short"]}, floors
        )
    clean = model.clean_fields(
        "incident", {"title": TITLE, "impact": IMPACT, "followups": FOLLOWUPS}, floors
    )
    assert clean["followups"] == FOLLOWUPS


def test_unregistering_takes_the_kind_away() -> None:
    model.register_kind(INCIDENT)
    try:
        assert "incident" in model.KINDS
        assert model.ID_PATTERN.match("inc-001-abcd")
    finally:
        model.unregister_kind("incident")
    assert "incident" not in model.KINDS
    assert model.ID_PATTERN.match("inc-001-abcd") is None
    assert model.ID_PATTERN.match("dec-001-abcd") is not None


@pytest.mark.parametrize("kind", [["decision"], {"decision": 1}, None, 3, "incident"])
def test_a_value_that_is_no_kind_is_refused_not_raised_on(kind: object) -> None:
    entry = {"id": "dec-001-abcd", "kind": kind, "status": "active", "origin": "user"}
    assert model.stored_problems(entry) == [f"dec-001-abcd: bad kind {kind!r}"]
    assert kind not in model.KINDS
    assert kind not in model.TEXT_FIELDS
    assert model.TEXT_FIELDS.get(kind) is None  # type: ignore[call-overload]
    # The control: a kind is one.
    assert "decision" in model.KINDS
    assert model.TEXT_FIELDS.get("decision") == ("summary", "problem", "why_chosen")


def test_a_kind_is_registered_once_with_a_prefix_of_its_own() -> None:
    from dataclasses import replace

    for spec, wrong in (
        (replace(INCIDENT, name="decision"), "taken"),
        (replace(INCIDENT, prefix="dec"), "taken"),
        (replace(INCIDENT, prefix="INC1"), "three lowercase letters"),
    ):
        with pytest.raises(ValueError, match=wrong):
            model.register_kind(spec)
    assert list(model.KINDS) == ["decision", "constraint", "pipeline"]
    assert dict(model.PREFIX_KIND) == {"dec": "decision", "con": "constraint", "pip": "pipeline"}
    assert model.ID_PATTERN.fullmatch("con-010-acde") is not None
    assert "dec|" in model.ID_PATTERN.pattern or "con|" in model.ID_PATTERN.pattern
