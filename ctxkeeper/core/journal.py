"""The journal: an append-only, hash-chained log of every mutation, written before the entries."""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import Final, NamedTuple

from ctxkeeper.core.errors import CorruptFileError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ctxkeeper.core._types import JSONObject, JSONValue

#: Version 2 hashes a record's ``before``, ``after`` and ``reason`` through their digests, so a
#: purge can replace them with the digests and the chain still verifies (dec-020-b077). Version 1
#: records hash their full content and stay readable.
JOURNAL_VERSION: Final = 2
GENESIS: Final = "0" * 64
#: What a purged value becomes in a journal record: its digest, and nothing of its text.
REDACTED_KEY: Final = "purged_sha256"
DIGESTED_FIELDS: Final = ("before", "after", "reason")
OPS: Final = frozenset(
    {
        "record",
        "update",
        "supersede",
        "deprecate",
        "approve",
        "reject",
        "lift",
        "purge",
        "import",
        "verify",
        "manual_edit",
        # An agent's change to an entry a person recorded or approved, and the verdict on it
        # (the proposal is held in the entry's pending_changes; see ctxkeeper.core.changes).
        "propose_update",
        "propose_deprecate",
        "propose_supersede",
        "approve_change",
        "reject_change",
    }
)


_CANONICAL: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(value: JSONValue) -> bytes:
    """The bytes a record's hash is taken over: sorted keys, no spaces, UTF-8."""
    return _CANONICAL.encode(value).encode()


def record_hash(record: Mapping[str, JSONValue]) -> str:
    body = {key: value for key, value in record.items() if key != "hash"}
    version = record.get("version", 1)
    if isinstance(version, int) and version >= 2:
        for name in DIGESTED_FIELDS:
            body[name] = value_digest(body.get(name))
    return hashlib.sha256(canonical(body)).hexdigest()


def is_redacted(value: object) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(REDACTED_KEY), str)


def value_digest(value: JSONValue) -> JSONValue:
    """The digest a version-2 record hashes in place of a value (None stays None)."""
    if value is None:
        return None
    if isinstance(value, dict) and is_redacted(value):
        return value[REDACTED_KEY]
    return hashlib.sha256(canonical(value)).hexdigest()


def redacted(value: JSONValue) -> JSONValue:
    """``value`` replaced by its digest (None and already-redacted values stay as they are)."""
    if value is None or is_redacted(value):
        return value
    return {REDACTED_KEY: str(value_digest(value))}


def new_tx_id() -> str:
    return secrets.token_hex(6)


def make_event(
    *,
    op: str,
    entry_id: str,
    before: JSONValue,
    after: JSONValue,
    actor: JSONObject,
    reason: str | None,
    at: str,
) -> JSONObject:
    """A journal event before it is chained (``seq``, ``prev``, ``hash`` come at append)."""
    assert op in OPS, op
    return {
        "version": JOURNAL_VERSION,
        "event": secrets.token_hex(8),
        "at": at,
        "actor": actor,
        "op": op,
        "id": entry_id,
        "before": before,
        "after": after,
        "reason": reason,
    }


def chain(events: Iterable[JSONObject], *, seq: int, head: str, tx: str) -> list[JSONObject]:
    """Number, link and hash events as one transaction following ``seq``/``head``.

    Every record carries the transaction id and size (dec-003-6c23), so recovery can tell a transaction
    that reached the disk whole from one torn by a crash.
    """
    return [record for record, _line in sealed(events, seq=seq, head=head, tx=tx)]


def sealed(
    events: Iterable[JSONObject], *, seq: int, head: str, tx: str
) -> list[tuple[JSONObject, bytes]]:
    """:func:`chain`, with each record's journal line (its canonical bytes and newline)."""
    batch = list(events)
    out: list[tuple[JSONObject, bytes]] = []
    for offset, event in enumerate(batch, start=1):
        record: JSONObject = {
            "seq": seq + offset,
            **event,
            "tx": tx,
            "tx_size": len(batch),
            "prev": head,
        }
        record["hash"] = head = record_hash(record)
        out.append((record, canonical(record) + b"\n"))
    return out


def encode(records: Iterable[JSONObject]) -> bytes:
    return b"".join(canonical(record) + b"\n" for record in records)


