"""``ctxkeeper review``: the interactive queue a person decides from, one item at a time.

Each item is shown whole (:mod:`ctxkeeper.cli.reviewscreen`), newest first, and one keypress
decides it, no Enter needed: ``a`` approve, ``r`` reject (asks for a reason, then Enter),
``e`` edit (opens ``$EDITOR`` on the fields as JSON), ``s`` skip, ``q`` quit. Where the
platform has no ``termios`` a letter and Enter do the same.

Editing a proposed entry saves the person's version as their own update (floors and
tombstones re-checked by ``update_entry``) and shows the entry again to decide. Editing an
agent's pending update saves the person's version of it the same way and closes the agent's
change (rejected as replaced). An invalid edit is shown with the error, and the person edits
again or abandons it: nothing is written until an edit is valid. Every verdict goes through the
human verbs (:mod:`ctxkeeper.cli.review`) and ``update_entry`` with the person as actor, so
each is journaled as theirs. The queue needs a terminal on stdin and stdout; ``review --json``
is the listing for scripts and agents.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from typing import Final

from ctxkeeper.cli import review, reviewscreen, term, verdicts
from ctxkeeper.core.changes import awaiting_decision
from ctxkeeper.core.errors import CtxkeeperError, StaleVerdictError, UsageError
from ctxkeeper.core.model import editable_view
from ctxkeeper.core.text import forbidden_control
from ctxkeeper.read import render
from ctxkeeper.write.verbs import update_entry, user_actor

#: Whether one keypress can be read without Enter (not on Windows: a letter and Enter there).
_ONE_KEY: Final = importlib.util.find_spec("termios") is not None

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import TextIO

    from ctxkeeper.cli.reviewscreen import Item
    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.store import Store

_EDIT_REASON: Final = "edited by a person in review, before deciding it"
_REPLACED_REASON: Final = "replaced by the person's own edit in review"
_HELP: Final = (
    "// Edit the fields below, then save and close the editor. JSON: text in double quotes,\n"
    '// lists as ["one", "two"]; lines starting with // are ignored. The floors apply as on\n'
    "// `ctxkeeper add`: an invalid edit is shown, and you can fix it or abandon it.\n"
)


def terminal_problem(stdin: TextIO | None = None, stdout: TextIO | None = None) -> str | None:
    """Why the queue cannot run here (a stream that is not a terminal), or None."""
    streams = (("stdin", stdin or sys.stdin), ("stdout", stdout or sys.stdout))
    missing = [name for name, stream in streams if not _isatty(stream)]
    if not missing:
        return None
    verb = "is not a terminal" if len(missing) == 1 else "are not terminals"
    return (
        "`ctxkeeper review` is an interactive queue: it needs a terminal on both stdin and "
        f"stdout, and {' and '.join(missing)} {verb}. To list what awaits review without "
        "one, run `ctxkeeper review --json`"
    )


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # closed or not a file
        return False


def run_queue(store: Store, *, no_color: bool = False) -> int:
    """Show each item awaiting a decision and act on the person's key; 0 when done or quit."""
    items = reviewscreen.queue(store.load().entries)
    if not items:
        print("nothing awaits review")
        return 0
    queue = _Queue(store, term.Style.for_stream(sys.stdout, no_color=no_color))
    status = 0
    try:
        for number, item in enumerate(items, start=1):
            if not queue.decide(item, number, len(items)):
                break
    except KeyboardInterrupt:
        queue.say("\ninterrupted")
        status = 130
    left = awaiting_decision(store.load().entries.values())
    counts = queue.counts
    summary = ", ".join(f"{verb} {counts[verb]}" for verb in _VERDICTS)
    still = f"; {left} still {'awaits' if left == 1 else 'await'} review" if left else ""
    queue.say(summary + still, "bold")
    return status


_VERDICTS: Final = ("approved", "rejected", "edited", "skipped")


