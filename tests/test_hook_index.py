"""The hooks' scope index and delivery ledger, on real stores written by the verbs."""

from __future__ import annotations

import json
import os

import pytest

from ctxkeeper.core import scopeindex
from ctxkeeper.plugin import ledger
from tests.hook_harness import add_constraint, make_store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.scopeindex import Record


def _record(start: str = "", end: str = "") -> Record:
    return ["con-001-abcd", "hard", "rule", "reason", start, end, "api"]


class TestKeys:
    def test_candidates_are_ancestors_and_self(self) -> None:
        assert scopeindex.candidate_keys("a/b/c.py") == ["", "a", "a/b", "a/b/c.py"]
        assert scopeindex.candidate_keys("") == [""]

    def test_shard_is_stable_and_spread(self) -> None:
        # FNV-1a is fixed: another process (the hook) must pick the same shard.
        assert scopeindex.shard_of("api", 1024) == scopeindex.shard_of("api", 1024)
        assert scopeindex.shard_of("", 8) == 2166136261 & 7
        used = {scopeindex.shard_of(f"pkg{n}/mod", 64) for n in range(1000)}
        assert len(used) == 64


class TestValidity:
    NOW = "2026-11-30T09:15:00Z"

    @pytest.mark.parametrize(
        ("start", "end", "valid"),
        [
            pytest.param("", "", True, id="open"),
            pytest.param("2026-11-30", "", True, id="from-today"),
            pytest.param("2026-12-01", "", False, id="from-tomorrow"),
            pytest.param("2026-11-30T09:15:00Z", "", True, id="from-this-second"),
            pytest.param("2026-11-30T09:15:01Z", "", False, id="from-next-second"),
            pytest.param("", "2026-11-30", True, id="until-today-whole-day"),
            pytest.param("", "2026-11-29", False, id="until-yesterday"),
            pytest.param("", "2026-11-30T09:15:00Z", False, id="until-this-second-exclusive"),
            pytest.param("", "2026-11-30T09:16:00Z", True, id="until-next-minute"),
        ],
    )
    def test_window(self, start: str, end: str, valid: bool) -> None:
        assert scopeindex.valid_at(_record(start, end), self.NOW) is valid


class TestIndex:
    def test_store_writes_keep_it_current(self, project: Path) -> None:
        store = make_store(project)
        first = add_constraint(store, scope=["api/"])
        ctx = str(project / ".context")
        meta = json.loads((project / ".context/cache/scope-index/meta.json").read_text())
        assert meta["stamp"] == scopeindex.source_stamp(ctx)
        second = add_constraint(store, scope=["api/v2/"], rule="Version two handlers are async")
        _index, records = scopeindex.lookup(ctx, "api/v2/x.py")
        assert sorted(r[0] for r in records) == sorted([first, second])
        assert [r[0] for r in scopeindex.lookup(ctx, "api/x.py")[1]] == [first]

    def test_hand_edit_makes_it_stale_and_it_is_rebuilt(self, project: Path) -> None:
        store = make_store(project)
        entry_id = add_constraint(store, scope=["api/"])
        path = project / ".context" / "entries.json"
        doc = json.loads(path.read_text())
        doc["entries"][0]["scope"] = ["web/", "./docs/"]
        doc["entries"][0]["valid_until"] = "2099-01-01T10:00:00+00:00"  # not canonical
        path.write_text(json.dumps(doc))
        ctx = str(project / ".context")
        assert scopeindex.lookup(ctx, "api/x.py")[1] == []
        (web,) = scopeindex.lookup(ctx, "web/x.py")[1]
        assert web[0] == entry_id
        assert web[5] == "2099-01-01T10:00:00Z"
        assert scopeindex.lookup(ctx, "docs/a.md")[1][0][0] == entry_id

    @pytest.mark.parametrize(
        ("bound", "indexed"),
        [
            pytest.param("0500-01-01", "", id="out-of-range-ignored"),
            pytest.param("2026-02-30", "", id="impossible-date-ignored"),
            pytest.param("2020-01-01", "2020-01-01", id="control-sane-bound-kept"),
        ],
    )
    def test_bounds_follow_the_read_path(self, project: Path, bound: str, indexed: str) -> None:
        # A bound get_context ignores must not hide the constraint from the gate either.
        from ctxkeeper.read.rank import get_context

        store = make_store(project)
        entry_id = add_constraint(store, scope=["api/"])
        path = project / ".context" / "entries.json"
        doc = json.loads(path.read_text())
        doc["entries"][0]["valid_until"] = bound
        path.write_text(json.dumps(doc))
        (record,) = scopeindex.lookup(str(project / ".context"), "api/x.py")[1]
        assert record[5] == indexed
        results = get_context(store, {"path": "api/x.py"})["results"]
        assert isinstance(results, list)
        delivered = [r["id"] for r in results if isinstance(r, dict)]
        assert (entry_id in delivered) is (indexed == "")

    def test_only_active_constraints_with_sane_ids(self, project: Path) -> None:
        store = make_store(project)
        add_constraint(store, scope=["api/"])
        add_constraint(store, agent=True, scope=["api/"], rule="Proposed rule about the API")
        path = project / ".context" / "entries.json"
        doc = json.loads(path.read_text())
        odd = dict(doc["entries"][0], id="con-9\nd evil")
        doc["entries"].append(odd)
        path.write_text(json.dumps(doc))
        records = scopeindex.lookup(str(project / ".context"), "api/a.py")[1]
        assert [r[0] for r in records] == [doc["entries"][0]["id"]]

    def test_shards_grow_with_the_store_and_old_ones_go(self, project: Path) -> None:
        ctx = str(project / ".context")
        make_store(project)
        small = scopeindex.write_index(ctx, [])
        assert small.shards == 8
        entries: list[JSONObject] = [
            {"id": f"con-{n:03d}-abcd", "kind": "constraint", "status": "active",
             "hardness": "soft", "rule": "r", "reason": "why", "scope": [f"p{n}/"]}
            for n in range(1000)
        ]  # fmt: skip
        big = scopeindex.write_index(ctx, entries)
        assert big.shards == 32
        names = os.listdir(project / ".context/cache/scope-index")
        assert sorted(names) == ["meta.json", "n32"]
        assert big.covering("p999/x.py") is not None
        assert [r[0] for r in big.covering("p999/x.py") or []] == ["con-999-abcd"]

    def test_missing_or_torn_shard_is_rebuilt(self, project: Path) -> None:
        store = make_store(project)
        entry_id = add_constraint(store, scope=["api/"])
        ctx = str(project / ".context")
        index = scopeindex.open_index(ctx)
        shard = os.path.join(index.dir, f"{scopeindex.shard_of('api', index.shards)}.json")
        with open(shard, "w") as handle:
            handle.write("{torn")
        assert [r[0] for r in scopeindex.lookup(ctx, "api/a.py")[1]] == [entry_id]
        os.unlink(shard)
        assert [r[0] for r in scopeindex.lookup(ctx, "api/a.py")[1]] == [entry_id]


