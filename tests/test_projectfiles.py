"""The projection writer in-process (tests/test_projections.py drives the same through the
CLI): what it writes, what it leaves alone, and what it refuses."""

from __future__ import annotations

import os

import pytest

from ctxkeeper.cli.projectfiles import export_projection
from ctxkeeper.core.errors import CtxkeeperError, UsageError
from ctxkeeper.read import projections
from ctxkeeper.write.verbs import record_entry, user_actor

from .conftest import constraint_fields, decision_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core.store import Store


@pytest.fixture
def filled(store: Store) -> Store:
    record_entry(store, "constraint", constraint_fields(), actor=user_actor())
    record_entry(
        store, "constraint", constraint_fields(rule="Never log a card number", scope=[]),
        actor=user_actor(),
    )  # fmt: skip
    record_entry(store, "decision", decision_fields(), actor=user_actor())
    return store


def _rules_dir(store: Store) -> Path:
    from pathlib import Path

    return Path(store.root) / ".claude" / "rules" / "ctxkeeper"


class TestRules:
    def test_one_file_per_scope_and_a_second_export_changes_nothing(self, filled: Store) -> None:
        first = export_projection(filled, "rules")
        folder = _rules_dir(filled)
        names = sorted(p.name for p in folder.iterdir())
        assert "project.md" in names
        assert any(name.startswith("src-billing") for name in names)
        billing = next(p for p in folder.iterdir() if p.name.startswith("src-billing"))
        text = billing.read_text(encoding="utf-8")
        assert text.startswith("---\npaths:\n")
        assert '"src/billing/**"' in text
        assert "idempotency key" in text
        assert "Never log a card number" not in text  # project-wide: in project.md instead
        assert "Never log a card number" in (folder / "project.md").read_text(encoding="utf-8")
        second = export_projection(filled, "rules")
        assert sorted(second.unchanged) == sorted(first.written)
        assert second.written == []
        assert "written" in second.text()

    def test_unmarked_files_stay_and_stale_marked_ones_go(self, filled: Store) -> None:
        export_projection(filled, "rules")
        folder = _rules_dir(filled)
        mine = folder / "notes.md"
        mine.write_text("my own rules\n", encoding="utf-8")
        stale = folder / "gone.md"
        stale.write_text(projections.RULES_MARKER + "\nold\n", encoding="utf-8")
        report = export_projection(filled, "rules")
        assert mine.read_text(encoding="utf-8") == "my own rules\n"
        assert not stale.exists()
        assert any("gone.md" in path for path in report.deleted)
        assert any("notes.md" in str(skip.get("path")) for skip in report.skipped)

    def test_a_symlinked_folder_is_refused(self, filled: Store, tmp_path: Path) -> None:
        outside = tmp_path / "outside"
        outside.mkdir()
        (tmp_path / "project" / ".claude" / "rules").mkdir(parents=True)
        os.symlink(outside, _rules_dir(filled))
        with pytest.raises(CtxkeeperError):
            export_projection(filled, "rules")
        assert list(outside.iterdir()) == []


class TestMarkdownAndAgents:
    def test_decisions_md_is_written_and_an_unmarked_one_refused(self, filled: Store) -> None:
        from pathlib import Path

        target = Path(filled.root) / "DECISIONS.md"
        export_projection(filled, "markdown")
        assert "Use PostgreSQL advisory locks" in target.read_text(encoding="utf-8")
        target.write_text("# our own decisions\n", encoding="utf-8")
        with pytest.raises(CtxkeeperError):
            export_projection(filled, "markdown")
        assert target.read_text(encoding="utf-8") == "# our own decisions\n"

    def test_agents_md_keeps_what_is_outside_its_section(self, filled: Store) -> None:
        from pathlib import Path

        target = Path(filled.root) / "AGENTS.md"
        target.write_text("# Agents\n\nHand-written guidance.\n", encoding="utf-8")
        export_projection(filled, "agents")
        once = target.read_text(encoding="utf-8")
        assert once.startswith("# Agents\n\nHand-written guidance.\n")
        assert "idempotency key" in once
        record_entry(
            filled, "constraint", constraint_fields(rule="Refunds are issued by the billing job"),
            actor=user_actor(),
        )  # fmt: skip
        export_projection(filled, "agents")
        twice = target.read_text(encoding="utf-8")
        assert twice.startswith("# Agents\n\nHand-written guidance.\n")
        assert "Refunds are issued by the billing job" in twice
        assert "Refunds are issued" not in once

    def test_an_unknown_projection_is_a_usage_error(self, filled: Store) -> None:
        with pytest.raises(UsageError):
            export_projection(filled, "html")
