"""``asked_as``, how an entry is asked for: written through every door (MCP over stdio, the
tool call path, the CLI as a person, a teammate's snapshot), refused alike by each, carried by
``show``, ``review --json``, ``history`` and the snapshot, applied directly when an agent's
update changes nothing else, and absent (not empty) from the entries that have none."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxkeeper.core.errors import CtxkeeperError, SnapshotError, StateError
from ctxkeeper.core.store import Store
from ctxkeeper.mcp.toolcall import run_tool
from ctxkeeper.mcp.tools import load_tools
from ctxkeeper.team import snapshot
from ctxkeeper.write import exchange
from ctxkeeper.write.verbs import (
    agent_actor,
    deprecate_entry,
    record_entry,
    update_entry,
    user_actor,
)
from tests.conftest import REPO_ROOT, constraint_fields, decision_fields, snapshot_dir
from tests.mcp_wire import McpSession, child_env, server_command
from tests.terminal import on_terminal, person_env, require_person_ancestry

ASKED = [
    "why do charges get sent twice",
    "customers double charged on retry",
    "do we need an idempotency key for payments",
]
#: A snapshot and config written by the code before asked_as existed (commit bea9506).
PRE_ASKED_AS = Path(__file__).parent / "golden" / "pre_asked_as"
AGENT = agent_actor("s-asked")


def tools_of(store: Store) -> dict[str, Any]:
    return {spec.name: spec for spec in load_tools(store.root)}


def call(store: Store, name: str, arguments: Any) -> Any:
    """One ``tools/call`` as the server runs it: arguments checked against the schema first."""
    return run_tool(tools_of(store)[name], arguments)


def on_wire(session: McpSession, name: str, arguments: Any) -> Any:
    """One ``tools/call`` over stdio; its result read as plain JSON."""
    return session.call(name, arguments)


def cli(project: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a person runs it, outside any agent."""
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *argv, "--project-dir", project],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=REPO_ROOT,
        env=person_env(COLUMNS="100", NO_COLOR="1"),
        timeout=60,
        check=False,
    )


def set_review(store: Store, policy: str) -> None:
    path = store.path("config.json")
    config = json.loads(Path(path).read_text(encoding="utf-8"))
    Path(path).write_text(json.dumps({**config, "review": policy}), encoding="utf-8")


def persons_rule(store: Store, **fields: object) -> str:
    recorded = record_entry(store, "constraint", constraint_fields(**fields), actor=user_actor())
    return str(recorded["id"])


class TestTheModel:
    def test_kept_in_field_order_and_left_out_when_empty(self, store: Store) -> None:
        with_it = persons_rule(store, asked_as=[" why do charges get sent twice ", *ASKED])
        entry = store.get(with_it)
        # Trimmed, a repeat kept once, between the kind's own fields and the common ones.
        assert entry["asked_as"] == ASKED
        keys = list(entry)
        assert keys.index("hardness") < keys.index("asked_as") < keys.index("scope")
        without = persons_rule(store, rule="Refunds are logged before they are sent", asked_as=[])
        assert "asked_as" not in store.get(without)
        stored = Path(store.path("entries.json")).read_text(encoding="utf-8")
        assert stored.count('"asked_as"') == 1

    @pytest.mark.parametrize(
        ("asked_as", "named"),
        [
            (["ok phrasing", "no"], "asked_as[1]"),
            (["x" * 121], "asked_as[0]"),
            ([f"phrasing number {n}" for n in range(9)], "asked_as"),
            ("one phrasing, not a list", "asked_as"),
            ([3], "asked_as"),
        ],
    )
    def test_refused_with_the_field_named_and_nothing_written(
        self, store: Store, asked_as: object, named: str
    ) -> None:
        # The control: the limits themselves are allowed.
        limits = ["abc", "y" * 120, *(f"phrasing number {n}" for n in range(6))]
        assert store.get(persons_rule(store, asked_as=limits))["asked_as"] == limits
        before = snapshot_dir(store.dir)
        with pytest.raises(CtxkeeperError) as refused:
            persons_rule(store, rule="Refunds are logged before they are sent", asked_as=asked_as)
        assert getattr(refused.value, "field", None) == named
        assert snapshot_dir(store.dir) == before

    def test_a_secret_in_a_phrasing_is_refused_naming_it(self, store: Store) -> None:
        secret = "why does AKIAIOSFODNN7EXAMPLQ fail to deploy"
        with pytest.raises(CtxkeeperError) as refused:
            persons_rule(store, asked_as=["how do deploys authenticate", secret])
        assert refused.value.code == "secret_detected"
        assert "asked_as[1]" in str(refused.value)
        assert "AKIA" not in str(refused.value)
        assert store.load().entries == {}


