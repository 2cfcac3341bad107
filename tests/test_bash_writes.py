"""The edit gate sees the writes the agent really makes: Bash writes and symlinked paths.

Every test runs the real PreToolUse hook the way ``hooks/hooks.json`` starts it, against a
store whose person-recorded hard constraint governs ``src/billing/`` (issue 23).
"""

from __future__ import annotations

import os

import pytest

from ctxkeeper.plugin.bashwrites import patch_paths, python_write_paths
from tests.conftest import constraint_fields
from tests.hook_harness import add_constraint, bash, edit, make_store, run_hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

RULE = str(constraint_fields()["rule"])
REASON = str(constraint_fields()["reason"])
SOFT_RULE = "Docs pages keep one sentence per line"
GOVERNED = {"f": "src/billing/charge.py", "d": "src/billing", "patch": "governed.patch"}
FREE = {"f": "docs/notes.md", "d": "docs", "patch": "free.patch"}


def _patch(path: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        "@@ -1 +1 @@\n-old = 1\n+new = 1\n"
    )


#: One command per write form; ``{f}`` is the file written, ``{d}`` its folder.
WRITE_FORMS = [
    pytest.param("echo 'x = 1' > {f}", id="redirect"),
    pytest.param("echo 'x = 1' >> {f}", id="append"),
    pytest.param("printf 'x' 1>{f} 2>/dev/null", id="redirect-fd-glued"),
    pytest.param("make all &> {f}", id="redirect-both-streams"),
    pytest.param("cat > {f} <<'EOF'\nx = 1\nEOF", id="heredoc-into-file"),
    pytest.param("echo 'x = 1' | tee -a {f}", id="tee"),
    pytest.param("sed -i 's/old/new/' {f}", id="sed-i"),
    pytest.param("sed -i '' -e 's/old/new/' {f}", id="sed-i-bsd"),
    pytest.param("sed --in-place=.bak 's/old/new/' {f}", id="sed-in-place"),
    pytest.param("sed -i 's/old/new/' {d}/*.py", id="sed-i-glob"),
    pytest.param("perl -pi -e 's/old/new/' {f}", id="perl-pi"),
    pytest.param("cp new.py {f}", id="cp"),
    pytest.param("cp new.py {d}/", id="cp-into-folder"),
    pytest.param("cp -t {d} new.py", id="cp-target-directory"),
    pytest.param("mv new.py {f}", id="mv"),
    pytest.param("install -m 644 new.py {f}", id="install"),
    pytest.param("truncate -s 0 {f}", id="truncate"),
    pytest.param("dd if=new.py of={f}", id="dd"),
    pytest.param("python3 -c \"open('{f}', 'w').write('x = 1')\"", id="python-c-open"),
    pytest.param(
        "python3 -c \"import pathlib; pathlib.Path('{f}').write_text('x')\"", id="python-c-path"
    ),
    pytest.param(
        "python3 - <<'EOF'\nwith open('{f}', 'a') as out:\n    out.write('x = 1')\nEOF",
        id="python-heredoc",
    ),
    pytest.param("git apply {patch}", id="git-apply-file"),
    pytest.param("git apply <<'EOF'\n" + _patch("{f}") + "EOF", id="git-apply-heredoc"),
    pytest.param("patch -p1 < {patch}", id="patch-redirect"),
    pytest.param("cd {d} && sed -i 's/old/new/' {base}", id="cd-then-relative"),
    pytest.param("bash -c \"echo 'x' > {f}\"", id="bash-c"),
    pytest.param("sudo -u root tee {f} < new.py", id="wrapped-tee"),
    pytest.param("git checkout HEAD -- {f}", id="git-checkout-path"),
    pytest.param("rm -f {f}", id="rm"),
]

#: Commands that read the governed file: they pass untouched.
READS = [
    "cat {f}",
    "grep -n old {f}",
    "sed -n 1p {f}",
    "python3 -c \"print(open('{f}').read())\"",
    "cp {f} /tmp/copy.py",
    "git diff -- {f}",
    "git apply --check {patch}",
]


@pytest.fixture
def governed(project: Path) -> Path:
    store = make_store(project)
    add_constraint(store)
    for rel in (GOVERNED["f"], FREE["f"], "new.py"):
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("old = 1\n", encoding="utf-8")
    (project / GOVERNED["patch"]).write_text(_patch(GOVERNED["f"]), encoding="utf-8")
    (project / FREE["patch"]).write_text(_patch(FREE["f"]), encoding="utf-8")
    return project


def _fill(template: str, names: dict[str, str]) -> str:
    return template.format(**names, base=os.path.basename(names["f"]))


def _untouched(project: Path, command: str, session: str = "s1") -> bool:
    result = run_hook("PreToolUse", bash(command, session=session), project)
    return (result.returncode, result.stdout) == (0, "")