class TestLedger:
    def test_marks_rearm_and_prune(self, tmp_path: Path) -> None:
        cache = str(tmp_path)
        path = ledger.ledger_path(cache, "sess-1")
        ledger.mark(path, ["a", "b"])
        assert ledger.delivered(path) == {"a", "b"}
        ledger.rearm(path)
        ledger.mark(path, ["c"])
        assert ledger.delivered(path) == {"c"}
        old = ledger.ledger_path(cache, "sess-0")
        ledger.mark(old, ["x"])
        os.utime(old, (0, 0))
        ledger.prune(cache, now=ledger.MAX_AGE_S * 10.0)
        assert not os.path.exists(old)
        assert os.path.exists(path)

    @pytest.mark.parametrize(
        "session", ["../../etc/passwd", "a/b", "", "x" * 300, "naïve"], ids=str
    )
    def test_odd_session_ids_stay_inside(self, tmp_path: Path, session: str) -> None:
        path = ledger.ledger_path(str(tmp_path), session, "agent/../x")
        assert os.path.dirname(path) == os.path.join(str(tmp_path), ledger.LEDGER_DIR)
        assert ledger.ledger_path(str(tmp_path), "plain-id_1").endswith("plain-id_1.log")


ORIGINAL = "Every charge request carries an idempotency key"
COPY = "Charges may be sent twice without any idempotency key"


@pytest.mark.parametrize("copy_first", [False, True], ids=["copy-appended", "copy-prepended"])
def test_a_hand_duplicated_id_reads_the_same_copy_everywhere(
    tmp_path: Path, copy_first: bool
) -> None:
    """With an id twice in entries.json, `show`, SessionStart and the gate deliver one and the
    same copy (the first), so a person reading one sees what the agent is given."""
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT
    from tests.hook_harness import edit, run_hook

    project = tmp_path / "project"
    (project / "src" / "billing").mkdir(parents=True)
    store = make_store(project)
    rule_id = add_constraint(store, rule=ORIGINAL, scope=["src/billing"])
    path = project / ".context" / "entries.json"
    doc = json.loads(path.read_text())
    copy = {**doc["entries"][0], "rule": COPY}
    doc["entries"] = [copy, *doc["entries"]] if copy_first else [*doc["entries"], copy]
    path.write_text(json.dumps(doc, indent=2))
    first, other = (COPY, ORIGINAL) if copy_first else (ORIGINAL, COPY)

    shown = subprocess.run(
        [sys.executable, "-m", "ctxkeeper", "--project-dir", str(project), "show", rule_id],
        capture_output=True, text=True, cwd=REPO_ROOT, check=True,
    ).stdout  # fmt: skip
    start = run_hook(
        "SessionStart", {"session_id": "s1", "hook_event_name": "SessionStart"}, project
    ).context
    gate = run_hook("PreToolUse", edit(project / "src" / "billing" / "x.py"), project).reason
    for delivered in (shown, start, gate):
        assert first in delivered
        assert other not in delivered
