"""The CLI teaches (issue 25, item 6): ``add KIND --help`` lists that kind's fields with their
floors, ``--help`` hides the merge driver, ``demo --help`` says what it shows, and ``init`` says
what to commit and what to do next. Every absence is paired with a present control."""

from __future__ import annotations

import os

import pytest

from ctxkeeper.cli.app import main
from ctxkeeper.core.model import CONTRACT_FLOORS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def help_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The help ``ctxkeeper ARGV`` prints, one space between words (argparse wraps lines)."""
    with pytest.raises(SystemExit) as stopped:
        main([*argv])
    assert stopped.value.code == 0
    out, err = capsys.readouterr()
    assert err == ""
    return " ".join(out.split())


class TestAddHelp:
    @pytest.mark.parametrize(
        ("kind", "shown", "others"),
        [
            pytest.param(
                "constraint",
                [
                    "--rule TEXT what must (or must not) be done (required; at least 15 characters)",
                    (
                        "--reason TEXT why: the incident or cost behind the rule (required; at least "
                        "40 characters)"
                    ),
                    (
                        "--hardness hard|soft hard: the agent's first edit of a file in its scope is "
                        "held back"
                    ),
                ],
                ["--summary", "--steps", "--why-chosen"],
                id="constraint",
            ),
            pytest.param(
                "decision",
                [
                    (
                        "--summary TEXT what was decided, in one line (required; at least 20 "
                        "characters)"
                    ),
                    "--problem TEXT what forced a choice (required; at least 40 characters)",
                    "--why-chosen TEXT why this option won (required; at least 60 characters)",
                    (
                        "--alternatives TEXT an option not chosen and why it lost; repeat the flag "
                        "for each (optional)"
                    ),
                ],
                ["--rule", "--hardness", "--steps"],
                id="decision",
            ),
            pytest.param(
                "pipeline",
                [
                    "--name TEXT the procedure's name (required; at least 3 characters)",
                    (
                        "--steps TEXT one step, in order; repeat the flag for each (required; at "
                        "least 1, each at least 10 characters)"
                    ),
                ],
                ["--rule", "--summary", "--hardness"],
                id="pipeline",
            ),
        ],
    )
    def test_each_kind_lists_its_fields_with_floors(
        self, capsys: pytest.CaptureFixture[str], kind: str, shown: list[str], others: list[str]
    ) -> None:
        text = help_of(capsys, "add", kind, "--help")
        assert text.startswith(f"usage: ctxkeeper add {kind} ")
        for line in shown:
            assert line in text
        # The scope form, said for every kind.
        assert "--scope PATH a repository-relative file or directory" in text
        assert "none means the whole project" in text
        assert "example: ctxkeeper add " + kind in text
        # Another kind's fields are not offered; the control is the kind's own, above.
        for flag in others:
            assert f"{flag} " not in text

    def test_floors_in_help_are_the_contracts(self, capsys: pytest.CaptureFixture[str]) -> None:
        text = help_of(capsys, "add", "constraint", "--help")
        floors = CONTRACT_FLOORS["constraint"]
        assert f"at least {floors['rule']} characters" in text
        assert f"at least {floors['reason']} characters" in text

    def test_without_a_kind_every_field_and_where_to_look(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        text = help_of(capsys, "add", "--help")
        assert "`ctxkeeper add KIND --help` lists that kind's fields" in text
        assert "--summary TEXT decision: what was decided, in one line (at least 20" in text
        assert "--rule TEXT constraint: what must (or must not) be done" in text

    def test_add_with_help_flags_still_records(
        self, capsys: pytest.CaptureFixture[str], project: Path
    ) -> None:
        """Control for the custom help action: an ordinary ``add`` is not taken for help."""
        assert main(["init", "--project-dir", str(project)]) == 0
        code = main(
            [
                "add",
                "constraint",
                "--rule",
                "Every charge request carries an idempotency key",
                "--reason",
                "On 2025-02-11 a retry storm double-charged forty customers at checkout.",
                "--hardness",
                "hard",
                "--project-dir",
                str(project),
            ]
        )
        assert code == 0
        assert "recorded con-001-" in capsys.readouterr().out


class TestTopLevelHelp:
    def test_no_suppressed_verb_line(self, capsys: pytest.CaptureFixture[str]) -> None:
        text = help_of(capsys, "--help")
        assert "SUPPRESS" not in text
        assert "merge-driver" not in text
        assert "import merge a team snapshot" in text  # control: its neighbour is listed

    def test_the_merge_driver_still_runs_for_git(self, tmp_path: Path) -> None:
        """Hidden from --help, not removed: git calls it by name (``init --git``)."""
        ours, base, theirs = (tmp_path / name for name in ("ours", "base", "theirs"))
        for path in (ours, base, theirs):
            path.write_text("", encoding="utf-8")
        assert main(["merge-driver", str(ours), str(base), str(theirs)]) == 0

    def test_demo_help_says_what_it_shows(self, capsys: pytest.CaptureFixture[str]) -> None:
        text = help_of(capsys, "demo", "--help")
        assert "sample store in a temporary folder" in text
        assert "the first edit of a governed file held back" in text


class TestInit:
    def test_says_what_to_commit_and_what_next(
        self, capsys: pytest.CaptureFixture[str], project: Path
    ) -> None:
        os.makedirs(project / ".git")  # where init writes the .gitattributes line
        assert main(["init", "--project-dir", str(project)]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert text.startswith(f"initialised {project / '.context'} (created ")
        assert "Commit .context/config.json (shared settings)" in text
        assert ".context/snapshot.jsonl (the team snapshot every write refreshes)" in text
        assert "Next: record a rule (`ctxkeeper add constraint --help`" in text
        assert "ctxkeeper plugin installed" in text
