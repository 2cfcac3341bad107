"""What the CLI prints for people: colour on a terminal only, aligned and wrapped layouts,
``status`` facts, errors that name the next command, and ``--json`` that is only JSON.

Every run is the real CLI in a subprocess, its stdout either a pipe or a real pseudo-terminal.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from typing import Any

import pytest

from ctxkeeper.cli import review, statusreport, term, views
from ctxkeeper.cli.app import main
from ctxkeeper.core.store import Store
from ctxkeeper.team import snapshot
from ctxkeeper.write import exchange
from ctxkeeper.write.verbs import (
    agent_actor,
    deprecate_entry,
    record_entry,
    update_entry,
    user_actor,
)
from tests.conftest import REPO_ROOT, constraint_fields, decision_fields, pipeline_fields
from tests.terminal import person_env, require_person_ancestry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

ESC = "\x1b["
CLI = (sys.executable, "-m", "ctxkeeper")
UTC_DECISION = (
    "--summary",
    "Keep invoices in UTC everywhere we store them",
    "--problem",
    "Invoices were dated in three time zones across the services.",
    "--why-chosen",
    "UTC is the one zone every service and database already agrees on, so no conversion.",
)
USER = user_actor()
PLAIN = term.Style(False)
AGENT = agent_actor("sess-7")


def _env(**extra: str) -> dict[str, str]:
    """A person's environment with colour allowed (no NO_COLOR, a real TERM), plus ``extra``."""
    env = person_env()
    for name in ("NO_COLOR", "COLUMNS", "LINES", "CTXKEEPER_DEBUG"):
        env.pop(name, None)
    env["TERM"] = "xterm-256color"
    env.update(extra)
    return env


