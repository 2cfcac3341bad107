"""Hostile input, as properties: whatever a cloned repository or an agent hands over, each reader
either accepts it in a checkable canonical form or refuses it with its documented error, and
never with another exception.

Covered: the entry validator (model.clean_fields), the scope normaliser and coverage
(core/scope.py, against a reference model written here), the time parser (core/times.py),
the snapshot reader (snapshotformat.parse, and import_snapshot changing nothing when it
refuses) and the JSON-RPC reader with the server's loop (mcp/jsonrpc.py, mcp/server.py).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from datetime import date, datetime, timedelta, timezone
from typing import Any, TypeVar

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxkeeper.core import times
from ctxkeeper.core.errors import CtxkeeperError, SnapshotError, UsageError, ValidationError
from ctxkeeper.core.model import EDITABLE_FIELDS, KINDS, clean_fields, contract_floors
from ctxkeeper.core.scope import covers, normalize_scope, relative_path
from ctxkeeper.core.store import Store
from ctxkeeper.mcp import jsonrpc
from ctxkeeper.mcp.server import Session, serve
from ctxkeeper.mcp.tools import load_tools
from ctxkeeper.team import snapshotformat
from ctxkeeper.write.exchange import import_snapshot
from ctxkeeper.write.verbs import user_actor
from tests.conftest import FIELDS
from tests.test_snapshot_hostile import SNAPSHOT, build_control, tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ctxkeeper.core._types import JSONObject, JSONValue

T = TypeVar("T")
UTC = timezone.utc
PROPS = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FEW = settings(PROPS, max_examples=40)

# -- strategies ---------------------------------------------------------------------------

#: Characters that hurt: controls, bidi, separators, surrogates, NUL, wide, combining.
NASTY_CHARS = st.sampled_from(
    list("\x00\x07\x1b\r\n\t\x7f\x85\u200b\u202e\u2066\u2028\ufeff\u0301\ud800\udfff日é/\\.* ")
)
TEXT = st.one_of(
    st.text(max_size=80),
    st.text(st.one_of(NASTY_CHARS, st.characters()), max_size=80),
    st.text(min_size=60, max_size=200),
)
JSON_LEAF: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON_VALUE: st.SearchStrategy[Any] = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _json_copy(value: object) -> object:
    return json.loads(json.dumps(value))


def outcome(call: Callable[[], T]) -> T | CtxkeeperError:
    """What ``call`` returns, or the ctxkeeper error it raises (any other exception escapes)."""
    try:
        return call()
    except CtxkeeperError as exc:
        return exc


# -- the entry validator -----------------------------------------------------------------


@st.composite
def entry_inputs(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    """A kind and its valid fields with some fields replaced, removed or added."""
    kind = draw(st.sampled_from(KINDS))
    fields: dict[str, object] = dict(FIELDS[kind]())
    names = sorted({*EDITABLE_FIELDS[kind], *fields})
    for name in draw(st.lists(st.sampled_from(names), max_size=4, unique=True)):
        fields[name] = draw(
            st.one_of(
                JSON_VALUE,
                TEXT,
                st.lists(TEXT, max_size=5),
                st.sampled_from(["hard", "soft", "2026-01-31", "dec-001-abcd", "src/../..", "."]),
            )
        )
    for name in draw(st.lists(st.sampled_from(sorted(fields)), max_size=2, unique=True)):
        fields.pop(name, None)
    if draw(st.booleans()) and draw(st.booleans()):
        fields[draw(st.text(max_size=10))] = draw(JSON_LEAF)
    return kind, fields


def _names_a_field(message: str, field: str) -> bool:
    base = field.split("[", 1)[0]
    # "tags" errors speak of one "tag"; an unknown field's name is quoted escaped.
    return any(name in message for name in (base, base.rstrip("s"), repr(field)))


@PROPS
@given(entry_inputs())
@example(("constraint", FIELDS["constraint"](related_to=["not-an-id"])))
@example(("decision", FIELDS["decision"](valid_from="2026-02-01", valid_until="2026-01-31")))
@example(("pipeline", FIELDS["pipeline"](steps=["short"])))
def test_entry_validator_accepts_canonically_or_names_the_field(
    case: tuple[str, dict[str, object]],
) -> None:
    kind, fields = case
    root = "/srv/project"
    clean = outcome(lambda: clean_fields(kind, fields, contract_floors(), root=root))
    if isinstance(clean, ValidationError):
        assert clean.field is not None, str(clean)
        assert _names_a_field(str(clean), clean.field), (clean.field, str(clean))
        return
    if isinstance(clean, UsageError):
        # Scope, time and id problems: the message still names the field it came from.
        named = [name for name in fields if name in str(clean)]
        assert named, str(clean)
        return
    assert isinstance(clean, dict), repr(clean)  # no other ctxkeeper error is documented
    # Accepted: the stored form survives JSON unchanged, holds only the kind's fields, and a
    # second pass through the validator is the identity (it is canonical).
    assert _json_copy(clean) == clean
    assert set(clean) <= set(EDITABLE_FIELDS[kind])
    assert clean_fields(kind, clean, contract_floors(), root=root) == clean


def test_entry_validator_control_cases() -> None:
    # The property above must be able to see both sides.
    clean = clean_fields("constraint", FIELDS["constraint"](), contract_floors())
    assert clean["rule"] == FIELDS["constraint"]()["rule"]
    refused = outcome(
        lambda: clean_fields("constraint", FIELDS["constraint"](hardness=7), contract_floors())
    )
    assert isinstance(refused, ValidationError)
    assert refused.field == "hardness"


# -- the scope normaliser and coverage --------------------------------------------------

COMPONENTS = st.sampled_from(["a", "b", "ab", "a.py", "b.py", ".", "..", "", "...", "日本", "é"])
RAW_PATHS = st.builds(
    lambda parts, seps: "".join(p + s for p, s in zip(parts, seps, strict=False)) + parts[-1],
    st.lists(COMPONENTS, min_size=1, max_size=6),
    st.lists(st.sampled_from(["/", "\\", "//"]), min_size=6, max_size=6),
)
ROOT = "/srv/proj"


def _reference_parts(path: str) -> list[str] | None:
    """The reference model: split on both separators, resolve '.' and '..' with a stack;
    None when the path climbs above the root or is absolute."""
    if path.replace("\\", "/").startswith("/"):
        return None
    stack: list[str] = []
    for part in path.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                return None
            stack.pop()
            continue
        stack.append(part)
    return stack


@PROPS
@given(RAW_PATHS)
@example("src/../..")
@example("..\\x")
@example("a/./b//")
def test_normalize_scope_is_canonical_and_never_escapes(scope: str) -> None:
    expected = _reference_parts(scope)
    result = outcome(lambda: normalize_scope(scope))
    if isinstance(result, CtxkeeperError):
        assert isinstance(result, UsageError)
        assert expected is None, (scope, str(result))
        assert repr(scope) in str(result)
        return
    assert expected is not None, (scope, result)
    assert result == "/".join(expected)
    assert ".." not in result.split("/")
    assert not result.startswith("/")
    assert not result.endswith("/")
    assert normalize_scope(result) == result  # idempotent


@PROPS
@given(RAW_PATHS, st.sampled_from([ROOT, ROOT + "-other", "/srv", "/etc", ROOT + "/.."]))
@example("a", ROOT + "-other")
@example("..", ROOT)
def test_absolute_scope_inside_the_root_only(rest: str, base: str) -> None:
    scope = base + "/" + rest
    # Reference: the whole absolute path, resolved, must lie under ROOT's components.
    parts = _reference_parts(scope.lstrip("/"))
    inside = parts is not None and parts[:2] == ["srv", "proj"]
    result = outcome(lambda: normalize_scope(scope, ROOT))
    if isinstance(result, CtxkeeperError):
        assert isinstance(result, UsageError)
        assert not inside, (scope, str(result))
        return
    assert inside, (scope, result)
    assert parts is not None
    assert result == "/".join(parts[2:])
    assert normalize_scope(result, ROOT) == result


@PROPS
@given(st.lists(RAW_PATHS, max_size=3), RAW_PATHS)
@example(["hooks"], "webhooks/x.py")
@example(["a"], "a/../b")
@example([], "..")
def test_covers_agrees_with_whole_component_prefixes(scopes: list[str], path: str) -> None:
    canonical: list[str] = []
    for scope in scopes:
        try:
            canonical.append(normalize_scope(scope))
        except UsageError:
            continue
    rel = relative_path(path, ROOT)
    expected_path = _reference_parts(path)
    assert (rel is None) == (expected_path is None), (path, rel)
    scope_parts = [_reference_parts(scope) or [] for scope in canonical]
    expected = expected_path is not None and (
        not scope_parts or any(expected_path[: len(s)] == s for s in scope_parts)
    )
    assert covers(canonical, rel) is expected, (canonical, rel)


# -- the time parser ---------------------------------------------------------------------

INSTANTS = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(9998, 12, 30), timezones=st.just(UTC)
).map(lambda moment: moment.replace(microsecond=0))
OFFSETS = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59)


def _offset_text(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


@PROPS
@given(INSTANTS, OFFSETS, st.sampled_from(["T", "t", " "]))
def test_iso_instants_round_trip(instant: datetime, offset: int, sep: str) -> None:
    text = instant.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert times.normalize_time(text, field="valid_from") == text
    local = instant.astimezone(timezone(timedelta(minutes=offset)))
    spelled = local.strftime(f"%Y-%m-%d{sep}%H:%M:%S") + _offset_text(offset)
    assert times.parse_time(spelled, field="as_of") == instant
    assert times.normalize_time(spelled, field="valid_from") == text


@PROPS
@given(st.dates(min_value=date(1970, 1, 1), max_value=date(9998, 12, 31)))
def test_bare_date_means_the_whole_utc_day(day: date) -> None:
    text = day.isoformat()
    assert times.normalize_time(text, field="valid_until") == text
    start = times.parse_time(text, field="valid_until")
    end = times.parse_time(text, field="valid_until", end_of_day=True)
    assert start == datetime(day.year, day.month, day.day, tzinfo=UTC)
    assert end - start == timedelta(days=1)
    entry: dict[str, object] = {"valid_from": text, "valid_until": text}
    assert times.is_valid_at(entry, start)
    assert times.is_valid_at(entry, end - timedelta(seconds=1))
    assert not times.is_valid_at(entry, end)
    assert not times.is_valid_at(entry, start - timedelta(seconds=1))


TIME_ALPHABET = st.sampled_from([*"0123456789-:TtZz+. W", "\u0663", "\uff11", "\x00"])
NEAR_TIMES = st.one_of(
    st.text(TIME_ALPHABET, max_size=30),
    st.builds(
        lambda base, at, junk: base[:at] + junk + base[at + 1 :],
        st.sampled_from(["2026-01-31", "2026-01-31T09:15:00Z", "2026-01-31T09:15+01:00"]),
        st.integers(0, 20),
        st.text(TIME_ALPHABET, max_size=2),
    ),
    st.text(max_size=40),
)


@PROPS
@given(NEAR_TIMES)
@example("\u0662\u0660\u0662\u0666-01-31")  # Arabic-Indic digits match \d
@example("9999-12-31T23:59:59-05:00")
@example("2026-01-31T24:00:00Z")
def test_time_parser_is_canonical_or_a_usage_error(text: str) -> None:
    stored = outcome(lambda: times.normalize_time(text, field="valid_until"))
    if isinstance(stored, CtxkeeperError):
        assert isinstance(stored, UsageError)
        assert str(stored).startswith("valid_until: "), str(stored)
        assert times.parse_stored_bound(text, end_of_day=True) is None
        assert times.stored_time_problem(text) is not None
        return
    assert stored.isascii()
    assert times.normalize_time(stored, field="valid_until") == stored
    assert times.stored_time_problem(stored) is None
    assert times.parse_time(text, field="v") == times.parse_time(stored, field="v")


@PROPS
@given(JSON_VALUE)
def test_stored_bounds_never_raise(value: object) -> None:
    # A hand-edited or cloned store holds anything; reading a bound never raises.
    bound = times.parse_stored_bound(value, end_of_day=True)
    assert bound is None or bound.tzinfo is not None
    problem = times.stored_time_problem(value)
    assert (problem is None) == (value is None or bound is not None)


# -- the snapshot reader and import ------------------------------------------------------


@st.composite
def mutated_snapshots(draw: st.DrawFn) -> bytes:
    """A valid snapshot with one to three edits: at the byte, line or JSON-value level."""
    lines = _Snap.get().data.split(b"\n")
    for _ in range(draw(st.integers(1, 3))):
        lines = lines or [b""]  # every line deleted: an empty file, still a line to edit
        edit = draw(
            st.sampled_from(["bytes", "delete", "duplicate", "swap", "value", "truncate", "line"])
        )
        at = draw(st.integers(0, max(len(lines) - 1, 0)))
        if edit == "bytes" and lines[at]:
            cut = draw(st.integers(0, len(lines[at])))
            lines[at] = lines[at][:cut] + draw(st.binary(max_size=6)) + lines[at][cut + 1 :]
        elif edit == "delete" and lines:
            del lines[at]
        elif edit == "duplicate" and lines:
            lines.insert(draw(st.integers(0, len(lines))), lines[at])
        elif edit == "swap" and len(lines) > 1:
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        elif edit == "truncate":
            joined = b"\n".join(lines)
            lines = joined[: draw(st.integers(0, len(joined)))].split(b"\n")
        elif edit == "line":
            lines.insert(at, json.dumps(draw(JSON_VALUE)).encode())
        elif edit == "value" and lines:
            try:
                document = json.loads(lines[at])
            except ValueError:  # an earlier edit broke this line: nothing to walk
                continue
            lines[at] = _replace_a_value(document, draw)
    return b"\n".join(lines)


def _replace_a_value(document: JSONValue, draw: st.DrawFn) -> bytes:
    """Replace one value somewhere in ``document`` by an arbitrary JSON value."""
    paths: list[tuple[str | int, ...]] = []

    def walk(value: JSONValue, where: tuple[str | int, ...]) -> None:
        paths.append(where)
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*where, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, (*where, index))

    walk(document, ())
    where = draw(st.sampled_from(paths))
    replacement = draw(JSON_VALUE)
    if not where:
        return json.dumps(replacement).encode()
    holder: Any = document
    for step in where[:-1]:
        holder = holder[step]
    holder[where[-1]] = replacement
    return json.dumps(document).encode()


class _Snap:
    """One store with entries, events and an exported snapshot, shared by the examples
    (a refused import changes nothing, which the property checks each time)."""

    _made: _Snap | None = None

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="ctxk-hostile-")
        root = os.path.join(self._dir.name, "project")
        os.mkdir(root)
        store = Store.open(root)
        store.init()
        control = build_control(store)
        self.store = store
        self.data = control.snapshot
        self.path = os.path.join(store.dir, SNAPSHOT)

    @classmethod
    def get(cls) -> _Snap:
        if cls._made is None:
            cls._made = cls()
        return cls._made


@st.composite
def hostile_snapshots(draw: st.DrawFn) -> bytes:
    return draw(
        st.one_of(
            mutated_snapshots(),
            st.binary(max_size=200),
            st.lists(st.binary(max_size=40), max_size=5).map(b"\n".join),
        )
    )


def _line_count(data: bytes) -> int:
    return len(data.split(b"\n"))


@settings(PROPS, max_examples=200)
@given(hostile_snapshots())
def test_snapshot_parse_accepts_or_names_a_line(data: bytes) -> None:
    path = "/x/.context/snapshot.jsonl"
    snapshot = outcome(lambda: snapshotformat.parse(data, path))
    if isinstance(snapshot, CtxkeeperError):
        assert isinstance(snapshot, SnapshotError), repr(snapshot)
        assert snapshot.path == path
        line = snapshot.line
        assert line is None or 1 <= line <= _line_count(data), (line, str(snapshot))
        assert str(snapshot).startswith(f"{path}:{line}: " if line else f"{path}: ")
        assert snapshot.detail
        return
    for number, entry in snapshot.entries:
        assert 1 <= number <= _line_count(data)
        assert isinstance(entry.get("id"), str)
    for number, event in snapshot.events.values():
        assert 1 <= number <= _line_count(data)
        assert isinstance(event, dict)


def test_snapshot_parse_control() -> None:
    data = _Snap.get().data
    snapshot = snapshotformat.parse(data, "/x/snap")
    assert len(snapshot.entries) == 3
    broken = data.replace(b'"entry"', b'"entyr"', 1)
    refused = outcome(lambda: snapshotformat.parse(broken, "/x/snap"))
    assert isinstance(refused, SnapshotError)
    assert refused.line == 2


@settings(FEW, max_examples=60)
@given(mutated_snapshots())
def test_a_refused_import_changes_no_byte_of_the_store(data: bytes) -> None:
    snap = _Snap.get()
    before = tree(snap.store.dir)
    with open(snap.path, "wb") as handle:
        handle.write(data)
    report = outcome(lambda: import_snapshot(snap.store, actor=user_actor()))
    if isinstance(report, CtxkeeperError):
        assert tree(snap.store.dir) == before, str(report)
        if isinstance(report, SnapshotError):
            assert report.path == os.path.realpath(snap.path)
    # Refused or not, the store still reads.
    snap.store.load()


# -- the JSON-RPC reader and the server loop ------------------------------------------------

KEYS = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "_meta"])
METHODS = st.sampled_from(
    ["initialize", "ping", "tools/list", "tools/call", "server/discover", "x", ""]
)
READ_ONLY_TOOLS = st.sampled_from(
    ["get_context", "query_entries", "get_entry", "get_project_summary", "nope"]
)


@st.composite
def envelopes(draw: st.DrawFn) -> JSONValue:
    """Almost-requests: the right keys with hostile values, and tool calls with hostile
    arguments for the read-only tools."""
    message: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0", 2]))}
    if draw(st.booleans()):
        message["id"] = draw(st.one_of(st.integers(), st.text(max_size=5), JSON_LEAF))
    message["method"] = draw(st.one_of(METHODS, JSON_LEAF))
    params: Any = draw(
        st.one_of(
            st.fixed_dictionaries(
                {"name": READ_ONLY_TOOLS, "arguments": st.dictionaries(TEXT, JSON_VALUE)}
            ),
            st.dictionaries(KEYS, JSON_VALUE, max_size=3),
            JSON_VALUE,
        )
    )
    if draw(st.booleans()):
        message["params"] = params
    for key in draw(st.lists(KEYS, max_size=2)):
        message[key] = draw(JSON_VALUE)
    return message


HOSTILE_LINES = st.one_of(
    st.binary(max_size=120),
    TEXT.map(lambda text: text.encode("utf-8", "surrogatepass")),
    JSON_VALUE.map(lambda value: json.dumps(value).encode()),
    envelopes().map(lambda value: json.dumps(value).encode()),
    envelopes().map(lambda value: json.dumps(value, ensure_ascii=False).encode("utf-8", "replace")),
)
ANSWERABLE_CODES = {
    jsonrpc.PARSE_ERROR,
    jsonrpc.INVALID_REQUEST,
    jsonrpc.METHOD_NOT_FOUND,
    jsonrpc.INVALID_PARAMS,
    jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
}


def _decodes(line: bytes) -> JSONValue | None:
    try:
        return json.loads(line.decode("utf-8")) if line.strip() else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _NotJsonError from None


class _NotJsonError(Exception):
    pass


def _check_reply(line: bytes, reply: JSONObject | None) -> None:
    if reply is None:
        return
    assert json.loads(jsonrpc.encode_message(reply)) == _json_copy(reply)
    assert reply.get("jsonrpc") == "2.0"
    assert ("result" in reply) != ("error" in reply), reply
    assert "id" in reply
    try:
        _decodes(line)
    except _NotJsonError:
        error = reply.get("error")
        assert isinstance(error, dict)
        # Python's json reads NaN and Infinity; the server refuses them as parse errors too.
        assert error["code"] == jsonrpc.PARSE_ERROR, reply
        return
    if "error" in reply:
        error = reply["error"]
        assert isinstance(error, dict)
        # -32603 is an exception no input may cause: a crash caught at the last resort.
        assert error["code"] in ANSWERABLE_CODES, reply
        assert isinstance(error["message"], str)
        assert error["message"]


class _Server:
    _made: _Server | None = None

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="ctxk-rpc-")
        Store.open(self._dir.name).init()
        self.root = self._dir.name

    @classmethod
    def get(cls) -> _Server:
        if cls._made is None:
            cls._made = cls()
        return cls._made

    def session(self) -> Session:
        root = self.root
        return Session(lambda: load_tools(root), instructions="test", server_version="0")


def _ping(request_id: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()


INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
    }
).encode()


@settings(PROPS, max_examples=300)
@given(HOSTILE_LINES)
@example(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":NaN}')
@example(b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}')
@example(b"[" * 5000)
@example(b'{"jsonrpc":"2.0","id":true,"method":"ping"}')
def test_jsonrpc_reader_answers_every_line_and_keeps_serving(line: bytes) -> None:
    session = _Server.get().session()
    assert "result" in (session.handle_line(INIT) or {})
    _check_reply(line, session.handle_line(line))
    after = session.handle_line(_ping("after"))
    assert after == {"jsonrpc": "2.0", "id": "after", "result": {}}


MODERN_META: JSONObject = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _discover(request_id: str) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "server/discover",
        "params": {"_meta": MODERN_META},
    }
    return json.dumps(message).encode()


@settings(PROPS, max_examples=150)
@given(HOSTILE_LINES)
@example(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"x"}}')
@example(b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":[]}}')
def test_jsonrpc_reader_in_the_stateless_era(line: bytes) -> None:
    # The 2026-07-28 era: no handshake, every request carries _meta; the same guarantees hold.
    session = _Server.get().session()
    opened = session.handle_line(_discover("open"))
    assert opened is not None
    assert "result" in opened
    _check_reply(line, session.handle_line(line))
    after = session.handle_line(_discover("after"))
    assert after is not None
    assert after["id"] == "after"
    result = after["result"]
    assert isinstance(result, dict)
    assert result["supportedVersions"] == ["2026-07-28"]


def _frames(lines: list[bytes]) -> Iterator[bytes]:
    for number, line in enumerate(lines):
        yield line.replace(b"\n", b" ") + b"\n"
        yield _ping(_probe(number)) + b"\n"


def _probe(number: int) -> str:
    return f"probe-{number}-\u2603-{'z' * 90}"


@FEW
@given(st.lists(HOSTILE_LINES, min_size=1, max_size=12))
def test_server_loop_answers_every_probe_in_order(lines: list[bytes]) -> None:
    # The real loop, on a byte stream: after every hostile line, the next ping is answered.
    stdin = io.BytesIO(INIT + b"\n" + b"".join(_frames(lines)))
    stdout = io.BytesIO()
    server = _Server.get()
    status = serve(
        stdin, stdout, lambda: load_tools(server.root), instructions="t", server_version="0"
    )
    assert status == 0
    replies = [json.loads(raw) for raw in stdout.getvalue().splitlines()]
    sent = [_probe(number) for number in range(len(lines))]
    assert [reply["id"] for reply in replies if reply.get("id") in sent] == sent
    assert all(reply.get("result") == {} for reply in replies if reply.get("id") in sent)
    for reply in replies:
        assert reply.get("jsonrpc") == "2.0"
        error = reply.get("error")
        if isinstance(error, dict):
            assert error["code"] != jsonrpc.INTERNAL_ERROR, reply


def test_rpc_control_a_real_tool_call_is_answered() -> None:
    session = _Server.get().session()
    session.handle_line(INIT)
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "get_project_summary", "arguments": {}},
    }
    reply = session.handle_line(json.dumps(call).encode())
    assert reply is not None
    assert reply["id"] == 7
    result = reply["result"]
    assert isinstance(result, dict)
    assert result.get("isError") is not True
    bad = session.handle_line(b"{nope")
    assert bad is not None
    error = bad["error"]
    assert isinstance(error, dict)
    assert error["code"] == jsonrpc.PARSE_ERROR
