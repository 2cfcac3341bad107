"""A journal record that names a person but that no write in this clone made.

The forgery is the strongest one: a scratch copy of the store approves the agent's proposal
through the real verb, and its new journal line is appended to the real journal, so the hash
chain verifies and the record is one ctxkeeper wrote, only not here. doctor (as a subprocess)
names it and SessionStart (as hooks.json runs it) tells the person; the controls are the
person's own record and approval in the same store, which neither mentions.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from ctxkeeper.cli.review import decide
from ctxkeeper.core import provenance
from ctxkeeper.core.store import Store
from ctxkeeper.write.verbs import agent_actor, record_entry, user_actor
from tests.conftest import REPO_ROOT, constraint_fields, decision_fields
from tests.hook_harness import run_hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject


def _doctor(root: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", "doctor", "--project-dir", root],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=60, check=False,
    )  # fmt: skip


def _session_note(root: str) -> str:
    result = run_hook("SessionStart", {"session_id": "s1", "hook_event_name": "SessionStart"}, root)
    assert result.returncode == 0, result.stderr
    return str(result.answer.get("systemMessage"))


def test_a_person_record_copied_into_the_journal_is_named(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    store = Store.open(str(project))
    store.init()
    rule = record_entry(store, "constraint", constraint_fields(), actor=user_actor())["id"]
    kept = record_entry(store, "decision", decision_fields(), actor=agent_actor("s1"))["id"]
    decide(store, "approve", [str(kept)], actor=user_actor())
    mine = record_entry(
        store,
        "decision",
        decision_fields(summary="Send invoice emails through the job queue, not inline"),
        actor=agent_actor("s1"),
    )["id"]
    # The controls: the person's own record and approval are this clone's, and named by none.
    assert _doctor(str(project)).returncode == 0
    assert "names a person" not in _session_note(str(project))

    scratch = tmp_path / "scratch"
    shutil.copytree(project, scratch)
    journal = project / ".context" / "journal.jsonl"
    before = journal.read_bytes()
    decide(Store.open(str(scratch)), "approve", [str(mine)], actor=user_actor())
    copied = (scratch / ".context" / "journal.jsonl").read_bytes()
    assert copied.startswith(before)
    with open(journal, "ab") as handle:
        handle.write(copied[len(before) :])
    assert Store.open(str(project)).load().entries[str(mine)]["status"] == "active"
    # What the hooks and tools say of each entry's approval leaves the copied record out.
    approved = provenance.approvals(str(project / ".context"))
    assert approved.get(str(kept)) == provenance.HERE  # the control
    assert str(mine) not in approved

    found = _doctor(str(project))
    assert found.returncode == 1, found.stdout
    named = [line for line in found.stdout.splitlines() if "names a person" in line]
    assert len(named) == 1, found.stdout
    assert f"(approve of {mine})" in named[0]
    assert str(rule) not in found.stdout
    assert str(kept) not in found.stdout
    note = _session_note(str(project))
    assert "1 journal record names a person but no ctxkeeper write in this clone made it" in note
    # Said again at the next session, not only once.
    assert "1 journal record names a person" in _session_note(str(project))


def test_a_note_cut_short_by_a_full_disk_does_not_swallow_the_next(tmp_path: Path) -> None:
    from ctxkeeper.core import personmarks

    personmarks.note(str(tmp_path), [], 0)
    with open(tmp_path / personmarks.MARKS_FILE, "ab") as handle:
        handle.write(b'{"event": "00000000dead')  # the write the disk cut short
    record: JSONObject = {"event": "00000000beefbeef", "actor": {"origin": "user"}, "seq": 1}
    personmarks.note(str(tmp_path), [record], 0)
    assert personmarks.marks(str(tmp_path)) == (0, {"00000000beefbeef"})
