"""The team snapshot is untrusted input: it arrives with ``git pull``. Every malformed, oversized,
forged or secret-bearing file is refused with an error naming its line (and the file), and
leaves every file of the store byte for byte as it was; a status its events do not justify is
downgraded, not refused; the agent's door reads and writes inside ``.context/`` only; and an
export never overwrites a teammate's snapshot this clone has not imported."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from ctxkeeper.cli.doctor import run_doctor
from ctxkeeper.core import journal
from ctxkeeper.core.errors import SnapshotError
from ctxkeeper.core.store import Store
from ctxkeeper.mcp.toolcall import run_tool
from ctxkeeper.mcp.tools import load_tools
from ctxkeeper.team import snapshotformat
from ctxkeeper.team.snapshotformat import MAX_LINE_BYTES
from ctxkeeper.write.exchange import export_snapshot, import_snapshot
from ctxkeeper.write.verbs import agent_actor, record_entry, update_entry, user_actor
from tests.conftest import (
    REPO_ROOT,
    constraint_fields,
    decision_fields,
    pipeline_fields,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from ctxkeeper.mcp.tooldef import ToolSpec

SNAPSHOT = "snapshot.jsonl"
TRAVERSAL = "../../etc/passwd"
_BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_RANDOM = random.Random(20261201)
#: Shaped like real credentials (built here, so no credential-shaped literal sits in the repo).
AWS_KEY_ID = "AKIA" + "".join(_RANDOM.choice(_BASE32) for _ in range(16))
GITHUB_TOKEN = "ghp_" + "".join(_RANDOM.choice(_ALNUM) for _ in range(36))
NEW_ID = "con-009-beef"
NEW_EVENT = "00000000deadbeef"


# -- helpers ------------------------------------------------------------------------------


def tree(directory: str, *, skip: str = SNAPSHOT) -> dict[str, str]:
    """The digest of every file under ``directory`` (caches and the lock included) except
    ``skip``; a symbolic link is recorded as its target, never followed."""
    files: dict[str, str] = {}
    for folder, dirs, names in os.walk(directory):
        for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, directory)
            if rel == skip:
                continue
            if os.path.islink(full):
                files[rel] = "link -> " + os.readlink(full)
                continue
            with open(full, "rb") as handle:
                files[rel] = hashlib.sha256(handle.read()).hexdigest()
    return files


def dump(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@dataclass
class Control:
    """A valid store with a few entries, and the snapshot it exported."""

    store: Store
    con: str
    dec: str
    pip: str
    snapshot: bytes

    @property
    def ids(self) -> list[str]:
        return sorted([self.con, self.dec, self.pip])

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self.snapshot.splitlines()]

    def render(self, lines: list[dict[str, Any]]) -> bytes:
        return b"".join(dump(line) for line in lines)

    def entry_line(self, lines: list[dict[str, Any]], entry_id: str) -> int:
        """The 0-based index of ``entry_id``'s entry line."""
        return next(
            i for i, line in enumerate(lines) if line.get("entry", {}).get("id") == entry_id
        )

    def event_line(self, lines: list[dict[str, Any]], entry_id: str, nth: int = 0) -> int:
        """The 0-based index of ``entry_id``'s ``nth`` event line."""
        found = [i for i, line in enumerate(lines) if line.get("journal", {}).get("id") == entry_id]
        return found[nth]

    def new_event(self, lines: list[dict[str, Any]], **after: object) -> dict[str, Any]:
        """A teammate's record of a new constraint (this clone has never seen it)."""
        event = json.loads(json.dumps(lines[self.event_line(lines, self.con)]["journal"]))
        event.update(event=NEW_EVENT, id=NEW_ID, parents=[], reason=None)
        rule = "Webhook deliveries are retried with exponential backoff"
        event["after"].update({"id": NEW_ID, "rule": rule, **after})
        return {"journal": event}


def build_control(store: Store) -> Control:
    con = record_entry(store, "constraint", constraint_fields(), actor=user_actor())["id"]
    update_entry(
        store,
        str(con),
        {"tags": ["billing"]},
        "tagged for the billing review",
        actor=user_actor(),
    )
    dec = record_entry(store, "decision", decision_fields(), actor=agent_actor())["id"]
    pip = record_entry(store, "pipeline", pipeline_fields(), actor=user_actor())["id"]
    store.load()
    with open(os.path.join(store.dir, SNAPSHOT), "rb") as handle:
        data = handle.read()
    return Control(store, str(con), str(dec), str(pip), data)


