"""The plugin inside the real Claude Code CLI (2.1.332), driven by a scripted stand-in model.

Every assertion reads what the client really sent to the model (request bodies), what it
printed, the files it left on disk, or the store; the stand-in only plays the model's part.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.checkout import clean_copy
from tests.e2e.claude_session import MCP_PREFIX, Session, Workspace
from tests.e2e.git_http import git_over_http
from tests.e2e.model_standin import ToolCall
from tests.mcp_wire import REPO_ROOT, hash_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxkeeper.core._types import JSONObject

pytestmark = pytest.mark.slow

MIGRATION_RULE = "Never edit a migration that has been applied; add a new one"
MIGRATION_REASON = (
    "On 2025-03-02 an edited 0002 migration left staging and production with different schemas"
)
API_RULE = "Handlers under api/ return problem+json bodies on every error"
API_REASON = "Incident 2025-06-14: the mobile client crashed on an HTML error page from the API"
HOOKS_RULE = "Git hook scripts stay POSIX sh without bashisms"
HOOKS_REASON = "On 2025-08-01 a bash-only hook broke every commit on the Alpine build runners"


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    space = Workspace(tmp_path)
    space.cli("init")
    return space


def add_constraint(space: Workspace, rule: str, reason: str, hardness: str, *scope: str) -> str:
    """A constraint a person records with the CLI (origin user, active at once)."""
    flags = [f"--scope={s}" for s in scope]
    added = space.cli(
        "add", "constraint", "--rule", rule, "--reason", reason, "--hardness", hardness, *flags
    )
    assert isinstance(added, dict)
    return str(added["id"])


def entries(space: Workspace) -> list[JSONObject]:
    listed = space.cli("list")
    assert isinstance(listed, dict)
    results = listed["results"]
    assert isinstance(results, list)
    return [e for e in results if isinstance(e, dict)]


def journal(space: Workspace) -> list[JSONObject]:
    path = space.project / ".context" / "journal.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def store_files(space: Workspace) -> dict[str, str]:
    """Digests of the store, leaving out the derived files hooks may refresh (``cache/``)."""
    digests = hash_tree(str(space.project / ".context"))
    return {k: v for k, v in digests.items() if not k.startswith("cache" + os.sep)}


def denied_tools(session: Session) -> list[str]:
    denials = session.result().get("permission_denials")
    assert isinstance(denials, list)
    return [str(d.get("tool_name")) for d in denials if isinstance(d, dict)]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class TestHardConstraintGate:
    def test_first_edit_denied_with_the_rule_then_reissued_edit_lands(
        self, workspace: Workspace
    ) -> None:
        add_constraint(workspace, MIGRATION_RULE, MIGRATION_REASON, "hard", "db/migrations/")
        migration = workspace.project / "db" / "migrations" / "0002.sql"
        original = "-- 0002\nCREATE TABLE invoices (id int);\n"
        write(migration, original)
        edit = {"file_path": str(migration), "old_string": "(id int)", "new_string": "(id bigint)"}
        later = {"file_path": str(migration), "old_string": "-- 0002", "new_string": "-- 0002 v2"}
        session = workspace.run(
            [
                [ToolCall("Read", {"file_path": str(migration)})],
                [ToolCall("Edit", edit)],
                [ToolCall("Read", {"file_path": str(migration)})],
                [ToolCall("Edit", edit)],
                [ToolCall("Edit", later)],
                "done",
            ]
        )
        denial = session.tool_result(1)
        assert denial.get("is_error") is True, denial
        assert MIGRATION_RULE in session.tool_text(1)
        assert MIGRATION_REASON in session.tool_text(1)
        # The file as the model saw it after the denial: unchanged.
        assert "(id int)" in session.tool_text(2)
        assert "(id bigint)" not in session.tool_text(2)
        assert not session.tool_result(3).get("is_error"), session.tool_text(3)
        assert not session.tool_result(4).get("is_error"), session.tool_text(4)
        # Once read, the rule is not repeated; the control is the denial above.
        assert MIGRATION_RULE not in session.after(3)
        assert MIGRATION_RULE not in session.after(4)
        assert MIGRATION_RULE in session.after(1)
        assert migration.read_text(encoding="utf-8") == (
            "-- 0002 v2\nCREATE TABLE invoices (id bigint);\n"
        )
        assert denied_tools(session) == ["Edit"]

    def test_a_bash_sed_of_a_governed_file_is_held_back_then_the_reissue_runs(
        self, workspace: Workspace
    ) -> None:
        add_constraint(workspace, MIGRATION_RULE, MIGRATION_REASON, "hard", "db/migrations/")
        migration = workspace.project / "db" / "migrations" / "0002.sql"
        write(migration, "-- 0002\nCREATE TABLE invoices (id int);\n")
        notes = workspace.project / "docs" / "notes.md"
        write(notes, "old\n")
        sed = {
            "command": "sed -i 's/(id int)/(id bigint)/' db/migrations/0002.sql",
            "description": "Widen the invoice id",
        }
        session = workspace.run(
            [
                [ToolCall("Bash", {"command": "cat db/migrations/0002.sql"})],
                [ToolCall("Bash", {"command": "sed -i 's/old/new/' docs/notes.md"})],
                [ToolCall("Bash", sed)],
                [ToolCall("Bash", {"command": "cat db/migrations/0002.sql"})],
                [ToolCall("Bash", sed)],
                "done",
            ]
        )
        # Controls: a read of the governed file and a write of an ungoverned one just run.
        assert not session.tool_result(0).get("is_error"), session.tool_text(0)
        assert "(id int)" in session.tool_text(0)
        assert not session.tool_result(1).get("is_error"), session.tool_text(1)
        assert notes.read_text(encoding="utf-8") == "new\n"
        denial = session.tool_result(2)
        assert denial.get("is_error") is True, denial
        assert MIGRATION_RULE in session.tool_text(2)
        assert MIGRATION_REASON in session.tool_text(2)
        # Held back before it ran: the file as the model saw it next is unchanged.
        assert "(id int)" in session.tool_text(3)
        assert not session.tool_result(4).get("is_error"), session.tool_text(4)
        assert MIGRATION_RULE not in session.after(4)
        assert migration.read_text(encoding="utf-8") == (
            "-- 0002\nCREATE TABLE invoices (id bigint);\n"
        )
        assert denied_tools(session) == ["Bash"]


class TestSoftConstraintDelivery:
    def test_rides_along_with_the_edit_it_covers_and_never_by_substring(
        self, workspace: Workspace
    ) -> None:
        add_constraint(workspace, API_RULE, API_REASON, "soft", "api/")
        add_constraint(workspace, HOOKS_RULE, HOOKS_REASON, "soft", "hooks/")
        project = workspace.project
        session = workspace.run(
            [
                [
                    ToolCall(
                        "Write", {"file_path": str(project / "api/users.py"), "content": "x = 1\n"}
                    )
                ],
                [
                    ToolCall(
                        "Write",
                        {"file_path": str(project / "api/webhooks/send.py"), "content": "y = 2\n"},
                    )
                ],
                [
                    ToolCall(
                        "Write", {"file_path": str(project / "hooks/pre-commit"), "content": ":\n"}
                    )
                ],
                "done",
            ]
        )
        for step in range(3):
            assert not session.tool_result(step).get("is_error"), session.tool_text(step)
        assert API_RULE in session.after(0)
        # api/webhooks/send.py is under api/ (delivered already) and not under hooks/.
        assert HOOKS_RULE not in session.after(1)
        assert API_RULE not in session.after(1)
        # Control: the hooks/ rule does arrive with a file it covers.
        assert HOOKS_RULE in session.after(2)
        assert session.sent(3).count(API_RULE) == 1
        assert (project / "api/webhooks/send.py").read_text(encoding="utf-8") == "y = 2\n"


class TestSessionStart:
    def test_summary_and_project_wide_hard_rules_but_no_proposal(
        self, workspace: Workspace
    ) -> None:
        active_rule = "Every service reads its secrets from the vault agent only"
        add_constraint(
            workspace,
            active_rule,
            "Incident 2025-04-09: a secret committed in a .env file was scraped within an hour",
            "hard",
        )
        decision = workspace.cli(
            "add",
            "decision",
            "--summary",
            "Use SQLite in WAL mode for the local job queue",
            "--problem",
            "The job queue needs durable local storage without running another server.",
            "--why-chosen",
            "SQLite ships with Python, WAL mode lets readers run beside one writer, and the "
            "queue never needs more than one writer process.",
        )
        assert isinstance(decision, dict)
        proposed_rule = "Every cron entry logs to the shared syslog facility"
        proposed_reason = "Proposed after 2025-09-30, when a silent cron job failed for a week"
        proposal = workspace.agent_record(
            {
                "kind": "constraint",
                "rule": proposed_rule,
                "reason": proposed_reason,
                "hardness": "hard",
            }
        )
        proposed_entry = proposal["entry"]
        assert isinstance(proposed_entry, dict)
        assert proposed_entry["status"] == "proposed"
        gated_proposal = workspace.agent_record(
            {
                "kind": "constraint",
                "rule": "Scripts under tools/ never call sudo",
                "reason": "Proposed after 2025-10-02, when a tools/ script changed root's crontab",
                "hardness": "hard",
                "scope": ["tools/"],
            }
        )
        assert isinstance(gated_proposal["entry"], dict)
        target = workspace.project / "tools" / "sync.sh"
        session = workspace.run(
            [[ToolCall("Write", {"file_path": str(target), "content": "echo sync\n"})], "done"]
        )
        first = session.sent(0)
        assert "SessionStart hook additional context" in first
        assert active_rule in first
        assert "Use SQLite in WAL mode for the local job queue" in first
        everything = session.sent()
        assert proposed_rule not in everything
        assert proposed_reason not in everything
        assert "never call sudo" not in everything
        # Control for the PreToolUse half: the Write the proposal would have gated went through.
        assert not session.tool_result(0).get("is_error"), session.tool_text(0)
        assert target.read_text(encoding="utf-8") == "echo sync\n"


class TestRecordThroughMcp:
    def test_stores_a_journaled_proposal_and_refuses_a_thin_one(self, workspace: Workspace) -> None:
        good = {
            "kind": "constraint",
            "rule": "Money amounts are integers in minor units",
            "reason": "On 2025-05-20 float rounding under-billed 312 invoices by one cent each",
            "hardness": "hard",
            "scope": ["billing/"],
        }
        thin = {
            "kind": "constraint",
            "rule": "Do not use floats",
            "reason": "bugs",
            "hardness": "hard",
        }
        session = workspace.run(
            [
                [ToolCall(MCP_PREFIX + "record_entry", good)],
                [ToolCall("__record_entry", thin)],
                "done",
            ]
        )
        stored = session.tool_result(0)
        assert not stored.get("is_error"), session.tool_text(0)
        refused = session.tool_result(1)
        assert refused.get("is_error") is True
        assert "reason" in session.tool_text(1)
        assert "40" in session.tool_text(1)
        held = entries(workspace)
        assert [(e["rule"], e["status"], e["origin"]) for e in held] == [
            (good["rule"], "proposed", "agent")
        ]
        assert str(held[0]["id"]) in session.tool_text(0)
        records = [event for event in journal(workspace) if event.get("op") == "record"]
        assert len(records) == 1
        actor = records[0]["actor"]
        assert isinstance(actor, dict)
        assert actor["origin"] == "agent"
        assert records[0]["id"] == held[0]["id"]


class TestStructuredGuidance:
    """Claude Code 2.1.332 hands the model a tool's structuredContent, not its text block
    (issue 25): the guidance must be in what the model's request body carries."""

    def test_the_model_reads_unreviewed_pending_and_missing_words(
        self, workspace: Workspace
    ) -> None:
        person = add_constraint(
            workspace, MIGRATION_RULE, MIGRATION_REASON, "hard", "db/migrations/"
        )
        proposal = {
            "kind": "constraint",
            "rule": "Migrations run inside one transaction each",
            "reason": "On 2025-04-11 a half-applied migration left the orders table without keys",
            "hardness": "soft",
            "scope": ["db/migrations/"],
        }
        update = {
            "id": person,
            "updates": {"tags": ["database"]},
            "reason": "tag the migration rule for the database team",
        }
        session = workspace.run(
            [
                [ToolCall(MCP_PREFIX + "record_entry", proposal)],
                [ToolCall(MCP_PREFIX + "get_context", {"query": "migration retention policy"})],
                [ToolCall(MCP_PREFIX + "update_entry", update)],
                "done",
            ]
        )
        read = [json.loads(session.tool_text(step)) for step in range(3)]
        # What the model read is the structured result, notes first (a text block would not
        # parse as JSON): the control that this is the channel the guidance must travel in.
        assert all(next(iter(answer)) == "note" for answer in read), read
        recorded, context, updated = read
        assert "as a proposal: unreviewed until a person approves it" in recorded["note"]
        assert "nothing stored mentions retention or policy" in context["note"]
        labels = {item["id"]: item["label"] for item in context["results"]}
        assert labels[recorded["id"]].startswith("proposed, unreviewed")
        assert labels[person].startswith("active; recorded by a person")
        change = updated["change"]
        assert f"awaits a person's approval (change {change})" in updated["note"]
        assert f"{person} is unchanged and stays in force" in updated["note"]
        # The same words are in the request body the client sent, not only in our parse.
        assert f"awaits a person's approval (change {change})" in session.after(2)
        assert "nothing stored mentions retention or policy" in session.after(1)
        # Control: the person's rule really is unchanged until they approve.
        held = {str(e["id"]): e for e in entries(workspace)}
        assert held[person]["tags"] == []


