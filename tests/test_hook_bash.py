"""The Bash guard through the real PreToolUse hook: human-only verbs denied however spelled."""

from __future__ import annotations

import pytest

from ctxkeeper.plugin.bashguard import HUMAN_ONLY
from ctxkeeper.plugin.shellwords import split_commands
from tests.hook_harness import bash, make_store, run_hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

DENIED = [
    pytest.param("ctxkeeper approve con-001-abcd", "approve", id="plain"),
    pytest.param(
        "ctxkeeper edit con-001-abcd --hardness soft --why 'staging only'", "edit", id="edit"
    ),
    pytest.param(
        "python3 -m ctxkeeper deprecate con-001-abcd --reason 'no longer needed here'",
        "deprecate",
        id="deprecate",
    ),
    pytest.param(
        '(sleep 1; echo y) | script -qec "python3 -m ctxkeeper approve ID" /dev/null',
        "approve",
        id="script-pty-issue-8",
    ),
    pytest.param("$(which ctxkeeper) approve x", "approve", id="program-substituted"),
    pytest.param("`command -v ctxkeeper` lift x", "lift", id="program-backquoted"),
    pytest.param(
        'python3 -c \'from ctxkeeper.cli.app import main; main(["purge", "x"])\'',
        "purge",
        id="python-c-code",
    ),
    pytest.param("{ ctxkeeper approve x; }", "approve", id="brace-group"),
    pytest.param("if true; then ctxkeeper reject x --reason r; fi", "reject", id="if-then"),
    pytest.param("while true; do ctxkeeper approve x; done", "approve", id="while-do"),
    pytest.param("ctxkeeper reject dec-002-beef --reason 'no'", "reject", id="reject"),
    pytest.param("ctxkeeper lift con-003-aaaa", "lift", id="lift"),
    pytest.param("ctxkeeper purge con-003-aaaa --reason leaked", "purge", id="purge"),
    pytest.param("ctxkeeper review", "review", id="review"),
    pytest.param("python3 -m ctxkeeper approve x", "approve", id="python-m"),
    pytest.param("python -m ctxkeeper.cli approve x", "approve", id="python-m-cli"),
    pytest.param("python -m ctxkeeper.cli.app approve x", "approve", id="python-m-cli-app"),
    pytest.param("python3 /src/ctxkeeper/cli/app.py lift x", "lift", id="python-cli-app-file"),
    pytest.param("python3.12 -I -X dev -m ctxkeeper approve x", "approve", id="python-options"),
    pytest.param("python3 -mctxkeeper approve x", "approve", id="python-mglued"),
    pytest.param("python3 ./ctxkeeper approve x", "approve", id="python-package-dir"),
    pytest.param("python3 /src/ctxkeeper/__main__.py lift x", "lift", id="python-main-file"),
    pytest.param("/opt/tools/bin/ctxkeeper approve x", "approve", id="absolute-path"),
    pytest.param(".venv/bin/ctxkeeper approve x", "approve", id="venv"),
    pytest.param("ctxkeeper --project-dir /srv/app approve x", "approve", id="global-option"),
    pytest.param("ctxkeeper --project-dir=/srv/app --json approve x", "approve", id="global-eq"),
    pytest.param("'ctxkeeper' \"approve\" x", "approve", id="quoted-words"),
    pytest.param("ctx\\keeper appr\\ove x", "approve", id="backslashes"),
    pytest.param("sh -c 'ctxkeeper approve x'", "approve", id="sh-c"),
    pytest.param('bash -c "cd /srv && ctxkeeper purge x --reason y"', "purge", id="bash-c"),
    pytest.param("bash -lc 'ctxkeeper approve x'", "approve", id="bash-lc"),
    pytest.param("/bin/zsh -c 'ctxkeeper review'", "review", id="zsh-path"),
    pytest.param("make test && ctxkeeper approve x", "approve", id="after-and"),
    pytest.param("ls; ctxkeeper approve x", "approve", id="after-semicolon"),
    pytest.param("false || ctxkeeper approve x", "approve", id="after-or"),
    pytest.param("yes | ctxkeeper approve x", "approve", id="after-pipe"),
    pytest.param("sleep 1 & ctxkeeper approve x", "approve", id="after-background"),
    pytest.param("ls\nctxkeeper approve x", "approve", id="next-line"),
    pytest.param("echo $(ctxkeeper approve x)", "approve", id="substitution"),
    pytest.param('echo "done: $(ctxkeeper lift x)"', "lift", id="substitution-in-quotes"),
    pytest.param("echo `ctxkeeper approve x`", "approve", id="backticks"),
    pytest.param("(cd sub && ctxkeeper approve x)", "approve", id="subshell"),
    pytest.param("CLAUDECODE= AI_AGENT= ctxkeeper approve x", "approve", id="env-assignments"),
    pytest.param("env -u CLAUDECODE ctxkeeper approve x", "approve", id="env-u"),
    pytest.param("env -i PATH=/usr/bin ctxkeeper approve x", "approve", id="env-i"),
    pytest.param("sudo -u alice ctxkeeper approve x", "approve", id="sudo"),
    pytest.param("nohup nice -n 5 timeout 30 ctxkeeper approve x", "approve", id="wrappers"),
    pytest.param("uv run ctxkeeper approve x", "approve", id="uv-run"),
    pytest.param(
        "uv run --with ctxkeeper python -m ctxkeeper approve x", "approve", id="uv-python"
    ),
    pytest.param("uvx ctxkeeper approve x", "approve", id="uvx"),
    pytest.param("pipx run ctxkeeper approve x", "approve", id="pipx"),
    pytest.param("echo con-1 | xargs ctxkeeper approve", "approve", id="xargs"),
    pytest.param("eval 'ctxkeeper approve x'", "approve", id="eval"),
    pytest.param("bash <<'EOF'\nctxkeeper approve x\nEOF", "approve", id="heredoc-to-bash"),
    pytest.param("sh -c \"bash -c 'ctxkeeper approve x'\"", "approve", id="nested-shells"),
    # Issue 22, section 6: what the same command line makes of the program or the verb.
    pytest.param("v=approve; ctxkeeper $v x", "approve", id="verb-in-variable"),
    pytest.param("export V=lift; ctxkeeper ${V} x", "lift", id="verb-exported"),
    pytest.param('for v in list approve; do ctxkeeper "$v" x; done', "approve", id="for-loop"),
    pytest.param("p=ctxkeeper; $p approve x", "approve", id="program-in-variable"),
    pytest.param("CK=$(command -v ctxkeeper); $CK purge x --reason r", "purge", id="lookup-var"),
    pytest.param(
        "shopt -s expand_aliases; alias ck='python3 -m ctxkeeper'\nck approve x",
        "approve",
        id="alias",
    ),
    pytest.param('cp "$(which ctxkeeper)" /tmp/ck && /tmp/ck approve x', "approve", id="copied"),
    pytest.param("ln -s .venv/bin/ctxkeeper ./ck; ./ck reject x --reason r", "reject", id="linked"),
    pytest.param("cat $(which ctxkeeper) > /tmp/ck; /tmp/ck lift x", "lift", id="cat-copy"),
    pytest.param("find . -name x -exec ctxkeeper approve {} \\;", "approve", id="find-exec"),
    pytest.param("find . -execdir python3 -m ctxkeeper lift {} +", "lift", id="find-execdir"),
    pytest.param("tmux send-keys -t work 'ctxkeeper approve x' Enter", "approve", id="tmux-keys"),
    pytest.param("tmux new-session -d 'ctxkeeper lift x'", "lift", id="tmux-new-session"),
    pytest.param("screen -dmS w ctxkeeper approve x", "approve", id="screen"),
    pytest.param("echo 'ctxkeeper approve x' | at now + 1 minute", "approve", id="at-piped"),
    pytest.param("at now <<EOF\nctxkeeper purge x --reason r\nEOF", "purge", id="at-heredoc"),
    pytest.param("echo '* * * * * ctxkeeper approve x' | crontab -", "approve", id="crontab"),
    pytest.param("echo 'ctxkeeper approve x' | bash", "approve", id="piped-to-bash"),
    pytest.param("bash <<< 'ctxkeeper approve x'", "approve", id="here-string-to-bash"),
    pytest.param("su -c 'ctxkeeper approve x' alice", "approve", id="su-c"),
    pytest.param(
        "python3 -c \"import os; os.system('ctxkeeper approve x')\"", "approve", id="os-system"
    ),
    pytest.param('perl -e \'system("ctxkeeper", "approve", "x")\'', "approve", id="perl-e"),
]