class _Queue:
    """One review session: the store, the person's terminal, and what they decided."""

    def __init__(self, store: Store, style: term.Style) -> None:
        self.store = store
        self.style = style
        self.room = term.width(sys.stdout)
        self.keys = _Keys(sys.stdin.fileno())
        self.counts: Counter[str] = Counter()
        self.edited: set[str] = set()
        self.actor = user_actor()

    def say(self, text: str, role: str = "") -> None:
        lines = reviewscreen.lay_out([(text, role)], self.room, self.style)
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()

    def ask(self, prompt: str, names: Mapping[str, str]) -> str:
        """The prompt (wrapped, the last line left open) and the key pressed, echoed by name."""
        *lines, last = reviewscreen.wrap(prompt, self.room)
        head = "".join(line + "\n" for line in lines)
        key = self.keys.key(lambda: _write(head + self.style(last, "bold")))
        _write(self.style(names.get(key, ""), "dim") + "\n")
        return key

    def decide(self, item: Item, number: int, total: int) -> bool:
        """Settle one item (or skip it); False when the person quits."""
        show = True
        seen = _Seen("", {})
        while True:
            entries = self.store.load().entries
            if not reviewscreen.waiting(item, entries):
                return True  # an earlier verdict settled it (a successor's supersession)
            if show:
                lines = reviewscreen.screen(item, entries, number, total)
                _write("\n".join(reviewscreen.lay_out(lines, self.room, self.style)) + "\n")
                # A verdict binds to this screen, taken from the same read of the store.
                seen = _Seen(
                    verdicts.verdict_digest(entries, item.target),
                    verdicts.verdict_subject(entries, item.target),
                )
            show = False
            keys = "[a]pprove [r]eject [e]dit [s]kip [q]uit > "
            if not reviewscreen.editable(item):
                keys = keys.replace("[e]dit ", "")
            key = self.ask(keys, _NAMES)
            if key not in _NAMES:
                self.say("press a, r, e, s or q (one key, no Enter)", "note")
                continue
            if key == "q":
                return False
            if key == "s":
                self.counts["skipped"] += 1
                return True
            if key == "a":
                outcome = self.verdict("approve", item, seen)
                if outcome == "done":
                    self.counts["approved"] += 1
                    return True
                show = outcome == "stale"
            if key == "r":
                reason = self.reason()
                outcome = "" if reason is None else self.verdict("reject", item, seen, reason)
                if outcome == "done":
                    self.counts["rejected"] += 1
                    return True
                show = outcome == "stale"
            if key == "e" and self.edit(item, entries):
                self.edited.add(item.target)
                self.counts["edited"] = len(self.edited)
                if item.op != "entry":
                    return True  # the person's edit replaced the agent's change
                show = True  # the edited entry, to decide now

    def verdict(self, verb: str, item: Item, seen: _Seen, reason: str = "") -> str:
        """Decide the item as it was shown: "done", "stale" (it moved since; nothing was
        written, and it must be shown again) or "refused"."""
        try:
            done = review.decide(
                self.store,
                verb,
                [item.target],
                actor=self.actor,
                reason=reason,
                shown={item.target: seen.digest},
            )
        except StaleVerdictError as exc:
            self.say(
                f"not {_DONE[verb]}: {render.visible(item.target)} changed while you read it, "
                "so nothing was written. What changed:",
                "danger",
            )
            for line in verdicts.what_changed(seen.subject, exc.now):
                self.say(render.visible(line, multiline=True), _DIFF_ROLES.get(line[:4], ""))
            self.say("It is shown again below as it stands now: decide that version.", "warn")
            return "stale"
        except CtxkeeperError as exc:
            self.say(f"not {_DONE[verb]}: {render.visible(str(exc))}", "danger")
            return "refused"
        for decision in done:
            self.say(render.visible(str(decision["text"]), multiline=True), "add")
        return "done"

    def reason(self) -> str | None:
        """The reason for a rejection, typed and ended with Enter; None to go back."""
        floor = review.HUMAN_REASON_FLOOR
        question = f"why reject it? At least {floor} characters; Enter alone goes back."

        def prompt() -> None:
            self.say(question)
            _write("> ")

        while True:
            text = (self.keys.line(prompt) or "").strip()
            if not text:
                return None
            char = forbidden_control(text, multiline=False)
            if char is not None:
                self.say(f"the reason holds the control character U+{ord(char):04X}", "warn")
            elif len(text) < floor:
                self.say(f"{len(text)} characters; say why in at least {floor}", "warn")
            else:
                return text

    def edit(self, item: Item, entries: dict[str, JSONObject]) -> bool:
        """Open the editor on the item's fields and save a valid edit; True when saved."""
        if not reviewscreen.editable(item):
            self.say("a deprecation or supersession has no fields to edit; approve or reject it")
            return False
        entry = entries[item.entry_id]
        live = editable_view(entry)
        change = reviewscreen.change_of(item, entries)
        fields = change.get("fields") if change else None
        proposal = {**live, **fields} if isinstance(fields, dict) else live
        handle, path = tempfile.mkstemp(prefix="ctxkeeper-edit-", suffix=".json", text=True)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(edit_document(proposal))
        try:
            return self._edit_loop(item, path, live, proposal)
        finally:
            os.unlink(path)

    def _edit_loop(
        self, item: Item, path: str, live: dict[str, object], proposal: dict[str, object]
    ) -> bool:
        while True:
            problem = _run_editor(path)
            if problem is not None:
                self.say(f"{problem}; nothing was saved", "danger")
                return False
            try:
                with open(path, encoding="utf-8") as handle:
                    merged = {**proposal, **parse_document(handle.read())}
                if merged == proposal:
                    self.say("nothing was changed in the editor; nothing was saved", "note")
                    return False
                updates = {key: value for key, value in merged.items() if live.get(key) != value}
                if not updates:
                    self.say("your edit leaves the entry as it is: press r to reject the change")
                    return False
                reason = _EDIT_REASON if item.op == "entry" else f"{_EDIT_REASON} ({item.target})"
                done = update_entry(self.store, item.entry_id, updates, reason, actor=self.actor)
            except CtxkeeperError as exc:
                self.say(f"your edit was not saved: {render.visible(str(exc))}", "danger")
                again = ""
                while again not in _AGAIN:
                    again = self.ask("[e]dit again to fix it, [a]bandon it > ", _AGAIN)
                if again != "e":
                    self.say("abandoned; nothing was saved", "note")
                    return False
                continue
            changed = done.get("changed")
            names = ", ".join(map(str, changed)) if isinstance(changed, list) else ""
            self.say(f"saved your edit of {render.visible(item.entry_id)} ({names})", "add")
            if item.op != "entry":
                self.close(item)
            return True

    def close(self, item: Item) -> None:
        """Refuse the agent's change the person's own edit replaced (journaled as theirs)."""
        try:
            review.decide(
                self.store, "reject", [item.target], actor=self.actor, reason=_REPLACED_REASON
            )
        except CtxkeeperError as exc:
            shown = render.visible(str(exc))
            self.say(f"{item.target} still waits ({shown}); reject it to close it", "warn")
        else:
            self.say(f"{item.target} is closed: your edit replaced it", "add")


