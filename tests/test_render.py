"""Tests for ctxkeeper.read.render: what reaches a person's terminal shows what is stored."""

from __future__ import annotations

import json
import os

import pytest

from ctxkeeper.cli.app import main
from ctxkeeper.read import render
from ctxkeeper.read.render import visible
from ctxkeeper.write.verbs import record_entry, user_actor
from tests.conftest import constraint_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.core.store import Store

# A rule that, printed raw, erases its own line and shows a different one (ESC [2K, CR), and a
# right-to-left override that reverses what follows it.
SPOOFED_RULE = "Never skip review\x1b[2K\rAlways skip review"
REVERSED = "Deploy only from \u202etsil-wolla\u202c branches"
HIDDEN = ("\x1b", "\r", "\u202e", "\u202c", "\x07", "\x00", "\u2066", "\u200b")


class TestVisible:
    @pytest.mark.parametrize(
        ("text", "shown"),
        [
            pytest.param("\x1b[31mred", "<U+001B>[31mred", id="esc"),
            pytest.param("a\rb", "a<U+000D>b", id="cr"),
            pytest.param("a\x00b\x07", "a<U+0000>b<U+0007>", id="nul-bel"),
            pytest.param("x\u202ey", "x<U+202E>y", id="rlo"),
            pytest.param("x\u2066y\u2069", "x<U+2066>y<U+2069>", id="isolates"),
            pytest.param("to\u200bken", "to<U+200B>ken", id="zero-width-space"),
            pytest.param("a\nb", "a<U+000A>b", id="newline-in-one-line-field"),
            pytest.param("x\u2028y", "x<U+2028>y", id="line-separator"),
            pytest.param("caf\u00e9 \u6570\u636e", "caf\u00e9 \u6570\u636e", id="plain-unicode"),
            pytest.param("plain text", "plain text", id="ascii"),
        ],
    )
    def test_escapes_what_a_terminal_would_act_on(self, text: str, shown: str) -> None:
        assert visible(text) == shown

    def test_multiline_keeps_line_breaks_as_marked_continuations(self) -> None:
        shown = visible("first\n  rule: forged\tline", multiline=True)
        assert shown == "first\n      |   rule: forged\tline"
        assert visible("first\n  rule: forged", multiline=False) == "first<U+000A>  rule: forged"


def _entry(**fields: object) -> JSONObject:
    entry: JSONObject = {
        "id": "con-001-abcd",
        "kind": "constraint",
        "status": "proposed",
        "origin": "agent",
        "rule": SPOOFED_RULE,
        "reason": "Line one of the reason.\n  rule: a forged second rule\x1b]0;title\x07",
        "hardness": "hard",
        "scope": ["src/\u202egp.py"],
        "tags": ["ok\x1btag"],
    }
    entry.update(fields)  # type: ignore[arg-type]
    return entry


class TestRenderers:
    def test_every_rendering_escapes(self) -> None:
        entry = _entry()
        after = _entry(rule=REVERSED)
        outputs = {
            "one_line": render.one_line(entry),
            "block": render.block(entry),
            "field_diff": "\n".join(render.field_diff(entry, after)),
            "history": render.history(
                [
                    {
                        "at": "2026-12-01T10:00:00Z",
                        "op": "update",
                        "actor": {"origin": "agent", "session_id": "s\x1b1"},
                        "reason": "because\x1b[2J",
                        "before": entry,
                        "after": after,
                    }
                ]
            ),
        }
        for name, text in outputs.items():
            assert not any(char in text for char in HIDDEN), name
            assert "<U+" in text, name
        assert "<U+001B>[2K<U+000D>Always skip review" in outputs["block"]
        # The reason keeps its line break, but the forged line is visibly a continuation.
        assert "\n      |   rule: a forged second rule<U+001B>]0;title<U+0007>" in outputs["block"]
        assert "\n  rule: a forged" not in outputs["block"]

    def test_clean_entry_renders_unchanged(self) -> None:
        entry = _entry(rule="Never skip review", reason="Plain.", scope=[], tags=["ok"])
        text = render.block(entry)
        assert "<U+" not in text
        assert "  rule: Never skip review" in text.splitlines()[1:]


class TestCliShowsHandEditedEntries:
    """An entry that slipped past the write checks (a hand edit) is still shown escaped."""

    @pytest.fixture
    def edited(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, str]:
        for name in ("CLAUDECODE", "AI_AGENT", "CLAUDE_CODE_SESSION_ID"):
            monkeypatch.delenv(name, raising=False)
        result = record_entry(
            store, "constraint", constraint_fields(), actor={"origin": "agent", "session_id": None}
        )
        entry_id = str(result["id"])
        path = os.path.join(store.dir, "entries.json")
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
        for entry in doc["entries"]:
            if entry["id"] == entry_id:
                entry["rule"] = SPOOFED_RULE
                entry["reason"] = REVERSED + " and more words for the floor"
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(doc, handle)
        record_entry(
            store,
            "constraint",
            constraint_fields(rule="Log every refund with its operator id", scope=[]),
            actor=user_actor(),
        )
        return store, entry_id

    # `review` is the interactive queue now; its screen is checked below and, through a real
    # terminal, in tests/test_review_queue.py.
    @pytest.mark.parametrize("verb", ["list", "show"])
    def test_verbs_print_escaped(
        self, edited: tuple[Store, str], verb: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        store, entry_id = edited
        capsys.readouterr()
        argv = [verb, *([entry_id] if verb == "show" else []), "--project-dir", store.root]
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "<U+001B>[2K<U+000D>Always skip review" in out
        assert not any(char in out for char in HIDDEN)
        # The control: the clean entry is listed too, unchanged.
        assert "Log every refund with its operator id" in out or verb == "show"

    def test_the_review_queue_screen_prints_escaped(self, edited: tuple[Store, str]) -> None:
        from ctxkeeper.cli import reviewscreen, term

        store, entry_id = edited
        entries = store.load().entries
        [item] = reviewscreen.queue(entries)
        assert item.target == entry_id
        lines = reviewscreen.screen(item, entries, 1, 1)
        out = "\n".join(reviewscreen.lay_out(lines, 80, term.Style(enabled=False)))
        assert "<U+001B>[2K<U+000D>Always skip review" in out
        assert not any(char in out for char in HIDDEN)