#: The verb is left to run time: held back with their own reason.
COMPUTED_VERBS = [
    pytest.param('f() { ctxkeeper "$@"; }; f approve x', id="function"),
    pytest.param("echo approve x | xargs ctxkeeper", id="xargs-verb"),
    pytest.param("find . -name '*.id' -exec ctxkeeper {} \\;", id="find-placeholder"),
    pytest.param("ctxkeeper $(cat verb.txt) x", id="substituted-verb"),
    pytest.param('ctxkeeper "$VERB" x', id="unknown-variable"),
]

ALLOWED = [
    pytest.param("python3 -c 'print(\"approve\")'", id="python-c-without-ctxkeeper"),
    pytest.param(
        "python3 -c 'import ctxkeeper; print(ctxkeeper.__version__)'", id="python-c-no-verb"
    ),
    pytest.param("$(which ctxkeeper) list", id="program-substituted-list"),
    pytest.param("script -q typescript.log", id="script-without-command"),
    pytest.param("if ctxkeeper list; then echo ok; fi", id="if-list"),
    pytest.param("ctxkeeper list", id="list"),
    pytest.param("ctxkeeper status --json", id="status"),
    pytest.param("ctxkeeper show approve", id="id-named-approve"),
    pytest.param("ctxkeeper search 'review process'", id="search-review"),
    pytest.param("ctxkeeper add constraint --rule 'approve nothing blindly'", id="add-mentions"),
    pytest.param("python3 -m ctxkeeper doctor", id="python-m-doctor"),
    pytest.param("python3 /src/other/cli/app.py approve x", id="another-cli-app"),
    pytest.param("python3 -m ctxkeeper.cli.app doctor", id="python-m-cli-app-doctor"),
    pytest.param("grep approve file.txt", id="grep"),
    pytest.param("grep -r 'ctxkeeper approve' docs/", id="grep-quoted"),
    pytest.param("echo ctxkeeper approve", id="echo"),
    pytest.param('git commit -m "approve the review"', id="commit-message"),
    pytest.param('git commit -m "ctxkeeper approve is human-only"', id="commit-names-verb"),
    pytest.param(
        "git commit -m \"$(cat <<'EOF'\nctxkeeper approve stays human\nEOF\n)\"",
        id="commit-heredoc",
    ),
    pytest.param("cat <<EOF\nctxkeeper approve x\nEOF", id="heredoc-to-cat"),
    pytest.param("python3 -c 'print(\"approve\")'", id="python-c"),
    pytest.param("python3 scripts/ctxkeeper_report.py approve", id="other-script"),
    pytest.param("ls -la # ctxkeeper approve x", id="comment"),
    pytest.param("approve", id="bare-verb"),
    pytest.param("mkctxkeeper approve", id="similar-program"),
    pytest.param("", id="empty-command"),
    pytest.param("ctxkeeper review --json", id="review-json"),
    pytest.param("ctxkeeper --json review", id="review-json-before-verb"),
    pytest.param("ctxkeeper review --js", id="review-json-abbreviated"),
    pytest.param("python3 -m ctxkeeper review --json", id="python-m-review-json"),
    pytest.param("grep approve README.md", id="grep-readme"),
    pytest.param("v=list; ctxkeeper $v", id="harmless-verb-in-variable"),
    pytest.param("ctxkeeper list; grep approve README.md", id="list-then-grep"),
    pytest.param("find . -exec grep approve {} \\;", id="find-exec-grep"),
    pytest.param("tmux send-keys -t w 'grep approve README.md' Enter", id="tmux-grep"),
    pytest.param("echo 'ls' | at now", id="at-ls"),
    pytest.param("cp README.md /tmp/ck && /tmp/ck approve", id="copy-of-another-file"),
    pytest.param("alias ll='ls -l'; ll approve", id="alias-of-another-program"),
    pytest.param("ls 2>&1 | grep approve", id="redirect-and-pipe"),
]