@dataclass(frozen=True)
class _Seen:
    """What the person was last shown of an item: the digest a verdict binds to, and the
    subject it was taken over (to tell them what changed, if it moves)."""

    digest: str
    subject: JSONObject


_DIFF_ROLES: Final = {"  - ": "del", "  + ": "add"}
_NAMES: Final = {"a": "approve", "r": "reject", "e": "edit", "s": "skip", "q": "quit"}
_AGAIN: Final = {"e": "edit again", "a": "abandon", "q": "abandon"}
_DONE: Final = {"approve": "approved", "reject": "rejected"}


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def edit_document(fields: Mapping[str, object]) -> str:
    """The editor's file: a help header, then the fields as JSON with anything invisible as
    a ``\\uXXXX`` escape (it parses back to the same text, and the editor shows it)."""
    text = json.dumps(fields, indent=2, ensure_ascii=False)
    return (
        _HELP
        + "".join(
            char if char == "\n" or char.isprintable() else _json_escape(char) for char in text
        )
        + "\n"
    )


def _json_escape(char: str) -> str:
    return json.dumps(char, ensure_ascii=True)[1:-1]


def parse_document(text: str) -> dict[str, object]:
    """The fields from an edited file; ``//`` lines are comments."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    try:
        fields = json.loads(body)
    except json.JSONDecodeError as exc:
        raise UsageError(f"the file is not valid JSON ({exc})") from None
    if not isinstance(fields, dict):
        raise UsageError('the file must hold one JSON object: {"field": value, ...}')
    return fields


def _run_editor(path: str) -> str | None:
    """Run ``$EDITOR`` (else ``$VISUAL``, else ``vi``) on ``path``; what went wrong, or None."""
    command = os.environ.get("EDITOR") or os.environ.get("VISUAL") or "vi"
    try:
        argv = [*shlex.split(command), path]
        # On the person's terminal, wherever this process's own stdin and stdout point.
        status = subprocess.run(argv, stdin=sys.stdin, stdout=sys.stdout, check=False).returncode
    except (OSError, ValueError) as exc:
        return f"cannot run the editor {command!r} ({exc}); set EDITOR"
    return None if status == 0 else f"the editor exited with status {status}"


class _Keys:
    """Single keypresses from the terminal (no echo, no Enter); lines in its normal mode."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pending = ""

    def key(self, prompt: Callable[[], None]) -> str:
        """Show the prompt and return the next key, lowercased; "q" at end of input.

        An escape sequence (an arrow, a function key) is swallowed whole and returns "": its
        last letter must not pass for a command, even when the rest arrives a moment later.
        """
        if not _ONE_KEY:  # pragma: no cover - a letter and Enter
            line = self.line(prompt)
            return "q" if line is None else line.strip()[:1].lower()
        import termios

        saved = termios.tcgetattr(self.fd)
        quiet = termios.tcgetattr(self.fd)
        quiet[3] &= ~(termios.ICANON | termios.ECHO)
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
        try:
            prompt()
            while not self.pending.strip():
                chunk = os.read(self.fd, 64)
                if not chunk:
                    return "q"
                if b"\x1b" in chunk:
                    self._drain()
                    return ""  # not a command key; the caller says which keys are
                self.pending = chunk.decode("utf-8", errors="replace")
            text = self.pending.lstrip()
            self.pending = text[1:]
            return text[0].lower()
        finally:
            termios.tcsetattr(self.fd, termios.TCSANOW, saved)

    def _drain(self, wait: float = 0.05) -> None:
        self.pending = ""
        while select.select([self.fd], [], [], wait)[0] and os.read(self.fd, 64):
            pass

    def line(self, prompt: Callable[[], None]) -> str | None:
        """A line typed and ended with Enter (echoed, editable); None at end of input."""
        self.pending = ""
        prompt()
        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(self.fd, 1024)
            if not chunk:
                return data.decode("utf-8", errors="replace") if data else None
            data += chunk
        return data.decode("utf-8", errors="replace").rstrip("\r\n")
