from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from typing import Any

import pytest

from ctxkeeper import __version__
from ctxkeeper.cli import main
from ctxkeeper.store import Store
from tests.conftest import REPO_ROOT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

RULE = [
    "--rule",
    "Every charge request carries an idempotency key",
    "--reason",
    "On 2025-02-11 a retry storm double-charged forty customers at checkout.",
    "--hardness",
    "hard",
    "--scope",
    "src/billing/",
    "--tags",
    "billing",
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    try:
        data = json.loads(out) if "--json" in argv else out
    except json.JSONDecodeError:
        data = out
    return code, data, err


@pytest.fixture
def cli_project(project: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["init", "--project-dir", str(project)]) == 0
    return str(project)


class TestRecordAndRead:
    def test_add_list_show_history_status(
        self, cli_project: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        capsys.readouterr()
        code, added, _ = run(
            capsys, "add", "constraint", *RULE, "--project-dir", cli_project, "--json"
        )
        assert code == 0
        entry_id = added["id"]
        assert added["entry"]["origin"] == "user"
        assert added["entry"]["status"] == "active"
        assert added["entry"]["scope"] == ["src/billing"]
        code, listed, _ = run(capsys, "list", "--project-dir", cli_project, "--json")
        assert [e["id"] for e in listed["results"]] == [entry_id]
        code, text, _ = run(capsys, "list", "--status", "deprecated", "--project-dir", cli_project)
        assert text.strip() == "no entries"
        code, text, _ = run(capsys, "show", entry_id, "--project-dir", cli_project)
        assert "idempotency key" in text
        assert "hard" in text
        code, history, _ = run(capsys, "history", entry_id, "--project-dir", cli_project, "--json")
        assert [h["op"] for h in history["history"]] == ["record"]
        code, text, _ = run(
            capsys, "search", "retry charges idempotency", "--project-dir", cli_project
        )
        assert code == 0
        assert entry_id in text
        code, found, _ = run(
            capsys, "search", "--path", "src/billing/x.py", "--project-dir", cli_project, "--json"
        )
        assert [r["id"] for r in found["results"]] == [entry_id]
        code, text, _ = run(
            capsys, "search", "font of the marketing site", "--project-dir", cli_project
        )
        assert "no confident match" in text
        code, status, _ = run(capsys, "status", "--project-dir", cli_project, "--json")
        assert status["counts"]["constraint"] == {"active": 1}
        assert status["pending_review"] == 0
        code, text, _ = run(capsys, "review", "--project-dir", cli_project)
        assert "nothing awaits review" in text
        code, report, _ = run(capsys, "doctor", "--project-dir", cli_project, "--json")
        assert code == 0
        assert report["ok"] is True

    def test_refusals_exit_1_with_a_message_and_no_traceback(
        self, cli_project: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        capsys.readouterr()
        code, data, err = run(
            capsys,
            "add",
            "constraint",
            "--rule",
            "Be careful",
            "--reason",
            "bugs",
            "--hardness",
            "hard",
            "--project-dir",
            cli_project,
            "--json",
        )
        assert code == 1
        assert data["error"] == "below_floor"
        assert "'rule' is 10 characters; the minimum is 15" in err
        assert "Traceback" not in err

    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            pytest.param(["show", "nope"], "not an entry id", id="bad-id"),
            pytest.param(
                ["add", "constraint", "--summary", "x"],
                "--summary is not a constraint field",
                id="wrong-field",
            ),
            pytest.param(
                [
                    "add",
                    "decision",
                    "--summary",
                    "A summary that is long enough",
                    "--problem",
                    "A problem statement that is long enough to pass",
                    "--why-chosen",
                    "A reason for the choice that is long enough to pass its floor of sixty",
                    "--valid-until",
                    "soon",
                ],
                "not an ISO-8601",
                id="bad-time",
            ),
        ],
    )
    def test_usage_errors_exit_2(
        self, cli_project: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
    ) -> None:
        capsys.readouterr()
        code, _, err = run(capsys, *argv, "--project-dir", cli_project)
        assert code == 2
        assert message in err

    def test_unknown_id_exits_1(self, cli_project: str, capsys: pytest.CaptureFixture[str]) -> None:
        capsys.readouterr()
        code, _, err = run(capsys, "show", "con-404-abcd", "--project-dir", cli_project)
        assert code == 1
        assert "no entry with id 'con-404-abcd'" in err

    def test_missing_store(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        code, _, err = run(capsys, "list", "--project-dir", str(tmp_path))
        assert code == 1
        assert "run `ctxkeeper init`" in err

    def test_argparse_usage_error_exits_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit) as info:
            main(["add", "memo"])
        assert info.value.code == 2

    def test_version(self, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit):
            main(["--version"])
        assert __version__ in capsys.readouterr().out


class TestHumanVerbs:
    def test_refused_without_a_terminal(
        self, cli_project: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        capsys.readouterr()
        _, added, _ = run(
            capsys, "add", "constraint", *RULE, "--project-dir", cli_project, "--json"
        )
        for argv in (
            ["approve", added["id"]],
            ["lift", added["id"]],
            ["reject", added["id"], "--reason", "not what we want here"],
            ["purge", added["id"], "--reason", "recorded by mistake today"],
        ):
            code, _, err = run(capsys, *argv, "--project-dir", cli_project)
            assert code == 1
            assert "interactive terminal" in err
        assert Store.open(cli_project).get(added["id"])["status"] == "active"


def _on_terminal(project: str, argv: list[str], answer: bytes) -> tuple[int, str]:
    """Run the CLI in a subprocess whose stdin is a real pseudo-terminal, answering the prompt."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxkeeper", *argv, "--project-dir", project],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": REPO_ROOT},
    )
    os.close(follower)
    os.write(leader, answer)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    return proc.wait(timeout=30), output.decode(errors="replace")


class TestOnATerminal:
    @pytest.mark.slow
    def test_review_cycle_with_confirmations(self, store: Store) -> None:
        from ctxkeeper.verbs import agent_actor, record_entry
        from tests.conftest import constraint_fields, decision_fields

        proposed = str(
            record_entry(store, "decision", decision_fields(), actor=agent_actor())["id"]
        )
        rejected = str(
            record_entry(store, "constraint", constraint_fields(), actor=agent_actor())["id"]
        )
        code, out = _on_terminal(store.root, ["approve", proposed], b"n\n")
        assert code == 1
        assert "cancelled" in out
        assert store.get(proposed)["status"] == "proposed"
        code, out = _on_terminal(store.root, ["approve", proposed], b"yes\n")
        assert code == 0, out
        assert store.get(proposed)["status"] == "active"
        code, out = _on_terminal(
            store.root, ["reject", rejected, "--reason", "we key by order id"], b"y\n"
        )
        assert code == 0, out
        assert store.get(rejected)["status"] == "rejected"
        code, out = _on_terminal(store.root, ["lift", rejected], b"y\n")
        assert code == 0, out
        assert store.get(rejected)["status"] == "proposed"
        ops = [r["op"] for r in store.read_journal()]
        assert ops[-3:] == ["approve", "reject", "lift"]
        code, out = _on_terminal(
            store.root, ["purge", rejected, "--reason", "recorded twice by mistake"], b"y\n"
        )
        assert code == 0, out
        assert rejected not in store.load().entries

    @pytest.mark.slow
    def test_add_prompts_for_missing_fields(self, store: Store) -> None:
        answers = b"".join(
            [
                b"Ship a tagged build to production with a rollback point ready.\n",
                b"Tag the release commit on main\n",
                b"\n",
            ]
        )
        code, out = _on_terminal(
            store.root, ["add", "pipeline", "--name", "Staged release"], answers
        )
        assert code == 0, out
        entries = list(store.load().entries.values())
        assert entries[0]["steps"] == ["Tag the release commit on main"]
