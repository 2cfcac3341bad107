"""Shared fixtures: a real store in tmp_path and valid fields for each kind."""

from __future__ import annotations

import os

import pytest

from ctxkeeper.cli.agentenv import AGENT_ENV_VARS
from ctxkeeper.core.store import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
