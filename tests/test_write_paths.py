"""The fast write and read paths give what the plain ones give: the line-per-entry file, the
state a write leaves for the next one, the similarity shortlist and the on-disk text index."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys

import pytest

from ctxkeeper.core import store as store_module
from ctxkeeper.core import times
from ctxkeeper.core.model import clean_fields, contract_floors, new_entry
from ctxkeeper.core.store import (
    ENTRIES_FILE,
    State,
    Store,
    parse_entries_document,
    render_entries_document,
)
from ctxkeeper.read import rank, textindex
from ctxkeeper.write import candidates as cand
from ctxkeeper.write import similarity as sim
from ctxkeeper.write.verbs import deprecate_entry, record_entry, update_entry, user_actor

from .conftest import REPO_ROOT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

_WORDS = [
    "retry",
    "charge",
    "worker",
    "deploy",
    "build",
    "payments",
    "column",
    "money",
    "backup",
    "retention",
    "quota",
    "cluster",
    "orders",
    "nightly",
    "reload",
    "secrets",
    "rotate",
    "mobile",
    "cache",
    "session",
    "token",
    "queue",
    "schema",
    "migration",
    "index",
    "replica",
    "lock",
    "scheduler",
    "invoice",
    "refund",
    "webhook",
    "timeout",
    "latency",
    "budget",
    "alert",
]


def _text(rng: random.Random, words: int, n: int) -> str:
    picked = [rng.choice(_WORDS) for _ in range(words)]
    return f"{' '.join(picked).capitalize()} in module{n} for the service."


def _fields(rng: random.Random, n: int) -> tuple[str, JSONObject]:
    if n % 2:
        return "constraint", {
            "rule": _text(rng, 6, n),
            "reason": _text(rng, 12, n),
            "hardness": "hard",
            "scope": [f"src/pkg{n % 7}/"],
        }
    return "decision", {
        "summary": _text(rng, 7, n),
        "problem": _text(rng, 12, n),
        "why_chosen": _text(rng, 16, n),
    }


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": REPO_ROOT,
        "HOME": str(project),
    }
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *args, "--project-dir", str(project)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(project),
        timeout=120,
        check=False,
    )


def _old_layout(state: State) -> bytes:
    """entries.json as the previous writer laid it out (``indent=2``, digest included)."""
    document = {
        "version": 1,
        "journal": {
            "seq": state.seq,
            "head": state.head,
            "bytes": state.journal_bytes,
            "entries_sha256": "?" * 64,
        },
        "entries": [state.entries[key] for key in sorted(state.entries)],
    }
    data = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()
    marker = b'\n  "entries": '
    digest = hashlib.sha256(data[data.find(marker) + len(marker) :]).hexdigest()
    return data.replace(b"?" * 64, digest.encode(), 1)


def test_entries_file_has_one_entry_per_line_and_reparses_to_the_same_state(store: Store) -> None:
    rng = random.Random(1)
    ids = [str(record_entry(store, *_fields(rng, n), actor=user_actor())["id"]) for n in range(6)]
    data = _read(store.path(ENTRIES_FILE))
    lines = data.decode().splitlines()
    entry_lines = [line.strip().rstrip(",") for line in lines if line.startswith('    {"id": ')]
    assert [json.loads(line)["id"] for line in entry_lines] == sorted(ids)
    fresh = parse_entries_document(data, "entries.json")
    assert not fresh.hand_edited
    # A render with no lines kept gives the very bytes the cached render wrote.
    assert render_entries_document(fresh) == data


def test_a_write_after_writes_in_one_process_matches_a_fresh_parse(store: Store) -> None:
    rng = random.Random(2)
    first = record_entry(store, *_fields(rng, 0), actor=user_actor())
    second = record_entry(store, *_fields(rng, 1), actor=user_actor())
    update_entry(
        store,
        str(first["id"]),
        {"why_chosen": "Reworded after review: " + "the reasons stand and are written out. " * 2},
        "the reasons were unclear to the reviewer",
        actor=user_actor(),
    )
    deprecate_entry(
        store, str(second["id"]), "replaced by the new queue design", actor=user_actor()
    )
    path = store.path(ENTRIES_FILE)
    data = _read(path)
    fresh = parse_entries_document(data, path)
    served = store.load()
    assert served.entries == fresh.entries
    assert list(served.entries) == list(fresh.entries)  # sorted, as a parse gives them
    assert served.entries[str(second["id"])]["status"] == "deprecated"
    assert "Reworded after review" in str(served.entries[str(first["id"])]["why_chosen"])
    assert (served.seq, served.head, served.source) == (fresh.seq, fresh.head, fresh.source)
    # Another process sees the same thing, and doctor finds the files consistent.
    doctor = _cli(_root(store), "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


def _root(store: Store) -> Path:
    from pathlib import Path

    return Path(store.root)


def test_the_previous_indented_layout_is_read_and_rewritten(store: Store) -> None:
    rng = random.Random(3)
    kept = record_entry(store, *_fields(rng, 0), actor=user_actor())
    path = store.path(ENTRIES_FILE)
    state = parse_entries_document(_read(path), path)
    old = _old_layout(state)
    assert b'\n    {\n      "id": ' in old  # the control: really the indented layout
    with open(path, "wb") as handle:
        handle.write(old)
    store_module._PARSED.clear()
    reread = parse_entries_document(old, path)
    assert not reread.hand_edited
    assert reread.entries == state.entries
    assert str(kept["id"]) in store.load().entries
    added = record_entry(store, *_fields(rng, 1), actor=user_actor())
    data = _read(path)
    assert b'\n    {"id": ' in data
    assert b'\n    {\n      "id": ' not in data
    assert set(parse_entries_document(data, path).entries) == {str(kept["id"]), str(added["id"])}
    doctor = _cli(_root(store), "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


def test_a_hand_edit_of_one_line_is_still_noticed(store: Store) -> None:
    rng = random.Random(4)
    entry = record_entry(store, *_fields(rng, 0), actor=user_actor())
    path = store.path(ENTRIES_FILE)
    data = _read(path)
    edited = data.replace(b"module0 for the service.", b"module0 for the whole service.", 1)
    assert edited != data
    with open(path, "wb") as handle:
        handle.write(edited)
    assert parse_entries_document(edited, path).hand_edited
    record_entry(store, *_fields(rng, 1), actor=user_actor())
    ops = [r["op"] for r in store.history(str(entry["id"]))]
    assert ops == ["record", "manual_edit"]


def _bulk(store: Store, items: list[tuple[str, JSONObject]]) -> None:
    """Many entries in one real transaction (record_entry one by one is slow to set up)."""
    floors = contract_floors()
    at = times.now_iso()
    with store.transaction() as tx:
        for kind, fields in items:
            entry_id = tx.new_id(kind)
            clean = clean_fields(kind, fields, floors)
            entry = new_entry(kind, clean, entry_id=entry_id, status="active", origin="user", at=at)
            tx.put("record", entry_id, entry, actor=user_actor(), reason=None, at=at)


def _pool(size: int, seed: int) -> list[JSONObject]:
    rng = random.Random(seed)
    statuses = ("active", "proposed", "deprecated", "rejected", "superseded")
    pool: list[JSONObject] = []
    for n in range(size):
        kind, fields = _fields(rng, n)
        pool.append({"id": f"con-{n:04d}-abcd", "kind": kind, "status": statuses[n % 5], **fields})
    return pool


def _findings(candidate: JSONObject, stored: Sequence[Mapping[str, object]]) -> tuple[object, ...]:
    return (
        sim.similar_entries(candidate, stored),
        sim.matching_tombstone(candidate, stored),
        sim.possible_supersession(candidate, stored),
    )


def test_the_shortlist_changes_no_finding() -> None:
    stored = _pool(cand.INDEX_MIN_ENTRIES + 50, seed=5)
    # Candidates close to stored entries (a word changed) and far from all of them.
    candidates: list[JSONObject] = []
    for entry in stored[::41]:
        near = {k: v for k, v in entry.items() if k not in ("id", "status")}
        for field in ("summary", "rule"):
            if isinstance(near.get(field), str):
                near[field] = str(near[field]).replace("the service", "the services")
        candidates.append(near)
    candidates.append({"kind": "decision", "summary": "Completely unrelated gardening advice"})
    found = 0
    for candidate in candidates:
        short = cand.shortlist(candidate, stored)
        assert len(short) < len(stored)
        full = _findings(candidate, stored)
        assert _findings(candidate, short) == full
        found += bool(full[0]) + (full[1] is not None)
    assert found > len(candidates) // 2  # the control: the candidates do find things


def test_the_index_follows_replaced_and_removed_entries() -> None:
    stored = _pool(cand.INDEX_MIN_ENTRIES + 10, seed=6)
    target = dict(stored[3])
    candidate = {k: v for k, v in target.items() if k not in ("id", "status")}
    assert target["id"] in {e["id"] for e in cand.shortlist(candidate, stored)}
    # The entry is replaced by an unrelated text: it must leave the shortlist.
    changed = dict(target, summary="Plant tulips in autumn", rule="Plant tulips in autumn")
    stored[3] = changed
    assert target["id"] not in {e["id"] for e in cand.shortlist(candidate, stored)}
    # Removed entries are forgotten, new ones found.
    stored.append(dict(target, id="con-9999-ffff"))
    ids = {e["id"] for e in cand.shortlist(candidate, stored)}
    assert "con-9999-ffff" in ids
    assert _findings(candidate, cand.shortlist(candidate, stored)) == _findings(candidate, stored)


def test_record_entry_through_the_index_reports_and_refuses_as_before(store: Store) -> None:
    rng = random.Random(7)
    _bulk(store, [_fields(rng, n) for n in range(cand.INDEX_MIN_ENTRIES + 5)])
    kind, fields = _fields(random.Random(99), 2)
    first = record_entry(store, kind, fields, actor=user_actor())
    again = dict(fields, summary=str(fields["summary"]).replace("service", "services"))
    second = record_entry(store, kind, again, actor=user_actor())
    similar = second["similar_entries"]
    assert isinstance(similar, list)
    assert first["id"] in [item["id"] for item in similar if isinstance(item, dict)]
    deprecate_entry(
        store, str(first["id"]), "this approach was dropped for good", actor=user_actor()
    )
    from ctxkeeper.core.errors import PreviouslyRejectedError

    with pytest.raises(PreviouslyRejectedError):
        record_entry(store, kind, fields, actor=user_actor())


def test_cold_search_uses_a_checked_index_on_disk(store: Store) -> None:
    rng = random.Random(8)
    _bulk(store, [_fields(rng, n) for n in range(40)])
    root = _root(store)
    cache = os.path.join(store.path("cache"), textindex.CACHE_FILE)
    query = "retry the charge in the worker"
    first = _cli(root, "search", query, "--json")
    assert first.returncode == 0, first.stderr
    assert os.path.exists(cache)
    expected = json.loads(first.stdout)
    assert expected["results"]  # the control: the query finds entries
    assert json.loads(_cli(root, "search", query, "--json").stdout) == expected
    # A torn, a foreign and a tampered file are each rebuilt, never trusted.
    good = _read(cache)
    tampered = json.loads(good)
    term = next(iter(tampered["postings"]))
    tampered["postings"][term] = "99999:1.0"
    for bad in (good[: len(good) // 2], b"[1, 2, 3]", json.dumps(tampered).encode()):
        with open(cache, "wb") as handle:
            handle.write(bad)
        again = _cli(root, "search", query, "--json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout) == expected
    # After a write the index is stale: the next cold search sees the new entry.
    record_entry(
        store,
        "constraint",
        {
            "rule": "Quarantine every flaky zebra test",
            "reason": "Zebra tests failed at random on the nightly runs for two weeks.",
            "hardness": "soft",
        },
        actor=user_actor(),
    )
    found = json.loads(_cli(root, "search", "flaky zebra test", "--json").stdout)
    assert "zebra" in json.dumps(found["results"][0]).lower()


def test_the_disk_index_ranks_exactly_like_a_built_one(store: Store, tmp_path: Path) -> None:
    rng = random.Random(9)
    _bulk(store, [_fields(rng, n) for n in range(60)])
    state = store.load()
    entries = [state.entries[k] for k in sorted(state.entries)]
    key = rank.state_key(state)
    assert key is not None
    built = textindex.load_or_build(entries, str(tmp_path), key, save=True)
    loaded = textindex.load_or_build(entries, str(tmp_path), key, save=False)
    assert isinstance(loaded.postings, textindex._Postings)  # the control: read from disk
    for query in ("retry charge worker", "nightly backup retention", "zzz unknown"):
        words = query.split()
        assert loaded.score_terms(words) == built.score_terms(words)
    other = textindex.load_or_build(entries[1:], str(tmp_path), key, save=False)
    assert not isinstance(other.postings, textindex._Postings)  # other entries: rebuilt
