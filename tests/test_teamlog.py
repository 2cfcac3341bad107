"""The fold of team events: parents from journal order, branch tips, the winner rule, status."""

from __future__ import annotations

import itertools

from ctxkeeper.team import teamlog

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject

USER: JSONObject = {"origin": "user", "user": "ana"}
AGENT: JSONObject = {"origin": "agent", "session_id": None}


def _entry(status: str = "active", revision: int = 1, rule: str = "rule text") -> JSONObject:
    return {"id": "con-001-aaaa", "kind": "constraint", "status": status, "rule": rule,
            "revision": revision}  # fmt: skip


def _event(
    name: str,
    after: JSONObject | None,
    *,
    parents: list[str] | None = None,
    at: str = "2026-12-01T10:00:00Z",
    actor: JSONObject = USER,
    op: str = "update",
) -> JSONObject:
    event: JSONObject = {
        "version": 1,
        "event": name * 16,
        "at": at,
        "actor": actor,
        "op": op,
        "id": "con-001-aaaa",
        "after": after,
        "reason": None,
    }
    if parents is not None:
        event["parents"] = [p * 16 for p in parents]
    return event


class TestTeamEvents:
    def test_local_records_follow_the_previous_record_of_their_entry(self) -> None:
        records = [
            _event("a", _entry(), op="record"),
            {**_event("b", _entry(revision=2)), "id": "con-001-aaaa"},
            {**_event("c", _entry()), "id": "dec-001-bbbb"},
            _event("d", _entry(revision=3)),
        ]
        events = teamlog.team_events(records)
        assert [e["parents"] for e in events] == [[], ["a" * 16], [], ["b" * 16]]
        assert all("seq" not in e and "before" not in e for e in events)

    def test_an_imported_record_keeps_its_parents_and_a_resolution_is_not_shared(self) -> None:
        resolution: JSONObject = {
            **_event("r", _entry(revision=2)),
            "op": "import",
            "resolves": ["b" * 16, "c" * 16],
        }
        records: list[JSONObject] = [
            _event("a", _entry(), op="record"),
            _event("b", _entry(revision=2), parents=["a"]),
            _event("c", _entry(revision=2), parents=["a"]),
            resolution,
            _event("d", _entry(revision=3)),
        ]
        events = teamlog.team_events(records)
        assert [str(e["event"])[0] for e in events] == ["a", "b", "c", "d"]
        # The write after the import follows both tips it resolved.
        assert events[-1]["parents"] == ["b" * 16, "c" * 16]


class TestResolve:
    def test_the_higher_revision_wins_and_the_loser_stays_a_tip(self) -> None:
        root = _event("a", _entry(), op="record")
        ours = _event("b", _entry(revision=3, rule="ours"), parents=["a"])
        theirs = _event(
            "c", _entry(revision=2, rule="theirs"), parents=["a"], at="2026-12-02T00:00:00Z"
        )
        value, tips = teamlog.resolve([root, ours, theirs], "agent")
        assert value is not None
        assert value["rule"] == "ours"
        assert tips == ["b" * 16, "c" * 16]

    def test_an_ending_beats_a_live_version_of_any_revision(self) -> None:
        root = _event("a", _entry(), op="record")
        retired = _event("b", _entry("deprecated", 2), parents=["a"], op="deprecate")
        reasserted = _event("c", _entry(revision=5, rule="re-asserted"), parents=["a"])
        for order in itertools.permutations([root, retired, reasserted]):
            value, _ = teamlog.resolve(list(order), "agent")
            assert value is not None
            assert value["status"] == "deprecated"

    def test_a_later_change_that_followed_the_tombstone_wins_over_it(self) -> None:
        root = _event("a", _entry(), op="record")
        retired = _event("b", _entry("deprecated", 2), parents=["a"], op="deprecate")
        lifted = _event("c", _entry("proposed", 3), parents=["b"], op="lift")
        value, tips = teamlog.resolve([root, retired, lifted], "agent")
        assert value is not None
        assert value["status"] == "proposed"
        assert tips == ["c" * 16]

    def test_a_purge_wins_and_leaves_nothing(self) -> None:
        root = _event("a", _entry(), op="record")
        purged = _event("b", None, parents=["a"], op="purge")
        updated = _event("c", _entry(revision=9), parents=["a"])
        assert teamlog.resolve([updated, purged, root], "agent")[0] is None
        assert teamlog.resolve([root, updated], "agent")[0] is not None  # the control

    def test_ties_fall_to_time_then_identity_in_any_order(self) -> None:
        root = _event("a", _entry(), op="record")
        early = _event(
            "b", _entry(revision=2, rule="early"), parents=["a"], at="2026-12-01T11:00:00Z"
        )
        late = _event(
            "c", _entry(revision=2, rule="late"), parents=["a"], at="2026-12-01T12:00:00Z"
        )
        same = _event(
            "d", _entry(revision=2, rule="same time"), parents=["a"], at="2026-12-01T12:00:00Z"
        )
        results = {
            str((teamlog.resolve(list(order), "agent")[0] or {}).get("rule"))
            for order in itertools.permutations([root, early, late, same])
        }
        assert results == {"same time"}  # "d" * 16 > "c" * 16 at the same time

    def test_looping_parents_still_fold(self) -> None:
        one = _event("a", _entry(revision=1), parents=["b"])
        two = _event("b", _entry(revision=2), parents=["a"])
        value, _ = teamlog.resolve([one, two], "agent")
        assert value is not None
        assert value["revision"] == 2