def piped(*argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """The CLI with stdout and stderr on pipes (as in a script or ``| less``)."""
    return subprocess.run(
        [*CLI, *argv],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=REPO_ROOT,
        env=_env(**extra),
        timeout=60,
        check=False,
    )


def on_pty(
    *argv: str, columns: int = 100, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """The CLI with stdout on a real pseudo-terminal ``columns`` wide; stderr on a pipe.

    Returns the exit status, what the terminal showed (``\\r\\n`` as ``\\n``) and stderr.
    """
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen(
        [*CLI, *argv],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
        env=_env(**(env or {})),
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the last holder of the terminal's far end has gone
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return proc.wait(timeout=30), shown.decode().replace("\r\n", "\n"), err


def _widest(text: str) -> int:
    return max(term.cells(line) for line in text.splitlines())


# -- fixtures --------------------------------------------------------------------------------

LONG_REASON = (
    "On 2025-02-11 a retry storm after a provider timeout double-charged forty customers at "
    "checkout; support refunded them by hand over two days.\nThe provider deduplicates only "
    "requests that carry a key, see https://payments.example.com/docs/idempotency/"
    "retries-and-keys-for-every-charge-request-in-detail and 数据一致性要求每个请求都带有键."
)


def _fill(store: Store) -> dict[str, str]:
    """Known counts: a person's rule with an agent's pending change, an active decision, a
    proposed pipeline, a deprecated decision (a tombstone)."""
    rule = str(
        record_entry(store, "constraint", constraint_fields(reason=LONG_REASON), actor=USER)["id"]
    )
    decision = str(record_entry(store, "decision", decision_fields(), actor=USER)["id"])
    pipeline = str(record_entry(store, "pipeline", pipeline_fields(), actor=AGENT)["id"])
    retired = str(
        record_entry(
            store,
            "decision",
            decision_fields(summary="Run the invoice job from cron on a single host"),
            actor=USER,
        )["id"]
    )
    deprecate_entry(store, retired, "the job moved to the scheduler cluster", actor=USER)
    update_entry(
        store, rule, {"hardness": "soft"}, "card payments are deduplicated upstream", actor=AGENT
    )
    return {"rule": rule, "decision": decision, "pipeline": pipeline, "retired": retired}


@pytest.fixture
def known(store: Store) -> dict[str, str]:
    """The known store, for a test that changes it."""
    return _fill(store)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, dict[str, str]]:
    """The known store, built once for the tests that only read it."""
    root = tmp_path_factory.mktemp("shared") / "project"
    root.mkdir()
    store = Store.open(str(root))
    store.init()
    return store, _fill(store)


def _teammate_snapshot(tmp_path: Path, source: Store) -> bytes:
    """A teammate's snapshot after they recorded something new: a fresh clone (committed files
    only) imports ours, records, and its auto-export writes the file we then `git pull`."""
    root = tmp_path / "teammate"
    (root / ".context").mkdir(parents=True)
    for name in ("config.json", "snapshot.jsonl"):
        with open(os.path.join(source.dir, name), "rb") as handle:
            (root / ".context" / name).write_bytes(handle.read())
    theirs = Store.open(str(root))
    exchange.import_snapshot(theirs, actor=USER)
    record_entry(
        theirs,
        "constraint",
        constraint_fields(rule="Never log card numbers in any service", scope=[]),
        actor=USER,
    )
    with open(snapshot.default_path(theirs.dir), "rb") as handle:
        return handle.read()


# -- colour ----------------------------------------------------------------------------------

#: Each verb, and something its output must hold (RULE: the rule's id).
VERBS = (
    pytest.param(["list"], "RULE", id="list"),
    pytest.param(["status"], "chain verified", id="status"),
    pytest.param(["show", "RULE"], "RULE", id="show"),
    pytest.param(["history", "RULE"], "RULE", id="history"),
    pytest.param(["search", "idempotency key retry"], "RULE", id="search"),
)


def _ids(known: dict[str, str], *words: str) -> list[str]:
    return [known["rule"] if word == "RULE" else word for word in words]


class TestColour:
    @pytest.mark.parametrize(("argv", "expect"), VERBS)
    def test_piped_output_has_no_escape_codes(
        self, shared: tuple[Store, dict[str, str]], argv: list[str], expect: str
    ) -> None:
        store, known = shared
        done = piped(*_ids(known, *argv), "--project-dir", store.root)
        assert done.returncode == 0, done.stderr
        assert _ids(known, expect)[0] in done.stdout  # the control: the output is there, plain
        assert ESC not in done.stdout
        assert ESC not in done.stderr

    @pytest.mark.parametrize(("argv", "expect"), VERBS)
    def test_colour_on_a_terminal_unless_asked_not_to(
        self, shared: tuple[Store, dict[str, str]], argv: list[str], expect: str
    ) -> None:
        store, known = shared
        argv, [expect] = _ids(known, *argv), _ids(known, expect)
        code, shown, err = on_pty(*argv, "--project-dir", store.root)
        assert code == 0, err
        assert ESC in shown  # the control for each run below
        assert expect in term.strip(shown)
        for extra, env in (
            (["--no-color"], {}),  # after the verb
            ([], {"NO_COLOR": "1"}),
        ):
            code, plain, err = on_pty(*argv, *extra, "--project-dir", store.root, env=env)
            assert code == 0, err
            assert expect in plain
            assert ESC not in plain
            assert plain == term.strip(shown)  # the same text: colour is the only difference

    def test_no_color_before_the_verb_and_dumb_terminals(
        self, shared: tuple[Store, dict[str, str]]
    ) -> None:
        store, _ = shared
        code, shown, _ = on_pty("--project-dir", store.root, "list")
        assert (code, ESC in shown) == (0, True)
        code, plain, _ = on_pty("--no-color", "--project-dir", store.root, "list")
        assert (code, ESC in plain) == (0, False)
        assert plain == term.strip(shown)
        code, dumb, _ = on_pty("list", "--project-dir", store.root, env={"TERM": "dumb"})
        assert (code, dumb) == (0, plain)

    def test_statuses_are_coloured_by_meaning(self, shared: tuple[Store, dict[str, str]]) -> None:
        store, _ = shared
        _, shown, _ = on_pty("list", "--project-dir", store.root)
        assert "\x1b[32mactive\x1b[0m" in shown
        assert "\x1b[33mproposed\x1b[0m" in shown
        assert "\x1b[31mdeprecated\x1b[0m" in shown

    def test_json_is_never_coloured(self, shared: tuple[Store, dict[str, str]]) -> None:
        store, _ = shared
        code, shown, err = on_pty("status", "--json", "--project-dir", store.root)
        assert code == 0, err
        assert ESC not in shown
        assert json.loads(shown)["total"] == 4


# -- list ------------------------------------------------------------------------------------


class TestList:
    def test_an_aligned_table(self, shared: tuple[Store, dict[str, str]]) -> None:
        store, known = shared
        done = piped("list", "--project-dir", store.root)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0].split() == ["id", "kind", "status", "hardness", "headline"]
        rows = {line.split()[0]: line for line in lines[2:] if line[:3] in ("con", "dec", "pip")}
        assert set(rows) == set(known.values())
        for heading in ("kind", "status", "headline"):  # each column starts under its heading
            column = lines[0].index(heading)
            for row in rows.values():
                assert row[column - 2 : column] == "  ", (heading, row)
                assert row[column] != " ", (heading, row)
        assert rows[known["rule"]].split()[2:4] == ["active*", "hard"]
        assert rows[known["retired"]].split()[2] == "deprecated"
        assert "Run the invoice job from cron on a single host" in rows[known["retired"]]
        # What awaits a person, and where to decide it.
        assert "* 1 with a change awaiting a person: `ctxkeeper review`" in lines
        assert "1 proposed, unreviewed: `ctxkeeper review`" in lines

    def test_headlines_are_clipped_to_the_terminal_not_in_a_pipe(
        self, shared: tuple[Store, dict[str, str]]
    ) -> None:
        store, _ = shared
        headline = "Every charge request carries an idempotency key"
        code, shown, _ = on_pty("list", "--project-dir", store.root, columns=50)
        assert code == 0
        assert _widest(term.strip(shown)) <= 50
        assert headline not in shown
        assert "Every charge" in shown
        assert "…" in shown
        # A pipe has no width: `grep` sees whole headlines, even with a narrow COLUMNS.
        done = piped("list", "--project-dir", store.root, COLUMNS="50")
        assert headline in done.stdout

    def test_an_empty_list(self, store: Store) -> None:
        done = piped("list", "--project-dir", store.root)
        assert done.stdout == "no entries\n"
        record_entry(store, "decision", decision_fields(), actor=USER)
        assert piped("list", "--project-dir", store.root).stdout != "no entries\n"


# -- status ----------------------------------------------------------------------------------


def _status_rows(text: str) -> dict[str, list[str]]:
    """The counts table of ``status`` text: status name -> its numbers."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.split()[:1] == ["decision"])
    assert lines[start].split() == ["decision", "constraint", "pipeline", "total"]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        name, *numbers = line.split()
        rows[name] = numbers
    return rows


_LABELS = ("store", "pending review", "tombstones", "entries", "journal", "snapshot")


def _labelled(text: str) -> dict[str, str]:
    """The ``label  value`` lines of ``status`` text, continuation lines joined."""
    found: dict[str, str] = {}
    last = ""
    for line in text.splitlines():
        name = next((name for name in _LABELS if line.startswith(name + "  ")), "")
        if name:
            last = name
            found[name] = line[len(name) :].strip()
        elif last and line.startswith(" "):
            found[last] += " " + line.strip()
        else:
            last = ""
    return found


class TestStatus:
    def test_counts_pending_tombstones_journal_and_snapshot(
        self, store: Store, known: dict[str, str], tmp_path: Path
    ) -> None:
        done = piped("status", "--json", "--project-dir", store.root)
        assert done.returncode == 0, done.stderr
        data: Any = json.loads(done.stdout)
        assert data["total"] == 4
        assert data["counts"] == {
            "decision": {"active": 1, "deprecated": 1},
            "constraint": {"active": 1},
            "pipeline": {"proposed": 1},
        }
        assert (data["pending_review"], data["proposed"], data["pending_changes"]) == (2, 1, 1)
        assert data["tombstones"] == {"deprecated": 1, "rejected": 0, "total": 1}
        records = len(store.read_journal())
        assert data["journal"] == {
            "ok": True,
            "records": records,
            "problem": None,
            "unfinished_bytes": 0,
        }
        shot = data["snapshot"]
        assert shot["path"] == snapshot.default_path(store.dir)
        assert shot["exists"] is True
        assert shot["unimported"] is False  # the control for the pulled snapshot below
        assert (shot["entries"], shot["events"]) == (4, records)

        text = piped("status", "--project-dir", store.root, COLUMNS="200").stdout
        rows = _status_rows(text)
        assert rows["active"] == ["1", "1", "0", "2"]
        assert rows["proposed"] == ["0", "0", "1", "1"]
        assert rows["deprecated"] == ["1", "0", "0", "1"]
        assert rows["total"] == ["2", "1", "1", "4"]
        fields = _labelled(text)
        assert fields["store"] == store.dir
        assert fields["pending review"] == (
            "2 (1 proposed entry, 1 change to an entry in force); decide with `ctxkeeper review`"
        )
        assert fields["tombstones"] == "1 (1 deprecated, 0 rejected)"
        assert fields["journal"] == f"chain verified, {records} records"
        assert fields["snapshot"] == (
            f".context/snapshot.jsonl: 4 entry lines, {records} event lines; nothing new to import"
        )

        # `git pull` brings a teammate's snapshot holding an entry this clone has not seen.
        pulled = _teammate_snapshot(tmp_path, store)
        with open(snapshot.default_path(store.dir), "wb") as handle:
            handle.write(pulled)
        data = json.loads(piped("status", "--json", "--project-dir", store.root).stdout)
        assert data["snapshot"]["unimported"] is True
        assert data["snapshot"]["entries"] == 5
        text = piped("status", "--project-dir", store.root, COLUMNS="200").stdout
        line = _labelled(text)["snapshot"]
        assert "holds changes not imported yet" in line
        assert line.endswith("run `ctxkeeper import`")
        assert "nothing new to import" not in line
        # Once imported, nothing waits again.
        assert piped("import", "--project-dir", store.root).returncode == 0
        data = json.loads(piped("status", "--json", "--project-dir", store.root).stdout)
        assert (data["snapshot"]["unimported"], data["total"]) == (False, 5)

    def test_a_store_without_snapshot_or_reviews(self, store: Store) -> None:
        data = json.loads(piped("status", "--json", "--project-dir", store.root).stdout)
        assert data["snapshot"]["exists"] is False
        assert data["snapshot"]["unimported"] is False
        assert (data["total"], data["pending_review"], data["journal"]["records"]) == (0, 0, 0)
        fields = _labelled(piped("status", "--project-dir", store.root, COLUMNS="200").stdout)
        assert fields["pending review"] == "nothing awaits a person"
        assert "not written yet" in fields["snapshot"]
        record_entry(store, "decision", decision_fields(), actor=USER)  # the control
        fields = _labelled(piped("status", "--project-dir", store.root, COLUMNS="200").stdout)
        assert "not written yet" not in fields["snapshot"]
        assert fields["pending review"] == "nothing awaits a person"

    def test_a_broken_journal_is_reported_with_the_next_step(
        self, store: Store, known: dict[str, str]
    ) -> None:
        healthy = piped("status", "--project-dir", store.root, COLUMNS="200")
        assert (healthy.returncode, healthy.stderr) == (0, "")
        assert _labelled(healthy.stdout)["journal"].startswith("chain verified")
        assert "entries" not in _labelled(healthy.stdout)
        path = store.path("journal.jsonl")
        with open(path, encoding="utf-8") as handle:
            lines = handle.readlines()
        assert "PostgreSQL" in lines[1]
        lines[1] = lines[1].replace("PostgreSQL", "MySQL")
        with open(path, "w", encoding="utf-8") as handle:
            handle.writelines(lines)
        done = piped("status", "--project-dir", store.root, COLUMNS="200")
        assert done.returncode == 1
        journal_line = _labelled(done.stdout)["journal"]
        assert journal_line.startswith("PROBLEM: ")
        assert "journal.jsonl:2" in journal_line
        assert "`ctxkeeper doctor`" in done.stderr
        # The counts are still shown, read from entries.json and said to be unverified.
        assert _status_rows(done.stdout)["total"] == ["2", "1", "1", "4"]
        assert "unverified" in _labelled(done.stdout)["entries"]
        data = json.loads(piped("status", "--json", "--project-dir", store.root).stdout)
        assert data["journal"]["ok"] is False
        assert "journal.jsonl:2" in data["journal"]["problem"]


# -- show and history ------------------------------------------------------------------------


class TestShowAndHistory:
    def test_show_reads_at_a_glance_in_60_columns(
        self, shared: tuple[Store, dict[str, str]]
    ) -> None:
        store, known = shared
        rule = known["rule"]
        done = piped("show", rule, "--project-dir", store.root, COLUMNS="60")
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0].split() == [rule, "constraint", "active", "hard", "revision", "1"]
        assert _widest(done.stdout) <= 60
        wide = piped("show", rule, "--project-dir", store.root, COLUMNS="200")
        assert _widest(wide.stdout) > 60  # the control: the same entry is wider than 60
        labels = [line.split()[0] for line in lines[1:] if line[:2] == "  " and line[2] != " "]
        assert labels[:4] == ["origin", "rule", "reason", "scope"]
        # Every word of the long reason is there, in order, wrapped (the URL cut at the edge);
        # its stored line break starts a `| ` line.
        squeezed = "".join(done.stdout.split())
        assert "".join(LONG_REASON.replace("\n", "|").split()) in squeezed
        assert any(line.strip().startswith("| The provider deduplicates") for line in lines)
        assert "pending changes" in done.stdout
        assert "until a person decides: `ctxkeeper review`" in " ".join(done.stdout.split())

    def test_show_json_is_the_entry(self, shared: tuple[Store, dict[str, str]]) -> None:
        store, known = shared
        done = piped("show", known["rule"], "--json", "--project-dir", store.root)
        assert json.loads(done.stdout) == store.get(known["rule"])

    def test_history_one_block_per_revision_in_60_columns(
        self, store: Store, known: dict[str, str]
    ) -> None:
        rule = known["rule"]
        review.approve(store, [rule], actor=USER)  # the agent's hardness change, approved
        done = piped("history", rule, "--project-dir", store.root, COLUMNS="60")
        assert done.returncode == 0, done.stderr
        assert _widest(done.stdout) <= 60
        wide = piped("history", rule, "--project-dir", store.root, COLUMNS="200")
        assert _widest(wide.stdout) > 60
        records = store.history(rule)
        lines = wide.stdout.splitlines()
        assert lines[0] == f"history of {rule}: {len(records)} records"
        heads = [line for line in lines if line.startswith("#")]
        assert len(heads) == len(records) == 3
        for number, (head, record) in enumerate(zip(heads, records, strict=True), start=1):
            expected = [f"#{number}", "seq", str(record["seq"]), str(record["at"]), record["op"]]
            assert head.split()[:5] == expected
        assert "by user" in heads[0]
        assert heads[0].endswith("revision 1")
        assert "by agent (session sess-7)" in heads[1]
        assert "approve" in heads[2].split()[4]
        assert heads[2].endswith("revision 2")
        approved = wide.stdout.split(heads[2])[1]
        assert "~ hardness: hard → soft" in approved  # before → after
        assert "= decided chg-" in approved
        assert "    reason  card payments are deduplicated upstream" in lines
        # The record that created it lists its fields; the approval does not repeat them.
        created = wide.stdout.split(heads[0])[1].split(heads[1])[0]
        assert "+ rule: Every charge request carries an idempotency key" in created
        assert "+ rule:" not in approved

    def test_history_json_shape_is_unchanged(self, shared: tuple[Store, dict[str, str]]) -> None:
        store, known = shared
        done = piped("history", known["rule"], "--json", "--project-dir", store.root)
        data = json.loads(done.stdout)
        assert set(data) == {"entry", "pending_changes", "history"}
        assert [h["op"] for h in data["history"]] == [r["op"] for r in store.history(known["rule"])]

    def test_a_terminal_of_60_columns(self, shared: tuple[Store, dict[str, str]]) -> None:
        store, known = shared
        for argv, expect in (
            (["show", known["rule"]], known["rule"]),
            (["history", known["rule"]], known["rule"]),
            (["status"], "chain verified"),
            (["list"], known["rule"]),
        ):
            code, shown, err = on_pty(*argv, "--project-dir", store.root, columns=60)
            assert code == 0, err
            assert expect in term.strip(shown)
            assert _widest(term.strip(shown)) <= 60, argv
        code, shown, _ = on_pty("show", known["rule"], "--project-dir", store.root, columns=120)
        assert _widest(term.strip(shown)) > 60  # the control: a wider terminal is used


# -- errors ----------------------------------------------------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The CLI in this process (its errors are the same code; a subprocess costs more)."""
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exit_:  # argparse's usage errors
        code = int(str(exit_.code))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)