def parse_lines(data: bytes, path: str) -> tuple[list[JSONObject], list[int]]:
    """Parse complete lines; return the records and the byte offset just past each one.

    A final line without its newline is a torn append and is left out; any other line that
    does not parse is corruption and raises :class:`CorruptFileError`.
    """
    records: list[JSONObject] = []
    ends: list[int] = []
    consumed = 0
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        if not raw.endswith(b"\n"):
            break
        try:
            record = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            column = exc.colno if isinstance(exc, json.JSONDecodeError) else 1
            detail = f"journal line does not parse: {exc}"
            raise CorruptFileError(path, number, column, detail) from None
        if not isinstance(record, dict):
            raise CorruptFileError(path, number, 1, "journal line is not a JSON object")
        records.append(record)
        consumed += len(raw)
        ends.append(consumed)
    return records, ends


class ChainProblem(NamedTuple):
    """One break found in the journal, located by its line (1-based) in the file."""

    position: int
    """Position of the record in the list checked."""
    line: int
    message: str
    future: bool = False
    """The record was written by a newer ctxkeeper: refuse it, never repair it."""


def check_chain(
    records: Iterable[Mapping[str, JSONValue]],
    *,
    seq: int = 0,
    head: str = GENESIS,
    first_line: int = 1,
) -> list[ChainProblem]:
    """Every break following ``seq``/``head``: wrong sequence, wrong ``prev`` link, a hash that
    does not match the record's content, or a record this ctxkeeper must not replay (a newer
    ``version``, an unknown ``op``, no entry id); ``first_line`` is the first record's line."""
    problems: list[ChainProblem] = []
    expected_seq = seq + 1
    for index, record in enumerate(records):
        line = first_line + index

        def add(message: str, *, future: bool = False, at: int = index, where: int = line) -> None:
            problems.append(ChainProblem(at, where, message, future))

        found = record.get("seq")
        version = record.get("version", JOURNAL_VERSION)
        if not isinstance(version, int) or isinstance(version, bool) or version > JOURNAL_VERSION:
            add(
                f"journal seq {found}: version {version!r} was written by a newer ctxkeeper "
                f"(this one reads {JOURNAL_VERSION}); upgrade ctxkeeper rather than replay it",
                future=True,
            )
        if record.get("op") not in OPS:
            add(f"journal seq {found}: unknown op {record.get('op')!r}; it is not replayed")
        if not isinstance(record.get("id"), str):
            add(f"journal seq {found}: no entry id")
        if not isinstance(record.get("after"), (dict, type(None))):
            add(f"journal seq {found}: 'after' is neither an entry nor null")
        if found != expected_seq:
            add(f"journal seq {found!r} where {expected_seq} was expected")
        if record.get("prev") != head:
            add(f"journal seq {found}: prev does not match the previous record's hash")
        if record.get("hash") != record_hash(record):
            add(f"journal seq {found}: hash does not match its content (edited?)")
        head = str(record.get("hash"))
        expected_seq = (found if isinstance(found, int) else expected_seq) + 1
    return problems


def verify_chain(
    records: Iterable[Mapping[str, JSONValue]], *, seq: int = 0, head: str = GENESIS
) -> list[str]:
    """The messages of :func:`check_chain` (empty when the chain is intact)."""
    return [problem.message for problem in check_chain(records, seq=seq, head=head)]


def reseal(records: list[JSONObject], *, start: int) -> list[JSONObject]:
    """Renumber and re-link records from ``start`` on, so the chain verifies again.

    Repair uses this after a hand edit of the journal: the edited content is kept as it now
    reads (the original bytes are kept in a backup), and the new hashes make later edits
    detectable again.
    """
    head = GENESIS if start == 0 else str(records[start - 1]["hash"])
    out = list(records[:start])
    for offset, record in enumerate(records[start:], start=start):
        fixed: JSONObject = {**record, "seq": offset + 1, "prev": head}
        fixed["hash"] = head = record_hash(fixed)
        out.append(fixed)
    return out


def complete_transactions(records: list[JSONObject]) -> list[JSONObject]:
    """The records up to the last whole transaction (a torn tail is dropped)."""
    kept = len(records)
    index = 0
    while index < len(records):
        declared = records[index].get("tx_size", 1)
        size = declared if isinstance(declared, int) and declared > 0 else 1
        group = records[index : index + size]
        if len(group) < size or any(r.get("tx") != group[0].get("tx") for r in group):
            kept = index
            break
        index += size
    return records[:kept]


def fold(records: Iterable[Mapping[str, JSONValue]], into: dict[str, JSONObject]) -> None:
    """Apply records to ``into``: each leaves its ``after`` value (None, or a purged value,
    removes the entry)."""
    for record in records:
        entry_id = str(record["id"])
        after = record.get("after")
        if isinstance(after, dict) and not is_redacted(after):
            into[entry_id] = after
        else:
            into.pop(entry_id, None)
