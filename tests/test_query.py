from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxkeeper.core import times
from ctxkeeper.core.errors import UsageError
from ctxkeeper.core.store import Store
from ctxkeeper.read.query import query_entries
from ctxkeeper.write.verbs import (
    agent_actor,
    deprecate_entry,
    record_entry,
    update_entry,
    user_actor,
)
from tests.conftest import constraint_fields, decision_fields, pipeline_fields

USER = user_actor()


@pytest.fixture
def filled(store: Store) -> dict[str, str]:
    ids = {
        "hard": record_entry(
            store, "constraint", constraint_fields(tags=["billing", "payments"]), actor=USER
        ),
        "soft": record_entry(
            store,
            "constraint",
            constraint_fields(
                rule="Prefer cursor pagination on list endpoints",
                reason="Offset pagination timed out on merchants with a million orders in 2025.",
                hardness="soft",
                scope=["src/api/"],
                tags=["api"],
            ),
            actor=USER,
        ),
        "agent": record_entry(
            store, "decision", decision_fields(tags=["scheduler"]), actor=agent_actor()
        ),
        "pipe": record_entry(
            store, "pipeline", pipeline_fields(valid_until="2026-01-31"), actor=USER
        ),
    }
    return {name: str(result["id"]) for name, result in ids.items()}


def found(store: Store, **arguments: object) -> list[str]:
    result: Any = query_entries(store, arguments)
    assert result["total"] == len(result["results"])
    return sorted(item["id"] for item in result["results"])


class TestPredicates:
    def test_no_predicate_returns_everything(self, store: Store, filled: dict[str, str]) -> None:
        assert found(store) == sorted(filled.values())

    @pytest.mark.parametrize(
        ("arguments", "expected"),
        [
            pytest.param({"kinds": ["constraint"]}, ["hard", "soft"], id="kinds"),
            pytest.param({"status": ["proposed"]}, ["agent"], id="status"),
            pytest.param({"status": "active"}, ["hard", "pipe", "soft"], id="status-string"),
            pytest.param({"origin": ["agent"]}, ["agent"], id="origin"),
            pytest.param({"hardness": "soft"}, ["soft"], id="hardness"),
            pytest.param({"tags_any": ["api", "scheduler"]}, ["agent", "soft"], id="tags-any"),
            pytest.param({"tags_all": ["billing", "payments"]}, ["hard"], id="tags-all"),
            pytest.param({"tags_all": ["billing", "api"]}, [], id="tags-all-none"),
            pytest.param({"scope": ["src/api"]}, ["soft"], id="scope-exact"),
            # Project-wide entries (empty scope) cover every path; src/api/ covers neither.
            pytest.param(
                {"covers_path": "src/billing/refund.py"},
                ["agent", "hard", "pipe"],
                id="covers-path",
            ),
            pytest.param(
                {"covers_path": "src/billing_legacy/refund.py"}, ["agent", "pipe"], id="covers-trap"
            ),
            pytest.param({"text": ["pagination", "MILLION"]}, ["soft"], id="text-and"),
            pytest.param({"text": ["pagination", "advisory"]}, [], id="text-and-none"),
            pytest.param(
                {"as_of": "2026-01-31T23:00:00Z", "kinds": ["pipeline"]},
                ["pipe"],
                id="as-of-inside",
            ),
            pytest.param({"as_of": "2026-02-01", "kinds": ["pipeline"]}, [], id="as-of-after"),
        ],
    )
    def test_exact_filters(
        self,
        store: Store,
        filled: dict[str, str],
        arguments: dict[str, object],
        expected: list[str],
    ) -> None:
        assert found(store, **arguments) == sorted(filled[name] for name in expected)

    def test_supersession_links(self, store: Store, filled: dict[str, str]) -> None:
        new = str(
            record_entry(
                store,
                "constraint",
                constraint_fields(
                    rule="Charge requests reuse the order id as their idempotency key",
                    reason="Generated keys were lost on worker restarts and double-charged customers again.",
                ),
                actor=USER,
                supersedes=[filled["hard"]],
            )["id"]
        )
        assert found(store, supersedes=filled["hard"]) == [new]
        assert found(store, superseded_by=new) == [filled["hard"]]
        assert filled["hard"] in found(store, status=["superseded"])

    def test_since_and_before_use_updated_at(self, store: Store, filled: dict[str, str]) -> None:
        assert found(store, since="2000-01-01") == sorted(filled.values())
        assert found(store, before="2000-01-01") == []

    def test_limit_and_total(self, store: Store, filled: dict[str, str]) -> None:
        result: Any = query_entries(store, {"limit": 2})
        assert result["total"] == 4
        assert len(result["results"]) == 2
        assert result["truncated"] is True

    @pytest.mark.parametrize(
        "arguments",
        [
            pytest.param({"limit": 0}, id="limit-zero"),
            pytest.param({"kinds": ["memo"]}, id="bad-kind"),
            pytest.param({"since": "last week"}, id="bad-time"),
            pytest.param({"tags_any": [1, 2]}, id="bad-tags"),
        ],
    )
    def test_bad_arguments(self, store: Store, arguments: dict[str, object]) -> None:
        with pytest.raises(UsageError):
            query_entries(store, arguments)


class TestKnownAt:
    def test_known_at_folds_the_journal(
        self, project: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        clock = [times.parse_time("2026-01-01T10:00:00Z", field="t")]
        monkeypatch.setattr(times, "now", lambda: clock[0])
        store = Store.open(str(project))
        store.init()
        soft = str(
            record_entry(store, "constraint", constraint_fields(hardness="soft"), actor=USER)["id"]
        )
        pipe = str(record_entry(store, "pipeline", pipeline_fields(), actor=USER)["id"])
        clock[0] = times.parse_time("2026-03-01T10:00:00Z", field="t")
        update_entry(store, soft, {"hardness": "hard"}, "the rule is now mandatory", actor=USER)
        clock[0] = times.parse_time("2026-05-01T10:00:00Z", field="t")
        deprecate_entry(store, pipe, "The release moved to the platform team's tool.", actor=USER)

        def known(at: str, **filters: object) -> list[str]:
            result: Any = query_entries(store, {"known_at": at, **filters})
            return [e["id"] for e in result["results"]]

        assert known("2025-12-31") == []
        assert known("2026-02-01", hardness="soft") == [soft]
        assert known("2026-02-01", hardness="hard") == []
        assert known("2026-03-01", hardness="hard") == [soft]  # a bare date is the whole day
        assert known("2026-04-01", status=["active"], kinds=["pipeline"]) == [pipe]
        assert known("2026-06-01", status=["deprecated"]) == [pipe]
        now: Any = query_entries(store, {"hardness": "hard"})
        assert [e["id"] for e in now["results"]] == [soft]
