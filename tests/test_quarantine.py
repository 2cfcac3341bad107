"""One malformed journal record no longer stops the team snapshot for good (issue 22, section 4).

A record the snapshot must not carry (here: one appended with a correct hash chain and an
event identity the snapshot refuses) used to stop every later refresh, while
``doctor`` and ``status`` said all was well. Now ``status`` says the snapshot is stale and
why, ``doctor`` names the record, and ``doctor --repair`` quarantines it to a file beside the
journal and journals that it did. The CLI runs as a subprocess, as a person runs it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from ctxkeeper.core import journal
from tests.conftest import REPO_ROOT, constraint_fields, decision_fields
from tests.hook_harness import hook_env

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *args, "--project-dir", str(project)],
        capture_output=True,
        text=True,
        env=hook_env(None, PYTHONPATH=REPO_ROOT),
        cwd=str(project),
        timeout=120,
        check=False,
    )


def _add(project: Path, kind: str, fields: dict[str, object]) -> str:
    argv = ["add", kind]
    for name, value in fields.items():
        for item in value if isinstance(value, list) else [value]:
            argv += [f"--{name.replace('_', '-')}", str(item)]
    done = _cli(project, *argv)
    assert done.returncode == 0, done.stderr
    found = re.search(r"recorded ((?:dec|con|pip)-\d{3}-[0-9a-f]{4})", done.stdout)
    assert found is not None, done.stdout
    return found.group(1)


def _append_malformed_record(project: Path) -> None:
    """Append a record with a correct hash chain whose event identity the snapshot refuses
    (what a hand or a script appending to the journal leaves; the chain alone cannot tell)."""
    path = project / ".context" / "journal.jsonl"
    last = json.loads(path.read_bytes().splitlines()[-1])
    record = {
        **last,
        "seq": last["seq"] + 1,
        "prev": last["hash"],
        "event": "not-an-event-id",
        "tx": "0123456789ab",
        "tx_size": 1,
        "op": "verify",
    }
    record["hash"] = journal.record_hash(record)
    with path.open("ab") as handle:
        handle.write(journal.canonical(record) + b"\n")


def test_status_doctor_and_repair_of_an_unshareable_record(project: Path) -> None:
    assert _cli(project, "init").returncode == 0
    rule = _add(project, "constraint", constraint_fields())
    # Control: an intact store is ok, and its snapshot is current.
    assert _cli(project, "doctor").returncode == 0
    assert "STALE" not in _cli(project, "status").stdout
    _append_malformed_record(project)
    decision = _add(project, "decision", decision_fields())
    snapshot = project / ".context" / "snapshot.jsonl"
    assert decision not in snapshot.read_text()  # the refresh stopped on the record

    status = _cli(project, "status", "--json")
    shot = json.loads(status.stdout)["snapshot"]
    assert "event identity" in str(shot["stale"])
    text = _cli(project, "status").stdout
    assert "STALE" in text
    assert "last refresh failed" in text

    found = _cli(project, "doctor")
    assert found.returncode == 1
    assert "journal.jsonl:2: journal seq 2 (op 'verify'" in found.stdout
    assert "event identity must be 16 lowercase hex digits" in found.stdout
    assert "doctor --repair" in found.stdout

    repaired = _cli(project, "doctor", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    (quarantine,) = (project / ".context").glob("journal.jsonl.quarantined-*")
    assert b'"event":"not-an-event-id"' in quarantine.read_bytes()
    assert quarantine.read_bytes().count(b"\n") == 1  # that record alone
    assert str(quarantine) in repaired.stdout
    history = _cli(project, "history", rule, "--json")
    assert history.returncode == 0, history.stderr
    records = json.loads(history.stdout)["history"]
    notes = [r for r in records if "quarantined" in str(r.get("reason"))]
    assert len(notes) == 1
    assert notes[0]["op"] == "manual_edit"
    assert notes[0]["actor"]["origin"] == "user"
    assert quarantine.name in str(notes[0]["reason"])
    # The entry the record was about is kept, the snapshot is current again, all is well.
    assert "Every charge request carries" in _cli(project, "show", rule).stdout
    assert decision in snapshot.read_text()
    assert rule in snapshot.read_text()
    assert _cli(project, "doctor").returncode == 0
    assert "STALE" not in _cli(project, "status").stdout
