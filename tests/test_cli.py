from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from ctxkeeper import __version__
from ctxkeeper.cli import app as cli
from ctxkeeper.cli.app import main
from ctxkeeper.core.store import Store
from tests.conftest import REPO_ROOT
from tests.terminal import on_terminal

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
DECISION = [
    "--summary",
    "Use PostgreSQL advisory locks for the job scheduler",
    "--problem",
    "Two scheduler replicas ran the nightly invoice job at the same time.",
    "--why-chosen",
    (
        "Advisory locks live in the database we already run, release on disconnect and need no "
        "new infrastructure, unlike a separate coordination service."
    ),
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
        code, listing, _ = run(capsys, "review", "--project-dir", cli_project, "--json")
        assert (code, listing["total"]) == (0, 0)
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

    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            pytest.param(
                ["add", "constraint", *RULE[:2], *RULE[4:6]],
                "constraint needs 'reason'",
                id="missing-field",
            ),
            pytest.param(
                ["add", "constraint", *RULE[:4], "--hardness", "medium"],
                "got 'medium'",
                id="bad-hardness",
            ),
            pytest.param(
                ["add", "decision", "--tags", "two words", *DECISION], "one word", id="bad-tag"
            ),
        ],
    )
    def test_malformed_entries_are_usage_errors(
        self, cli_project: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
    ) -> None:
        capsys.readouterr()
        code, data, err = run(capsys, *argv, "--project-dir", cli_project, "--json")
        assert (code, data["error"]) == (2, "invalid_entry")
        assert message in err
        assert Store.open(cli_project).load().entries == {}

    def test_refused_content_exits_1(
        self, cli_project: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from ctxkeeper.write.verbs import deprecate_entry, user_actor

        capsys.readouterr()
        token = "ghp_" + "A1b2C3d4E5f6" * 3  # assembled, so no literal secret sits in the repo
        leak = f"The token {token} leaked into the build logs of the nightly scheduler."
        argv = ["add", "decision", "--project-dir", cli_project, "--json"]
        code, data, _ = run(capsys, *argv, *DECISION[:2], "--problem", leak, *DECISION[4:])
        assert (code, data["error"]) == (1, "secret_detected")
        code, data, _ = run(capsys, *argv, *DECISION)
        assert code == 0
        deprecate_entry(
            Store.open(cli_project),
            data["id"],
            "the scheduler moved to a queue",
            actor=user_actor(),
        )
        code, data, _ = run(capsys, *argv, *DECISION)
        assert (code, data["error"]) == (1, "previously_rejected")

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


class TestOnATerminal:
    @pytest.mark.slow
    def test_review_cycle_with_confirmations(self, store: Store) -> None:
        from ctxkeeper.write.verbs import agent_actor, record_entry
        from tests.conftest import constraint_fields, decision_fields

        proposed = str(
            record_entry(store, "decision", decision_fields(), actor=agent_actor())["id"]
        )
        rejected = str(
            record_entry(store, "constraint", constraint_fields(), actor=agent_actor())["id"]
        )
        code, out = on_terminal(store.root, ["approve", proposed], b"n\n")
        assert code == 1
        assert "cancelled" in out
        assert store.get(proposed)["status"] == "proposed"
        code, out = on_terminal(store.root, ["approve", proposed], b"yes\n")
        assert code == 0, out
        assert store.get(proposed)["status"] == "active"
        code, out = on_terminal(
            store.root, ["reject", rejected, "--reason", "we key by order id"], b"y\n"
        )
        assert code == 0, out
        assert store.get(rejected)["status"] == "rejected"
        code, out = on_terminal(store.root, ["lift", rejected], b"y\n")
        assert code == 0, out
        assert store.get(rejected)["status"] == "proposed"
        ops = [r["op"] for r in store.read_journal()]
        assert ops[-3:] == ["approve", "reject", "lift"]
        code, out = on_terminal(
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
        code, out = on_terminal(
            store.root, ["add", "pipeline", "--name", "Staged release"], answers
        )
        assert code == 0, out
        entries = list(store.load().entries.values())
        assert entries[0]["steps"] == ["Tag the release commit on main"]


class TestCommonOptions:
    @pytest.mark.parametrize(
        "argv",
        [
            pytest.param(["--json", "--project-dir", "PROJECT", "list"], id="before"),
            pytest.param(["list", "--json", "--project-dir", "PROJECT"], id="after"),
            pytest.param(["--json", "list", "--project-dir", "PROJECT"], id="split"),
            pytest.param(
                ["--project-dir", "MISSING", "list", "--json", "--project-dir", "PROJECT"],
                id="verb-level-wins",
            ),
        ],
    )
    def test_before_or_after_the_verb(
        self,
        cli_project: str,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        argv: list[str],
    ) -> None:
        run(capsys, "add", "constraint", *RULE, "--project-dir", cli_project)
        argv = [
            {"PROJECT": cli_project, "MISSING": str(tmp_path / "missing")}.get(a, a) for a in argv
        ]
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 0, err
        assert json.loads(out)["total"] == 1

    def test_before_the_verb_without_json_prints_text(
        self, cli_project: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        run(capsys, "add", "constraint", *RULE, "--project-dir", cli_project)
        code = main(["--project-dir", cli_project, "list"])
        out = capsys.readouterr().out
        assert code == 0
        assert "idempotency key" in out
        with pytest.raises(json.JSONDecodeError):
            json.loads(out)


def _cli(
    *argv: str | bytes, stdout: int | None = subprocess.PIPE, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": REPO_ROOT, **(env or {})},
        timeout=60,
        check=False,
    )


def _one_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text, text
    assert text.count("\n") == 1, text
    assert text.startswith("ctxkeeper: "), text
    return text


class TestOneLineErrors:
    """Failures a person can cause from a shell print one line, never a traceback."""

    @pytest.mark.parametrize(
        ("argv", "control_code"),
        [
            pytest.param([b"search", b"\xff"], 0, id="query"),
            pytest.param(
                [
                    b"add",
                    b"constraint",
                    *(a.encode() for a in RULE[2:]),
                    b"--rule",
                    b"Every caf\xe9 order carries a receipt id",
                ],
                0,
                id="field",
            ),
            pytest.param([b"show", b"con-001-\xff\xfe"], 2, id="id"),
        ],
    )
    def test_argv_that_is_not_utf8(
        self, cli_project: str, argv: list[bytes], control_code: int
    ) -> None:
        done = _cli(*argv, "--project-dir", cli_project)
        assert done.returncode == 2
        assert "is not valid UTF-8" in _one_line(done.stderr)
        assert Store.open(cli_project).load().entries == {}
        fixed = [
            a.replace(b"\xff", b"x").replace(b"\xfe", b"y").replace(b"\xe9", b"e") for a in argv
        ]
        control = _cli(*fixed, "--project-dir", cli_project)
        assert control.returncode == control_code, control.stderr
        assert "UTF-8" not in control.stderr.decode()

    def test_closed_stdout_exits_quietly(self, cli_project: str) -> None:
        main(["add", "constraint", *RULE, "--project-dir", cli_project])
        reader, writer = os.pipe()
        os.close(reader)  # the reader has gone before anything is written, like `| head -0`
        try:
            done = _cli("list", "--project-dir", cli_project, stdout=writer)
        finally:
            os.close(writer)
        assert (done.returncode, done.stderr) == (141, b"")
        assert _cli("list", "--project-dir", cli_project).returncode == 0

    def test_stdout_closed_before_start(self, cli_project: str) -> None:
        # `ctxkeeper list >&-`: Python then has no sys.stdout at all, and print() discards.
        command = [sys.executable, "-m", "ctxkeeper", "list", "--project-dir", cli_project]
        done = subprocess.run(
            ["sh", "-c", 'exec "$@" >&-', "sh", *command],
            capture_output=True,
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": REPO_ROOT},
            timeout=60,
            check=False,
        )
        assert (done.returncode, done.stderr) == (0, b"")
        failing = [*command[:3], "show", "nope", *command[4:]]
        done = subprocess.run(
            ["sh", "-c", 'exec "$@" >&-', "sh", *failing, "--json"],
            capture_output=True,
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": REPO_ROOT},
            timeout=60,
            check=False,
        )
        assert done.returncode == 2
        assert "not an entry id" in _one_line(done.stderr)

    def test_large_output_into_head(self, store: Store) -> None:
        from ctxkeeper.write.verbs import record_entry, user_actor
        from tests.conftest import pipeline_fields

        steps = [f"Step {n} of the long release procedure, with details" for n in range(40)]
        for n in range(40):
            record_entry(
                store,
                "pipeline",
                pipeline_fields(name=f"Release train {n}", steps=steps),
                actor=user_actor(),
            )
        shell = (
            f"set -o pipefail; {sys.executable} -m ctxkeeper list --json "
            f"--project-dir {store.root} | head -c 10"
        )
        done = subprocess.run(
            ["bash", "-c", shell],
            capture_output=True,
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": REPO_ROOT},
            timeout=60,
            check=False,
        )
        assert done.stdout == b'{\n  "resul'
        assert (done.returncode, done.stderr) == (141, b"")

    def test_init_where_no_directory_can_be_made(self) -> None:
        done = _cli("init", "--project-dir", "/proc/self")
        assert done.returncode == 1
        line = _one_line(done.stderr)
        assert "/.context" in line
        assert "No such file or directory" in line or "Permission denied" in line

    def test_a_store_file_that_is_a_directory(self, cli_project: str) -> None:
        entries = os.path.join(cli_project, ".context", "entries.json")
        os.mkdir(entries)
        done = _cli("list", "--project-dir", cli_project)
        assert done.returncode == 1
        # One line, exit 1, naming the file so a person knows what to move.
        line = _one_line(done.stderr)
        assert "entries.json is a directory" in line
        os.rmdir(entries)
        assert _cli("list", "--project-dir", cli_project).returncode == 0


class TestLastResort:
    def test_a_bug_is_one_line_with_a_hint(
        self, cli_project: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def broken(args: object) -> int:
            raise RuntimeError("the index went missing")

        monkeypatch.setitem(cli._HANDLERS, "list", broken)
        monkeypatch.delenv("CTXKEEPER_DEBUG", raising=False)
        capsys.readouterr()
        assert main(["list", "--project-dir", cli_project]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "bug in ctxkeeper" in err
        assert "RuntimeError: the index went missing" in err
        assert "CTXKEEPER_DEBUG=1" in err
        assert "Traceback" not in err
        monkeypatch.setenv("CTXKEEPER_DEBUG", "1")
        assert main(["list", "--project-dir", cli_project]) == 1
        err = capsys.readouterr().err
        assert "Traceback" in err
        assert "RuntimeError: the index went missing" in err


class TestEndOfInput:
    @pytest.mark.slow
    def test_ctrl_d_at_an_add_prompt_writes_nothing(self, store: Store) -> None:
        code, out = on_terminal(
            store.root, ["add", "pipeline", "--name", "Staged release"], b"\x04"
        )
        assert code == 1, out
        assert "nothing was written" in out
        assert "Traceback" not in out
        assert store.load().entries == {}

    @pytest.mark.slow
    def test_ctrl_d_at_a_confirmation(self, store: Store) -> None:
        from ctxkeeper.write.verbs import agent_actor, record_entry
        from tests.conftest import decision_fields

        proposed = str(
            record_entry(store, "decision", decision_fields(), actor=agent_actor())["id"]
        )
        code, out = on_terminal(store.root, ["approve", proposed], b"\x04")
        assert code == 1, out
        assert "nothing was written" in out
        assert "Traceback" not in out
        assert store.get(proposed)["status"] == "proposed"


def _lossy_store(store: Store) -> tuple[str, str]:
    """A store whose repair would drop an entry: entries.json unreadable, journal cut."""
    from pathlib import Path

    from ctxkeeper.write.verbs import record_entry, user_actor
    from tests.conftest import constraint_fields, decision_fields

    kept = str(record_entry(store, "constraint", constraint_fields(), actor=user_actor())["id"])
    lost = str(record_entry(store, "decision", decision_fields(), actor=user_actor())["id"])
    journal_path = Path(store.path("journal.jsonl"))
    journal_path.write_bytes(journal_path.read_bytes().splitlines(keepends=True)[0])
    entries = Path(store.path("entries.json"))
    entries.write_text(entries.read_text()[:-3])
    return kept, lost


class TestDoctorAndHistory:
    def test_lossy_repair_refused_without_a_terminal(
        self, store: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("sys.stdin.isatty", lambda: False)
        _, lost = _lossy_store(store)
        code, data, _ = run(capsys, "doctor", "--repair", "--project-dir", store.root, "--json")
        assert code == 1
        assert data["needs_confirmation"] is True
        assert any(lost in item for item in data["would_lose"])
        code, text, err = run(capsys, "doctor", "--repair", "--project-dir", store.root)
        assert code == 1
        assert f"would lose: {lost}" in text
        assert "at a terminal to confirm" in err
        code, _, _ = run(capsys, "doctor", "--project-dir", store.root)
        assert code == 1  # still broken: nothing was changed

    @pytest.mark.slow
    def test_lossy_repair_confirmed_on_a_terminal(self, store: Store) -> None:
        kept, lost = _lossy_store(store)
        code, out = on_terminal(store.root, ["doctor", "--repair"], b"n\n")
        assert f"would lose: {lost}" in out
        assert code == 1
        assert "cancelled" in out
        code, out = on_terminal(store.root, ["doctor", "--repair"], b"y\n")
        assert code == 0, out
        assert "backup: " in out
        assert list(store.load().entries) == [kept]

    def test_history_of_a_purged_id(
        self, cli_project: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from ctxkeeper.cli.review import purge
        from ctxkeeper.write.verbs import user_actor

        capsys.readouterr()
        _, added, _ = run(
            capsys, "add", "constraint", *RULE, "--project-dir", cli_project, "--json"
        )
        store = Store.open(cli_project)
        purge(store, added["id"], "recorded by mistake today", actor=user_actor())
        code, data, _ = run(capsys, "history", added["id"], "--project-dir", cli_project, "--json")
        assert code == 0
        assert data["entry"] is None
        assert [h["op"] for h in data["history"]] == ["record", "purge"]
        code, text, _ = run(capsys, "history", added["id"], "--project-dir", cli_project)
        assert "purged" in text
        code, _, err = run(capsys, "history", "con-099-abcd", "--project-dir", cli_project)
        assert code == 1  # an id the journal never saw is still unknown
        assert "no entry" in err
        code, _, err = run(capsys, "show", added["id"], "--project-dir", cli_project)
        assert code == 1
        assert f"ctxkeeper history {added['id']}" in err