class TestHumanOnlyDenials:
    def test_store_write_and_approve_are_denied_and_the_store_is_untouched(
        self, workspace: Workspace
    ) -> None:
        proposal = workspace.agent_record(
            {
                "kind": "decision",
                "summary": "Render invoices to PDF with the WeasyPrint library",
                "problem": "Invoices must be PDF files that match the HTML preview exactly.",
                "why_chosen": "WeasyPrint renders the same HTML and CSS the preview uses, so the "
                "PDF and the preview cannot drift apart.",
            }
        )
        entry_id = str(proposal["id"])
        before = store_files(workspace)
        forged = json.dumps({"version": 1, "entries": {}})
        session = workspace.run(
            [
                [
                    ToolCall(
                        "Write",
                        {
                            "file_path": str(workspace.project / ".context" / "entries.json"),
                            "content": forged,
                        },
                    )
                ],
                [ToolCall("Bash", {"command": f"ctxkeeper approve {entry_id}"})],
                "done",
            ]
        )
        for step in (0, 1):
            result = session.tool_result(step)
            assert result.get("is_error") is True, result
        assert ".context" in session.tool_text(0)
        assert "approve" in session.tool_text(1)
        assert sorted(denied_tools(session)) == ["Bash", "Write"]
        assert store_files(workspace) == before
        assert [e["status"] for e in entries(workspace)] == ["proposed"]


