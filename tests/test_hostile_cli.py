"""Hostile command lines, through the real CLI (`python -m ctxkeeper` in a subprocess): control
characters (terminal escapes, bidi overrides, C1 codes), bytes that are not UTF-8 and very long
arguments. Each is refused with exit 1 or 2 and one readable message, never a traceback; the
store is left byte for byte as it was; and nothing the caller typed reaches the terminal raw:
what is echoed back is escaped (``<U+001B>``, ``\\x1b``), long values cut.

A NUL byte cannot be in an argument at all (C strings end at it): the OS refuses to start the
process, which the first test pins down.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from ctxkeeper.core.store import Store
from ctxkeeper.write.verbs import record_entry, user_actor
from tests.conftest import REPO_ROOT, constraint_fields, snapshot_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

#: What must never reach a terminal raw: ESC (CSI/OSC sequences), BEL, BS, CR, C1 CSI, and the
#: bidi override that reorders a line (its UTF-8 bytes).
RAW_CONTROLS = (b"\x1b", b"\x07", b"\x08", b"\r", "\u009b".encode(), "\u202e".encode())
CSI = "\x1b[2J\x1b[31m"
OSC = "\x1b]0;owned\x07"
#: Arguments may hold any byte but NUL; this is the longest the Linux kernel passes as one
#: argument (MAX_ARG_STRLEN, 128 KiB) with room to spare.
LONG = 100_000
RULE = str(constraint_fields()["rule"])
REASON = str(constraint_fields()["reason"])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CTXKEEPER"))}
    env["PYTHONPATH"] = REPO_ROOT
    return env


def cli(*argv: str | bytes, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *argv],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        cwd=str(cwd) if cwd else REPO_ROOT,
        env=_env(),
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-cli") / "project"
    root.mkdir()
    store = Store.open(str(root))
    store.init()
    record_entry(store, "constraint", constraint_fields(), actor=user_actor())
    # Control: a plain command works here.
    listed = cli("list", "--json", "--project-dir", str(root))
    assert listed.returncode == 0, listed.stderr
    assert [item["rule"] for item in json.loads(listed.stdout)["results"]] == [RULE]
    return root


@pytest.fixture
def project(template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(template, root, symlinks=True)
    # The copy has new inodes: re-warm the journal check a read caches, as the template's was.
    Store.open(str(root)).load()
    return root


def _store(project: Path) -> dict[str, bytes]:
    return snapshot_dir(str(project / ".context"))


def _refused(
    project: Path, argv: list[str | bytes], status: set[int], says: str
) -> subprocess.CompletedProcess[bytes]:
    before = _store(project)
    done = cli(*argv, cwd=project)
    output = done.stdout + done.stderr
    assert done.returncode in status, done.stderr
    assert b"Traceback" not in output
    assert b"this is a bug" not in output
    for raw in RAW_CONTROLS:
        assert raw not in output, (raw, done.stderr)
    message = done.stderr.decode("utf-8").splitlines()[-1]
    assert message.startswith("ctxkeeper"), done.stderr
    assert says in message, message
    assert len(message) < 1200, message[:300]
    assert _store(project) == before
    return done


def _escaped(text: str) -> bool:
    """Whether a message shows the hostile value escaped (the positive half of 'not raw')."""
    return any(
        mark in text for mark in ("<U+001B>", "\\x1b", "<U+202E>", "\\u202e", "<U+009B>", "\\x9b")
    )


# -- what cannot even be passed ------------------------------------------------------------


def test_nul_and_oversized_arguments_never_reach_the_cli(project: Path) -> None:
    with pytest.raises(ValueError, match="null byte"):
        cli("show", "dec-001-abcd\x00--json", cwd=project)
    with pytest.raises(ValueError, match="null byte"):
        cli(b"show", b"dec\x00", cwd=project)
    if sys.platform.startswith("linux"):
        with pytest.raises(OSError, match="Argument list too long"):
            cli("show", "x" * (256 << 10), cwd=project)
    # Control: the same call without the NUL runs (and is refused for its content).
    done = cli("show", "dec-001-abcd", cwd=project)
    assert done.returncode == 1
    assert b"no entry with id 'dec-001-abcd'" in done.stderr


# -- control characters -----------------------------------------------------------------

ADD = ["add", "constraint", "--rule", RULE, "--reason", REASON, "--hardness", "hard"]


def _add(**change: str) -> list[str | bytes]:
    argv: list[str | bytes] = list(ADD)
    for option, value in change.items():
        flag = "--" + option.replace("_", "-")
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    return argv


CONTROL_CASES = [
    pytest.param(["show", f"dec-001-abcd{CSI}"], {2}, "is not an entry id", id="show-id-csi"),
    pytest.param(["history", f"{OSC}con-001-abcd"], {2}, "is not an entry id", id="history-osc"),
    pytest.param(["show", "con-001-\u009b2Jab"], {2}, "is not an entry id", id="show-c1-csi"),
    pytest.param(_add(rule=f"{RULE} {CSI}"), {2}, "control character U+001B", id="add-rule-csi"),
    pytest.param(
        _add(reason=f"\u202e{REASON}"), {2}, "control character U+202E", id="add-reason-bidi"
    ),
    pytest.param(_add(scope=f"src/{CSI}"), {2}, "control character U+001B", id="add-scope"),
    pytest.param(_add(tag=f"billing{OSC}"), {2}, "control character U+001B", id="add-tag-osc"),
    pytest.param(_add(valid_until=f"2026-01-31{CSI}"), {2}, "valid_until", id="add-time-csi"),
    pytest.param(["list", f"--{CSI}"], {2}, "unrecognized arguments", id="unknown-option"),
    pytest.param([f"{OSC}list"], {2}, "invalid choice", id="unknown-verb"),
    pytest.param(["list", "--kind", f"\u009b{CSI}"], {2}, "invalid choice", id="bad-choice"),
    pytest.param(["import", f"/tmp/{CSI}.jsonl"], {1}, "no snapshot here", id="import-path"),
    pytest.param(
        ["export", "snapshot", "--path", f"{OSC}.jsonl"], {2}, "outside .context", id="export"
    ),
    pytest.param(
        ["--project-dir", f"/nonexistent/{CSI}", "list"], {2}, "does not exist", id="project-dir"
    ),
]


@pytest.mark.parametrize(("argv", "status", "says"), CONTROL_CASES)
def test_control_characters_are_refused_and_shown_escaped(
    project: Path, argv: list[str | bytes], status: set[int], says: str
) -> None:
    done = _refused(project, argv, status, says)
    message = done.stderr.decode()
    # The value is named (escaped) where the message echoes it; the control-character error
    # names the code point instead.
    assert _escaped(message) or "control character U+" in message or "valid_until" in message


def test_json_errors_carry_the_value_escaped(project: Path) -> None:
    done = _refused(project, ["show", f"dec-001-abcd{CSI}", "--json"], {2}, "not an entry id")
    answer = json.loads(done.stdout)
    assert answer["error"] == "invalid_argument"
    assert "\\x1b[2J" in answer["message"]  # repr in the message, \u001b-free JSON on the wire


def test_a_read_never_echoes_what_it_was_given_raw(project: Path) -> None:
    done = cli("search", f"idempotency {CSI}{OSC}\u202e key", "--project-dir", str(project))
    assert done.returncode == 0, done.stderr
    for raw in RAW_CONTROLS:
        assert raw not in done.stdout + done.stderr
    # Control: the query still finds the rule it names.
    assert RULE.encode() in done.stdout


def test_add_with_clean_text_is_the_control(project: Path) -> None:
    done = cli(*_add(rule="Every refund request carries an idempotency key"), cwd=project)
    assert done.returncode == 0, done.stderr
    listed = cli("list", "--json", cwd=project)
    rules = sorted(item["rule"] for item in json.loads(listed.stdout)["results"])
    assert rules == sorted([RULE, "Every refund request carries an idempotency key"])


# -- bytes that are not UTF-8 ---------------------------------------------------------------

UTF8_CASES = [
    pytest.param([b"show", b"dec-001-ab\xff\xfe"], 2, id="show-id"),
    pytest.param(
        [
            b"add",
            b"constraint",
            b"--rule",
            b"Every \xc3( charge",
            b"--reason",
            REASON.encode(),
            b"--hardness",
            b"hard",
        ],
        4,
        id="add-rule",
    ),
    pytest.param([b"--project-dir", os.fsencode("/tmp/\udcff"), b"list"], 2, id="project-dir"),
    pytest.param([b"import", b"\xed\xa0\x80.jsonl"], 2, id="encoded-surrogate"),
    pytest.param([b"search", b"\x80\x81"], 2, id="search-query"),
    pytest.param([b"list", b"--kind", b"decision\xc0"], 3, id="choice"),
]


@pytest.mark.parametrize(("argv", "position"), UTF8_CASES)
def test_arguments_that_are_not_utf8_are_refused(
    project: Path, argv: list[str | bytes], position: int
) -> None:
    done = _refused(project, argv, {2}, "is not valid UTF-8; pass UTF-8 text")
    message = done.stderr.decode()
    assert f"argument {position} (" in message
    assert "\\x" in message  # the bad bytes are shown as escapes


# -- very long arguments --------------------------------------------------------------------

LONG_CASES = [
    pytest.param(["show", "d" * LONG], {2}, "is not an entry id", id="show-id"),
    pytest.param(_add(rule="r" * LONG), {2}, "the maximum is 20,000", id="add-rule"),
    pytest.param(_add(scope="s/" * (LONG // 2)), {2}, "maximum is 2,000", id="add-scope"),
    pytest.param(["list", "--tag", "t" * LONG], {2}, "unrecognized arguments", id="unknown"),
    pytest.param(["import", "p" * LONG], {1}, "File name too long", id="import-path"),
    pytest.param(["--project-dir", "/" + "q" * LONG, "list"], {2}, "does not exist", id="dir"),
]


@pytest.mark.parametrize(("argv", "status", "says"), LONG_CASES)
def test_very_long_arguments_get_a_short_clear_message(
    project: Path, argv: list[str | bytes], status: set[int], says: str
) -> None:
    done = _refused(project, argv, status, says)
    assert len(done.stderr) < 2000, len(done.stderr)


# -- a hostile store, as a clone brings it --------------------------------------------------


def test_a_cloned_store_with_escapes_never_reaches_the_terminal_raw(project: Path) -> None:
    # entries.json and config.json are untrusted: a clone may hold escape sequences in any
    # value or key. Every verb that prints them shows them escaped.
    entries_path = project / ".context" / "entries.json"
    document = json.loads(entries_path.read_text())
    entries = document["entries"]
    entry = entries[0] if isinstance(entries, list) else next(iter(entries.values()))
    entry_id = str(entry["id"])
    entry["rule"] = f"Every charge {CSI}{OSC} request carries an idempotency key"
    entry["tags"] = [f"billing{CSI}"]
    entry[f"field{CSI}"] = "value\u009b2J\u202e"
    entries_path.write_text(json.dumps(document))
    config_path = project / ".context" / "config.json"
    config = json.loads(config_path.read_text())
    config[f"setting{OSC}"] = CSI
    config_path.write_text(json.dumps(config))
    shown = b""
    for argv in (
        ["list"],
        ["show", entry_id],
        ["history", entry_id],
        ["status"],
        ["doctor"],
        ["search", "idempotency charge"],
        ["list", "--json"],
    ):
        done = cli(*argv, cwd=project)
        assert b"Traceback" not in done.stderr, done.stderr
        for raw in RAW_CONTROLS:
            assert raw not in done.stdout + done.stderr, (argv, raw)
        shown += done.stdout + done.stderr
    # Control: the hostile values were printed, escaped, not dropped; the JSON escapes parse
    # back to exactly what the file holds.
    assert b"Every charge <U+001B>[2J" in shown
    listed = json.loads(cli("list", "--json", cwd=project).stdout)["results"][0]
    assert listed["rule"] == entry["rule"]
    assert listed[f"field{CSI}"] == "value\u009b2J\u202e"
    assert b"setting\\x1b]0;owned\\x07" in shown