class TestMcp:
    def test_recorded_and_updated_over_stdio(self, project: Path) -> None:
        session = McpSession(server_command("real", str(project)), env=child_env())
        try:
            listed: Any = session.request("tools/list", {})["result"]
            record = next(t for t in listed["tools"] if t["name"] == "record_entry")
            assert record["inputSchema"]["properties"]["asked_as"]["type"] == "array"
            assert "asked_as: 3-6 ways" in record["description"]
            recorded = on_wire(
                session,
                "record_entry",
                {"kind": "decision", **decision_fields(), "asked_as": ASKED},
            )
            assert not recorded["isError"], recorded
            entry_id = recorded["structuredContent"]["id"]
            assert recorded["structuredContent"]["entry"]["asked_as"] == ASKED
            more = [*ASKED, "which queue do background jobs use"]
            updated = on_wire(
                session,
                "update_entry",
                {"id": entry_id, "updates": {"asked_as": more}, "reason": "how ops ask it"},
            )
            assert updated["structuredContent"]["changed"] == ["asked_as"]
            got = on_wire(session, "get_entry", {"id": entry_id})["structuredContent"]
            assert got["entry"]["asked_as"] == more
            bad = on_wire(
                session,
                "record_entry",
                {
                    "kind": "decision",
                    **decision_fields(summary="Another decision"),
                    "asked_as": [1],
                },
            )
            assert bad["isError"] is True
        finally:
            session.close()

    def test_the_tool_call_path_checks_the_shape_first(self, store: Store) -> None:
        refused = call(
            store, "record_entry", {"kind": "decision", **decision_fields(), "asked_as": "x"}
        )
        assert refused["isError"] is True
        assert "asked_as" in json.dumps(refused)
        assert store.load().entries == {}
        done = call(
            store, "record_entry", {"kind": "decision", **decision_fields(), "asked_as": ASKED}
        )
        assert done["isError"] is False
        assert store.get(str(done["structuredContent"]["id"]))["asked_as"] == ASKED