@pytest.fixture
def control(store: Store) -> Control:
    return build_control(store)


def write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def assert_still_reads(control: Control) -> None:
    store = control.store
    assert sorted(store.load().entries) == control.ids
    assert store.get(control.con)["rule"] == constraint_fields()["rule"]
    assert store.get(control.dec)["status"] == "proposed"
    assert store.get(control.pip)["status"] == "active"


def refuse(
    control: Control,
    data: bytes,
    *,
    line: int | None,
    says: list[str],
    name: str = SNAPSHOT,
) -> SnapshotError:
    """Write ``data`` to ``.context/<name>``, import it, and check it was refused naming the
    file, the line and what is wrong, with every other file of the store unchanged."""
    store = control.store
    path = os.path.realpath(os.path.join(store.dir, name))
    before = tree(store.dir, skip=name)
    write(path, data)
    with pytest.raises(SnapshotError) as caught:
        import_snapshot(store, None if name == SNAPSHOT else f".context/{name}", actor=user_actor())
    error = caught.value
    assert error.path == path
    assert error.line == line, str(error)
    assert str(error).startswith(f"{path}:{line}: " if line else f"{path}: "), str(error)
    assert str(error).endswith("Nothing was written.")
    for fragment in says:
        assert fragment in error.detail, str(error)
    assert tree(store.dir, skip=name) == before
    assert_still_reads(control)
    return error


def accept(control: Control, data: bytes, name: str = SNAPSHOT) -> dict[str, Any]:
    """The control: the same file without the hostile part imports."""
    write(os.path.join(control.store.dir, name), data)
    path = None if name == SNAPSHOT else f".context/{name}"
    return dict(import_snapshot(control.store, path, actor=user_actor()))


def line_of(data: bytes, offset: int) -> int:
    return data[:offset].count(b"\n") + 1


# -- the cases ----------------------------------------------------------------------------


@dataclass
class Case:
    data: bytes
    line: int | None
    says: list[str]
    repaired: bytes
    """The same file with the hostile part put right: it must import."""


def _truncated(c: Control) -> Case:
    lines = c.snapshot.splitlines(keepends=True)
    cut = len(c.snapshot) - len(lines[-1]) // 2
    return Case(c.snapshot[:cut], len(lines), ["not JSON", "cut off?"], c.snapshot)


def _truncated_mid_file(c: Control) -> Case:
    cut = len(c.snapshot) // 2
    while c.snapshot[cut - 1 : cut + 1].count(b"\n"):
        cut += 7
    return Case(c.snapshot[:cut], line_of(c.snapshot, cut), ["not JSON"], c.snapshot)


def _invalid_json(c: Control) -> Case:
    lines = c.snapshot.splitlines(keepends=True)
    lines.insert(2, b'{"entry":{"id":"con-001-abcd",}}\n')
    return Case(b"".join(lines), 3, ["line is not JSON"], c.snapshot)


def _not_utf8(c: Control) -> Case:
    lines = c.snapshot.splitlines(keepends=True)
    lines.insert(3, b'{"entry":"\xff\xfe"}\n')
    return Case(b"".join(lines), 4, ["not UTF-8"], c.snapshot)


def _deeply_nested(c: Control) -> Case:
    lines = c.snapshot.splitlines(keepends=True)
    lines.insert(2, b'{"entry":' + b"[" * 200_000 + b"]" * 200_000 + b"}\n")
    return Case(b"".join(lines), 3, ["nest"], c.snapshot)


def _huge_number(c: Control) -> Case:
    lines = c.lines()
    index = c.entry_line(lines, c.con)
    raw = [dump(line) for line in lines]
    raw[index] = raw[index].replace(b'"revision":2', b'"revision":' + b"9" * 10_000)
    return Case(b"".join(raw), index + 1, ["number"], c.snapshot)


def _deep_unknown_field(c: Control) -> Case:
    """Nesting the JSON reader takes but every later write's recursion would not (an unknown
    field is kept as it is, so it would reach the journal and every export)."""
    data, line = _with_new_event(c, extra="DEEP")
    deep = data.replace(b'"DEEP"', b"[" * 900 + b"0" + b"]" * 900)
    repaired = data.replace(b'"DEEP"', b"[" * 8 + b"0" + b"]" * 8)
    return Case(deep, line, [NEW_ID, "field 'extra' nests over"], repaired)


