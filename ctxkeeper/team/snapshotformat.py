"""The team snapshot's text format: one JSON object per line, deterministic, union-mergeable.

A header line, the entries sorted by id, then the team events sorted by entry, time and id
(dec-019-6fbe). Every line is versioned on its own (an entry line's ``version``, an event's
journal ``version``) and the header states the highest version among them, so a file that a
union merge made of two clones' files of different versions is still read line by line: a
version this code does not know is refused by name, before anything is merged. Nothing in it moves on an export that changed nothing (no timestamp, no counter), so
a pull request's diff shows the entries that changed. Git's ``union`` merge keeps both sides'
lines, so the reader takes lines in any order, duplicated, and with two versions of an entry;
the events are the truth, the entry lines a readable projection of them.

Everything read here is untrusted (it arrives with ``git pull``): sizes are capped, every line
is checked against the model, and an error names its line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Final

from ctxkeeper.core import journal, secretscan, times
from ctxkeeper.core.errors import CtxkeeperError, SnapshotError
from ctxkeeper.core.model import (
    EDITABLE_FIELDS,
    ID_PATTERN,
    KINDS,
    LIST_MAX,
    ORIGINS,
    STATUSES,
    TEXT_FIELDS,
    TEXT_MAX,
    arriving_problems,
    ordered,
)
from ctxkeeper.team.teamlog import EVENT_FIELDS, OPTIONAL_FIELDS, STANDS_FOR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

    from ctxkeeper.core._types import JSONObject, JSONValue

SNAPSHOT_FILE: Final = "snapshot.jsonl"
#: 2: entry lines carry their own ``version`` (a line without one is version 1), and the
#: header states the highest version of any line in the file.
SNAPSHOT_VERSION: Final = 2
#: The version of the entry lines this code writes.
ENTRY_VERSION: Final = 2
HEADER_KEY: Final = "ctxkeeper_snapshot"
ENTRY_KEY: Final = "entry"
EVENT_KEY: Final = "journal"
VERSION_KEY: Final = "version"


def header_line(version: int) -> bytes:
    """The header line stating ``version``, the highest of the file's lines (no newline)."""
    return json.dumps({HEADER_KEY: version}, separators=(",", ":")).encode()


#: The header of a snapshot this code writes with an entry in it (without its newline).
HEADER_LINE: Final = header_line(SNAPSHOT_VERSION)
#: Limits on what a snapshot may hold: far above a real project (10,000 entries with 50,000
#: events take about 60 MB), low enough that a hostile file cannot exhaust memory.
MAX_BYTES: Final = 512 * 1024 * 1024
MAX_LINE_BYTES: Final = 1024 * 1024
MAX_PARENTS: Final = 64
MAX_DEPTH: Final = 32
EVENT_ID: Final = re.compile(r"[0-9a-f]{16}")
_ACTOR_KEYS: Final = frozenset({"origin", "user", "session_id"})
_CONFLICT_MARKERS: Final = (b"<<<<<<<", b"=======", b">>>>>>>", b"|||||||")
#: The entry fields :func:`arriving_problems` checks item by item, per kind.
_CHECKED_FIELDS: Final = {kind: frozenset(fields) for kind, fields in EDITABLE_FIELDS.items()}


@dataclass
class Snapshot:
    """What a snapshot file holds, each item with the line it came from."""

    entries: list[tuple[int, JSONObject]] = field(default_factory=list)
    events: dict[str, tuple[int, JSONObject]] = field(default_factory=dict)
    """Events by identity (a line repeated by a union merge is one event)."""


# -- writing ------------------------------------------------------------------------------


def render(entries: Iterable[Mapping[str, JSONValue]], events: Iterable[JSONObject]) -> bytes:
    """The snapshot's bytes: the same entries and events always give the same bytes."""
    ordered_entries = sorted(entries, key=lambda item: str(item.get("id")))
    ordered_events = sorted(events, key=event_order)
    highest = max(
        [ENTRY_VERSION] * bool(ordered_entries)
        + [v for e in ordered_events if isinstance(v := e.get("version"), int)],
        default=SNAPSHOT_VERSION,
    )
    lines = [header_line(highest) + b"\n"]
    lines.extend(entry_line(entry) + b"\n" for entry in ordered_entries)
    lines.extend(event_line(event) + b"\n" for event in ordered_events)
    return b"".join(lines)


