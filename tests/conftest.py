"""Shared fixtures: a real store in tmp_path and valid fields for each kind."""

from __future__ import annotations

import os
from typing import Final

import pytest

from ctxkeeper.cli.agentenv import AGENT_ENV_VARS
from ctxkeeper.core import frozen
from ctxkeeper.core import store as store_module
from ctxkeeper.core.store import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _freeze_values(entries: dict[str, JSONObject]) -> None:
    for entry_id, entry in entries.items():
        if not isinstance(entry, frozen.FrozenEntry):
            entries[entry_id] = frozen.freeze_entry(entry)


#: The store's boundaries an entry crosses into it (before the store split of issue 24, which
#: calls frozen.freeze_entry at them itself when frozen.frozen_entries() is on).
_BOUNDARIES: Final = (
    (store_module, "parse_entries_document"),
    (store_module, "_fold"),
    (store_module.Transaction, "_stage"),
    (store_module.Store, "_remember_written"),
)


@pytest.fixture(autouse=True, scope="session")
def _stored_entries_are_read_only() -> Iterator[None]:
    """Every entry the store holds is read-only in the tests (frozen.FROZEN_ENTRIES_ENV), so an
    in-place change of one raises where it happens: an entries file parsed, journal records
    folded, an entry staged by a write, the state a write leaves for the next read."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(frozen.FROZEN_ENTRIES_ENV, "1")
        if all(hasattr(owner, name) for owner, name in _BOUNDARIES):
            parse, fold, stage, remember = (getattr(o, n) for o, n in _BOUNDARIES)

            def parsed(data: bytes, path: str) -> store_module.State:
                state: store_module.State = parse(data, path)
                _freeze_values(state.entries)
                return state

            def folded(records: list[JSONObject], state: store_module.State) -> None:
                fold(records, state)
                _freeze_values(state.entries)

            def staged(txn: object, entry_id: str, after: JSONObject | None) -> None:
                stage(txn, entry_id, None if after is None else frozen.freeze_entry(after))

            def remembered(
                store: Store,
                state: store_module.State,
                digest: str,
                lines: Mapping[str, tuple[JSONObject, bytes]],
            ) -> None:
                # The state a write leaves is the next read's parse: frozen too.
                held = {k: (frozen.freeze_entry(v), line) for k, (v, line) in lines.items()}
                remember(store, state, digest, held)

            for (owner, name), wrapper in zip(
                _BOUNDARIES, (parsed, folded, staged, remembered), strict=True
            ):
                patch.setattr(owner, name, wrapper)
        yield


def decision_fields(**overrides: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "summary": "Use PostgreSQL advisory locks for the job scheduler",
        "problem": "Two scheduler replicas ran the nightly invoice job at the same time.",
        "why_chosen": (
            "Advisory locks live in the database we already run, release on disconnect and "
            "need no new infrastructure, unlike a separate coordination service."
        ),
        "alternatives": ["Redis locks: another service to run and fail over"],
    }
    fields.update(overrides)
    return fields


def constraint_fields(**overrides: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "rule": "Every charge request carries an idempotency key",
        "reason": "On 2025-02-11 a retry storm double-charged forty customers at checkout.",
        "hardness": "hard",
        "scope": ["src/billing/"],
    }
    fields.update(overrides)
    return fields


def pipeline_fields(**overrides: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "name": "Release",
        "purpose": "Ship a tagged build to production with a rollback point ready.",
        "steps": ["Tag the release commit on main", "Run the smoke suite against staging"],
    }
    fields.update(overrides)
    return fields


FIELDS = {"decision": decision_fields, "constraint": constraint_fields, "pipeline": pipeline_fields}


@pytest.fixture(autouse=True)
def _no_agent_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run as a person would, even when the suite is started from an agent's shell
    (the human verbs refuse under CLAUDECODE and friends; tests/test_agentenv.py sets them)."""
    for name in AGENT_ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def store(project: Path) -> Store:
    store = Store.open(str(project))
    store.init()
    return store


def snapshot_dir(path: str) -> dict[str, bytes]:
    """Every file under ``path`` with its bytes (locks and caches included), to prove a
    failed operation changed nothing."""
    files: dict[str, bytes] = {}
    for folder, _dirs, names in os.walk(path):
        for name in names:
            full = os.path.join(folder, name)
            with open(full, "rb") as handle:
                files[os.path.relpath(full, path)] = handle.read()
    return files
