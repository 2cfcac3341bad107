"""The interactive review queue (`ctxkeeper review`), driven as a person would: the real CLI
on a real pseudo-terminal (80 columns), keys typed after each prompt appears, `$EDITOR` a
script. Then the store and the journal must say what that person decided, as the person.

The screen golden file: `tests/golden/review_screen.txt`. After a deliberate layout change,
regenerate it with `UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_review_queue.py`
and review the diff.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import select
import shlex
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ctxkeeper.cli import term
from ctxkeeper.cli.app import main
from ctxkeeper.cli.reviewqueue import edit_document, parse_document, terminal_problem
from ctxkeeper.cli.reviewscreen import wrap
from ctxkeeper.core.errors import PreviouslyRejectedError
from ctxkeeper.write.verbs import (
    agent_actor,
    deprecate_entry,
    record_entry,
    update_entry,
    user_actor,
)
from tests.conftest import (
    REPO_ROOT,
    constraint_fields,
    decision_fields,
    pipeline_fields,
    snapshot_dir,
)
from tests.terminal import person_env, require_person_ancestry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxkeeper.core.store import Store

GOLDEN = Path(__file__).parent / "golden" / "review_screen.txt"
COLUMNS = 80
PROMPT = "[q]uit > "
TIMEOUT = 20.0
REJECTED_RULE = "Webhook payloads are signed with the shared HMAC secret"
REJECT_REASON = "We sign webhooks with per-partner keys, not one shared secret."
FIXED_PURPOSE = "Publish the docs site from main after the link checker passes cleanly."
FIXED_REASON = (
    "Partners rate-limit bursts; a flat retry loop got us blocked for a whole day in May, "
    "and jitter keeps the retries of many workers apart."
)
# An editor: applies the next edit planned for this kind of entry (told apart by its fields)
# to the JSON file it is given, as a person typing would, and counts its calls.
EDITOR_SCRIPT = """\
import json, sys
from pathlib import Path
plan_path = Path(sys.argv[1])
plan = json.loads(plan_path.read_text())
target = Path(sys.argv[2])
lines = [l for l in target.read_text().splitlines() if not l.lstrip().startswith("//")]
doc = json.loads("\\n".join(lines))
kind = "pipeline" if "steps" in doc else "constraint" if "rule" in doc else "decision"
step = plan[kind].pop(0)
plan["calls"].append(kind)
plan_path.write_text(json.dumps(plan))
if "exit" in step:
    sys.exit(step["exit"])
