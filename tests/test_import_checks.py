"""The import's checks on a snapshot's texts, times, actors and bytes: each refusal names
its line, every time it is read, beside a sound control."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkeeper.core import secretscan
from ctxkeeper.core.errors import SnapshotError
from ctxkeeper.team import snapshotformat

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_secret_kinds_finds_each_secret_beside_clean_text() -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    texts = ["plain words", f"the CI uses {token}", "more words. with a dot", token + " again"]
    kinds = secretscan.secret_kinds(texts)
    assert kinds == {f"the CI uses {token}": "GitHub token", token + " again": "GitHub token"}
    assert "plain words" not in kinds  # the control: present texts, absent verdicts


def _snapshot(at: str) -> bytes:
    event = {
        "id": "con-001-abcd",
        "at": at,
        "event": "0123456789abcdef",
        "version": 2,
        "op": "purge",
        "actor": {"origin": "user", "user": None},
        "reason": None,
        "parents": [],
        "after": None,
    }
    header = json.dumps({"ctxkeeper_snapshot": 1})
    return f"{header}\n{json.dumps({'journal': event})}\n".encode()


def test_a_bad_event_time_is_refused_every_time_it_is_read() -> None:
    good = snapshotformat.parse(_snapshot("2026-11-30T09:15:00Z"), "/x/snap")
    assert "0123456789abcdef" in good.events
    for _ in range(2):  # the same refusal every time, naming the line
        with pytest.raises(SnapshotError, match="2026-02-30T09:15:00Z") as caught:
            snapshotformat.parse(_snapshot("2026-02-30T09:15:00Z"), "/x/snap")
        assert caught.value.line == 2
    long_time = "2026-11-30T09:15:00Z" + " " * 100  # spaces around a time are allowed
    assert "0123456789abcdef" in snapshotformat.parse(_snapshot(long_time), "/x/snap").events


#: What a Discord bot token's text is made of, in both cases, beside look-alikes that fold
#: onto its letters when lower-cased (the Kelvin sign, a dotted capital I) or stop it.
_DISCORD_PIECES = st.lists(
    st.sampled_from(["A", "z", "0", "_", "-", ".", "\u212a", "\u0130", " ", "é", "x" * 7]),
    max_size=60,
).map("".join)


@PROPS
@given(_DISCORD_PIECES, _DISCORD_PIECES)
def test_the_discord_gate_admits_every_text_its_pattern_matches(left: str, right: str) -> None:
    [rule] = [rule for rule in secretscan._RULES if rule.kind == "Discord bot token"]
    assert rule.gate is not None
    assert rule.hints == ()
    token = "MTk4NjIyNDgzNDcxOTI1MjQ4." + "Cl2FMQ" + "." + "ZnCjm1XVW7vRze4b7Cq4se7kKWs"
    for text in (left + right, left + token + right):
        if rule.pattern.search(text):
            assert rule.gate.search(text.lower()), text
    # The control: a real token passes the gate and is found, a sentence with dots is not.
    assert secretscan.secret_kinds([token, "A sentence. Another one."]) == {
        token: "Discord bot token"
    }


def test_a_file_that_is_not_utf8_names_its_bad_line() -> None:
    header = json.dumps({"ctxkeeper_snapshot": 1}).encode()
    good = snapshotformat.parse(header + b"\n", "/x/snap")
    assert good.entries == []  # the control: the file without its bad line is sound
    assert good.events == {}
    with pytest.raises(SnapshotError, match="not UTF-8") as caught:
        snapshotformat.parse(header + b"\n\n" + b'{"entry":"\xff"}\n', "/x/snap")
    assert caught.value.line == 3


def test_a_sound_actor_is_remembered_and_an_unsound_one_refused_every_time() -> None:
    sound = _snapshot("2026-11-30T09:15:00Z")
    unsound = sound.replace(b'"user": null', b'"user": ["a list"]')
    assert unsound != sound
    for _ in range(2):
        assert "0123456789abcdef" in snapshotformat.parse(sound, "/x/snap").events
        with pytest.raises(SnapshotError, match="actor field 'user'") as caught:
            snapshotformat.parse(unsound, "/x/snap")
        assert caught.value.line == 2