@pytest.fixture
def store_project(project: Path) -> Path:
    make_store(project)
    return project


class TestBashGuard:
    @pytest.mark.parametrize(("command", "verb"), DENIED)
    def test_human_verbs_denied(self, store_project: Path, command: str, verb: str) -> None:
        result = run_hook("PreToolUse", bash(command), store_project)
        assert result.returncode == 0
        assert result.denied, command
        assert f"ctxkeeper {verb} is run by a person in their own terminal" in result.reason

    @pytest.mark.parametrize("command", ALLOWED)
    def test_everything_else_passes_untouched(self, store_project: Path, command: str) -> None:
        result = run_hook("PreToolUse", bash(command), store_project, inprocess=True)
        assert (result.returncode, result.stdout) == (0, "")
        # Control: the guard is live in this very project.
        assert run_hook("PreToolUse", bash("ctxkeeper approve x"), store_project).denied

    @pytest.mark.parametrize(("command", "verb"), DENIED)
    def test_in_process_matches(self, store_project: Path, command: str, verb: str) -> None:
        result = run_hook("PreToolUse", bash(command), store_project, inprocess=True)
        assert result.denied
        assert verb in result.reason

    @pytest.mark.parametrize("command", COMPUTED_VERBS)
    def test_a_verb_left_to_run_time_is_held_back(self, store_project: Path, command: str) -> None:
        result = run_hook("PreToolUse", bash(command), store_project)
        assert result.denied, command
        assert "only known when it runs" in result.reason
        # Control: the same program with its verb named passes.
        assert run_hook("PreToolUse", bash("ctxkeeper list"), store_project).stdout == ""

    def test_review_json_passes_and_review_is_denied(self, store_project: Path) -> None:
        listing = run_hook("PreToolUse", bash("ctxkeeper review --json"), store_project)
        queue = run_hook("PreToolUse", bash("ctxkeeper review"), store_project)
        assert (listing.returncode, listing.stdout) == (0, "")
        assert queue.denied
        # The denial points to the listing the hook lets through, as the CLI's refusal does.
        assert "`ctxkeeper review --json`" in queue.reason

    def test_every_human_verb_is_covered_by_the_table(self) -> None:
        verbs = {str(param.values[1]) for param in DENIED}
        assert verbs == set(HUMAN_ONLY)


class TestShellWords:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            pytest.param("a 'b c' \"d e\"", [["a", "b c", "d e"]], id="quotes"),
            pytest.param(
                "a && b || c; d | e & f", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]], id="ops"
            ),
            pytest.param("a \\\n b", [["a", "b"]], id="continuation"),
            pytest.param('x "a \\" b"', [["x", 'a " b']], id="escaped-quote"),
            pytest.param(
                "echo $(a $(b))", [["echo", "$(a $(b))"], ["a", "$(b)"], ["b"]], id="nested"
            ),
            pytest.param("cat <<-X\n\tbody\n\tX\nnext", [["cat"], ["next"]], id="heredoc-dash"),
            pytest.param("cat << END\nbody\nEND\nnext", [["cat"], ["next"]], id="heredoc-space"),
            pytest.param("echo 'unterminated", [["echo", "unterminated"]], id="unterminated"),
        ],
    )
    def test_split(self, text: str, expected: list[list[str]]) -> None:
        assert split_commands(text) == expected

    def test_deep_nesting_is_bounded(self) -> None:
        text = "$(" * 5000 + "ctxkeeper approve x" + ")" * 5000
        assert isinstance(split_commands(text), list)