def _deep_pending_changes(c: Control) -> Case:
    data, line = _edit_entry(c, c.con, pending_changes="DEEP")
    deep = data.replace(b'"DEEP"', b"[" * 500 + b"]" * 500)
    return Case(deep, line, [c.con, "field 'pending_changes' nests over"], c.snapshot)


def _oversized_line(c: Control) -> Case:
    lines = c.lines()
    entry = dict(lines[c.entry_line(lines, c.con)]["entry"], reason="x" * MAX_LINE_BYTES)
    raw = c.snapshot.splitlines(keepends=True)
    raw.insert(2, dump({"entry": entry}))
    return Case(b"".join(raw), 3, [f"over the {MAX_LINE_BYTES}-byte limit"], c.snapshot)


def _no_header(c: Control) -> Case:
    return Case(c.snapshot.split(b"\n", 1)[1], None, ["not a ctxkeeper snapshot"], c.snapshot)


def _empty(c: Control) -> Case:
    return Case(b"", None, ["not a ctxkeeper snapshot"], c.snapshot)


def _edit_entry(c: Control, entry_id: str, **fields: object) -> tuple[bytes, int]:
    lines = c.lines()
    index = c.entry_line(lines, entry_id)
    lines[index]["entry"].update(fields)
    return c.render(lines), index + 1


def _edit_event(
    c: Control,
    entry_id: str,
    nth: int = 0,
    *,
    after: dict[str, object] | None = None,
    **fields: object,
) -> tuple[bytes, int]:
    lines = c.lines()
    index = c.event_line(lines, entry_id, nth)
    lines[index]["journal"].update(fields)
    lines[index]["journal"]["after"].update(after or {})
    return c.render(lines), index + 1


def _with_new_event(c: Control, **after: object) -> tuple[bytes, int]:
    lines = c.lines()
    lines.append(c.new_event(lines, **after))
    return c.render(lines), len(lines)


def _traversal_entry_id(c: Control) -> Case:
    data, line = _edit_entry(c, c.con, id=TRAVERSAL)
    return Case(data, line, [f"bad id {TRAVERSAL!r}"], c.snapshot)


def _traversal_event_entry_id(c: Control) -> Case:
    data, line = _edit_event(c, c.pip, id=TRAVERSAL, after={"id": TRAVERSAL})
    return Case(data, line, [f"{TRAVERSAL!r} is not an entry id"], c.snapshot)


def _traversal_in_after(c: Control) -> Case:
    lines = c.lines()
    event = c.new_event(lines)
    event["journal"]["after"]["id"] = TRAVERSAL
    lines.append(event)
    repaired, _ = _with_new_event(c)
    return Case(c.render(lines), len(lines), [f"bad id {TRAVERSAL!r}"], repaired)


def _traversal_event_identity(c: Control) -> Case:
    data, line = _edit_event(c, c.dec, event=TRAVERSAL)
    return Case(data, line, ["event identity must be 16 lowercase hex digits"], c.snapshot)


def _traversal_parent(c: Control) -> Case:
    data, line = _edit_event(c, c.con, 1, parents=[TRAVERSAL])
    return Case(data, line, ["parents must be event identities"], c.snapshot)


def _secret_in_entry_line(c: Control) -> Case:
    rule = f"Deploys sign artifacts with {AWS_KEY_ID} from the release role"
    data, line = _edit_entry(c, c.con, rule=rule)
    return Case(data, line, ["'rule'", "AWS access key id", c.con], c.snapshot)


def _secret_in_event_after(c: Control) -> Case:
    step = f"Push the tag with token {GITHUB_TOKEN} to the release remote"
    data, line = _edit_event(c, c.pip, after={"steps": [step]})
    return Case(data, line, ["after.steps[0]", "GitHub token", c.pip], c.snapshot)


def _secret_in_event_reason(c: Control) -> Case:
    data, line = _edit_event(c, c.con, 1, reason=f"rotated the key {AWS_KEY_ID} after the leak")
    return Case(data, line, ["'reason'", "AWS access key id"], c.snapshot)


def _secret_as_status(c: Control) -> Case:
    data, line = _edit_entry(c, c.pip, status=AWS_KEY_ID)
    return Case(data, line, ["malformed", "AWS access key id (not shown here)"], c.snapshot)