class TestCliThroughBash:
    def test_the_agents_ctxkeeper_add_lands_as_a_proposal(self, workspace: Workspace) -> None:
        rule_id = add_constraint(
            workspace, MIGRATION_RULE, MIGRATION_REASON, "hard", "db/migrations/"
        )
        # What an agent that read the README's "Using it" does, through its Bash tool.
        add = (
            f"PYTHONPATH={REPO_ROOT} python3 -m ctxkeeper add constraint "
            "--rule 'Applied migrations may be edited while the branch is unreleased' "
            "--reason 'Unreleased branches never reach production, so no schema can drift there' "
            f"--hardness soft --scope db/migrations/ --supersedes {rule_id}"
        )
        session = workspace.run([[ToolCall("Bash", {"command": add})], "done"])
        assert not session.tool_result(0).get("is_error"), session.tool_text(0)
        assert "as a proposal: it awaits a person's review" in session.tool_text(0)
        by_id = {str(e["id"]): e for e in entries(workspace)}
        [new_id] = [i for i in by_id if i != rule_id]
        assert (by_id[new_id]["status"], by_id[new_id]["origin"]) == ("proposed", "agent")
        # The person's hard rule stays in force, its supersession waiting for them.
        rule = by_id[rule_id]
        assert (rule["status"], rule["hardness"]) == ("active", "hard")
        pending = rule["pending_changes"]
        assert isinstance(pending, list)
        assert [c["op"] for c in pending if isinstance(c, dict)] == ["supersede"]
        # Control: the same command in the person's own shell supersedes at once.
        mine = workspace.cli(
            "add",
            "constraint",
            "--rule",
            "Applied migrations are never edited in place",
            "--reason",
            MIGRATION_REASON,
            "--hardness",
            "hard",
            "--supersedes",
            rule_id,
        )
        assert isinstance(mine, dict)
        assert {str(e["id"]): e["status"] for e in entries(workspace)}[rule_id] == "superseded"