class TestReviewPolicy:
    """Under ``"review": "agent"`` an agent's change to an entry in force waits for a person,
    except one that changes only ``asked_as``: phrasings change no rule."""

    def test_phrasings_alone_apply_directly_and_are_journaled(self, store: Store) -> None:
        set_review(store, "agent")
        rule = persons_rule(store)
        result = update_entry(store, rule, {"asked_as": ASKED}, "how on-call asks it", actor=AGENT)
        assert (result["pending"], result["changed"]) == (False, ["asked_as"])
        entry = store.get(rule)
        assert entry["asked_as"] == ASKED
        assert entry["revision"] == 2
        assert "pending_changes" not in entry
        last = store.history(rule)[-1]
        assert (last["op"], last["actor"]) == ("update", AGENT)

    def test_phrasings_with_a_rule_change_stay_pending(self, store: Store) -> None:
        set_review(store, "agent")
        rule = persons_rule(store)
        before = store.get(rule)
        new_rule = "Every charge and refund request carries an idempotency key"
        result = update_entry(
            store, rule, {"asked_as": ASKED, "rule": new_rule}, "refunds too", actor=AGENT
        )
        assert result["pending"] is True
        entry: Any = store.get(rule)
        assert (entry["rule"], entry.get("asked_as")) == (before["rule"], None)
        (change,) = entry["pending_changes"]
        assert change["fields"] == {"asked_as": ASKED, "rule": new_rule}
        assert store.history(rule)[-1]["op"] == "propose_update"

    def test_phrasings_added_directly_do_not_stale_a_pending_change(self, store: Store) -> None:
        from ctxkeeper.core.changes import is_stale

        set_review(store, "agent")
        rule = persons_rule(store)
        update_entry(store, rule, {"tags": ["billing"]}, "group with billing", actor=AGENT)
        update_entry(store, rule, {"asked_as": ASKED}, "how on-call asks it", actor=AGENT)
        entry: Any = store.get(rule)
        (change,) = entry["pending_changes"]
        assert not is_stale(entry, change)
        # The control: a person's change of the rule itself does stale it.
        new_rule = "Every charge and refund request carries an idempotency key"
        update_entry(store, rule, {"rule": new_rule}, "refunds too", actor=user_actor())
        assert is_stale(store.get(rule), change)

    def test_emptied_phrasings_leave_the_entry(self, store: Store) -> None:
        rule = persons_rule(store, asked_as=ASKED)
        result = update_entry(store, rule, {"asked_as": []}, "they misled search", actor=AGENT)
        assert result["changed"] == ["asked_as"]
        assert "asked_as" not in store.get(rule)
        before: Any = store.history(rule)[-1]["before"]
        assert before["asked_as"] == ASKED

    def test_frozen_and_retired_entries_still_refuse(self, store: Store) -> None:
        set_review(store, "agent")
        retired = persons_rule(store)
        deprecate_entry(store, retired, "the provider deduplicates charges now", actor=user_actor())
        old = persons_rule(store, rule="Refunds are logged before they are sent")
        record_entry(
            store,
            "constraint",
            constraint_fields(rule="Refunds are logged and signed before they are sent"),
            actor=user_actor(),
            supersedes=[old],
        )
        for entry_id in (retired, old):
            before = store.read_journal()
            with pytest.raises(StateError):
                update_entry(
                    store, entry_id, {"asked_as": ASKED}, "how on-call asks it", actor=AGENT
                )
            assert store.read_journal() == before
        # The control: a live entry takes them.
        live = persons_rule(store, rule="Card numbers never reach the logs")
        assert (
            update_entry(store, live, {"asked_as": ASKED}, "how it is asked", actor=AGENT)[
                "pending"
            ]
            is False
        )


#: A person's hard rule as ``add constraint`` flags.
CHARGE_RULE = (
    "--rule",
    "Every charge request carries an idempotency key",
    "--reason",
    "On 2025-02-11 a retry storm double-charged forty customers at checkout.",
    "--hardness",
    "hard",
)


class TestCli:
    def test_add_show_history_and_review_json_carry_it(self, store: Store) -> None:
        added = cli(
            store.root,
            "add",
            "constraint",
            *CHARGE_RULE,
            "--asked-as",
            ASKED[0],
            "--asked-as",
            ASKED[1],
            "--json",
        )
        assert added.returncode == 0, added.stderr
        entry_id = json.loads(added.stdout)["id"]
        assert store.get(entry_id)["asked_as"] == ASKED[:2]
        shown = cli(store.root, "show", entry_id)
        assert shown.returncode == 0, shown.stderr
        lines = [line.strip() for line in shown.stdout.splitlines()]
        assert any(line.startswith("asked as") and ASKED[0] in line for line in lines)
        assert f"- {ASKED[1]}" in lines
        history = json.loads(cli(store.root, "history", entry_id, "--json").stdout)
        assert history["history"][0]["after"]["asked_as"] == ASKED[:2]
        # An agent's proposal waits in the review queue with its phrasings.
        proposal = record_entry(
            store,
            "constraint",
            constraint_fields(rule="Card numbers never reach the logs", asked_as=ASKED),
            actor=AGENT,
        )
        listing = json.loads(cli(store.root, "review", "--json").stdout)
        assert ASKED[2] in json.dumps(listing)
        assert str(proposal["id"]) in json.dumps(listing)
        # The control: the person's own entry without phrasings shows no such line.
        plain = persons_rule(store, rule="Refunds are logged before they are sent")
        assert "asked as" not in cli(store.root, "show", plain).stdout

    def test_add_refuses_a_bad_phrasing_and_writes_nothing(self, store: Store) -> None:
        persons_rule(store, rule="Refunds are logged before they are sent")
        before = snapshot_dir(store.dir)
        proc = cli(
            store.root,
            "add",
            "constraint",
            *CHARGE_RULE,
            "--asked-as",
            "ok",
        )
        assert proc.returncode != 0
        assert "asked_as[0]" in proc.stderr
        assert snapshot_dir(store.dir) == before

    @pytest.mark.slow
    def test_a_person_edits_the_phrasings(self, store: Store) -> None:
        require_person_ancestry()
        rule = persons_rule(store)
        argv = [
            "edit",
            rule,
            "--asked-as",
            ASKED[0],
            "--asked-as",
            ASKED[1],
            "--why",
            "how on-call asks",
        ]
        code, out = on_terminal(store.root, argv, b"y\n")
        assert code == 0, out
        assert ASKED[0] in out
        assert store.get(rule)["asked_as"] == ASKED[:2]
        assert store.history(rule)[-1]["actor"] == user_actor()