doc.update(step)
target.write_text(json.dumps(doc, indent=2))
"""
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


class Terminal:
    """`ctxkeeper review` on a pseudo-terminal of 80x24: read what it shows, type keys.

    ``in_process`` runs the same CLI entry point in a thread of this process, with stdin and
    stdout on the terminal (so coverage sees it); otherwise it is a child process.
    """

    def __init__(
        self,
        project: str,
        extra: dict[str, str] | None = None,
        *,
        in_process: pytest.MonkeyPatch | None = None,
    ) -> None:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))
        self.leader = leader
        self.raw = b""
        self.seen = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        self.status: int | None = None
        argv = ["review", "--project-dir", project]
        if in_process is None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ctxkeeper", *argv],
                stdin=follower,
                stdout=follower,
                stderr=follower,
                cwd=REPO_ROOT,
                env=queue_env(**(extra or {})),
            )
            os.close(follower)
            return
        monkeypatch = in_process
        for name, value in {**queue_env(), **(extra or {})}.items():
            monkeypatch.setenv(name, value)
        if "NO_COLOR" not in (extra or {}):
            monkeypatch.delenv("NO_COLOR", raising=False)
        stdin = open(follower, encoding="utf-8", closefd=False)  # noqa: SIM115
        stdout = open(follower, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        monkeypatch.setattr(sys, "stdin", stdin)
        monkeypatch.setattr(sys, "stdout", stdout)

        def run() -> None:
            try:
                self.status = main(argv)
            finally:
                stdout.flush()
                os.close(follower)  # the terminal hangs up, as when a child exits

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    @property
    def text(self) -> str:
        """Everything shown so far, colour codes stripped, lines ended by \\n."""
        plain = _COLOUR.sub("", self.raw.decode("utf-8", errors="replace"))
        return plain.replace("\r\n", "\n")

    def _read(self, deadline: float) -> bool:
        ready, _, _ = select.select([self.leader], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return False
        try:
            chunk = os.read(self.leader, 65536)
        except OSError:  # the child closed the terminal
            chunk = b""
        self.raw += chunk
        return bool(chunk)

    def expect(self, marker: str) -> str:
        """Wait for ``marker`` after what was already consumed; return the text up to it."""
        deadline = time.monotonic() + TIMEOUT
        while marker not in self.text[self.seen :]:
            if not self._read(deadline):
                raise AssertionError(f"no {marker!r} within {TIMEOUT}s; the screen:\n{self.text}")
        end = self.text.index(marker, self.seen) + len(marker)
        shown, self.seen = self.text[self.seen : end], end
        return shown

    def type(self, keys: str) -> None:
        os.write(self.leader, keys.encode())

    def finish(self) -> tuple[int, str]:
        deadline = time.monotonic() + TIMEOUT
        while self._read(deadline):
            pass
        os.close(self.leader)
        if self.proc is not None:
            return self.proc.wait(timeout=TIMEOUT), self.text
        assert self.thread is not None
        self.thread.join(timeout=TIMEOUT)
        assert self.status is not None, self.text
        return self.status, self.text


def queue_env(**extra: str) -> dict[str, str]:
    env = person_env(COLUMNS=str(COLUMNS), TERM="xterm")
    env.pop("NO_COLOR", None)
    return {**env, **extra}


def flat(text: str) -> str:
    """``text`` with its line wrapping undone (any run of whitespace as one space)."""
    return " ".join(text.split())


def too_wide(text: str) -> list[str]:
    return [line for line in text.split("\n") if term.cells(line) > COLUMNS]


def make_editor(tmp_path: Path, plan: dict[str, list[dict[str, object]]]) -> tuple[str, Path]:
    script = tmp_path / "editor.py"
    script.write_text(EDITOR_SCRIPT)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps({**plan, "calls": []}))
    command = " ".join(shlex.quote(part) for part in (sys.executable, str(script), str(plan_path)))
    return command, plan_path


@pytest.fixture(params=["subprocess", "in-process"])
def launch(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Terminal]:
    """Start the queue as a child process (as a person meets it) or in this process."""
    in_process = monkeypatch if request.param == "in-process" else None

    def start(project: str, **extra: str) -> Terminal:
        return Terminal(project, extra, in_process=in_process)

    return start


@pytest.fixture
def queued(store: Store) -> dict[str, str]:
    """A person's rule, the agent's proposed update of it, and four agent proposals."""
    agent = agent_actor("s-review")
    retry = constraint_fields(
        rule="Webhook deliveries are retried with exponential backoff",
        reason="Partners rate-limit bursts; a flat retry loop got us blocked for a whole day.",
        hardness="soft",
        scope=["src/webhooks/"],
    )
    ids = {"retry": str(record_entry(store, "constraint", retry, actor=user_actor())["id"])}
    change = update_entry(
        store,
        ids["retry"],
        {"hardness": "hard"},
        "backoff has become a hard rule for every sender",
        actor=agent,
    )
    assert change["pending"] is True
    ids["change"] = str(change["change"])
    proposals = {
        "locks": ("decision", decision_fields()),
        "signed": (
            "constraint",
            constraint_fields(
                rule=REJECTED_RULE,
                reason="Partners verify each delivery against the signature we send with it.",
                scope=["src/webhooks/"],
            ),
        ),
        "docs": (
            "pipeline",
            pipeline_fields(
                name="Docs publish",
                purpose="Publish the documentation site whenever main changes at all.",
                steps=["Build the site with the docs toolchain", "Upload the build to hosting"],
            ),
        ),
        "release": ("pipeline", pipeline_fields()),
    }
    for key, (kind, fields) in proposals.items():
        ids[key] = str(record_entry(store, kind, fields, actor=agent)["id"])
    return ids


@pytest.mark.slow
class TestReviewQueueOnATerminal:
    def test_approve_reject_edit_skip_as_the_person(
        self,
        store: Store,
        queued: dict[str, str],
        tmp_path: Path,
        launch: Callable[..., Terminal],
    ) -> None:
        require_person_ancestry()
        editor, plan_path = make_editor(
            tmp_path,
            {
                # The docs pipeline: first an edit below the purpose floor, then the fix.
                "pipeline": [{"purpose": "Publish docs."}, {"purpose": FIXED_PURPOSE}],
                # The agent's change to the person's rule: the person writes their own version.
                "constraint": [{"reason": FIXED_REASON}],
                "decision": [],
            },
        )
        # What the person does with each item, whatever order the queue shows them in.
        plan = {
            queued["locks"]: "a",
            queued["signed"]: "r",
            queued["docs"]: "e",
            queued["change"]: "e",
            queued["release"]: "s",
        }
        before = len(store.read_journal())
        screen = launch(store.root, EDITOR=editor, VISUAL="false")
        shown_order = []
        for number in range(1, len(plan) + 1):
            shown = screen.expect(PROMPT)
            assert f"-- {number} of {len(plan)} " in shown
            shown = shown[shown.index(f"-- {number} of ") :]  # this item's screen only
            target = min(plan, key=lambda t: shown.find(t) if t in shown else len(shown))
            shown_order.append(target)
            key = plan[target]
            screen.type(key)
            if key == "r":
                screen.expect("Enter alone goes back.\n> ")
                screen.type("too short\n")  # under the floor: asked again
                assert "say why in at least 10" in flat(screen.expect("Enter alone goes back.\n> "))
                screen.type(REJECT_REASON + "\n")
            elif key == "e" and target == queued["docs"]:
                broken = flat(screen.expect("[a]bandon it > "))
                assert "your edit was not saved" in broken
                assert "'purpose' is 13 characters; the minimum is 40" in broken
                screen.type("e")  # edit again, and fix it
                saved = flat(screen.expect(PROMPT))  # the edited entry, shown again to decide
                assert f"saved your edit of {queued['docs']} (purpose)" in saved
                assert FIXED_PURPOSE in saved
                screen.type("a")
        code, text = screen.finish()

        assert code == 0, text
        assert "approved 2, rejected 1, edited 2, skipped 1; 1 still awaits review" in flat(text)
        assert not too_wide(text), too_wide(text)
        assert set(shown_order) == set(plan)
        assert json.loads(plan_path.read_text())["calls"] == (
            ["pipeline", "pipeline", "constraint"]
            if shown_order.index(queued["docs"]) < shown_order.index(queued["change"])
            else ["constraint", "pipeline", "pipeline"]
        )
        # The statuses the person chose; the skipped one still waits, untouched.
        entries = store.load().entries
        assert entries[queued["locks"]]["status"] == "active"
        assert entries[queued["signed"]]["status"] == "rejected"
        assert entries[queued["signed"]]["status_reason"] == REJECT_REASON
        assert entries[queued["docs"]]["status"] == "active"
        assert entries[queued["docs"]]["purpose"] == FIXED_PURPOSE
        assert entries[queued["release"]]["status"] == "proposed"
        assert entries[queued["release"]]["revision"] == 1
        # The person's edit of the agent's change replaced it: the proposed hardness, their reason.
        retry = entries[queued["retry"]]
        assert (retry["reason"], retry["hardness"]) == (FIXED_REASON, "hard")
        assert "pending_changes" not in retry
        # Every verdict and edit is journaled as the person's; nothing half-saved in between.
        new: list[Any] = store.read_journal()[before:]
        assert [(r["op"], r["id"]) for r in new if r["id"] != queued["retry"]] == [
            (op, entry_id)
            for target in shown_order
            for op, entry_id in {
                queued["locks"]: [("approve", queued["locks"])],
                queued["signed"]: [("reject", queued["signed"])],
                queued["docs"]: [("update", queued["docs"]), ("approve", queued["docs"])],
                queued["change"]: [],
                queued["release"]: [],
            }[target]
        ]
        assert [r["op"] for r in new if r["id"] == queued["retry"]] == ["update", "reject_change"]
        assert {r["actor"]["origin"] for r in new} == {"user"}
        # The rejected text is refused when the agent records it again; other text is not.
        signed = constraint_fields(
            rule=REJECTED_RULE,
            reason="Partners verify each delivery against the signature we send with it.",
            scope=["src/webhooks/"],
        )
        with pytest.raises(PreviouslyRejectedError) as refused:
            record_entry(store, "constraint", signed, actor=agent_actor())
        assert refused.value.tombstone_id == queued["signed"]
        other = constraint_fields(
            rule="Webhook endpoints answer within two seconds or are retried",
            reason="Slow partner endpoints held our delivery workers and delayed every queue.",
        )
        accepted = record_entry(store, "constraint", other, actor=agent_actor())
        assert store.get(str(accepted["id"]))["status"] == "proposed"

    def test_a_deprecation_and_a_supersession_show_both_sides(
        self, store: Store, launch: Callable[..., Terminal]
    ) -> None:
        require_person_ancestry()
        person = user_actor()
        locks = str(record_entry(store, "decision", decision_fields(), actor=person)["id"])
        retry_fields = constraint_fields(
            rule="Webhook deliveries are retried with exponential backoff",
            reason="Partners rate-limit bursts; a flat retry loop got us blocked for a whole day.",
            scope=["src/webhooks/"],
        )
        retry = str(record_entry(store, "constraint", retry_fields, actor=person)["id"])
        agent = agent_actor()
        deprecation = deprecate_entry(
            store, retry, "The partner gateway now retries deliveries for us.", actor=agent
        )
        successor_fields = decision_fields(
            summary="Use a leader lease in etcd for the job scheduler",
            why_chosen=(
                "The platform team now runs etcd for every service, and a lease survives a "
                "database failover that would drop every advisory lock."
            ),
        )
        successor = record_entry(
            store, "decision", successor_fields, actor=agent, supersedes=[locks]
        )
        new_id = str(successor["id"])
        screen = launch(store.root)
        screens = {}
        for _ in range(2):
            shown = screen.expect(PROMPT)
            shown = shown[shown.rindex("-- ") :]
            if new_id in shown.split("\n", 2)[1]:
                screens["supersede"] = flat(shown)
                screen.type("\x1b[A")  # an arrow key: swallowed, its "A" does not approve
                assert "press a, r, e, s or q" in screen.expect(PROMPT)
                screen.type("a")
            else:
                screens["deprecate"] = flat(shown)
                assert "[e]dit" not in shown
                screen.type("e")
                assert "no fields to edit" in flat(screen.expect(PROMPT))
                screen.type("r")
                screen.expect("goes back.\n> ")
                screen.type("Our own backoff stays until the gateway is proven.\n")
        code, text = screen.finish()
        assert code == 0, text
        assert "approved 1, rejected 1, edited 0, skipped 0" in flat(text)
        assert not too_wide(text), too_wide(text)
        both = screens["supersede"]
        assert f"proposed supersession: {new_id} would replace {locks}" in both
        assert f"successor: {new_id} [proposed, unreviewed] Use a leader lease" in both
        assert f"replaces: {locks} [active] Use PostgreSQL advisory locks" in both
        assert f"proposed deprecation {deprecation['change']} of {retry}" in screens["deprecate"]
        assert "reason: The partner gateway now retries deliveries for us." in screens["deprecate"]
        entries = store.load().entries
        assert entries[new_id]["status"] == "active"
        assert (entries[locks]["status"], entries[locks]["superseded_by"]) == ("superseded", new_id)
        assert entries[retry]["status"] == "active"  # the refused deprecation left it in force
        assert "pending_changes" not in entries[retry]

    def test_a_change_of_mind_writes_nothing(
        self, store: Store, tmp_path: Path, launch: Callable[..., Terminal]
    ) -> None:
        """A failed editor, an unchanged file, an abandoned invalid edit, a reason not given,
        a stale change that cannot be approved, then quit: the store is as it was."""
        require_person_ancestry()
        rule = str(record_entry(store, "constraint", constraint_fields(), actor=user_actor())["id"])
        change = update_entry(
            store, rule, {"hardness": "soft"}, "soft is enough for refunds", actor=agent_actor()
        )
        update_entry(store, rule, {"tags": ["billing"]}, "tag it for the team", actor=user_actor())
        release = str(record_entry(store, "pipeline", pipeline_fields(), actor=agent_actor())["id"])
        editor, plan_path = make_editor(
            tmp_path, {"pipeline": [{"exit": 3}, {}, {"name": "R"}], "constraint": []}
        )
        before = snapshot_dir(store.dir)
        screen = launch(store.root, EDITOR=editor)
        assert f"{release} [proposed, unreviewed]" in screen.expect(PROMPT)
        screen.type("x")
        assert "press a, r, e, s or q" in flat(screen.expect(PROMPT))
        screen.type("e")
        assert "the editor exited with status 3; nothing was saved" in flat(screen.expect(PROMPT))
        screen.type("e")
        assert "nothing was changed in the editor" in flat(screen.expect(PROMPT))
        screen.type("e")
        assert "'name' is 1 characters; the minimum is 3" in flat(screen.expect("[a]bandon it > "))
        screen.type("z")  # neither: asked again
        screen.expect("[a]bandon it > ")
        screen.type("a")
        assert "abandoned; nothing was saved" in flat(screen.expect(PROMPT))
        screen.type("r")
        screen.expect("goes back.\n> ")
        screen.type("\x04")  # end of input: back to the keys, nothing rejected
        screen.expect(PROMPT)
        screen.type("s")
        stale = flat(screen.expect(PROMPT))
        assert f"proposed update {change['change']} of {rule}" in stale
        assert "STALE: the entry changed since this was proposed" in stale
        assert "- hardness: hard + hardness: soft" in stale
        screen.type("a")
        assert f"not approved: {rule} changed since {change['change']}" in flat(
            screen.expect(PROMPT)
        )
        screen.type("q")
        code, text = screen.finish()
        assert code == 0, text
        assert "approved 0, rejected 0, edited 0, skipped 1; 2 still await review" in flat(text)
        assert json.loads(plan_path.read_text())["calls"] == ["pipeline"] * 3
        assert snapshot_dir(store.dir) == before
        assert store.get(release)["status"] == "proposed"  # the control: the queue saw it

    def test_the_screen_matches_the_golden_file(
        self, store: Store, launch: Callable[..., Terminal]
    ) -> None:
        require_person_ancestry()
        golden_store(store)
        screen = launch(store.root)
        shown = normalised(screen.expect(PROMPT))
        screen.type("q")
        code, text = screen.finish()
        assert code == 0, text
        assert "approved 0, rejected 0, edited 0, skipped 0; 1 still awaits review" in flat(text)
        assert not too_wide(shown), too_wide(shown)
        # Escaped, never raw: only the queue's own colour codes reach the terminal.
        assert "<U+001B>[2K<U+000D>" in shown
        assert not any(char in _COLOUR.sub("", screen.raw.decode()) for char in "\x1b\x07\u202e")
        # NO_COLOR: the same screen, without a single escape code.
        plain = launch(store.root, NO_COLOR="1")
        assert normalised(plain.expect(PROMPT)) == shown
        plain.type("q")
        assert plain.finish()[0] == 0
        assert b"\x1b" not in plain.raw
        assert b"\x1b[" in screen.raw  # the control: colour on a terminal without NO_COLOR
        if os.environ.get("UPDATE_GOLDEN") == "1":
            GOLDEN.parent.mkdir(exist_ok=True)
            GOLDEN.write_text(shown, encoding="utf-8")
        assert shown == GOLDEN.read_text(encoding="utf-8")

    def test_the_screen_shows_how_a_proposal_is_asked_for(
        self, store: Store, launch: Callable[..., Terminal]
    ) -> None:
        require_person_ancestry()
        asked = ["why do refunds go out twice", "customer refunded twice; retry?"]
        record_entry(
            store,
            "constraint",
            constraint_fields(
                rule="Every refund request carries an idempotency key", asked_as=asked
            ),
            actor=agent_actor("s-review"),
        )
        # The control: a proposal without phrasings shows no such line.
        record_entry(
            store,
            "constraint",
            constraint_fields(rule="Card numbers never reach the application logs"),
            actor=agent_actor("s-review"),
        )
        screen = launch(store.root, NO_COLOR="1")
        first = normalised(screen.expect(PROMPT))
        screen.type("s")
        second = normalised(screen.expect(PROMPT))
        screen.type("q")
        assert screen.finish()[0] == 0
        with_it, without = (first, second) if "refund" in first else (second, first)
        # One phrasing a line, whole: the semicolon in one does not split it.
        assert f"- {asked[0]}" in with_it
        assert f"- {asked[1]}" in with_it
        assert "asked as" in with_it
        assert "Card numbers never reach" in flat(without)
        assert "asked as" not in without

    def test_an_empty_queue_says_so(self, store: Store, launch: Callable[..., Terminal]) -> None:
        require_person_ancestry()
        code, text = launch(store.root).finish()
        assert code == 0, text
        assert text.strip() == "nothing awaits review"

    @pytest.mark.parametrize("missing", ["stdin", "stdout"])
    def test_refuses_without_a_terminal_on_either_side(
        self, store: Store, queued: dict[str, str], missing: str
    ) -> None:
        require_person_ancestry()
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))
        before = store.read_journal()
        done = subprocess.run(
            [sys.executable, "-m", "ctxkeeper", "review", "--project-dir", store.root],
            # A pipe holding a keypress that would approve, were it read.
            input=b"a" if missing == "stdin" else None,
            stdin=None if missing == "stdin" else follower,
            stdout=subprocess.PIPE if missing == "stdout" else follower,
            stderr=subprocess.PIPE,
            cwd=REPO_ROOT,
            env=queue_env(),
            timeout=TIMEOUT,
            check=False,
        )
        os.close(follower)
        os.close(leader)
        other = "stdout" if missing == "stdin" else "stdin"
        err = done.stderr.decode()
        assert done.returncode == 1, err
        assert f"{missing} is not a terminal" in err
        assert f"{other} is not" not in err
        assert "`ctxkeeper review --json`" in err
        assert store.read_journal() == before
        # The listing it points to works without a terminal and lists the same queue.
        listing = subprocess.run(
            [sys.executable, "-m", "ctxkeeper", "review", "--json", "--project-dir", store.root],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            cwd=REPO_ROOT,
            env=queue_env(),
            timeout=TIMEOUT,
            check=True,
        )
        assert json.loads(listing.stdout)["total"] == 5


def golden_store(store: Store) -> None:
    """One agent proposal with a similar active rule, a tombstone it resembles, and a hand
    edit that slipped an escape sequence into its reason."""
    proposal = constraint_fields(
        rule="Every refund request carries an idempotency key",
        reason="A retried refund call paid one customer back twice in March; keys make it once.",
        tags=["billing", "refunds"],
    )
    proposal_id = str(record_entry(store, "constraint", proposal, actor=agent_actor())["id"])
    record_entry(store, "constraint", constraint_fields(), actor=user_actor())
    retired = constraint_fields(
        rule="Every refund request must carry an idempotency key header",
        reason="A retried refund call paid one customer back twice; the header made it once.",
    )
    retired_id = str(record_entry(store, "constraint", retired, actor=user_actor())["id"])
    deprecate_entry(
        store,
        retired_id,
        "Refunds moved to the provider's own dedup API, which needs no header.",
        actor=user_actor(),
    )
    path = Path(store.dir) / "entries.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    for entry in doc["entries"]:
        if entry["id"] == proposal_id:
            entry["reason"] += " \x1b[2K\rApproved by security."
    path.write_text(json.dumps(doc), encoding="utf-8")


def normalised(text: str) -> str:
    """The screen with what varies between runs fixed: id suffixes, change ids and times."""
    text = re.sub(r"\b(dec|con|pip)-(\d{3,})-[0-9a-f]{4}\b", r"\1-\2-0000", text)
    text = re.sub(r"\bchg-[0-9a-f]{8}\b", "chg-00000000", text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "2026-01-01T00:00:00Z", text)


class TestLayout:
    """The pieces of the queue that need no terminal."""

    @pytest.mark.parametrize("room", [40, 80])
    def test_wrap_fits_and_keeps_every_word(self, room: int) -> None:
        line = "  reason: " + " ".join(["retry", "storm", "数据库", "x" * 90] * 6)
        lines = wrap(line, room)
        assert len(lines) > 1
        assert all(term.cells(part) <= room for part in lines)
        assert all(part.startswith(" " * 10) for part in lines[1:])  # hangs under the value
        assert "".join(part.strip() for part in lines).replace(" ", "") == line.replace(" ", "")
        assert wrap("  rule: short", room) == ["  rule: short"]  # the control: no wrap needed

    def test_the_refusal_names_the_stream_that_is_not_a_terminal(self) -> None:
        leader, follower = pty.openpty()
        with open(follower, "w", encoding="utf-8") as tty:
            assert terminal_problem(tty, tty) is None  # the control: both are terminals
            for stdin, stdout, missing in ((io.StringIO(), tty, "stdin"), (tty, None, "stdout")):
                problem = str(terminal_problem(stdin, stdout or io.StringIO()))
                assert f"and {missing} is not a terminal" in problem
                assert "`ctxkeeper review --json`" in problem
        os.close(leader)

    def test_the_edit_file_round_trips_and_shows_hidden_characters_escaped(self) -> None:
        fields: dict[str, object] = {
            "rule": "Never \u202eskip\u202c review\x1b[2K",
            "tags": ["café"],
            "valid_until": None,
        }
        text = edit_document(fields)
        assert "\\u202e" in text
        assert "\\u001b" in text
        assert "café" in text  # printable text stays as it reads
        assert not any(char in text for char in "\x1b\u202e\u202c")
        assert parse_document(text) == fields
