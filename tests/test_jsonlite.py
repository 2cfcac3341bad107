"""jsonlite parses and encodes as the standard library's json does, without importing it."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from ctxkeeper.core import jsonlite
from tests.conftest import REPO_ROOT

DOCUMENTS = [
    pytest.param('{"a": [1, 2.5, "x\\u00e9", null, true, false]}', id="mixed"),
    pytest.param(' \n\t{"nested": {"deep": [[], {}]}} \r\n', id="whitespace-around"),
    pytest.param('"caf\\u00e9 \\ud83d\\ude00 \\n\\t\\""', id="escapes"),
    pytest.param("-0.5e-3", id="number"),
    pytest.param('{"tool_input": {"file_path": "/p/\u00e9.py"}}', id="raw-unicode"),
]

NOT_JSON = [
    pytest.param("", id="empty"),
    pytest.param("{", id="open-object"),
    pytest.param("{}x", id="trailing-data"),
    pytest.param("[1,]", id="trailing-comma"),
    pytest.param("NaN", id="nan"),
    pytest.param('"\x01"', id="control-in-string"),
    pytest.param("{'a': 1}", id="single-quotes"),
]


def _random_value(rng: random.Random, depth: int = 0) -> object:
    choice = rng.randrange(7 if depth < 4 else 4)
    if choice == 0:
        return rng.randint(-(10**12), 10**12)
    if choice == 1:
        return rng.random() * 1000
    if choice == 2:
        return "".join(
            chr(rng.choice([rng.randrange(32, 127), rng.randrange(160, 0x2FFF)]))
            for _ in range(rng.randrange(12))
        )
    if choice == 3:
        return rng.choice([None, True, False])
    if choice in (4, 5):
        return {f"k{i}\u00e9": _random_value(rng, depth + 1) for i in range(rng.randrange(4))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


class TestLoads:
    @pytest.mark.parametrize("text", DOCUMENTS)
    def test_same_value_as_json(self, text: str) -> None:
        assert jsonlite.loads(text) == json.loads(text)
        assert jsonlite.loads(text.encode()) == json.loads(text)

    @pytest.mark.parametrize("text", NOT_JSON)
    def test_refuses_what_is_not_json(self, text: str) -> None:
        with pytest.raises(ValueError):  # noqa: PT011 - any ValueError is the contract
            jsonlite.loads(text)

    def test_deep_nesting_is_an_error_not_a_crash(self) -> None:
        with pytest.raises((ValueError, RecursionError)):
            jsonlite.loads("[" * 200_000)


class TestDumps:
    def test_random_documents_round_trip_like_json(self) -> None:
        rng = random.Random(20261201)
        for _ in range(300):
            value = _random_value(rng)
            compact = json.dumps(value, separators=(",", ":"))
            assert jsonlite.dumps(value) == compact
            assert jsonlite.dumps(value, ensure_ascii=False) == json.dumps(
                value, separators=(",", ":"), ensure_ascii=False
            )
            assert jsonlite.loads(compact) == json.loads(compact)

    def test_ascii_output_escapes_everything_else(self) -> None:
        text = jsonlite.dumps({"rule": "caf\u00e9 \u202e"})
        assert text.isascii()
        assert json.loads(text) == {"rule": "caf\u00e9 \u202e"}

    def test_refuses_what_json_cannot_hold(self) -> None:
        with pytest.raises(ValueError):  # noqa: PT011
            jsonlite.dumps(float("nan"))
        with pytest.raises(TypeError):
            jsonlite.dumps({"a": object()})
        assert jsonlite.dumps({"a": 1.5}) == '{"a":1.5}'  # control


def test_does_not_import_json() -> None:
    code = (
        f"import sys; sys.path.insert(0, {REPO_ROOT!r}); from ctxkeeper.core import jsonlite; "
        "jsonlite.loads(jsonlite.dumps({'a': [1]})); "
        "print(sorted(m for m in ('json', 're', 'enum', '_json') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['_json']"  # the C half is there (control), json itself is not