def _secret_as_line_type(c: Control) -> Case:
    lines = c.lines()
    lines.insert(3, {GITHUB_TOKEN: True})
    return Case(c.render(lines), 4, ["malformed", "GitHub token (not shown here)"], c.snapshot)


def _future_snapshot_version(c: Control) -> Case:
    lines = c.lines()
    future = snapshotformat.SNAPSHOT_VERSION + 1
    lines[0] = {"ctxkeeper_snapshot": future}
    return Case(c.render(lines), 1, [f"snapshot version {future}", "newer ctxkeeper"], c.snapshot)


def _future_event_version(c: Control) -> Case:
    future = journal.JOURNAL_VERSION + 1
    data, line = _edit_event(c, c.dec, version=future)
    return Case(data, line, [f"event version {future}", "newer ctxkeeper"], c.snapshot)


def _unknown_line_type(c: Control) -> Case:
    lines = c.lines()
    lines.insert(2, {"comment": "added by a script"})
    return Case(c.render(lines), 3, ["unknown line type 'comment'"], c.snapshot)


def _two_keys(c: Control) -> Case:
    lines = c.lines()
    lines[1] = {**lines[1], "journal": lines[-1]["journal"]}
    return Case(c.render(lines), 2, ["one object with a single key"], c.snapshot)


def _unknown_event_field(c: Control) -> Case:
    data, line = _edit_event(c, c.con, seq=7)
    return Case(data, line, ["unknown event field 'seq'"], c.snapshot)


def _forged_actor(c: Control) -> Case:
    data, line = _edit_event(c, c.dec, actor={"origin": "root", "user": "admin"})
    return Case(data, line, ["actor must be an object whose origin is one of"], c.snapshot)


def _conflict_markers(c: Control) -> Case:
    lines = c.snapshot.splitlines(keepends=True)
    ours, theirs = lines[-1], lines[-2]
    merged = [
        *lines[:-2],
        b"<<<<<<< HEAD\n",
        ours,
        b"=======\n",
        theirs,
        b">>>>>>> teammate/main\n",
    ]
    return Case(b"".join(merged), len(lines) - 1, ["conflict marker"], c.snapshot)


def _repeated_identity(c: Control) -> Case:
    lines = c.lines()
    first = c.event_line(lines, c.con, 1)
    copy = json.loads(json.dumps(lines[first]))
    copy["journal"]["reason"] = "tagged for the billing review, and the team agreed"
    lines.append(copy)
    return Case(
        c.render(lines),
        len(lines),
        [f"event {copy['journal']['event']} differs", f"on line {first + 1}"],
        c.snapshot,
    )


def _edited_local_event(c: Control) -> Case:
    data, line = _edit_event(c, c.con, 1, reason="tagged for the billing review, and more")
    return Case(data, line, ["differs from this clone's copy"], c.snapshot)


def _below_contract_floor(c: Control) -> Case:
    data, line = _with_new_event(c, rule="Retry hooks")
    repaired, _ = _with_new_event(c)
    return Case(data, line, [NEW_ID, "rule", "the minimum is 15"], repaired)


def _window_past_the_range(c: Control) -> Case:
    # The write path refuses this bound (ctxkeeper.core.times), so an import must too.
    data, line = _with_new_event(c, valid_until="9999-12-31")
    repaired, _ = _with_new_event(c, valid_until="2099-12-31")
    return Case(data, line, [NEW_ID, "valid_until", "outside years 1970 to 9998"], repaired)


def _revision_that_wins_every_fold(c: Control) -> Case:
    data, line = _with_new_event(c, revision=10**400)
    repaired, _ = _with_new_event(c, revision=1)
    return Case(data, line, [NEW_ID, "revision must be between 1 and"], repaired)


def _mutual_supersession(c: Control) -> Case:
    other_id, other_event = "con-010-beef", "00000000feedbeef"
    lines = c.lines()
    first = c.new_event(lines, supersedes=[other_id])
    second = c.new_event(lines, id=other_id, supersedes=[NEW_ID])
    second["journal"].update(event=other_event, id=other_id)
    second["journal"]["after"]["rule"] = "Webhook payloads are signed with the rotating key"
    lines += [first, second]
    repaired, _ = _with_new_event(c)
    return Case(
        c.render(lines), len(lines) - 1, [f"{NEW_ID} and {other_id} supersede each other"], repaired
    )


