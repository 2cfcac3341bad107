"""The quality scan (read/quality.py), ``ctxkeeper doctor --quality`` and the PreCompact note.

Each heuristic is checked with a flagged entry and an unflagged control in the same result, so
an empty answer fails. Entries are recorded through the real verbs into a real store; values
the verbs refuse (a bound that does not parse) are written into ``entries.json`` by hand, as
a person editing the file would.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from ctxkeeper.core.model import contract_floors
from ctxkeeper.core.store import ENTRIES_FILE, JOURNAL_FILE, Store, render_entries_document
from ctxkeeper.core.text import terms
from ctxkeeper.read import quality
from ctxkeeper.read.quality import Finding, named_paths, scan, summary_line
from ctxkeeper.write.similarity import RESTATEMENT_THRESHOLD, classify, similarity, statement
from ctxkeeper.write.verbs import agent_actor, deprecate_entry, record_entry, user_actor
from tests.conftest import REPO_ROOT, constraint_fields, decision_fields, pipeline_fields
from tests.hook_harness import run_hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject

USER = user_actor()
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
#: A small vocabulary, so that many random statements overlap.
VOCABULARY = """cache token session retry charge refund invoice ledger queue worker deploy build
    test lint schema index key lock timeout batch"""
LONG_REASON = "On 2025-02-11 a retry storm double-charged forty customers at checkout."


#: Phrasings, so that an entry is not listed as missing them where a test is about other advice.
ASKED = ["why do charges get sent twice", "customers double charged on retry"]


def add(store: Store, kind: str = "constraint", *, agent: bool = False, **fields: object) -> str:
    make = {"constraint": constraint_fields, "decision": decision_fields}.get(kind, pipeline_fields)
    actor = agent_actor("s-agent") if agent else USER
    return str(record_entry(store, kind, make(**fields), actor=actor)["id"])


def hand_edit(store: Store, entry_id: str, **changes: object) -> None:
    """Change stored fields the way a person editing ``entries.json`` does."""
    state = store.load()
    # A copy: the loaded state and its entries are the store's (read-only under test).
    edited = {**state.entries[entry_id], **changes}
    copy = replace(state, entries={**state.entries, entry_id: edited})  # type: ignore[dict-item]
    Path(store.path(ENTRIES_FILE)).write_bytes(render_entries_document(copy))


def findings(store: Store, *, instant: datetime = NOW) -> list[Finding]:
    entries = list(store.load().entries.values())
    return scan(entries, floors=store.config().floors, instant=instant)


def flagged(result: list[Finding], code: str) -> list[list[str]]:
    return [finding["ids"] for finding in result if finding["code"] == code]


def flagged_ids(result: list[Finding], code: str) -> set[str]:
    return {entry_id for ids in flagged(result, code) for entry_id in ids}


class TestThinRationale:
    def test_near_the_floor_is_flagged_and_a_full_reason_is_not(self, store: Store) -> None:
        # The constraint reason floor is 40: under 60 characters is near it.
        thin = add(
            store,
            rule="Tabs in Makefile recipes",
            reason="make refuses recipes indented with spaces.",
            tags=["build"],
        )
        full = add(
            store,
            rule="Feature flags are removed within a quarter",
            reason=LONG_REASON,
            tags=["build"],
        )
        result = findings(store)
        assert flagged_ids(result, "thin_rationale") == {thin}
        assert full not in flagged_ids(result, "thin_rationale")
        message = next(f["message"] for f in result if f["code"] == "thin_rationale")
        assert "reason is 42 characters" in message
        assert "floor of 40" in message

    def test_measured_as_a_reader_reads_it(self, store: Store) -> None:
        # Repeated punctuation counts once, as the floors count it: padding does not hide it.
        padded = add(store, reason="make refuses recipes indented with spaces" + "!" * 30)
        plain = add(store, rule="Feature flags are removed within a quarter", reason=LONG_REASON)
        result = findings(store)
        assert padded in flagged_ids(result, "thin_rationale")
        assert plain not in flagged_ids(result, "thin_rationale")

    def test_the_configured_floor_is_the_measure(self, store: Store) -> None:
        entry = add(store, reason=LONG_REASON)  # 71 characters: fine at the contract floor
        other = add(store, "decision")
        raised = contract_floors()
        raised["constraint"]["reason"] = 50  # 1.5x = 75
        entries = list(store.load().entries.values())
        assert entry not in flagged_ids(
            scan(entries, floors=contract_floors(), instant=NOW), "thin_rationale"
        )
        result = scan(entries, floors=raised, instant=NOW)
        assert flagged_ids(result, "thin_rationale") == {entry}
        assert other not in flagged_ids(result, "thin_rationale")

    def test_each_kind_has_its_rationale_field(self, store: Store) -> None:
        short_why = "It reuses the database we already run and needs no new service."
        decision = add(store, "decision", why_chosen=short_why)
        pipeline = add(
            store, "pipeline", purpose="Ship each tagged build to production with a rollback."
        )
        control = add(store, "pipeline", name="Deploy")
        result = findings(store)
        assert {decision, pipeline} <= flagged_ids(result, "thin_rationale")
        assert control not in flagged_ids(result, "thin_rationale")
        assert quality.RATIONALE_FIELDS == {
            "decision": "why_chosen",
            "constraint": "reason",
            "pipeline": "purpose",
        }


class TestNoTags:
    def test_untagged_live_entries_only(self, store: Store) -> None:
        untagged = add(store, tags=[])
        tagged = add(store, rule="Feature flags are removed within a quarter", tags=["billing"])
        retired = add(store, rule="Refunds go through the ledger service", tags=[])
        deprecate_entry(store, retired, "The ledger service was folded into billing.", actor=USER)
        proposed = add(store, "decision", agent=True)
        result = findings(store)
        assert flagged_ids(result, "no_tags") == {untagged, proposed}
        assert tagged not in flagged_ids(result, "no_tags")
        assert retired not in flagged_ids(result, "no_tags")


class TestIsolated:
    def test_links_tags_and_scopes_connect_entries(self, store: Store) -> None:
        shared_a = add(
            store, rule="Feature flags are removed within a quarter", tags=["money"], scope=["a/"]
        )
        shared_b = add(store, rule="Refunds are logged before sending", tags=["money"], scope=[])
        outer = add(store, rule="Auth code is reviewed by two", tags=["x1"], scope=["src/auth/"])
        inner = add(
            store, rule="Login throttles after five tries", tags=["x2"], scope=["src/auth/login.py"]
        )
        # "src/authz" is not inside "src/auth": whole path components.
        alone = add(store, rule="Policies are written in Rego", tags=["x3"], scope=["src/authz/"])
        wide = add(store, rule="Every commit is signed", tags=["x4"], scope=[])
        linked = add(store, rule="Clocks are read in UTC", tags=["x6"], scope=["clock/"])
        linker = add(
            store, rule="Ids are ULIDs everywhere", tags=["x5"], scope=[], related_to=[linked]
        )
        result = findings(store)
        assert flagged_ids(result, "isolated") == {alone, wide}
        for connected in (shared_a, shared_b, outer, inner, linker, linked):
            assert connected not in flagged_ids(result, "isolated")

    def test_a_tag_shared_only_with_a_tombstone_does_not_connect(self, store: Store) -> None:
        live = add(
            store, rule="Feature flags are removed within a quarter", tags=["money"], scope=["pay/"]
        )
        gone = add(store, rule="Refunds go through the ledger", tags=["money"], scope=["ledger/"])
        deprecate_entry(store, gone, "The ledger service was folded into billing.", actor=USER)
        pair_a = add(store, rule="Invoices are immutable once sent", tags=["inv"], scope=["i/"])
        pair_b = add(store, rule="Credit notes correct invoices", tags=["inv"], scope=["c/"])
        result = findings(store)
        assert live in flagged_ids(result, "isolated")
        assert not {gone, pair_a, pair_b} & flagged_ids(result, "isolated")


class TestUnscopedPathRule:
    def test_an_unscoped_rule_naming_a_path_is_flagged(self, store: Store) -> None:
        named = add(store, rule="Never edit files under src/generated/ by hand", scope=[])
        scoped = add(
            store, rule="Never edit files under src/generated/ by hand, ever", scope=["src/"]
        )
        prose = add(
            store,
            rule="Reads and/or writes go through the read/write pool (see v1.2, e.g. Node.js)",
            reason=LONG_REASON + " Details: https://example.com/docs/pool.py",
            scope=[],
        )
        decision = add(
            store, "decision", summary="Generated code lives in src/generated/", scope=[]
        )
        result = findings(store)
        assert flagged_ids(result, "unscoped_path_rule") == {named}
        assert not {scoped, prose, decision} & flagged_ids(result, "unscoped_path_rule")
        message = next(f["message"] for f in result if f["code"] == "unscoped_path_rule")
        assert "src/generated/" in message

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            pytest.param("Edit src/auth/ and settings.py only.", ["src/auth/", "settings.py"]),
            pytest.param("See `src/auth` and ./scripts/run.sh.", ["src/auth", "scripts/run.sh"]),
            pytest.param(
                "The .env file, the Makefile, (api/v2/routes.ts).",
                [".env", "Makefile", "api/v2/routes.ts"],
            ),
            pytest.param("and/or read/write TCP/IP w/o client/server", [], id="slashed-words"),
            pytest.param("v1.2 1.2.3 e.g. i.e. Node.js example.com", [], id="dotted-words"),
            pytest.param("https://x.io/a.py www.x.io/b.py /etc/hosts ~/.bashrc", [], id="urls"),
        ],
    )
    def test_named_paths(self, text: str, expected: list[str]) -> None:
        assert named_paths(text) == expected


class TestLikelyDuplicate:
    def test_a_restatement_is_one_pair_and_a_reversal_is_not(self, store: Store) -> None:
        rule = "Never log full credit card numbers in application logs"
        first = add(store, rule=rule, scope=["billing/"])
        second = add(store, rule=rule.lower() + " at all", scope=["api/"])
        reversal = add(store, rule="Always log full credit card numbers in application logs")
        unrelated = add(store, rule="Database migrations run before the deploy starts")
        result = findings(store)
        pairs = flagged(result, "likely_duplicate")
        assert pairs == [sorted([first, second])]
        assert not {reversal, unrelated} & flagged_ids(result, "likely_duplicate")
        message = next(f["message"] for f in result if f["code"] == "likely_duplicate")
        assert f"ctxkeeper show {min(first, second)}" in message

    def test_only_live_entries_pair(self, store: Store) -> None:
        rule = "Never log full credit card numbers in application logs"
        live = add(store, rule=rule)
        # Control: a live restatement of the same rule does pair.
        again = add(store, rule="never log full credit card numbers in the application logs")
        retired = add(store, rule=rule + " anywhere")
        deprecate_entry(store, retired, "Replaced by the broader rule on card data.", actor=USER)
        assert flagged(findings(store), "likely_duplicate") == [sorted([live, again])]

    def test_a_hook_may_skip_the_check_on_a_large_store(self, store: Store) -> None:
        rule = "Never log full credit card numbers in application logs"
        add(store, rule=rule, tags=[])
        add(store, rule=rule.lower() + " at all", tags=[])
        entries = list(store.load().entries.values())
        full = scan(entries, floors=contract_floors(), instant=NOW, duplicates_up_to=2)
        skipped = scan(entries, floors=contract_floors(), instant=NOW, duplicates_up_to=1)
        assert flagged(full, "likely_duplicate")
        assert not flagged(skipped, "likely_duplicate")
        assert flagged(skipped, "no_tags") == flagged(full, "no_tags") != []
        assert "checks for likely duplicates" in str(summary_line(skipped, duplicates=False))
        assert "checks for likely duplicates" not in str(summary_line(full))

    def test_the_prefix_filter_finds_every_pair_a_full_comparison_finds(self) -> None:
        # A small vocabulary, so many statements overlap and the filter is really exercised.
        rng = random.Random(11)
        words = VOCABULARY.split()
        entries: list[JSONObject] = []
        for n in range(240):
            rule = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 9)))
            if n % 7 == 0 and entries:
                rule = str(rng.choice(entries)["rule"]) + " " + rng.choice(words)
            entries.append(
                {
                    "id": f"con-{n + 1:03d}-{n:04x}",
                    "kind": "constraint",
                    "status": "active",
                    "rule": rule,
                    "reason": "Because " + " ".join(rng.choice(words) for _ in range(8)),
                    "hardness": "soft",
                }
            )
        found = flagged(scan(entries, floors=contract_floors(), instant=NOW), "likely_duplicate")
        expected = []
        for i, a in enumerate(entries):
            for b in entries[i + 1 :]:
                ta, tb = set(terms(statement(a))), set(terms(statement(b)))
                dice = 2 * len(ta & tb) / (len(ta) + len(tb)) if ta and tb else 0.0
                score = similarity(a, b)
                if (
                    dice >= quality.DUPLICATE_TERM_DICE
                    and score >= RESTATEMENT_THRESHOLD
                    and classify(a, b, score) == "likely_restatement"
                ):
                    expected.append(sorted([str(a["id"]), str(b["id"])]))
        assert len(expected) > 10  # the control: the full comparison finds pairs to miss
        assert found == sorted(expected)


class TestValidity:
    def test_unparseable_bounds_on_any_status(self, store: Store) -> None:
        bad_until = add(store)
        bad_from = add(store, rule="Feature flags are removed within a quarter")
        retired = add(store, rule="Refunds go through the ledger")
        inverted = add(store, rule="Invoices are immutable once sent")
        sound = add(store, rule="Credit notes correct invoices", valid_until="2027-01-31")
        deprecate_entry(store, retired, "The ledger service was folded into billing.", actor=USER)
        hand_edit(store, bad_until, valid_until="next week")
        hand_edit(store, bad_from, valid_from=20260101)
        hand_edit(store, retired, valid_until="2026-13-45")
        hand_edit(store, inverted, valid_from="2026-06-01", valid_until="2026-05-01")
        result = findings(store)
        assert flagged_ids(result, "bad_validity") == {bad_until, bad_from, retired, inverted}
        assert sound not in flagged_ids(result, "bad_validity")
        messages = {f["ids"][0]: f["message"] for f in result if f["code"] == "bad_validity"}
        assert "valid_until 'next week' does not parse" in messages[bad_until]
        assert "never valid" in messages[inverted]

    def test_expired_active_entries(self, store: Store) -> None:
        expired = add(store, valid_until="2026-11-30")
        today = add(
            store, rule="Feature flags are removed within a quarter", valid_until="2026-12-01"
        )
        instant = add(
            store, rule="Refunds go through the ledger", valid_until="2026-12-01T11:59:00Z"
        )
        open_ended = add(store, rule="Invoices are immutable once sent")
        proposed = add(
            store, rule="Credit notes correct invoices", valid_until="2026-01-01", agent=True
        )
        result = findings(store, instant=NOW)
        # A bare date holds through the end of that UTC day.
        assert flagged_ids(result, "expired_active") == {expired, instant}
        assert not {today, open_ended, proposed} & flagged_ids(result, "expired_active")
        # The same store a day later: the bare date has passed too.
        later = findings(store, instant=NOW + timedelta(days=1))
        assert today in flagged_ids(later, "expired_active")


class TestSummary:
    def test_counts_in_one_line_and_silence_when_clean(self, store: Store) -> None:
        add(
            store,
            rule="Tabs in Makefile recipes",
            reason="make refuses recipes indented with spaces.",
        )
        add(store, rule="Feature flags are removed within a quarter", tags=[])
        line = summary_line(findings(store))
        assert line is not None
        assert "\n" not in line
        assert "2 entries without tags" in line
        assert "1 thin rationale" in line
        assert line.endswith("(`ctxkeeper doctor --quality` lists them)")
        assert summary_line([]) is None

    def test_findings_come_in_code_order(self, store: Store) -> None:
        add(
            store,
            tags=[],
            valid_until="2026-01-01",
            reason="make refuses recipes indented with spaces.",
        )
        codes = [f["code"] for f in findings(store)]
        assert codes == sorted(codes, key=quality.CODES.index)
        assert {"expired_active", "thin_rationale", "no_tags", "isolated"} <= set(codes)


# -- the CLI, as a person runs it ---------------------------------------------------------


def cli(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *argv, "--project-dir", str(project)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": REPO_ROOT},
        timeout=60,
        check=False,
    )


class TestDoctorQuality:
    def test_json_lists_findings_and_exits_zero(self, project: Path, store: Store) -> None:
        thin = add(
            store,
            reason="make refuses recipes indented with spaces.",
            tags=["build"],
            asked_as=ASKED,
        )
        fine = add(
            store,
            rule="Feature flags are removed within a quarter",
            reason=LONG_REASON,
            tags=["build"],
            asked_as=ASKED,
        )
        hand_edit(store, fine, valid_until="soon")
        before = {
            name: Path(store.path(name)).read_bytes() for name in (ENTRIES_FILE, JOURNAL_FILE)
        }
        proc = cli(project, "doctor", "--quality", "--json")
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert report["counts"] == {"bad_validity": 1, "thin_rationale": 1}
        assert (report["entries"], report["live"]) == (2, 2)
        assert [(f["code"], f["ids"]) for f in report["findings"]] == [
            ("bad_validity", [fine]),
            ("thin_rationale", [thin]),
        ]
        # Read-only: nothing was journaled, not even the hand edit (plain doctor does that).
        after = {name: Path(store.path(name)).read_bytes() for name in (ENTRIES_FILE, JOURNAL_FILE)}
        assert after == before

    def test_text_groups_by_code_and_shows_stored_text_visibly(
        self, project: Path, store: Store
    ) -> None:
        entry = add(store, tags=[], asked_as=ASKED)
        add(store, rule="Feature flags are removed within a quarter", tags=[], asked_as=ASKED)
        hand_edit(store, entry, valid_until="\x1b[31mred")
        proc = cli(project, "doctor", "--quality")
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert "no_tags: 2 entries without tags" in lines
        assert "bad_validity: 1 entry with a bad validity bound" in lines
        assert lines.index("bad_validity: 1 entry with a bad validity bound") < lines.index(
            "no_tags: 2 entries without tags"
        )
        assert sum(line.startswith("  - ") for line in lines) == 3
        assert "\x1b" not in proc.stdout
        assert "'\\x1b[31mred'" in proc.stdout  # the stored value, escaped
        assert "advice, nothing is broken" in lines[-1]

    def test_a_clean_store_says_ok(self, project: Path, store: Store) -> None:
        add(store, tags=["billing"], asked_as=ASKED)
        add(store, rule="Refunds are logged before sending", tags=["billing"], asked_as=ASKED)
        proc = cli(project, "doctor", "--quality")
        assert (proc.returncode, proc.stdout.strip()) == (
            0,
            "ok: no quality findings in 2 live entries",
        )
        # Control: plain doctor still checks integrity.
        plain = cli(project, "doctor")
        assert plain.returncode == 0
        assert "journal chain verified" in plain.stdout

    def test_lists_active_entries_without_asked_as_with_the_fix(
        self, project: Path, store: Store
    ) -> None:
        bare = add(store, tags=["billing"])
        asked = add(
            store, rule="Refunds are logged before sending", tags=["billing"], asked_as=ASKED
        )
        # An agent's proposal is not yet in force: it is reviewed whole, phrasings and all.
        proposed = add(
            store,
            rule="Invoices are numbered without gaps per year",
            tags=["billing"],
            agent=True,
        )
        report = json.loads(cli(project, "doctor", "--quality", "--json").stdout)
        assert report["counts"] == {"no_asked_as": 1}
        assert [f["ids"] for f in report["findings"]] == [[bare]]
        assert asked not in str(report)
        assert proposed not in str(report)
        lines = cli(project, "doctor", "--quality").stdout.splitlines()
        assert lines[0] == "no_asked_as: 1 entry without asked_as"
        assert bare in lines[1]
        assert "--asked-as TEXT" in lines[1]
        assert "update_entry" in lines[1]

    def test_quality_with_repair_is_a_usage_error(self, project: Path, store: Store) -> None:
        proc = cli(project, "doctor", "--quality", "--repair")
        assert proc.returncode == 2
        assert "--quality only reads" in proc.stderr


# -- the hooks, as Claude Code starts them --------------------------------------------------


class TestCompactionNote:
    def test_pre_compact_shows_one_line_of_counts(self, project: Path, store: Store) -> None:
        add(store, reason="make refuses recipes indented with spaces.", tags=["build"])
        add(store, rule="Never edit src/generated/ by hand", scope=[], tags=["build"])
        result = run_hook("PreCompact", {"session_id": "s1", "trigger": "auto"}, project)
        assert result.returncode == 0
        answer = result.answer
        assert set(answer) == {"systemMessage"}  # nothing for the model, nothing blocking
        message = str(answer["systemMessage"])
        assert "\n" not in message
        assert "1 thin rationale" in message
        assert "1 unscoped constraint naming a path" in message
        assert "`ctxkeeper doctor --quality`" in message

    def test_pre_compact_is_silent_when_nothing_is_found(self, project: Path, store: Store) -> None:
        add(store, tags=["billing"])
        quiet_id = add(store, rule="Refunds are logged before sending", tags=["billing"])
        quiet = run_hook("PreCompact", {"session_id": "s1", "trigger": "auto"}, project)
        assert (quiet.returncode, quiet.stdout) == (0, "")
        # Control: the same store with one finding speaks.
        hand_edit(store, quiet_id, tags=[])
        noisy = run_hook("PreCompact", {"session_id": "s1", "trigger": "auto"}, project)
        assert "entry without tags" in str(noisy.answer["systemMessage"])

    def test_a_failing_scan_leaves_session_start_whole(
        self, project: Path, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        add(store, tags=[])

        def broken(*_args: object, **_kwargs: object) -> list[Finding]:
            raise RuntimeError("scan exploded")

        payload: JSONObject = {"session_id": "s1", "source": "compact"}
        ok = run_hook("SessionStart", payload, project, inprocess=True)
        assert "quality scan" in str(ok.answer["systemMessage"])  # control
        monkeypatch.setattr(quality, "scan", broken)
        result = run_hook("SessionStart", payload, project, inprocess=True)
        assert result.returncode == 0
        assert "ctxkeeper project memory" in result.context
        assert "quality scan" not in result.stdout
        log = Path(store.dir, "cache", "hook-errors.log").read_text()
        assert "quality scan failed: RuntimeError: scan exploded" in log


def test_the_benchmark_runs_at_a_tiny_size() -> None:
    """bench/quality.py cannot rot: it runs, and its duplicate check agrees with every pair."""
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO_ROOT, "bench", "quality.py"),
            *("--entries", "60", "--hook-entries", "30", "--runs", "1", "--check-pairs", "120"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "60 entries: scan" in proc.stdout
    assert "same: True" in proc.stdout
    assert "PreCompact hook at 30 entries" in proc.stdout


def test_the_compaction_note_counts_what_stale_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note's "not verified for 90+ days" is the active part of `stale --days 90`."""
    import time

    from ctxkeeper.plugin.sessionhooks import UNVERIFIED_DAYS, _quality_notes
    from ctxkeeper.read.drift import stale_entries

    store = Store.open(str(tmp_path))
    store.init()
    record_entry(store, "constraint", constraint_fields(), actor=user_actor())
    record_entry(store, "decision", decision_fields(), actor=agent_actor("s1"))  # proposed
    assert not any("not verified" in note for note in _quality_notes(store, "SessionStart"))
    real = time.time()
    monkeypatch.setattr(time, "time", lambda: real + (UNVERIFIED_DAYS + 1) * 86400)
    assert stale_entries(store, UNVERIFIED_DAYS)["total"] == 2  # both, the proposed one too
    notes = _quality_notes(store, "SessionStart")
    assert f"1 not verified for {UNVERIFIED_DAYS}+ days" in notes
