"""The hook scripts as Claude Code runs them: real subprocesses on a store made with the verbs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import ClassVar

import pytest

from tests.conftest import REPO_ROOT, snapshot_dir
from tests.hook_harness import (
    HOOKS_DIR,
    SCRIPTS,
    add_constraint,
    bash,
    edit,
    hook_env,
    make_store,
    run_hook,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.store import Store


def _rule(n: int) -> str:
    return f"Handler module number {n} validates every request body against its schema"


@pytest.fixture(params=[False, True], ids=["subprocess", "inprocess"])
def inprocess(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def api_store(project: Path) -> Store:
    store = make_store(project)
    add_constraint(store, scope=["api/"], rule="API handlers validate the request schema first")
    add_constraint(
        store,
        scope=["api/users.py"],
        hardness="soft",
        rule="User lookups go through the cached repository",
        reason="Direct queries from the users module overloaded the primary database in May.",
    )
    return store


def _ids(store: Store) -> dict[str, str]:
    """Rule text -> id, to name entries in assertions."""
    return {str(e["rule"]): str(e["id"]) for e in store.load().entries.values()}


class TestGate:
    def test_first_edit_denied_then_reissued_edit_passes(
        self, project: Path, api_store: Store, inprocess: bool
    ) -> None:
        ids = _ids(api_store)
        hard = ids["API handlers validate the request schema first"]
        soft = ids["User lookups go through the cached repository"]
        target = project / "api" / "users.py"
        first = run_hook("PreToolUse", edit(target), project, inprocess=inprocess)
        assert first.returncode == 0
        assert first.denied
        assert hard in first.reason
        assert soft in first.reason
        # Framed as stored memory (core/framing.py): our words in the head, the text quoted.
        assert '(hard constraint, scope "api"; recorded by a person in this clone)' in first.reason
        assert '(soft constraint, scope "api/users.py"; recorded by a person' in first.reason
        assert '    rule: "API handlers validate the request schema first"' in first.reason
        assert "may be re-issued" in first.reason
        again = run_hook("PreToolUse", edit(target), project, inprocess=inprocess)
        assert again.returncode == 0
        assert again.stdout == ""

    def test_a_pending_agent_change_leaves_the_gate_on_the_rule_in_force(
        self, project: Path, api_store: Store
    ) -> None:
        from ctxkeeper.write.verbs import agent_actor, deprecate_entry, update_entry

        hard = _ids(api_store)["API handlers validate the request schema first"]
        proposed = update_entry(
            api_store,
            hard,
            {"rule": "API handlers may skip schema validation", "hardness": "soft", "scope": []},
            "Validation is said to be slow on hot endpoints",
            actor=agent_actor("s-agent"),
        )
        deprecate_entry(
            api_store, hard, "The agent thinks the gateway validates already", actor=agent_actor()
        )
        assert proposed["pending"] is True
        first = run_hook("PreToolUse", edit(project / "api" / "orders.py"), project)
        # The person's rule, as recorded, still gates the edit; the proposal is nowhere.
        assert first.denied
        assert "API handlers validate the request schema first" in first.reason
        assert "may skip schema validation" not in first.reason

    def test_soft_only_rides_along_once_and_never_blocks(self, project: Path) -> None:
        store = make_store(project)
        soft = add_constraint(store, scope=["docs/"], hardness="soft")
        first = run_hook("PreToolUse", edit(project / "docs" / "a.md"), project)
        assert not first.denied
        assert "permissionDecision" not in first.specific
        assert soft in first.context
        second = run_hook("PreToolUse", edit(project / "docs" / "b.md"), project)
        assert second.stdout == ""

    def test_one_denial_per_file_however_many_constraints(self, project: Path) -> None:
        store = make_store(project)
        ids = [add_constraint(store, scope=["core/"], rule=_rule(n)) for n in range(7)]
        first = run_hook("PreToolUse", edit(project / "core" / "x.py"), project, inprocess=True)
        assert first.denied
        shown = [i for i in ids if i in first.reason]
        assert len(shown) == 5
        assert '2 more constraints cover it; get_context with path="core/x.py"' in first.reason
        second = run_hook("PreToolUse", edit(project / "core" / "x.py"), project)
        assert second.stdout == ""
        # The two not shown were marked delivered too: another file they govern passes.
        other = run_hook("PreToolUse", edit(project / "core" / "y.py"), project)
        assert other.stdout == ""

    def test_another_session_is_gated_again(self, project: Path, api_store: Store) -> None:
        target = project / "api" / "orders.py"
        assert run_hook("PreToolUse", edit(target, session="s1"), project).denied
        assert run_hook("PreToolUse", edit(target, session="s1"), project).stdout == ""
        assert run_hook("PreToolUse", edit(target, session="s2"), project).denied

    @pytest.mark.parametrize(
        ("tool", "name"),
        [
            pytest.param("Write", "new_module.py", id="write-new-file"),
            pytest.param("NotebookEdit", "analysis.ipynb", id="notebook-path"),
            pytest.param("Edit", "deep/er/still.py", id="nested-new-dirs"),
        ],
    )
    def test_new_files_and_notebooks_are_covered(
        self, project: Path, api_store: Store, tool: str, name: str
    ) -> None:
        target = project / "api" / name
        assert not target.exists()
        assert run_hook("PreToolUse", edit(target, tool=tool), project).denied
        outside = run_hook("PreToolUse", edit(project / "web" / name, tool=tool), project)
        assert outside.stdout == ""

    def test_context_mode_turns_the_gate_off(self, project: Path, api_store: Store) -> None:
        config_path = project / ".context" / "config.json"
        config = json.loads(config_path.read_text())
        config["hard_delivery"] = "context"
        config_path.write_text(json.dumps(config))
        hard = _ids(api_store)["API handlers validate the request schema first"]
        result = run_hook("PreToolUse", edit(project / "api" / "users.py"), project)
        assert not result.denied
        assert "permissionDecision" not in result.specific
        assert hard in result.context
        assert run_hook("PreToolUse", edit(project / "api" / "users.py"), project).stdout == ""
        # Control: back to the gate (config identity changed, so the index is rebuilt).
        config["hard_delivery"] = "gate"
        config_path.write_text(json.dumps(config, indent=1))
        assert run_hook(
            "PreToolUse", edit(project / "api" / "users.py", session="s9"), project
        ).denied

    def test_hard_given_at_session_start_never_gates(self, project: Path) -> None:
        store = make_store(project)
        wide = add_constraint(store, scope=[], rule="Secrets never appear in committed files")
        start = run_hook("SessionStart", {"session_id": "s1", "source": "startup"}, project)
        assert wide in start.context
        assert run_hook("PreToolUse", edit(project / "any.py"), project).stdout == ""
        # Control: a session that did not start through the hook is gated by it.
        assert (
            wide in run_hook("PreToolUse", edit(project / "any.py", session="s2"), project).reason
        )

    def test_proposed_entries_are_never_delivered(self, project: Path) -> None:
        store = make_store(project)
        active = add_constraint(store, scope=["api/"])
        proposed = add_constraint(
            store,
            agent=True,
            scope=["api/"],
            rule="Handlers return problem+json bodies on every error",
            reason="Clients parse error bodies and crashed on the plain-text ones we sent in March.",
        )
        wide_proposed = add_constraint(
            store,
            agent=True,
            scope=[],
            rule="Every module carries a licence header at the top",
            reason="An audit in 2025 flagged files with no licence header as unclear provenance.",
        )
        assert store.get(proposed)["status"] == "proposed"
        gate = run_hook("PreToolUse", edit(project / "api" / "a.py"), project)
        assert active in gate.reason
        assert proposed not in gate.reason
        start = run_hook("SessionStart", {"session_id": "s3", "source": "startup"}, project)
        assert "2 entries awaiting review" in str(start.answer["systemMessage"])
        assert wide_proposed not in start.context
        assert proposed not in start.context
        sub = run_hook("SubagentStart", {"session_id": "s3", "agent_id": "a1"}, project)
        assert active in sub.context
        assert proposed not in sub.context

    def test_scope_is_whole_path_components(self, project: Path) -> None:
        store = make_store(project)
        hooks_rule = add_constraint(store, scope=["hooks/"], rule="Hook scripts stay thin wrappers")
        api_rule = add_constraint(store, scope=["api/"], rule="API handlers validate input first")
        send = run_hook("PreToolUse", edit(project / "api" / "webhooks" / "send.py"), project)
        assert api_rule in send.reason
        assert hooks_rule not in send.reason
        users = run_hook("PreToolUse", edit(project / "api" / "users.py", session="s2"), project)
        assert api_rule in users.reason
        hooks = run_hook("PreToolUse", edit(project / "hooks" / "x.py", session="s3"), project)
        assert hooks_rule in hooks.reason
        legacy = run_hook(
            "PreToolUse", edit(project / "api_legacy" / "x.py", session="s4"), project
        )
        assert legacy.stdout == ""

    def test_validity_window(self, project: Path) -> None:
        store = make_store(project)
        now = add_constraint(store, scope=["m/"], rule="Module m keeps its public API stable")
        today = add_constraint(
            store,
            scope=["m/"],
            rule="Module m is frozen for the release today",
            valid_until=__import__("time").strftime("%Y-%m-%d", __import__("time").gmtime()),
        )
        expired = add_constraint(
            store,
            scope=["m/"],
            rule="Module m waits for the 2020 migration",
            valid_until="2020-01-31",
        )
        future = add_constraint(
            store,
            scope=["m/"],
            rule="Module m follows the 2099 naming scheme",
            valid_from="2099-01-01T00:00:00Z",
        )
        reason = run_hook("PreToolUse", edit(project / "m" / "x.py"), project).reason
        assert now in reason
        assert today in reason
        assert expired not in reason
        assert future not in reason


class TestStoreFiles:
    def test_edits_under_context_are_denied_with_the_tools_to_use(
        self, project: Path, api_store: Store, inprocess: bool
    ) -> None:
        for name in ("entries.json", "config.json", "cache/anything"):
            result = run_hook(
                "PreToolUse",
                edit(project / ".context" / name, tool="Write"),
                project,
                inprocess=inprocess,
            )
            assert result.denied
            for tool in ("record_entry", "update_entry", "deprecate_entry"):
                assert tool in result.reason
        sibling = run_hook("PreToolUse", edit(project / ".contextual" / "x.md"), project)
        assert sibling.stdout == ""

    def test_symlink_into_the_store_is_denied(self, project: Path, api_store: Store) -> None:
        (project / "link").symlink_to(project / ".context")
        assert run_hook("PreToolUse", edit(project / "link" / "entries.json"), project).denied


class TestCompaction:
    def _deliver(self, project: Path) -> None:
        assert run_hook("PreToolUse", edit(project / "api" / "users.py"), project).denied
        assert run_hook("PreToolUse", edit(project / "api" / "users.py"), project).stdout == ""

    def test_session_start_compact_rearms(self, project: Path, api_store: Store) -> None:
        self._deliver(project)
        run_hook("SessionStart", {"session_id": "s1", "source": "resume"}, project)
        assert run_hook("PreToolUse", edit(project / "api" / "users.py"), project).stdout == ""
        run_hook("SessionStart", {"session_id": "s1", "source": "compact"}, project)
        assert run_hook("PreToolUse", edit(project / "api" / "users.py"), project).denied

    def test_pre_compact_rearms_silently(self, project: Path, api_store: Store) -> None:
        self._deliver(project)
        result = run_hook("PreCompact", {"session_id": "s1", "trigger": "auto"}, project)
        assert result.returncode == 0
        # Nothing for the model; at most the person's quality note.
        assert "hookSpecificOutput" not in result.stdout
        assert run_hook("PreToolUse", edit(project / "api" / "users.py"), project).denied

    def test_pre_compact_shows_the_person_a_quality_note(
        self, project: Path, api_store: Store
    ) -> None:
        quiet = run_hook("PreCompact", {"session_id": "s1", "trigger": "auto"}, project)
        add_constraint(
            api_store,
            agent=True,
            scope=["web/"],
            rule="Pages render without client-side JavaScript",
        )
        noted = run_hook("PreCompact", {"session_id": "s1", "trigger": "auto"}, project)
        assert "awaiting review" not in quiet.stdout
        assert "1 entry awaiting review" in json.loads(noted.stdout)["systemMessage"]

    def test_compact_start_shows_the_quality_note(
        self, project: Path, api_store: Store, inprocess: bool
    ) -> None:
        add_constraint(
            api_store,
            agent=True,
            scope=["web/"],
            rule="Pages render without client-side JavaScript",
            reason="Search crawlers indexed blank pages for a month when rendering moved client-side.",
        )
        add_constraint(
            api_store,
            scope=["web/"],
            rule="Tabs in Makefile",
            reason="make refuses recipes indented with spaces.",
        )
        start = run_hook(
            "SessionStart", {"session_id": "s1", "source": "compact"}, project, inprocess=inprocess
        )
        message = str(start.answer["systemMessage"])
        assert "1 entry awaiting review" in message
        assert "1 thin rationale" in message
        assert "`ctxkeeper doctor --quality` lists them" in message
        # Control: after a plain start the note carries the review count only.
        plain = run_hook("SessionStart", {"session_id": "s2", "source": "startup"}, project)
        assert "quality scan" not in str(plain.answer["systemMessage"])


class TestParallel:
    def test_parallel_calls_lose_no_ledger_lines(self, project: Path) -> None:
        store = make_store(project)
        ids = [add_constraint(store, scope=[f"pkg{n}/"], rule=_rule(n)) for n in range(16)]
        script = os.path.join(HOOKS_DIR, SCRIPTS["PreToolUse"])

        def launch() -> list[subprocess.Popen[bytes]]:
            procs = []
            for _ in range(16):
                proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", script],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env=hook_env(project),
                )
                procs.append(proc)
            for n, proc in enumerate(procs):
                assert proc.stdin is not None
                proc.stdin.write(json.dumps(edit(project / f"pkg{n}" / "m.py")).encode())
                proc.stdin.close()
            return procs

        def outputs(procs: list[subprocess.Popen[bytes]]) -> list[bytes]:
            results = []
            for proc in procs:
                assert proc.stdout is not None
                with proc.stdout:
                    results.append(proc.stdout.read())
                assert proc.wait(timeout=60) == 0
            return results

        first = outputs(launch())
        assert all(b'"deny"' in out for out in first)
        ledger_dir = project / ".context" / "cache" / "delivered"
        lines = (ledger_dir / "s1.log").read_text().splitlines()
        assert sorted(lines) == sorted(f"d {i}" for i in ids)
        second = outputs(launch())
        assert second == [b""] * 16


class TestSessionStart:
    def test_byte_identical_for_an_unchanged_store(self, project: Path, api_store: Store) -> None:
        add_constraint(api_store, scope=[], rule="Secrets never appear in committed files")
        add_constraint(
            api_store,
            agent=True,
            scope=["x/"],
            rule="Module x logs through the structured logger",
            reason="Plain prints from module x went missing from the log pipeline for weeks.",
        )
        runs = [
            run_hook("SessionStart", {"session_id": f"s{n}", "source": "startup"}, project).stdout
            for n in range(3)
        ]
        assert runs[0] == runs[1] == runs[2]
        assert "Secrets never appear" in runs[0]
        assert "held back" in runs[0] or "hold back" in runs[0]
        # Control: a changed store changes the output.
        add_constraint(api_store, scope=["y/"], rule="Module y avoids global mutable state")
        after = run_hook("SessionStart", {"session_id": "s9", "source": "startup"}, project)
        assert after.stdout != runs[0]

    def test_no_system_message_when_nothing_awaits_review(
        self, project: Path, api_store: Store, inprocess: bool
    ) -> None:
        start = run_hook(
            "SessionStart", {"session_id": "s1", "source": "startup"}, project, inprocess=inprocess
        )
        assert "systemMessage" not in start.answer
        assert start.specific["hookEventName"] == "SessionStart"
        assert "; nothing awaiting review" in start.context

    def test_ascii_only_output(self, project: Path) -> None:
        store = make_store(project)
        add_constraint(store, scope=["i18n/"], rule="Übersetzungen kommen aus der Datei — immer")
        result = run_hook("PreToolUse", edit(project / "i18n" / "de.po"), project)
        assert result.stdout.isascii()
        assert "Übersetzungen" in result.reason


class TestSubagentStart:
    def test_constraints_only_hard_first(
        self, project: Path, api_store: Store, inprocess: bool
    ) -> None:
        ids = _ids(api_store)
        result = run_hook(
            "SubagentStart", {"session_id": "s1", "agent_id": "a1"}, project, inprocess=inprocess
        )
        text = result.context
        hard = ids["API handlers validate the request schema first"]
        soft = ids["User lookups go through the cached repository"]
        assert text.index(hard) < text.index(soft)
        assert result.specific["hookEventName"] == "SubagentStart"
        # The subagent's own ledger: its edit passes, the main session's is still gated.
        assert (
            run_hook(
                "PreToolUse", edit(project / "api" / "users.py", agent_id="a1"), project
            ).stdout
            == ""
        )
        assert run_hook("PreToolUse", edit(project / "api" / "users.py"), project).denied


class TestPostToolUse:
    @pytest.mark.parametrize(
        ("command", "kind"),
        [
            pytest.param(
                'git commit -m "Switch to WAL mode because readers blocked"',
                "decision",
                id="decision",
            ),
            pytest.param("git commit -m 'We chose httpx over requests'", "decision", id="we-chose"),
            pytest.param('git commit -am "Never log raw tokens"', "constraint", id="rule-am"),
            pytest.param(
                'git -C sub commit --message="Do not import rank in hooks"',
                "constraint",
                id="rule-C",
            ),
            pytest.param(
                "git commit -m \"$(cat <<'EOF'\nUse advisory locks instead of Redis\n\nDetails.\nEOF\n)\"",
                "decision",
                id="heredoc",
            ),
            pytest.param(
                'git add . && git commit -m "Must retry with backoff; decided after outage"',
                "decision or constraint",
                id="both",
            ),
        ],
    )
    def test_decision_like_commit_gets_one_line(
        self, project: Path, api_store: Store, command: str, kind: str, inprocess: bool
    ) -> None:
        before = snapshot_dir(str(project / ".context"))
        payload = bash(command, event="PostToolUse")
        result = run_hook("PostToolUse", payload, project, inprocess=inprocess)
        line = result.context
        assert "\n" not in line
        assert "record_entry" in line
        assert f"reads like a {kind};" in line
        assert snapshot_dir(str(project / ".context")) == before

    @pytest.mark.parametrize(
        "command",
        [
            pytest.param('git commit -m "Fix typo in README"', id="plain-commit"),
            pytest.param('echo "we decided to switch to X because"', id="not-a-commit"),
            pytest.param("git log --grep 'must'", id="git-log"),
            pytest.param("git commit", id="no-message"),
        ],
    )
    def test_ordinary_commands_are_silent(
        self, project: Path, api_store: Store, command: str
    ) -> None:
        result = run_hook(
            "PostToolUse", bash(command, event="PostToolUse"), project, inprocess=True
        )
        assert result.returncode == 0
        assert result.stdout == ""
        control = run_hook(
            "PostToolUse", bash('git commit -m "Always pin versions"', event="PostToolUse"), project
        )
        assert "constraint" in control.context


class TestSilenceWithoutStore:
    PAYLOADS: ClassVar[dict[str, JSONObject]] = {
        "PreToolUse": edit("/nowhere/api/users.py"),
        "PostToolUse": bash('git commit -m "Never do X"', event="PostToolUse"),
        "SessionStart": {"session_id": "s1", "source": "startup"},
        "SubagentStart": {"session_id": "s1", "agent_id": "a"},
        "PreCompact": {"session_id": "s1", "trigger": "manual"},
    }

    @pytest.mark.parametrize("event", sorted(SCRIPTS))
    @pytest.mark.parametrize("via", ["env", "stdin-cwd"])
    def test_every_hook_exits_silently(self, tmp_path: Path, event: str, via: str) -> None:
        bare = tmp_path / "bare"
        bare.mkdir()
        payload = dict(self.PAYLOADS[event], cwd=str(bare))
        env = hook_env(bare if via == "env" else None)
        result = run_hook(event, payload, None, cwd=bare, env=env)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        assert not (bare / ".context").exists()
        # Control: the same hook in a project with a store does its job (or at least runs).
        project = tmp_path / "with-store"
        project.mkdir()
        store = make_store(project)
        # Tagged alike, so the quality scan has nothing to say at PreCompact.
        add_constraint(
            store, scope=["api/"], rule="API handlers validate input first", tags=["safety"]
        )
        add_constraint(
            store, scope=[], rule="Secrets never appear in committed files", tags=["safety"]
        )
        payload = dict(self.PAYLOADS[event], cwd=str(project))
        if event == "PreToolUse":
            payload = edit(project / "api" / "users.py", cwd=str(project))
        env = hook_env(project if via == "env" else None)
        control = run_hook(event, payload, None, cwd=project, env=env)
        assert control.returncode == 0
        # PreCompact speaks only when there is a note for the person.
        assert (control.stdout != "") == (event != "PreCompact")


class TestFailOpen:
    @pytest.mark.parametrize(
        ("stdin", "logged"),
        [
            pytest.param(b"", "stdin is empty", id="empty"),
            pytest.param(b"{not json", "not JSON", id="not-json"),
            pytest.param(b"\xff\xfe\x00garbage", "not JSON", id="bad-bytes"),
            pytest.param(b"[1, 2]", "not an object", id="json-list"),
            pytest.param(
                b'{"session_id": "s1", "tool_name": "Edit"}', "tool_input", id="no-tool-input"
            ),
            pytest.param(
                b'{"session_id": "s1", "tool_name": "Edit", "tool_input": "x"}',
                "tool_input",
                id="tool-input-string",
            ),
            pytest.param(
                b'{"session_id": "s1", "tool_name": "Edit", "tool_input": {"file_path": 7}}',
                "file_path",
                id="path-int",
            ),
            pytest.param(
                b'{"tool_name": "Edit", "tool_input": {"file_path": "/p/api/a.py"}}',
                "session_id",
                id="no-session",
            ),
            pytest.param(
                b'{"session_id": 5, "tool_name": "Edit", "tool_input": {"file_path": "/p/api/a.py"}}',
                "session_id",
                id="session-int",
            ),
            pytest.param(
                b'{"session_id": "s1", "tool_name": "Bash", "tool_input": {"command": ["ls"]}}',
                "command",
                id="bash-command-list",
            ),
            pytest.param(b"[" * 100000 + b"]" * 100000, "not JSON", id="deep-nesting"),
            pytest.param(b"x" * (50 << 20), "not JSON", id="50MB-garbage"),
        ],
    )
    def test_bad_stdin_fails_open_with_one_log_line(
        self, project: Path, api_store: Store, stdin: bytes, logged: str, inprocess: bool
    ) -> None:
        stdin = stdin.replace(b"/p/", str(project).encode() + b"/")
        log = project / ".context" / "cache" / "hook-errors.log"
        result = run_hook("PreToolUse", stdin, project, inprocess=inprocess)
        assert (result.returncode, result.stdout) == (0, "")
        lines = log.read_text().splitlines()
        assert len(lines) == 1
        assert logged in lines[0]
        assert "PreToolUse" in lines[0]
        # Control: a good call in the same project is still answered.
        assert run_hook("PreToolUse", edit(project / "api" / "users.py"), project).denied

    def test_huge_valid_write_is_still_gated(self, project: Path, api_store: Store) -> None:
        payload = edit(project / "api" / "big.py", tool="Write")
        payload["tool_input"] = {
            "file_path": str(project / "api" / "big.py"),
            "content": "x = 1\n" * (8 << 20),  # 48 MB
        }
        assert run_hook("PreToolUse", payload, project).denied

    @pytest.mark.parametrize("event", ["PreToolUse", "SessionStart", "SubagentStart"])
    def test_internal_error_fails_open_and_logs(
        self, project: Path, api_store: Store, event: str
    ) -> None:
        log = project / ".context" / "cache" / "hook-errors.log"
        payload: JSONObject = {"session_id": "s1", "source": "startup", "agent_id": "a"}
        if event == "PreToolUse":
            payload = edit(project / "api" / "users.py")
        # Control first: the intact store gives an answer.
        assert run_hook(event, payload, project).stdout != ""
        (project / ".context" / "entries.json").write_text('{"version": 1, "entries": [')
        payload["session_id"] = "s2"
        result = run_hook(event, payload, project)
        if event == "SessionStart":
            # Fail open, not silent: the person is told in one line (tests/test_silent_failures.py).
            assert (result.returncode, result.stderr) == (0, "")
            assert "memory delivery is off" in str(result.answer["systemMessage"])
        else:
            assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        lines = log.read_text().splitlines()
        assert len(lines) == 1
        assert event in lines[0]

    @pytest.mark.parametrize("planted", ["scope-index", "delivered"])
    def test_planted_symlink_in_cache_is_never_written_through(
        self, project: Path, api_store: Store, tmp_path: Path, planted: str
    ) -> None:
        elsewhere = tmp_path / "elsewhere"
        (elsewhere / "n8").mkdir(parents=True)
        (elsewhere / "n8" / "keep.txt").write_text("mine")
        cache = project / ".context" / "cache"
        if (cache / planted).exists():
            shutil.rmtree(cache / planted)
        (cache / planted).symlink_to(elsewhere)
        if planted == "scope-index":
            (project / ".context" / "config.json").touch()  # stale: the hook would rebuild
        result = run_hook("PreToolUse", edit(project / "api" / "users.py"), project)
        assert sorted(p.name for p in elsewhere.rglob("*")) == ["keep.txt", "n8"]
        if planted == "scope-index":
            # The index is derived: the link is replaced by a real directory and the gate holds.
            assert result.denied
            assert not (cache / planted).is_symlink()
            return
        assert (result.returncode, result.stdout) == (0, "")
        assert "symbolic link" in (cache / "hook-errors.log").read_text()


class TestIsolation:
    SHADOWS = ("ctxkeeper/__init__.py", "ctxkeeper/__main__.py", "json.py", "scope.py", "os.py")

    def test_project_modules_never_shadow_the_plugin(self, project: Path, api_store: Store) -> None:
        marker = project / "SHADOW-IMPORTED"
        for name in self.SHADOWS:
            path = project / name
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n")
        env = hook_env(project, PYTHONPATH=str(project), PYTHONSTARTUP=str(project / "json.py"))
        answers = {}
        calls: list[tuple[str, JSONObject]] = [
            ("PreToolUse", edit(project / "api" / "users.py")),
            ("PostToolUse", bash('git commit -m "Never do X"', event="PostToolUse")),
            ("SessionStart", {"session_id": "s1", "source": "startup"}),
            ("SubagentStart", {"session_id": "s1", "agent_id": "a1"}),
            ("PreCompact", {"session_id": "s1", "trigger": "auto"}),
        ]
        for event, payload in calls:
            answers[event] = run_hook(event, payload, project, cwd=project, env=env)
            assert answers[event].returncode == 0
        bash_answer = run_hook(
            "PreToolUse", bash("ctxkeeper approve x"), project, cwd=project, env=env
        )
        assert not marker.exists(), marker.read_text()
        # Control: each hook did its job from the plugin's own modules.
        assert answers["PreToolUse"].denied
        assert bash_answer.denied
        assert "record_entry" in answers["PostToolUse"].context
        assert "ctxkeeper project memory" in answers["SessionStart"].context
        assert "constraints in force" in answers["SubagentStart"].context
        # Control for the control: the shadow really would run if imported.
        subprocess.run([sys.executable, "-c", "import json"], cwd=project, env=env, check=True)
        assert marker.exists()


class TestImportLight:
    BASELINE = "import json, os, sys, time"
    ALLOWED = frozenset(
        {
            "__future__",
            # json's C half only: `import json` would add re, enum and functools (jsonlite).
            "_json",
            "time",
            "ctxkeeper",
            # The layer packages on the hot path: a docstring each, no imports.
            "ctxkeeper.core",
            "ctxkeeper.plugin",
            "ctxkeeper.plugin.hookio",
            "ctxkeeper.core.jsonlite",
            "ctxkeeper.plugin.editgate",
            "ctxkeeper.core.scopeindex",
            # The built-in BLAKE2 the index checks its shards with (hashlib would add ~10 ms).
            "_blake2",
            "ctxkeeper.plugin.ledger",
            "ctxkeeper.core.scope",
            "ctxkeeper.core.errors",
            # How entries are quoted and where their word comes from (jsonlite and os only).
            "ctxkeeper.core.framing",
            "ctxkeeper.core.provenance",
            # The drift cache and the HEAD it is keyed by, read as data (no subprocess).
            "ctxkeeper.core.driftcache",
            "ctxkeeper.core.githead",
            "ctxkeeper.plugin.bashguard",
            "ctxkeeper.plugin.shellwords",
            "ctxkeeper.plugin.shellcmd",
            "ctxkeeper.plugin.bashwrites",
            "ctxkeeper.plugin.commitnote",
        }
    )

    @staticmethod
    def _imported(args: list[str], stdin: bytes, env: dict[str, str]) -> set[str]:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-X", "importtime", *args],
            input=stdin,
            capture_output=True,
            env=env,
            check=True,
        )
        names = set()
        for line in proc.stderr.decode().splitlines():
            if line.startswith("import time:") and "|" in line:
                name = line.rsplit("|", 1)[1].strip()
                if not name.startswith("imported"):
                    names.add(name)
        return names

    @pytest.mark.parametrize(
        ("event", "stale"),
        [
            pytest.param("PreToolUse-edit", False, id="edit"),
            pytest.param("PreToolUse-edit", True, id="edit-rebuilding-index"),
            pytest.param("PreToolUse-bash", False, id="bash"),
            pytest.param("PreToolUse-bash-write", False, id="bash-write"),
            pytest.param("PostToolUse", False, id="post-commit"),
        ],
    )
    def test_hot_path_imports_only_its_own_modules(
        self, project: Path, api_store: Store, event: str, stale: bool
    ) -> None:
        if stale:
            (project / ".context" / "cache" / "scope-index" / "meta.json").unlink()
        env = hook_env(project)
        # What `json`, `os` and `sys` cost themselves (json pulls in `re`); -S keeps site's
        # own imports out of the baseline, so anything else the hook imports shows.
        baseline = self._imported(["-c", self.BASELINE], b"", env)
        payload = {
            "PreToolUse-edit": edit(project / "api" / "users.py"),
            "PreToolUse-bash": bash("ctxkeeper approve x"),
            "PreToolUse-bash-write": bash("sed -i s/a/b/ api/users.py"),
            "PostToolUse": bash('git commit -m "Never log tokens"', event="PostToolUse"),
        }[event]
        script = SCRIPTS[event.split("-")[0]]
        extra = (
            self._imported([os.path.join(HOOKS_DIR, script)], json.dumps(payload).encode(), env)
            - baseline
        )
        assert extra <= self.ALLOWED, sorted(extra - self.ALLOWED)
        # Control: the listing sees the hook's own modules, so a leak would show.
        assert "ctxkeeper.plugin.hookio" in extra

    def test_the_listing_would_catch_a_heavy_import(self, project: Path) -> None:
        env = hook_env(project)
        baseline = self._imported(["-c", self.BASELINE], b"", env)
        code = f"import sys; sys.path.insert(0, {REPO_ROOT!r}); import ctxkeeper.core.store"
        heavy = self._imported(["-c", code], b"", env)
        assert {"datetime", "ctxkeeper.core.store"} <= heavy - baseline


class TestSessionStartWording:
    """What the session-start summary says of a scoped hard rule, and what the gate then says
    of the same rule (issue 25, item 7)."""

    def test_scoped_hard_rule_comes_with_its_reason_and_when_it_arrives(
        self, project: Path
    ) -> None:
        store = make_store(project)
        scoped = add_constraint(store, scope=["db/migrations/"])
        wide = add_constraint(
            store,
            scope=[],
            rule="Secrets never appear in committed files",
            reason="A token committed in 2024 was scraped from the public mirror within an hour.",
        )
        start = run_hook("SessionStart", {"session_id": "s1", "source": "startup"}, project)
        lines = start.context.splitlines()
        at = next(n for n, line in enumerate(lines) if scoped in line and "charge" in line)
        assert lines[at + 1].strip().startswith('reason: "On 2025-02-11 a retry storm')
        assert "first edit of a file in its scope" in lines[at + 2]
        assert "held back" in lines[at + 2]
        # Control: the project-wide rule is listed without that line (its full text follows).
        here = next(n for n, line in enumerate(lines) if wide in line and "Secrets" in line)
        assert "first edit" not in lines[here + 1]
        gate = run_hook("PreToolUse", edit(project / "db" / "migrations" / "1.sql"), project)
        assert gate.denied
        assert "held back before it ran" in gate.reason
        assert "not yet shown" not in gate.reason

    def test_pending_entries_and_changes_are_counted_apart(self, project: Path) -> None:
        from ctxkeeper.write.verbs import agent_actor, update_entry

        store = make_store(project)
        person = add_constraint(store, scope=["api/"])
        add_constraint(store, agent=True, scope=["x/"], rule="Module x logs through one logger")
        for tag in ("a", "b"):
            update_entry(store, person, {"tags": [tag]}, f"tag it {tag} now", actor=agent_actor())
        start = run_hook("SessionStart", {"session_id": "s1", "source": "startup"}, project)
        message = str(start.answer["systemMessage"])
        assert "1 entry and 2 changes awaiting review" in message
        assert "3 entries awaiting review" not in message
        assert "2 entries; 1 entry and 2 changes awaiting review" in start.context