CASES: dict[str, Callable[[Control], Case]] = {
    "truncated": _truncated,
    "truncated-mid-file": _truncated_mid_file,
    "invalid-json": _invalid_json,
    "not-utf8": _not_utf8,
    "deeply-nested": _deeply_nested,
    "huge-number": _huge_number,
    "deep-unknown-field": _deep_unknown_field,
    "deep-pending-changes": _deep_pending_changes,
    "oversized-line": _oversized_line,
    "no-header": _no_header,
    "empty": _empty,
    "traversal-entry-id": _traversal_entry_id,
    "traversal-event-entry-id": _traversal_event_entry_id,
    "traversal-in-after": _traversal_in_after,
    "traversal-event-identity": _traversal_event_identity,
    "traversal-parent": _traversal_parent,
    "secret-in-entry-line": _secret_in_entry_line,
    "secret-in-event-after": _secret_in_event_after,
    "secret-in-event-reason": _secret_in_event_reason,
    "secret-as-status": _secret_as_status,
    "secret-as-line-type": _secret_as_line_type,
    "future-snapshot-version": _future_snapshot_version,
    "future-event-version": _future_event_version,
    "unknown-line-type": _unknown_line_type,
    "two-keys": _two_keys,
    "unknown-event-field": _unknown_event_field,
    "forged-actor": _forged_actor,
    "conflict-markers": _conflict_markers,
    "repeated-identity": _repeated_identity,
    "edited-local-event": _edited_local_event,
    "below-contract-floor": _below_contract_floor,
    "window-past-the-range": _window_past_the_range,
    "revision-that-wins-every-fold": _revision_that_wins_every_fold,
    "mutual-supersession": _mutual_supersession,
}
SECRETS = (AWS_KEY_ID, GITHUB_TOKEN)


class TestRefused:
    @pytest.mark.parametrize("name", list(CASES))
    def test_refused_naming_the_line_and_nothing_written(self, control: Control, name: str) -> None:
        case = CASES[name](control)
        error = refuse(control, case.data, line=case.line, says=case.says)
        for secret in SECRETS:
            assert secret not in str(error)
        report = accept(control, case.repaired)
        assert report["events_added"] == (1 if case.repaired != control.snapshot else 0)

    @pytest.mark.parametrize(
        "name", ["invalid-json", "secret-in-event-after", "edited-local-event"]
    )
    def test_refused_at_another_path_inside_context(self, control: Control, name: str) -> None:
        case = CASES[name](control)
        refuse(control, case.data, line=case.line, says=case.says, name="team/from-alice.jsonl")
        # The default snapshot, which this clone wrote, is untouched by the refusal.
        assert read(os.path.join(control.store.dir, SNAPSHOT)) == control.snapshot

    def test_no_file_is_created_outside_the_store(self, control: Control) -> None:
        root = os.path.dirname(control.store.root)
        before = sorted(os.listdir(root))
        for name in ("traversal-entry-id", "traversal-event-entry-id", "traversal-in-after"):
            case = CASES[name](control)
            refuse(control, case.data, line=case.line, says=case.says)
        assert sorted(os.listdir(root)) == before
        assert not os.path.exists(os.path.join(control.store.dir, TRAVERSAL))

    def test_over_the_file_size_limit_names_the_file(
        self, control: Control, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # A blank line more than this clone wrote: the file is read, not skipped as seen.
        pulled = control.snapshot + b"\n"
        monkeypatch.setattr(snapshotformat, "MAX_BYTES", len(pulled) - 1)
        refuse(control, pulled, line=None, says=["byte limit"])
        monkeypatch.setattr(snapshotformat, "MAX_BYTES", len(pulled))
        assert accept(control, pulled)["unchanged"] is True

    def test_below_the_project_floor_inside_the_merge(self, project: Path) -> None:
        """A floor raised in config.json is checked against the arriving entries inside the
        import's transaction; nothing is written when one falls short."""
        store = Store.open(str(project))
        store.init()
        config = json.loads(read(store.path("config.json")))
        config["floors"] = {"constraint": {"reason": 60}}
        write(store.path("config.json"), json.dumps(config).encode())
        control = build_control(store)
        short = "A retry storm double-charged customers once."  # 44: over 40, under 60
        data, line = _with_new_event(control, reason=short)
        refuse(control, data, line=line, says=[NEW_ID, "reason", "the minimum is 60"])
        repaired, _ = _with_new_event(control)
        assert accept(control, repaired)["added"] == [NEW_ID]


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeeper", *argv],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": REPO_ROOT},
        timeout=60,
        check=False,
    )