class TestJustifiedStatus:
    def test_active_without_a_person_arrives_proposed(self) -> None:
        agent_only = [_event("a", _entry(), op="record", actor=AGENT)]
        with_person = [*agent_only, _event("b", _entry(revision=2), parents=["a"], op="approve")]
        assert (teamlog.resolve(agent_only, "agent")[0] or {}).get("status") == "proposed"
        assert (teamlog.resolve(with_person, "agent")[0] or {}).get("status") == "active"

    def test_review_off_trusts_the_agent_and_tombstones_need_no_person(self) -> None:
        agent_only = [_event("a", _entry(), op="record", actor=AGENT)]
        retired = [_event("a", _entry("deprecated"), op="record", actor=AGENT)]
        assert (teamlog.resolve(agent_only, "off")[0] or {}).get("status") == "active"
        assert (teamlog.resolve(retired, "agent")[0] or {}).get("status") == "deprecated"


def test_fold_is_the_same_for_every_order_of_the_same_events() -> None:
    events = [
        _event("a", _entry(), op="record"),
        _event("b", _entry(revision=2, rule="b"), parents=["a"]),
        _event("c", _entry(revision=2, rule="c"), parents=["a"]),
        {**_event("d", _entry(rule="other")), "id": "dec-002-cccc", "parents": []},
    ]
    folds = [teamlog.fold(list(order), "agent") for order in itertools.permutations(events)]
    assert all(fold == folds[0] for fold in folds)
    assert sorted(folds[0]) == ["con-001-aaaa", "dec-002-cccc"]


class TestPendingChangesAcrossBranches:
    def _with_change(self, revision: int, change: str) -> JSONObject:
        return {
            **_entry(revision=revision),
            "pending_changes": [{"change": change, "op": "update"}],
        }

    def test_a_proposal_on_the_losing_tip_is_carried_to_the_winner(self) -> None:
        root = _event("a", _entry(), op="record")
        proposed = _event("b", self._with_change(1, "chg-00000001"), parents=["a"], actor=AGENT)
        edited = _event("c", _entry(revision=2, rule="edited"), parents=["a"])
        value, _ = teamlog.resolve([root, proposed, edited], "agent")
        assert value is not None
        assert value["rule"] == "edited"
        assert value["pending_changes"] == [{"change": "chg-00000001", "op": "update"}]

    def test_a_proposal_the_winner_decided_is_not_carried_back(self) -> None:
        root = _event("a", _entry(), op="record")
        proposed = _event("b", self._with_change(1, "chg-00000001"), parents=["a"], actor=AGENT)
        late = "2026-12-01T12:00:00Z"
        rejected = _event("c", _entry(rule="kept"), parents=["b"], op="reject_change", at=late)
        # A teammate still held the proposal and proposed a second change next to it.
        both: JSONObject = {
            **_entry(),
            "pending_changes": [
                {"change": "chg-00000001", "op": "update"},
                {"change": "chg-00000002", "op": "update"},
            ],
        }
        other = _event("e", both, parents=["b"], actor=AGENT)
        value, tips = teamlog.resolve([root, proposed, rejected, other], "agent")
        assert tips == ["c" * 16, "e" * 16]
        assert value is not None
        assert value["rule"] == "kept"
        # The rejected proposal stays rejected; the one nobody decided survives the merge.
        assert value["pending_changes"] == [{"change": "chg-00000002", "op": "update"}]