class TestBashWritesAreGated:
    @pytest.mark.parametrize("form", WRITE_FORMS)
    def test_held_back_once_per_file_then_the_reissue_runs(self, governed: Path, form: str) -> None:
        command = _fill(form, GOVERNED)
        # Controls first, in the same session: reads of the governed file, and the same write
        # of a file no rule covers, pass untouched (and leave the gate armed).
        for read in READS:
            assert _untouched(governed, _fill(read, GOVERNED)), read
        assert _untouched(governed, _fill(form, FREE)), _fill(form, FREE)
        first = run_hook("PreToolUse", bash(command), governed)
        assert first.denied, command
        assert RULE in first.reason
        assert REASON in first.reason
        assert "src/billing" in first.reason
        assert _untouched(governed, command)  # the re-issue runs
        # Once per session: another session is held back again.
        assert run_hook("PreToolUse", bash(command, session="s2"), governed).denied

    def test_two_governed_files_in_one_command_are_held_back_together(self, governed: Path) -> None:
        store = make_store(governed)
        add_constraint(
            store,
            rule="Docs pages are reviewed by the docs team before merge",
            reason="In 2025-05 an unreviewed page published a customer's private endpoint.",
            scope=["docs/"],
        )
        command = f"sed -i s/old/new/ {GOVERNED['f']} {FREE['f']}"
        first = run_hook("PreToolUse", bash(command), governed)
        assert first.denied
        assert RULE in first.reason
        assert "reviewed by the docs team" in first.reason
        assert _untouched(governed, command)

    def test_soft_constraints_ride_along_as_context(self, governed: Path) -> None:
        store = make_store(governed)
        add_constraint(
            store,
            rule=SOFT_RULE,
            reason="Diffs of prose stay readable when a sentence changes alone.",
            hardness="soft",
            scope=["docs/"],
        )
        result = run_hook("PreToolUse", bash(f"echo hi >> {FREE['f']}"), governed)
        assert not result.denied
        assert SOFT_RULE in result.context
        # Control: the hard rule on src/billing/ still holds its writes back.
        assert run_hook("PreToolUse", bash(f"echo hi >> {GOVERNED['f']}"), governed).denied

    def test_writes_into_the_store_are_denied_with_the_tools_to_use(self, governed: Path) -> None:
        command = 'sed -i \'s/"review": *"agent"/"review":"off"/\' .context/config.json'
        result = run_hook("PreToolUse", bash(command), governed)
        assert result.denied
        assert "update_entry" in result.reason
        assert _untouched(governed, "cat .context/config.json")

    def test_the_shell_working_directory_is_the_base_of_relative_paths(
        self, governed: Path
    ) -> None:
        payload = bash("echo x > charge.py")
        payload["cwd"] = str(governed / "src" / "billing")
        assert run_hook("PreToolUse", payload, governed).denied
        # Control: the same words from the project root write an ungoverned file.
        assert _untouched(governed, "echo x > charge.py", session="s3")

    def test_ordinary_commands_and_outside_writes_pass(self, governed: Path) -> None:
        for command in (
            "ls -la src/billing",
            "pytest -q 2>&1 | tail -5",
            "echo x > /tmp/ctxkeeper-test-out.txt",
            "git status --short >/dev/null 2>&1",
        ):
            assert _untouched(governed, command), command
        assert run_hook("PreToolUse", bash(f"echo x > {GOVERNED['f']}"), governed).denied


class TestSymlinkedEdits:
    def test_an_edit_through_a_link_to_a_governed_folder_is_held_back(self, governed: Path) -> None:
        os.symlink("src/billing", governed / "bill")
        os.symlink("docs", governed / "handbook")
        assert _untouched_edit(governed, governed / "handbook" / "notes.md")
        result = run_hook("PreToolUse", edit(governed / "bill" / "charge.py"), governed)
        assert result.denied
        assert RULE in result.reason
        assert "src/billing/charge.py" in result.reason

    def test_an_edit_through_a_link_to_a_governed_file_is_held_back(self, governed: Path) -> None:
        os.symlink("src/billing/charge.py", governed / "charge_link.py")
        os.symlink("docs/notes.md", governed / "notes_link.md")
        assert _untouched_edit(governed, governed / "notes_link.md")
        result = run_hook("PreToolUse", edit(governed / "charge_link.py"), governed)
        assert result.denied
        assert RULE in result.reason

    def test_a_bash_write_through_a_link_is_held_back(self, governed: Path) -> None:
        os.symlink("src/billing", governed / "bill")
        assert _untouched(governed, "cat bill/charge.py")
        assert run_hook("PreToolUse", bash("sed -i s/old/new/ bill/charge.py"), governed).denied


def _untouched_edit(project: Path, path: Path) -> bool:
    result = run_hook("PreToolUse", edit(path), project)
    return (result.returncode, result.stdout) == (0, "")


class TestWriteFinder:
    def test_patch_paths_strip_prefixes_and_skip_dev_null(self) -> None:
        text = "--- /dev/null\n+++ b/src/new.py\nrename from a.py\nrename to b.py\n"
        assert patch_paths(text, (1,)) == ["src/new.py", "a.py", "b.py"]

    def test_python_code_that_only_reads_names_no_target(self) -> None:
        assert python_write_paths("print(open('src/x.py').read())") == []
        # Control: the same path opened for writing is a target; the content is not.
        assert python_write_paths("open('src/x.py', 'w').write('data.txt')") == ["src/x.py"]

    def test_a_fifo_named_as_the_patch_is_not_read(self, governed: Path) -> None:
        os.mkfifo(governed / "pipe.patch")
        # Reading a FIFO would block the hook until its timeout; it is passed over instead.
        assert _untouched(governed, "git apply pipe.patch")
        # Control: a patch file naming the governed file is read and gated.
        assert run_hook("PreToolUse", bash("git apply governed.patch"), governed).denied