class TestRefusedAtTheCli:
    @pytest.mark.parametrize(
        "name",
        [
            "truncated",
            "deeply-nested",
            "secret-in-entry-line",
            "future-snapshot-version",
            "conflict-markers",
            "edited-local-event",
        ],
    )
    def test_exit_1_one_line_naming_the_line(self, control: Control, name: str) -> None:
        store = control.store
        case = CASES[name](control)
        path = os.path.realpath(store.path(SNAPSHOT))
        before = tree(store.dir)
        write(path, case.data)
        done = _cli("import", "--project-dir", store.root)
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"ctxkeeper: {path}:{case.line}: "), done.stderr
        assert all(fragment in done.stderr for fragment in case.says), done.stderr
        assert all(secret not in done.stderr for secret in SECRETS)
        assert done.stdout == ""
        assert tree(store.dir) == before
        listed = _cli("list", "--json", "--project-dir", store.root)
        assert listed.returncode == 0, listed.stderr
        assert sorted(item["id"] for item in json.loads(listed.stdout)["results"]) == control.ids
        write(path, case.repaired)
        assert _cli("import", "--project-dir", store.root).returncode == 0


# -- a status the events do not justify ---------------------------------------------------


def _git(cwd: str, *argv: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Alice",
        "GIT_AUTHOR_EMAIL": "alice@example.com",
        "GIT_COMMITTER_NAME": "Alice",
        "GIT_COMMITTER_EMAIL": "alice@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


class TestStatusTravelsWithItsEvents:
    def test_hand_promoted_proposal_arrives_proposed_in_a_fresh_clone(self, tmp_path: Path) -> None:
        alice = tmp_path / "alice"
        alice.mkdir()
        _git(str(alice), "init", "-q")
        store = Store.open(str(alice))
        store.init()
        control = build_control(store)
        assert store.get(control.dec)["status"] == "proposed"
        # Alice (or her agent) promotes the proposal by hand in the file: the entry line and
        # its event's version both claim active.
        lines = control.lines()
        entry_index = control.entry_line(lines, control.dec)
        lines[entry_index]["entry"]["status"] = "active"
        lines[control.event_line(lines, control.dec)]["journal"]["after"]["status"] = "active"
        write(store.path(SNAPSHOT), control.render(lines))
        _git(str(alice), "add", ".context")
        _git(str(alice), "commit", "-q", "-m", "context")
        bob = tmp_path / "bob"
        _git(str(tmp_path), "clone", "-q", str(alice), str(bob))
        assert sorted(os.listdir(bob / ".context")) == [".gitignore", "config.json", SNAPSHOT]

        clone = Store.open(str(bob))
        report = import_snapshot(clone, actor=user_actor())
        assert clone.get(control.dec)["status"] == "proposed"
        assert clone.get(control.con)["status"] == "active"  # a person's record: control
        assert clone.get(control.pip)["status"] == "active"
        assert report["added"] == control.ids
        assert report["awaiting_review"] == [control.dec]
        notes = [str(note) for note in report["notes"]]  # type: ignore[union-attr]
        assert any(
            note.startswith(f"line {entry_index + 1}: {control.dec} claims active")
            and "arrives proposed" in note
            for note in notes
        ), notes
        assert not any(control.con in note for note in notes)
        # The clone's own snapshot now says what it holds, and its store is sound.
        exported = [json.loads(raw) for raw in read(clone.path(SNAPSHOT)).splitlines()]
        statuses = {
            line["entry"]["id"]: line["entry"]["status"] for line in exported if "entry" in line
        }
        assert statuses == {control.con: "active", control.dec: "proposed", control.pip: "active"}
        assert run_doctor(clone, actor=user_actor()).ok
        again = import_snapshot(clone, actor=user_actor())
        assert again["unchanged"] is True
        assert clone.get(control.dec)["status"] == "proposed"


# -- the agent's door stays inside .context/ -----------------------------------------------


def _specs(store: Store) -> dict[str, ToolSpec]:
    return {spec.name: spec for spec in load_tools(store.root)}


def call(store: Store, tool: str, arguments: dict[str, Any]) -> tuple[bool, str, dict[str, Any]]:
    """One MCP tool call as the server runs it (argument checks, the handler, error results):
    whether it failed, its text, its structured result."""
    result: dict[str, Any] = dict(run_tool(_specs(store)[tool], arguments))
    return (
        bool(result["isError"]),
        str(result["content"][0]["text"]),
        result.get("structuredContent") or {},
    )


class TestMcpPathFence:
    @pytest.fixture
    def outside(self, tmp_path: Path, control: Control) -> Path:
        """A directory outside the project holding a teammate's valid snapshot, and links to
        it from inside .context/."""
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "x.jsonl").write_bytes(control.snapshot)
        os.symlink(outside / "x.jsonl", os.path.join(control.store.dir, "link.jsonl"))
        os.symlink(outside / "new.jsonl", os.path.join(control.store.dir, "dangling.jsonl"))
        os.symlink(outside, os.path.join(control.store.dir, "out"))
        return outside

    def paths(self, outside: Path) -> list[str]:
        return [
            "../x.jsonl",
            ".context/../x.jsonl",
            "x.jsonl",
            str(outside / "x.jsonl"),
            str(outside / "new.jsonl"),
            ".context/link.jsonl",
            ".context/dangling.jsonl",
            ".context/out/x.jsonl",
            ".context/out/new.jsonl",
        ]

    @pytest.mark.parametrize("tool", ["export_snapshot", "import_snapshot"])
    def test_paths_outside_context_are_refused(
        self, control: Control, outside: Path, tmp_path: Path, tool: str
    ) -> None:
        store = control.store
        listing = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
        outside_bytes = read(str(outside / "x.jsonl"))
        before = tree(store.dir, skip="")
        for path in self.paths(outside):
            failed, text, _ = call(store, tool, {"path": path})
            assert failed, (path, text)
            assert text.startswith(("invalid_argument: ", "usage_error: ")), text
            assert "outside .context/" in text, (path, text)
        assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == listing
        assert read(str(outside / "x.jsonl")) == outside_bytes
        assert not (outside / "new.jsonl").exists()
        assert not (tmp_path / "x.jsonl").exists()
        assert tree(store.dir, skip="") == before
        assert_still_reads(control)
        # Control: a path inside .context/ works through the same door.
        failed, text, _ = call(store, "export_snapshot", {"path": ".context/team.jsonl"})
        assert not failed, text
        assert read(store.path("team.jsonl")) == control.snapshot
        failed, text, report = call(store, "import_snapshot", {"path": ".context/team.jsonl"})
        assert not failed, text
        assert report["events_added"] == 0