def event_order(event: Mapping[str, JSONValue]) -> tuple[str, str, str]:
    """Where an event's line sorts: grouped by entry, so a teammate's new events land beside
    that entry's history in a diff."""
    return (str(event.get("id")), str(event.get("at")), str(event.get("event")))


def _encode(value: JSONValue) -> bytes:
    # Only "\n" ends a line: json escapes it inside strings, and git's merge splits on it alone.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def entry_line(entry: Mapping[str, JSONValue]) -> bytes:
    """An entry's line, without its newline: the entry, then the line's version."""
    return _encode({ENTRY_KEY: normal_entry(entry), VERSION_KEY: ENTRY_VERSION})


def event_line(event: Mapping[str, JSONValue]) -> bytes:
    """An event's line, without its newline."""
    return _encode({EVENT_KEY: normal_event(event)})


def normal_entry(entry: Mapping[str, JSONValue]) -> JSONObject:
    """Fields in model order, nested objects with sorted keys: one spelling per entry in every
    clone, however its dictionaries were built."""
    return ordered({key: _sorted(value) for key, value in entry.items()})


def normal_event(event: Mapping[str, JSONValue]) -> JSONObject:
    out: JSONObject = {}
    names = [*EVENT_FIELDS, *(name for name in OPTIONAL_FIELDS if name in event)]
    for name in names:
        value = event.get(name)
        # An entry's normal form orders its fields, but an event sorts them (below) anyway.
        out[name] = _sorted(value)
    return out


def same_event(one: Mapping[str, JSONValue], other: Mapping[str, JSONValue]) -> bool:
    """The same event, where a purge may have replaced values by their digests in one copy."""
    return _digest_form(one) == _digest_form(other)


def _digest_form(event: Mapping[str, JSONValue]) -> JSONObject:
    form = normal_event(event)
    for name in ("after", "reason"):
        form[name] = journal.value_digest(form.get(name))
    return form


def _redactions(event: Mapping[str, JSONValue]) -> int:
    return sum(journal.is_redacted(event.get(name)) for name in ("after", "reason"))


def _sorted(value: JSONValue) -> JSONValue:
    kind = type(value)
    if kind is str or kind is int or value is None:
        return value  # the most common values first: nothing to sort in them
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [item if type(item) is str else _sorted(item) for item in value]
    return value


def secret_in(
    entries: Iterable[tuple[int, Mapping[str, JSONValue]]],
    events: Iterable[tuple[int, JSONObject]],
) -> tuple[int, str] | None:
    """The line of the first secret-shaped string and where it is in that line
    (``entry con-001-ab12 field 'rule' holds ...``), or None. The secret itself is never named."""
    entries, events = list(entries), list(events)
    strings: set[str] = set()
    for _, entry in entries:
        _collect(entry.values(), strings)
    for _, event in events:
        after = event.get("after")
        _collect(after.values() if isinstance(after, dict) else (after,), strings)
        _collect((event.get("reason"),), strings)
    return _secret_hit(entries, events, strings)


def _secret_hit(
    entries: Sequence[tuple[int, Mapping[str, JSONValue]]],
    events: Sequence[tuple[int, JSONObject]],
    strings: set[str],
) -> tuple[int, str] | None:
    """:func:`secret_in`, given every string the entries and events hold (more do no harm:
    a hit is reported only where it is found in them). Most events repeat their entry's
    unchanged fields: every distinct string is scanned once, all together, and the lines are
    walked again only when one of them is a secret."""
    kinds = secretscan.secret_kinds(strings)
    if not kinds:
        return None
    for line, entry in entries:
        hit = _scan(entry, kinds)
        if hit:
            return line, f"entry {entry.get('id')} field {hit[0]!r} holds {_a(hit[1])}"
    for line, event in events:
        hit = _scan({"after": event.get("after"), "reason": event.get("reason")}, kinds)
        if hit:
            where = f"a journal event of {event.get('id')} (field {hit[0]!r})"
            return line, f"{where} holds {_a(hit[1])}"
    return None  # the secret was in a copy of an event that a purged copy replaced