def _clone_of(tmp_path: Path, name: str, files: Path) -> Store:
    """A teammate's fresh clone holding only the committed files (config and snapshot)."""
    root = tmp_path / name
    (root / ".context").mkdir(parents=True)
    for file in ("config.json", "snapshot.jsonl"):
        shutil.copyfile(files / file, root / ".context" / file)
    return Store.open(str(root))


class TestSnapshot:
    def test_an_old_snapshot_round_trips_its_entries_and_events_unchanged(
        self, tmp_path: Path
    ) -> None:
        """A snapshot written before asked_as (by the code at bea9506, snapshot format 1)
        re-exports every entry and event exactly: only the format's own version marks (the
        header and each entry line's version, issue 24) are new."""
        clone = _clone_of(tmp_path, "clone", PRE_ASKED_AS)
        exchange.import_snapshot(clone, actor=user_actor())
        assert len(clone.load().entries) == 3
        exchange.export_snapshot(clone)

        def payload(data: bytes) -> list[object]:
            lines = [json.loads(line) for line in data.splitlines()[1:]]
            return [line.get("entry", line.get("journal")) for line in lines]

        old = (PRE_ASKED_AS / "snapshot.jsonl").read_bytes()
        new = Path(snapshot.default_path(clone.dir)).read_bytes()
        assert payload(new) == payload(old)
        assert len(payload(old)) > 3
        assert b"asked_as" not in new
        assert b"asked_as" not in Path(clone.path("entries.json")).read_bytes()

    def test_phrasings_travel_to_a_teammate(self, store: Store, tmp_path: Path) -> None:
        rule = persons_rule(store, asked_as=ASKED)
        written = Path(snapshot.default_path(store.dir)).read_bytes()
        assert b'"asked_as"' in written
        theirs = _clone_of(tmp_path, "theirs", Path(store.dir))
        exchange.import_snapshot(theirs, actor=user_actor())
        assert theirs.get(rule)["asked_as"] == ASKED
        assert Path(snapshot.default_path(theirs.dir)).read_bytes() == written

    @pytest.mark.parametrize(
        ("phrasings", "says"),
        [
            ([f"phrasing number {n}" for n in range(9)], "asked_as has 9 phrasings"),
            (["ab"], "asked_as[0]"),
            (["how do deploys log in", "why AKIAIOSFODNN7EXAMPLQ fails"], "asked_as[1]"),
            ([], "asked_as is empty"),
        ],
    )
    def test_an_import_refuses_what_a_write_would(
        self, store: Store, tmp_path: Path, phrasings: list[str], says: str
    ) -> None:
        rule = persons_rule(store, asked_as=ASKED)
        text = Path(snapshot.default_path(store.dir)).read_text(encoding="utf-8")
        forged = text.replace(json.dumps(ASKED, separators=(",", ":")), json.dumps(phrasings))
        assert forged != text
        theirs = _clone_of(tmp_path, "theirs", Path(store.dir))
        Path(snapshot.default_path(theirs.dir)).write_text(forged, encoding="utf-8")
        before = snapshot_dir(theirs.dir) if os.path.exists(theirs.path("entries.json")) else None
        with pytest.raises((SnapshotError, CtxkeeperError)) as refused:
            exchange.import_snapshot(theirs, actor=user_actor())
        assert says in str(refused.value)
        assert "AKIA" not in str(refused.value)
        if before is not None:
            assert snapshot_dir(theirs.dir) == before
        assert rule not in (
            theirs.load().entries if os.path.exists(theirs.path("entries.json")) else {}
        )