# -- an export never drops a teammate's work ----------------------------------------------


class TestExportOverUnimported:
    def test_export_refused_write_succeeds_snapshot_untouched(
        self, control: Control, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        store = control.store
        os.makedirs(tmp_path / "teammate")
        teammate = Store.open(str(tmp_path / "teammate"))
        teammate.init()
        theirs = record_entry(
            teammate,
            "constraint",
            constraint_fields(rule="Webhook deliveries are retried with exponential backoff"),
            actor=user_actor(),
        )["id"]
        pulled = read(teammate.path(SNAPSHOT))
        path = store.path(SNAPSHOT)
        write(path, pulled)  # what `git pull` leaves
        before = tree(store.dir)
        with pytest.raises(SnapshotError) as caught:
            export_snapshot(store)
        assert caught.value.path == path
        assert "has not imported" in caught.value.detail
        assert read(path) == pulled
        assert tree(store.dir) == before
        failed, text, _ = call(store, "export_snapshot", {})
        assert failed
        assert "has not imported" in text
        done = _cli("export", "snapshot", "--project-dir", store.root)
        assert done.returncode == 1
        assert done.stderr.startswith(f"ctxkeeper: {path}: "), done.stderr
        assert "not imported" in done.stderr
        assert read(path) == pulled
        assert tree(store.dir) == before

        capsys.readouterr()
        recorded = record_entry(
            store,
            "decision",
            decision_fields(summary="Queue webhook retries in the outbox table"),
            actor=user_actor(),
        )
        err = capsys.readouterr().err
        assert "the team snapshot was not refreshed" in err
        assert "has not imported" in err
        assert store.get(str(recorded["id"]))["status"] == "active"
        assert read(path) == pulled

        # Control: once imported, the snapshot carries both clones' work.
        report = import_snapshot(store, actor=user_actor())
        assert report["added"] == [theirs]
        export_snapshot(store)
        ids = {
            json.loads(raw)["entry"]["id"]
            for raw in read(path).splitlines()
            if b'"entry"' in raw[:10]
        }
        assert ids == {*control.ids, str(recorded["id"]), str(theirs)}