def _a(kind: str) -> str:
    """``a GitHub token``, ``an AWS access key id``."""
    return f"{'an' if kind[:1].lower() in 'aeio' else 'a'} {kind}"


def _collect(values: Iterable[JSONValue], strings: set[str]) -> None:
    """Add every string in ``values`` (at any depth) to ``strings``. The flat shapes of an
    entry's fields (text, a list of texts) are read in place; anything deeper by a stack."""
    add = strings.add
    stack: list[JSONValue] = []
    for item in values:
        kind = type(item)
        if kind is str:
            add(item)  # type: ignore[arg-type]
        elif kind is list:
            for element in item:  # type: ignore[union-attr]
                if type(element) is str:
                    add(element)
                elif isinstance(element, (str, dict, list)):
                    stack.append(element)
        elif isinstance(item, (str, dict, list)):
            stack.append(item)
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            add(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _scan(value: Mapping[str, JSONValue], kinds: Mapping[str, str]) -> tuple[str, str] | None:
    # A field's path is worked out only for the rare string that holds a secret.
    stack: list[JSONValue] = list(value.values())
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            kind = kinds.get(item)
            if kind is not None:
                path = next(
                    p for name, v in value.items() for p, t in _strings(name, v) if t == item
                )
                return path, kind
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _strings(path: str, value: JSONValue) -> Iterable[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(f"{path}.{name}", item)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(f"{path}[{index}]", item)


# -- reading ------------------------------------------------------------------------------


def parse(data: bytes, path: str) -> Snapshot:
    """Read and check a snapshot; raise :class:`SnapshotError` naming the first bad line."""
    if len(data) > MAX_BYTES:
        raise SnapshotError(path, None, f"{len(data)} bytes is over the {MAX_BYTES}-byte limit")
    snapshot = Snapshot()
    header = False
    strings: set[str] = set()  # every string the lines hold, for the secret scan
    for number, line in _lines(data):
        try:
            value = _line_value(line, path, number)
            header = _read_line(snapshot, value, path, number, strings) or header
        except SnapshotError as exc:
            raise _masked(exc, path, number) from None
    if not header:
        raise SnapshotError(
            path, None, f"not a ctxkeeper snapshot (no {{{HEADER_KEY!r}: ...}} header line)"
        )
    hit = _secret_hit(snapshot.entries, list(snapshot.events.values()), strings)
    if hit:
        raise SnapshotError(path, hit[0], f"{hit[1]}; remove it from the file before importing")
    return snapshot


def _masked(error: SnapshotError, path: str, number: int) -> SnapshotError:
    """A message quotes the value it refuses: never when that value is secret-shaped."""
    kind = secretscan.find_secret(error.detail)
    if kind is None:
        return error
    return SnapshotError(
        path,
        number,
        f"the line is malformed where it holds {_a(kind)} (not shown here); remove the "
        "secret from the file before importing",
    )


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The file's non-blank lines, numbered."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            yield number, raw


def _line_value(line: bytes, path: str, number: int) -> JSONValue:
    """A line's JSON value, after its size and a merge's conflict markers are checked."""
    if len(line) > MAX_LINE_BYTES:
        raise SnapshotError(
            path, number, f"line of {len(line)} bytes is over the {MAX_LINE_BYTES}-byte limit"
        )
    if line.startswith(_CONFLICT_MARKERS):
        raise SnapshotError(
            path,
            number,
            "a merge left a conflict marker here; keep both sides' lines and delete the "
            "marker lines (run `ctxkeeper init` so git merges this file with its union merge)",
        )
    try:
        value: JSONValue = json.loads(line)
    except UnicodeDecodeError:
        raise SnapshotError(path, number, "line is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise SnapshotError(
            path, number, f"line is not JSON ({exc.msg} at column {exc.colno}; cut off?)"
        ) from None
    except RecursionError:
        raise SnapshotError(path, number, "line nests arrays or objects too deeply") from None
    except ValueError:  # an integer past the interpreter's digit limit (int_max_str_digits)
        raise SnapshotError(path, number, "line holds a number with too many digits") from None
    return value


def _read_line(
    snapshot: Snapshot, line: JSONValue, path: str, number: int, strings: set[str]
) -> bool:
    """Check one line's value and add what it holds to ``snapshot``; True for the header."""
    key, value = _object(line, path, number)
    if key == HEADER_KEY:
        _check_version(value, path, number)
        return True
    if key == ENTRY_KEY:
        entry = _checked_entry(value, path, number)
        _collect(entry.values(), strings)
        snapshot.entries.append((number, entry))
        return False
    _add_event(snapshot, _checked_event(value, path, number, strings), path, number)
    return False


def _add_event(snapshot: Snapshot, event: JSONObject, path: str, number: int) -> None:
    """Add a checked event, once per identity: a line repeated by a union merge is one event."""
    event_id = str(event["event"])
    seen = snapshot.events.get(event_id)
    if seen is not None and not same_event(seen[1], event):
        raise SnapshotError(
            path,
            number,
            f"event {event_id} differs from the event with the same identity on line "
            f"{seen[0]}; one of them was edited by hand",
        )
    if seen is None or _redactions(event) > _redactions(seen[1]):
        # A purged copy beside a teammate's full one (a union merge): the text stays out.
        snapshot.events[event_id] = (number, event)


def _object(value: JSONValue, path: str, number: int) -> tuple[str, JSONValue]:
    """A line's type and what it holds; an entry line's own version is checked here."""
    if isinstance(value, dict) and len(value) == 2 and ENTRY_KEY in value and VERSION_KEY in value:
        _check_line_version(value[VERSION_KEY], "entry line", ENTRY_VERSION, path, number)
        return ENTRY_KEY, value[ENTRY_KEY]
    if not isinstance(value, dict) or len(value) != 1:
        raise SnapshotError(
            path,
            number,
            "a line must be one object with a single key (and an entry line's version)",
        )
    [(key, inner)] = value.items()
    if key not in (HEADER_KEY, ENTRY_KEY, EVENT_KEY):
        raise SnapshotError(
            path, number, f"unknown line type {key!r} (expected {ENTRY_KEY!r} or {EVENT_KEY!r})"
        )
    return key, inner  # an entry line without a version is version 1


def _check_version(value: JSONValue, path: str, number: int) -> None:
    """A header's version: the highest of its file's lines (a union merge may leave several
    headers; each is held to what this code reads)."""
    _check_line_version(value, "snapshot", SNAPSHOT_VERSION, path, number)


def _check_line_version(value: JSONValue, what: str, known: int, path: str, number: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SnapshotError(path, number, f"{what} version {value!r} is not a version number")
    if value > known:
        raise SnapshotError(
            path,
            number,
            f"{what} version {value} was written by a newer ctxkeeper (this one reads "
            f"version {known}); upgrade ctxkeeper to import it",
        )


def _checked_entry(value: JSONValue, path: str, number: int) -> JSONObject:
    if not isinstance(value, dict):
        raise SnapshotError(path, number, "an entry must be an object")
    problems = arriving_problems(value)
    for name in ("created_at", "updated_at"):
        problem = times.stored_time_problem(value.get(name))
        if problem:
            problems.append(f"{name}: {problem}")
    if problems:
        raise SnapshotError(path, number, "; ".join(problems))
    itemwise = _CHECKED_FIELDS[str(value["kind"])]
    for name, item in value.items():
        # A field the model does not check item by item (an unknown field, pending changes)
        # is held to a nesting limit: deeper values break every later write's recursion.
        if name not in itemwise and isinstance(item, (dict, list)) and _deeper(item, MAX_DEPTH):
            raise SnapshotError(
                path, number, f"{value['id']}: field {name!r} nests over {MAX_DEPTH} levels deep"
            )
    return value


def _deeper(value: JSONValue, limit: int) -> bool:
    """True when ``value`` nests lists or objects more than ``limit`` levels deep."""
    stack: list[tuple[JSONValue, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _checked_event(value: JSONValue, path: str, number: int, strings: set[str]) -> JSONObject:
    """An event line's value, checked; adds the strings of its ``after`` and ``reason`` to
    ``strings`` (collected while the entry's shape is checked, not in a second walk)."""

    def fail(detail: str) -> SnapshotError:
        return SnapshotError(path, number, detail)

    if not isinstance(value, dict):
        raise fail("a journal event must be an object")
    if not _EVENT_KEYS.issuperset(value):
        unknown = sorted(set(value) - _EVENT_KEYS)
        raise fail(f"unknown event field {', '.join(map(repr, unknown))}")
    version = value.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise fail(f"event version {version!r} is not a version number")
    if version > journal.JOURNAL_VERSION:
        raise fail(
            f"event version {version} was written by a newer ctxkeeper (this one reads "
            f"version {journal.JOURNAL_VERSION}); upgrade ctxkeeper to import it"
        )
    if not isinstance(value.get("event"), str) or not EVENT_ID.fullmatch(str(value["event"])):
        raise fail("event identity must be 16 lowercase hex digits")
    entry_id = value.get("id")
    if not isinstance(entry_id, str) or not ID_PATTERN.match(entry_id):
        raise fail(f"{entry_id!r} is not an entry id (ids look like dec-021-b607)")
    op = value.get("op")
    if not isinstance(op, str) or op not in journal.OPS:  # a list or object is unhashable
        raise fail(f"unknown op {op!r}")
    at = value.get("at")
    if not isinstance(at, str):
        raise fail("at must be a time string")
    problem = _time_problem(at)
    if problem:
        raise fail(problem)
    _check_actor(value.get("actor"), fail)
    reason = value.get("reason")
    if not (
        reason is None
        or journal.is_redacted(reason)
        or (isinstance(reason, str) and len(reason) <= TEXT_MAX)
    ):
        raise fail(f"reason must be text of at most {TEXT_MAX} characters")
    for parent in _bounded_parents(value, fail):
        if not isinstance(parent, str) or not EVENT_ID.fullmatch(parent):
            raise fail("parents must be event identities (16 lowercase hex digits)")
    if "blocks" in value:
        blocks = value["blocks"]
        if op != "purge" or not isinstance(blocks, dict) or set(blocks) - {"value_sha256", "at"}:
            raise fail("only a purge carries 'blocks', an object with value_sha256 and at")
        _check_digest({journal.REDACTED_KEY: blocks.get("value_sha256")}, fail)
    if STANDS_FOR in value:
        stands_for = value[STANDS_FOR]
        if not isinstance(stands_for, str) or not EVENT_ID.fullmatch(stands_for):
            raise fail(f"{STANDS_FOR} must be an event identity (16 lowercase hex digits)")
    if type(reason) is str:
        strings.add(reason)
    else:
        _collect((reason,), strings)
    after = value.get("after")
    if journal.is_redacted(after):
        _check_digest(after, fail)
        _collect((after,), strings)
    elif after is None:
        if op not in ("purge", "manual_edit"):
            raise fail(f"a {op} event must carry the entry it left ('after')")
    else:
        # A past version is held to its shape here; the versions an import makes live pass
        # the model's full checks and the floors there (ctxkeeper.write.exchange).
        entry = _shaped_entry(after, path, number, strings, entry_id)
        if entry.get("id") != entry_id:
            raise fail(f"the event is about {entry_id} but its entry is {entry.get('id')}")
    return value


def _bounded_parents(event: JSONObject, fail: Callable[[str], SnapshotError]) -> list[JSONValue]:
    parents = event.get("parents")
    if not isinstance(parents, list) or len(parents) > MAX_PARENTS:
        raise fail(f"parents must be a list of at most {MAX_PARENTS} event identities")
    return parents


def _shaped_entry(
    value: JSONValue, path: str, number: int, strings: set[str], event_id: str
) -> JSONObject:
    """An entry's shape (id, kind, status, origin, revision, text and list types and sizes,
    nesting): what a version kept as history must have, cheaply checked. Its strings are
    added to ``strings``. ``event_id`` is the id its event names, already checked."""
    if not isinstance(value, dict):
        raise SnapshotError(path, number, "an entry must be an object")
    entry_id = value.get("id")
    if not isinstance(entry_id, str) or (entry_id != event_id and not ID_PATTERN.match(entry_id)):
        raise SnapshotError(path, number, f"bad id {entry_id!r}")
    entry_kind = value.get("kind")
    if (
        entry_kind not in KINDS
        or value.get("status") not in STATUSES
        or value.get("origin") not in ORIGINS
        or not isinstance(value.get("revision"), int)
    ):
        raise SnapshotError(path, number, f"{entry_id}: bad kind, status, origin or revision")
    for name in TEXT_FIELDS[str(entry_kind)]:
        text = value.get(name)
        if not isinstance(text, str) or len(text) > TEXT_MAX:
            raise SnapshotError(
                path,
                number,
                f"{entry_id}: field {name!r} must be text of at most {TEXT_MAX} characters",
            )
    add = strings.add
    for name, item in value.items():
        kind = type(item)
        if kind is str:
            add(item)  # type: ignore[arg-type]
            continue  # a text's size is held above for the fields that must be text
        if kind is int or item is None:
            continue
        if isinstance(item, list):
            if len(item) > LIST_MAX:
                raise SnapshotError(path, number, f"{entry_id}: field {name!r} has too many items")
            for element in item:
                if isinstance(element, str):
                    if len(element) > TEXT_MAX:
                        raise SnapshotError(
                            path, number, f"{entry_id}: field {name!r} item too long"
                        )
                    add(element)
                elif isinstance(element, (dict, list)):
                    if _deeper(element, MAX_DEPTH - 1):
                        raise SnapshotError(
                            path,
                            number,
                            f"{entry_id}: field {name!r} nests over {MAX_DEPTH} levels deep",
                        )
                    _collect((element,), strings)
        elif isinstance(item, dict):
            if _deeper(item, MAX_DEPTH):
                raise SnapshotError(
                    path, number, f"{entry_id}: field {name!r} nests over {MAX_DEPTH} levels deep"
                )
            _collect((item,), strings)
        else:
            _collect((item,), strings)  # a str subclass cannot come from JSON; kept sound
    return value


_EVENT_KEYS: Final = frozenset(EVENT_FIELDS) | frozenset(OPTIONAL_FIELDS)


def _time_problem(at: str) -> str | None:
    """Why an event's time is refused (None: it is sound)."""
    try:
        times.parse_time(at, field="at")
    except CtxkeeperError as exc:
        return str(exc)
    return None


def _check_digest(value: JSONValue, fail: Callable[[str], SnapshotError]) -> None:
    digest = value.get(journal.REDACTED_KEY) if isinstance(value, dict) else None
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise fail("a purged value must be a SHA-256 digest (64 lowercase hex digits)")


#: Actors found sound, as their items: most events share a few actors, each checked once.
_SOUND_ACTORS: Final[set[tuple[tuple[str, JSONValue], ...]]] = set()
_SOUND_ACTORS_MAX: Final = 4096


def _check_actor(actor: JSONValue, fail: Callable[[str], SnapshotError]) -> None:
    if type(actor) is dict:
        items = tuple(actor.items())
        try:
            if items in _SOUND_ACTORS:
                return
        except TypeError:  # a field holds a list or an object: refused below
            items = ()
    else:
        items = ()
    _check_actor_fields(actor, fail)
    if items:
        if len(_SOUND_ACTORS) >= _SOUND_ACTORS_MAX:
            _SOUND_ACTORS.clear()
        _SOUND_ACTORS.add(items)


def _check_actor_fields(actor: JSONValue, fail: Callable[[str], SnapshotError]) -> None:
    if not isinstance(actor, dict) or actor.get("origin") not in ORIGINS:
        raise fail(f"actor must be an object whose origin is one of {', '.join(ORIGINS)}")
    for key, item in actor.items():
        if key not in _ACTOR_KEYS or not (
            item is None or (isinstance(item, str) and len(item) < 256)
        ):
            raise fail(f"actor field {key!r} is not one of {', '.join(sorted(_ACTOR_KEYS))}")