#: What a plugin install may copy: the package, hooks, skill and launchers are about 1.3 MB
#: (1.2 MB of it ctxkeeper/); the whole clean checkout is about 4.6 MB, a developer's 1.4 GB.
INSTALLED_BOUND = 3 * 1024 * 1024


def tree_size(root: str) -> tuple[int, list[str]]:
    """Bytes of the regular files under ``root`` (links not followed) and every link found."""
    size, links = 0, []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                links.append(os.path.relpath(path, root))
            elif name in files:
                size += os.path.getsize(path)
    return size, links


class TestInstalledPlugin:
    def test_marketplace_install_serves_tools_and_hooks(
        self, tmp_path: Path, workspace: Workspace
    ) -> None:
        source = clean_copy(tmp_path / "checkout")
        assert not (source / ".venv").exists()
        assert (source / ".claude-plugin" / "plugin.json").is_file()
        workspace.plugin("marketplace", "add", str(source))
        workspace.plugin("install", "ctxkeeper@ctxkeeper")
        listed = json.loads(workspace.plugin("list", "--json").stdout)
        ours = [p for p in listed if p.get("id") == "ctxkeeper@ctxkeeper"]
        assert len(ours) == 1
        assert ours[0]["enabled"] is True
        # 2.1.332 runs a directory marketplace's plugin from that folder: the clean copy,
        # so nothing of this checkout's .venv or .cache can be what makes it work.
        assert ours[0]["readFromFolder"] == str(source / "plugin")
        rule = "Database access goes through the repository layer only"
        add_constraint(
            workspace,
            rule,
            "Incident 2025-07-07: a raw query in a view bypassed tenant filtering for a day",
            "hard",
        )
        session = workspace.run([[ToolCall("__get_project_summary", {})], "done"], plugin_dir=None)
        offered = session.requests[0].get("tools")
        assert isinstance(offered, list)
        assert MCP_PREFIX + "record_entry" in {
            t.get("name") for t in offered if isinstance(t, dict)
        }
        assert not session.tool_result(0).get("is_error"), session.tool_text(0)
        assert rule in session.tool_text(0)
        # The hooks half: SessionStart delivered the project-wide hard rule before any tool ran.
        assert "SessionStart hook additional context" in session.sent(0)
        assert rule in session.sent(0)
        # The skill, reached through plugin/'s link, is offered to the model.
        assert "ctxkeeper:ctxkeeper" in session.sent(0)

    def test_install_copies_only_what_runs_and_its_cli_runs(
        self, tmp_path: Path, workspace: Workspace
    ) -> None:
        source, installed = install_clean(workspace, tmp_path)
        assert installed.startswith(str(workspace.home))
        size, links = tree_size(installed)
        top = sorted(os.listdir(installed))
        # Exactly plugin/'s entries (tests/test_packaging.py pins those to what runs).
        assert top == sorted(os.listdir(source / "plugin"))
        assert {"ctxkeeper", "hooks", "skills", "bin", ".mcp.json"} <= set(top)
        assert not {"tests", "evals", "bench", ".venv", ".cache", ".context"} & set(top)
        assert links == []  # the links were copied as the files they name
        assert 500_000 < size < INSTALLED_BOUND, size
        # Control: the checkout it came from holds what the install left out, and is larger.
        assert {"tests", "evals", "bench"} <= set(os.listdir(source))
        assert tree_size(str(source))[0] > size
        # The person's CLI from the installed plugin's own files, with only python3.
        project = tmp_path / "plain"
        project.mkdir()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workspace.home)}
        cli = os.path.join(installed, "bin", "ctxkeeper")
        for args in (["--version"], ["init"]):
            done = subprocess.run(
                [cli, *args],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        assert (project / ".context").is_dir()

    def test_install_from_a_git_host_runs_from_the_copied_files(
        self, tmp_path: Path, workspace: Workspace
    ) -> None:
        # As `claude plugin marketplace add ctxkeeper/ctxkeeper` does it: a shallow clone of
        # the repository (plugin/ holds links there), then the plugin copied out of it.
        source = clean_copy(tmp_path / "checkout")
        git(source, "init", "-q")
        git(source, "add", "-A")
        git(source, "commit", "-q", "-m", "release")
        served = tmp_path / "served"
        git(tmp_path, "clone", "-q", "--bare", str(source), str(served / "ctxkeeper.git"))
        with git_over_http(str(served)) as url:
            workspace.plugin("marketplace", "add", url("ctxkeeper.git"))
            workspace.plugin("install", "ctxkeeper@ctxkeeper")
        listed = json.loads(workspace.plugin("list", "--json").stdout)
        (ours,) = [p for p in listed if p.get("id") == "ctxkeeper@ctxkeeper"]
        assert "readFromFolder" not in ours  # control: a git marketplace is not read in place
        installed = str(ours["installPath"])
        size, links = tree_size(installed)
        assert links == []
        assert size < INSTALLED_BOUND, size
        assert not {"tests", "evals", "bench"} & set(os.listdir(installed))
        rule = "Database access goes through the repository layer only"
        add_constraint(
            workspace,
            rule,
            "Incident 2025-07-07: a raw query in a view bypassed tenant filtering for a day",
            "hard",
        )
        session = workspace.run([[ToolCall("__get_project_summary", {})], "done"], plugin_dir=None)
        assert not session.tool_result(0).get("is_error"), session.tool_text(0)
        assert rule in session.tool_text(0)
        assert rule in session.sent(0)  # SessionStart, from the copied hooks
        assert "ctxkeeper:ctxkeeper" in session.sent(0)


def install_clean(space: Workspace, tmp_path: Path) -> tuple[Path, str]:
    """Install the plugin into ``space`` from a clean copy of this checkout, as a person does
    from a clone: ``marketplace add`` + ``install``, no ``--plugin-dir``. Returns the copy and
    the folder Claude Code copied the plugin into."""
    source = clean_copy(tmp_path / "checkout")
    space.plugin("marketplace", "add", str(source))
    space.plugin("install", "ctxkeeper@ctxkeeper")
    listed = json.loads(space.plugin("list", "--json").stdout)
    (ours,) = [p for p in listed if p.get("id") == "ctxkeeper@ctxkeeper"]
    return source, str(ours["installPath"])


class TestValidate:
    def test_checkout_validates_its_links_unread(self, tmp_path: Path) -> None:
        space = Workspace(tmp_path)
        done = space.plugin("validate", REPO_ROOT)
        assert "Validation passed" in done.stdout
        assert "error" not in done.stdout.lower()
        # The marketplace's plugin/ is links, which validate does not follow (it says so);
        # the installed copy below holds the files and is validated in full.
        assert "plugin/.claude-plugin/plugin.json is a symlink" in done.stdout

    def test_installed_copy_validates_with_every_part(self, tmp_path: Path) -> None:
        space = Workspace(tmp_path)
        _, installed = install_clean(space, tmp_path)
        done = space.plugin("validate", installed)
        assert "✔ Validation passed" in done.stdout
        assert "error" not in done.stdout.lower()
        assert "README_MISSING" not in done.stdout
        provides = [line.strip() for line in done.stdout.splitlines() if "❯ " in line]
        for part in ("skills: ctxkeeper:ctxkeeper", "bin: ctxkeeper", "mcpServers: ctxkeeper"):
            assert any(part in line for line in provides), (part, done.stdout)
        assert sum("hooks: " in line for line in provides) == 6


class TestHostileProject:
    def test_project_python_files_never_run_in_a_session(self, workspace: Workspace) -> None:
        project = workspace.project
        traps = ["ctxkeeper/__init__.py", "ctxkeeper/__main__.py", "json.py", "scope.py"]
        for relative in traps:
            write(
                project / relative,
                f"import os\nopen(os.path.join({str(project)!r}, 'ran-' + {relative!r}.replace('/', '-')), 'w').close()\n",
            )
        rule = "Outbound HTTP calls set an explicit timeout"
        add_constraint(
            workspace,
            rule,
            "Incident 2025-11-03: a hung upstream call held every worker thread for forty minutes",
            "soft",
            "src/",
        )
        target = project / "src" / "fetch.py"
        session = workspace.run(
            [
                [ToolCall("__query_entries", {"text": ["timeout"]})],
                [ToolCall("Write", {"file_path": str(target), "content": "TIMEOUT = 5\n"})],
                "done",
            ]
        )
        # The MCP server and the hooks both ran and read this project's store...
        assert not session.tool_result(0).get("is_error"), session.tool_text(0)
        assert rule in session.tool_text(0)
        assert rule in session.after(1)
        assert "SessionStart hook additional context" in session.sent(0)
        # ...and none of the project's look-alike modules was imported or run.
        assert sorted(p.name for p in project.iterdir() if p.name.startswith("ran-")) == []


def git(cwd: Path, *args: str) -> str:
    """``git ARGS`` with a fixed identity and none of the machine's configuration."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "teammate",
        "GIT_AUTHOR_EMAIL": "teammate@example.com",
        "GIT_COMMITTER_NAME": "teammate",
        "GIT_COMMITTER_EMAIL": "teammate@example.com",
    }
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def team_clone(tmp_path: Path) -> tuple[Workspace, Workspace, str]:
    """A teammate's repository with a hard rule on db/, pushed to a bare upstream, and a fresh
    clone of it (the committed files only: no working store); returns both and the rule's id."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    upstream = tmp_path / "team.git"
    git(tmp_path, "init", "-q", "--bare", str(upstream))
    teammate = Workspace(tmp_path / "a")
    git(teammate.project, "init", "-q")
    teammate.cli("init")
    rule_id = add_constraint(teammate, MIGRATION_RULE, MIGRATION_REASON, "hard", "db/")
    git(teammate.project, "add", ".context", ".gitattributes")
    git(teammate.project, "commit", "-q", "-m", "Record the migration rule")
    git(teammate.project, "push", "-q", str(upstream), "HEAD:main")
    clone = Workspace(tmp_path / "b")
    clone.project.rmdir()
    git(tmp_path / "b", "clone", "-q", str(upstream), str(clone.project))
    return teammate, clone, rule_id


class TestTeamSnapshot:
    def test_a_fresh_clone_imports_at_session_start_and_the_gate_holds(
        self, tmp_path: Path
    ) -> None:
        teammate, clone, rule_id = team_clone(tmp_path)
        migration = clone.project / "db" / "0003.sql"
        session = clone.run(
            [
                [ToolCall("Write", {"file_path": str(migration), "content": "-- 0003\n"})],
                [ToolCall("Write", {"file_path": str(migration), "content": "-- 0003\n"})],
                "done",
            ]
        )
        assert MIGRATION_RULE in session.sent(0)  # the summary, from the imported store
        denial = session.tool_result(0)
        assert denial.get("is_error") is True, denial
        assert MIGRATION_REASON in session.tool_text(0)
        assert not session.tool_result(1).get("is_error"), session.tool_text(1)
        assert migration.read_text(encoding="utf-8") == "-- 0003\n"
        assert [e["id"] for e in entries(clone)] == [rule_id]
        assert entries(clone) == entries(teammate)

    def test_a_forged_snapshot_in_the_working_tree_changes_nothing_a_person_approved(
        self, tmp_path: Path
    ) -> None:
        _, clone, rule_id = team_clone(tmp_path)
        # The forgery: the same snapshot with one more event, by "user", softening the rule
        # and scoping it away, written where the agent's tools can write (a scratch copy's
        # person edit, copied over the working tree's snapshot).
        scratch = tmp_path / "scratch"
        shutil.copytree(clone.project / ".context", scratch / ".context")
        from ctxkeeper.core.store import Store
        from ctxkeeper.write.exchange import import_snapshot
        from ctxkeeper.write.verbs import update_entry, user_actor

        forger = Store.open(str(scratch))
        import_snapshot(forger, actor=user_actor())
        update_entry(
            forger,
            rule_id,
            {"hardness": "soft", "scope": ["docs/"]},
            "migrations may be edited now that we squash them",
            actor=user_actor(),
        )
        forged = (scratch / ".context" / "snapshot.jsonl").read_bytes()
        assert b'"hardness":"soft"' in forged.replace(b" ", b"")
        (clone.project / ".context" / "snapshot.jsonl").write_bytes(forged)
        migration = clone.project / "db" / "0003.sql"
        session = clone.run(
            [
                [ToolCall("Write", {"file_path": str(migration), "content": "-- 0003\n"})],
                [ToolCall("Write", {"file_path": str(migration), "content": "-- 0003\n"})],
                "done",
            ]
        )
        # The rule the team's history holds still governs db/ and still holds the edit back.
        denial = session.tool_result(0)
        assert denial.get("is_error") is True, denial
        assert MIGRATION_RULE in session.tool_text(0)
        assert not session.tool_result(1).get("is_error"), session.tool_text(1)
        [rule] = [e for e in entries(clone) if e["id"] == rule_id]
        assert (rule["status"], rule["hardness"], rule["scope"]) == ("active", "hard", ["db"])
        # The forged change waits for a person instead.
        waiting = clone.cli("review")
        assert isinstance(waiting, dict)
        changes = waiting["changes"]
        assert isinstance(changes, list)
        assert [c.get("fields") for c in changes if isinstance(c, dict)] == [
            {"hardness": "soft", "scope": ["docs"]}
        ]