@pytest.mark.usefixtures("no_tty")
class TestErrorsSayWhatNext:
    ARGVS = (
        ["list"],
        ["status"],
        ["show", "con-001-abcd"],
        ["history", "con-001-abcd"],
        ["review", "--json"],
        ["search", "locks"],
        ["doctor"],
        ["export", "snapshot"],
        ["import"],
    )

    def test_missing_store_names_init(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        for argv in self.ARGVS:
            code, _, err = _run(capsys, *argv, "--project-dir", str(tmp_path))
            assert code == 1, argv
            assert err == (
                f"ctxkeeper: no ctxkeeper store in {tmp_path}; run `ctxkeeper init` there first\n"
            )
        assert _run(capsys, "init", "--project-dir", str(tmp_path))[0] == 0
        for argv in self.ARGVS:  # the control: with a store, no such advice
            assert "ctxkeeper init" not in _run(capsys, *argv, "--project-dir", str(tmp_path))[2]

    @pytest.mark.parametrize("verb", ["show", "history"])
    def test_unknown_or_malformed_id_names_list(
        self, shared: tuple[Store, dict[str, str]], capsys: pytest.CaptureFixture[str], verb: str
    ) -> None:
        store, known = shared
        code, _, err = _run(capsys, verb, "con-404-abcd", "--project-dir", store.root)
        assert code == 1
        assert "no entry with id 'con-404-abcd'" in err
        assert "`ctxkeeper list`" in err
        code, _, err = _run(capsys, verb, "nope", "--project-dir", store.root)
        assert code == 2
        assert "not an entry id" in err
        assert "`ctxkeeper list`" in err
        assert _run(capsys, verb, known["rule"], "--project-dir", store.root)[::2] == (0, "")

    def test_usage_errors_point_at_help(
        self, store: Store, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, _, err = _run(capsys, "add", "memo", "--project-dir", store.root)
        assert code == 2
        assert "see `ctxkeeper add --help`" in err
        code, _, err = _run(capsys, "frobnicate")
        assert code == 2
        assert "see `ctxkeeper --help`" in err
        code, _, err = _run(
            capsys, "add", "constraint", "--summary", "x", "--project-dir", store.root
        )
        assert code == 2
        assert "see `ctxkeeper add constraint --help`" in err
        assert _run(capsys, "list", "--project-dir", store.root)[::2] == (0, "")

    def test_a_human_verb_without_a_terminal_says_where_to_run_it(
        self, shared: tuple[Store, dict[str, str]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        store, known = shared
        code, _, err = _run(capsys, "approve", known["pipeline"], "--project-dir", store.root)
        assert code == 1
        assert "run `ctxkeeper approve ...` in your own terminal" in err
        assert "`ctxkeeper review --json`" in err
        assert store.get(known["pipeline"])["status"] == "proposed"


# -- --json ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_tty")
class TestJsonEverywhere:
    def test_every_data_verb_prints_one_json_document(
        self, store: Store, known: dict[str, str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        rule = known["rule"]
        for argv in (
            ["init"],
            ["add", "decision", *UTC_DECISION],
            ["list"],
            ["show", rule],
            ["history", rule],
            ["search", "idempotency"],
            ["status"],
            ["review"],
            ["doctor"],
            ["export", "snapshot"],
            ["import"],
        ):
            code, out, err = _run(capsys, *argv, "--json", "--project-dir", store.root)
            assert code == 0, (argv, err)
            assert isinstance(json.loads(out), dict), argv
            if argv[0] == "add":
                continue  # recording it twice would be refused as a duplicate
            code, text, _ = _run(capsys, *argv, "--project-dir", store.root)
            with pytest.raises(json.JSONDecodeError):  # the control: without it, text
                json.loads(text)

    def test_search_text_says_why_and_what_the_budget_left_out(
        self, shared: tuple[Store, dict[str, str]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        store, known = shared
        argv = ["search", "invoice job cron single host", "--project-dir", store.root]
        code, out, _ = _run(capsys, *argv, "--include-history")
        assert code == 0
        assert f"{known['retired']}: tombstone (deprecated): the job moved to the" in out
        assert "beyond the token budget" not in out  # the control for the budget below
        code, out, _ = _run(capsys, *argv, "--include-history", "--budget", "200")
        assert code == 0
        assert "beyond the token budget: raise --budget to see them" in out

    @pytest.mark.parametrize(
        "argv",
        [["show"], ["add", "constraint", "--bogus"], ["nosuchverb"]],
        ids=["missing-argument", "unknown-option", "unknown-verb"],
    )
    def test_a_usage_error_with_json_is_json_too(self, store: Store, argv: list[str]) -> None:
        done = piped(*argv, "--json", "--project-dir", store.root)
        assert done.returncode == 2
        assert json.loads(done.stdout)["error"] == "usage"
        assert "see `ctxkeeper" in json.loads(done.stdout)["message"]
        assert "usage: ctxkeeper" in done.stderr
        # The control: without --json, stdout stays empty and the text is on stderr alone.
        text = piped(*argv, "--project-dir", store.root)
        assert (text.returncode, text.stdout) == (2, "")
        assert "usage: ctxkeeper" in text.stderr

    def test_demo_refuses_json_rather_than_print_text(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, out, err = _run(capsys, "demo", "--json")
        assert code == 2
        assert json.loads(out)["error"] == "error"
        assert "run it without --json" in err

    def test_a_human_verb_with_json_keeps_its_questions_off_stdout(
        self, store: Store, known: dict[str, str]
    ) -> None:
        """The plan and the ``[y/N]`` go to the terminal on stderr; stdout is the JSON."""
        require_person_ancestry()
        leader, follower = pty.openpty()
        proc = subprocess.Popen(
            [*CLI, "approve", known["pipeline"], "--json", "--project-dir", store.root],
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=follower,
            cwd=REPO_ROOT,
            env=_env(),
        )
        os.close(follower)
        os.write(leader, b"y\n")
        asked = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            asked += chunk
        os.close(leader)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, asked
        assert "[y/N]" in asked.decode()
        assert known["pipeline"] in asked.decode()
        data = json.loads(out)
        assert [entry["status"] for entry in data["results"]] == ["active"]
        assert store.get(known["pipeline"])["status"] == "active"


# -- the renderers, called directly ----------------------------------------------------------


class TestRenderers:
    """The shapes a person rarely meets (hand edits, purges, long values), in this process."""

    def test_wrap_counts_cells_and_cuts_long_words(self) -> None:
        wide = "数据一致性" * 7  # 35 characters, 70 columns
        lines = term.wrap(f"keys {wide} end", 12)
        assert all(term.cells(line) <= 12 for line in lines)
        assert "".join(lines).replace(" ", "") == f"keys{wide}end"
        assert term.wrap("", 10) == [""]
        assert term.wrap("a   b", 10) == ["a b"]
        assert term.wrap("a b", 10) == ["a b"]  # the control: nothing to wrap

    def test_flow_clips_a_part_wider_than_the_line(self) -> None:
        lines = views.flow(["#1", "x" * 80], 40)
        assert lines[0] == "#1"
        assert lines[1].startswith("    xxx")
        assert lines[1].endswith("…")
        assert term.cells(lines[1]) == 40
        assert views.flow(["#1", "seq 2"], 40) == ["#1  seq 2"]

    def test_a_narrow_table_drops_kind_then_hardness(self) -> None:
        entries = [
            {"id": "con-001-abcd", "kind": "constraint", "status": "active", "hardness": "hard"}
            | {"rule": "Every charge request carries an idempotency key"},
            {"id": "dec-001-abcd", "kind": "decision", "status": "superseded"}
            | {"summary": "Use advisory locks"},
        ]
        plain = term.Style(False)
        heads = [
            views.entry_table(entries, plain, room=room).splitlines()[0].split()
            for room in (views.NO_CLIP, 60, 40)
        ]
        assert heads == [
            ["id", "kind", "status", "hardness", "headline"],
            ["id", "status", "hardness", "headline"],
            ["id", "status", "headline"],
        ]
        no_rules = views.entry_table(entries[1:], plain).splitlines()[0].split()
        assert no_rules == ["id", "kind", "status", "headline"]

    def test_show_of_a_hand_edited_superseded_entry(self) -> None:
        entry: dict[str, Any] = {
            "id": "dec-001-abcd",
            "kind": "decision",
            "status": "superseded",
            "superseded_by": "dec-002-abcd",
            "summary": "Use advisory locks",
            "alternatives": [],
            "a_field_someone_added_by_hand": {"b": 1, "a": None},
            "revision": 3,
        }
        text = views.entry_view(entry, term.Style(False), room=80)
        lines = text.splitlines()
        assert lines[0] == "dec-001-abcd  decision  superseded by dec-002-abcd  revision 3"
        assert not any(line.split()[:1] == ["superseded"] for line in lines[1:])
        assert "  a field someone added by hand" in lines
        assert any(line.strip() == '{"a": null, "b": 1}' for line in lines)
        assert "alternatives" not in text  # empty: left out
        assert "  scope" not in text  # absent from the entry: nothing to say
        entry["scope"] = []
        assert "(project-wide)" in views.entry_view(entry, term.Style(False), room=60)

    def test_history_of_every_kind_of_change(self, store: Store) -> None:
        entry_id = str(record_entry(store, "pipeline", pipeline_fields(), actor=USER)["id"])
        update_entry(
            store,
            entry_id,
            {
                "purpose": "Ship a tagged build to production with a rollback point ready, "
                "and announce it in the release channel.\nThen watch the error rate.",
                "steps": ["Tag the release commit on main", "Promote the staging image"],
            },
            "the release got a second step",
            actor=USER,
        )
        update_entry(
            store, entry_id, {"tags": ["release"]}, "tag it for the release search", actor=AGENT
        )
        # The renderer is shown the records as they were before the purge redacted them.
        shown = store.history(entry_id)
        review.purge(store, entry_id, "Recorded in the wrong project.", actor=USER)
        history = [*shown, store.history(entry_id)[-1]]
        records: list[Any] = [*history, "not a record"]
        redacted: list[Any] = [*store.history(entry_id)]
        after_purge = views.history_view(
            entry_id, redacted, term.Style(False), room=60, purged=True
        )
        assert "Ship a tagged build" not in after_purge  # a purge leaves no text to show
        assert "Recorded in the wrong project." in after_purge  # the control: its reason stays
        colour = views.history_view(entry_id, records, term.Style(True), room=60, purged=True)
        plain = views.history_view(entry_id, records, term.Style(False), room=60, purged=True)
        assert ESC in colour
        assert term.strip(colour) == plain
        assert max(term.cells(line) for line in plain.splitlines()) <= 60
        title = f"history of {entry_id}: {len(history)} records (purged; only the journal keeps it)"
        assert " ".join(plain.split("\n\n")[0].split()) == title
        assert plain.count("\n#") == len(history)  # the item that is not a record is left out
        assert "    - purpose: Ship a tagged build to production with a" in plain
        assert "    + purpose:" in plain  # two paragraphs: lines of their own
        assert "        | Then watch the error rate." in plain
        assert "    + steps:\n        1. Tag the release commit on main" in plain
        assert "    ? proposed chg-" in plain
        assert "      + tags: release" in plain
        assert "    (the entry left the store here)" in plain

    def test_status_of_an_unreadable_entries_file(self, store: Store) -> None:
        record_entry(store, "decision", decision_fields(), actor=USER)
        assert statusreport.gather(store)["problem"] is None  # the control
        path = store.path("entries.json")
        with open(path, "rb") as handle:
            data = handle.read()
        with open(path, "wb") as handle:
            handle.write(data[:-5])
        report = statusreport.gather(store)
        assert (report["total"], report["counts"], report["tombstones"]) == (None, None, None)
        assert "entries.json" in str(report["problem"])
        text = statusreport.render_text(report, term.Style(False), room=200)
        assert "decision  constraint" not in text  # no counts to show
        assert statusreport.render_text(
            statusreport.gather(Store.open(store.root)), term.Style(False), room=200
        ).startswith("store")
        fields = _labelled(text)
        assert fields["journal"].startswith("chain verified")
        assert "entries.json" in fields["entries"]

    def test_status_with_auto_export_off_and_a_torn_journal(self, store: Store) -> None:
        with open(store.path("config.json"), encoding="utf-8") as handle:
            config = json.load(handle)
        config["auto_export"] = False
        with open(store.path("config.json"), "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        record_entry(store, "decision", decision_fields(), actor=USER)
        fields = _labelled(statusreport.render_text(statusreport.gather(store), PLAIN, room=200))
        assert "not written yet; `ctxkeeper export snapshot` writes it" in fields["snapshot"]
        exchange.export_snapshot(store)
        fields = _labelled(statusreport.render_text(statusreport.gather(store), PLAIN, room=200))
        assert (
            "(auto_export is off: `ctxkeeper export snapshot` refreshes it)" in fields["snapshot"]
        )
        assert "interrupted write" not in fields["journal"]  # the control for the torn tail
        with open(store.path("journal.jsonl"), "ab") as handle:
            handle.write(b'{"seq": 2, "tx"')
        report = statusreport.gather(store)
        journal: Any = report["journal"]
        assert journal["unfinished_bytes"] == len(b'{"seq": 2, "tx"')
        fields = _labelled(statusreport.render_text(report, PLAIN, room=200))
        assert (
            "an interrupted write left 15 bytes after the last whole transaction"
            in fields["journal"]
        )

    def test_status_of_a_snapshot_that_is_a_link(self, store: Store, tmp_path: Path) -> None:
        record_entry(store, "decision", decision_fields(), actor=USER)
        shot: Any = statusreport.gather(store)["snapshot"]
        assert shot["problem"] is None  # the control
        path = snapshot.default_path(store.dir)
        os.rename(path, tmp_path / "elsewhere.jsonl")
        os.symlink(tmp_path / "elsewhere.jsonl", path)
        shot = statusreport.gather(store)["snapshot"]
        assert "symbolic link" in shot["problem"]
        fields = _labelled(statusreport.render_text(statusreport.gather(store), PLAIN, room=200))
        assert fields["snapshot"].startswith(".context/snapshot.jsonl: cannot be read:")
