"""PreToolUse on Bash: deny commands that would run the human-only CLI verbs.

``approve``, ``reject``, ``lift``, ``purge`` and ``review`` are a person's decisions, taken in
their own terminal (DESIGN.md, "Review policy"). The CLI refuses them under an agent too; this
hook stops the call before it runs and says why. It looks through the usual spellings: a
path or venv to the script, ``python -m ctxkeeper``, global options before the verb, env
assignments and wrappers (``env``, ``sudo``, ``uv run``...), ``sh -c``, ``eval``, operators and
substitutions. A word that merely mentions a verb (``grep approve``, ``echo ctxkeeper
approve``, a commit message) is not a command and passes.

Import-light on purpose (con-001-5f40).
"""

from __future__ import annotations

from ctxkeeper.plugin.shellwords import MAX_DEPTH, SHELLS, split_commands

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.plugin.hookio import HookContext

HUMAN_ONLY = frozenset({"approve", "reject", "lift", "purge", "review"})
_PROGRAM = "ctxkeeper"
# ``ctxkeeper.cli`` was the CLI module before the layer layout; it is still a name to catch.
_MODULES = frozenset({"ctxkeeper", "ctxkeeper.cli", "ctxkeeper.cli.app", "ctxkeeper.__main__"})
#: Wrappers that run the rest of their words as a command, with the options taking a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "sudo": frozenset({"-u", "-g", "-p", "-C", "-D", "-r", "-t", "-U", "-h"}),
    "doas": frozenset({"-u", "-C"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "nice": frozenset({"-n"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "setsid": frozenset(),
    "timeout": frozenset({"-k", "-s", "--signal", "--kill-after"}),
    "xargs": frozenset({"-I", "-n", "-P", "-L", "-d", "-a", "-E", "-s", "--max-args"}),
    "watch": frozenset({"-n", "-d"}),
    "strace": frozenset({"-e", "-o", "-p"}),
}
#: Runners whose sub-command runs a program: ``uv run``, ``pipx run``, ``poetry run``...
_RUNNERS: dict[str, frozenset[str]] = {
    "uv": frozenset({"--with", "--python", "-p", "--project", "--directory", "--package"}),
    "uvx": frozenset({"--with", "--python", "-p", "--from"}),
    "pipx": frozenset({"--python", "--spec"}),
    "poetry": frozenset({"-C", "--directory"}),
    "pdm": frozenset({"-p", "--project"}),
    "hatch": frozenset({"-e", "--env"}),
    "pipenv": frozenset(),
    "conda": frozenset({"-n", "--name", "-p", "--prefix"}),
    "mamba": frozenset({"-n", "--name", "-p", "--prefix"}),
}
#: Shell words that open a compound command; the command proper follows them.
_KEYWORDS = frozenset({"{", "!", "if", "then", "else", "elif", "do", "while", "until"})
_PY_VALUE_OPTIONS = frozenset({"-X", "-W", "-Q"})
_CLI_VALUE_OPTIONS = frozenset({"--project-dir"})

REASON = (
    "ctxkeeper {verb} is run by a person in their own terminal, not through the agent's "
    "Bash tool: approving, rejecting, lifting and purging entries (and reviewing them) are "
    "human decisions. Entries recorded through the MCP tools stay proposed until a person "
    "reviews them; get_context and query_entries show them labelled as proposed meanwhile."
)


def _base(word: str) -> str:
    name = word.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-4] if name.lower().endswith(".exe") else name


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and bool(name) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def _skip_options(words: list[str], i: int, takes_value: frozenset[str]) -> int:
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        if words[i] == "--":
            return i + 1
        i += 2 if words[i] in takes_value else 1
    return i


def _is_python(name: str) -> bool:
    if name in ("py", "pypy", "pypy3"):
        return True
    rest = name[len("python") :] if name.startswith("python") else None
    return rest is not None and all(ch.isdigit() or ch == "." for ch in rest)


def _python_cli_args(words: list[str], i: int) -> list[str] | None:
    """After the interpreter: the CLI's words when it runs ctxkeeper, else None."""
    while i < len(words):
        word = words[i]
        if word == "-m" or (word.startswith("-m") and len(word) > 2):
            module = words[i + 1] if word == "-m" and i + 1 < len(words) else word[2:]
            rest = i + 2 if word == "-m" else i + 1
            return words[rest:] if module in _MODULES else None
        if word == "-c":
            return _inline_code_verb(words[i + 1] if i + 1 < len(words) else "")
        if word == "-":
            return None
        if word in _PY_VALUE_OPTIONS:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            # A script: the package directory itself, its __main__.py, cli/app.py (or the
            # cli.py of the flat layout).
            path = word.replace("\\", "/").rstrip("/")
            tail = path.split("/")
            in_package = tail[-2:-1] == [_PROGRAM] and tail[-1] in ("__main__.py", "cli.py")
            if tail[-1] == _PROGRAM or in_package or tail[-3:] == [_PROGRAM, "cli", "app.py"]:
                return words[i + 1 :]
            return None
    return None


def _substitutes_program(word: str) -> bool:
    """`$(which ctxkeeper)` or a backquoted lookup standing where the program name goes."""
    return word.startswith(("$(", "`")) and _PROGRAM in word


def _inline_code_verb(code: str) -> list[str] | None:
    """``python -c CODE`` that imports ctxkeeper and names a human verb as a string: the
    CLI's words are then that verb (the code itself is not parsed)."""
    if _PROGRAM not in code:
        return None
    for verb in sorted(HUMAN_ONLY):
        if f'"{verb}"' in code or f"'{verb}'" in code:
            return [verb]
    return None


def _verb(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _CLI_VALUE_OPTIONS else 1
    return args[i] if i < len(args) else None


def human_verb(words: list[str], depth: int = 0) -> str | None:
    """The human-only verb a simple command runs, if any (looking through wrappers)."""
    i = 0
    while i < len(words):
        while i < len(words) and (_is_assignment(words[i]) or words[i] in _KEYWORDS):
            i += 1
        if i >= len(words):
            return None
        name = _base(words[i])
        if name in _WRAPPERS:
            if name == "env" and "-S" in words[i + 1 :] and depth < MAX_DEPTH:
                at = words.index("-S", i + 1)
                return _found(" ".join(words[at + 1 :]), depth + 1)
            i = _skip_options(words, i + 1, _WRAPPERS[name])
            if name == "timeout" and i < len(words):
                i += 1  # the duration
            continue
        if name in _RUNNERS:
            i = _skip_options(words, i + 1, _RUNNERS[name])
            if name not in ("uvx",) and i < len(words) and words[i] in ("run", "exec"):
                i = _skip_options(words, i + 1, _RUNNERS[name])
            continue
        # `script -qec CMD /dev/null` gives CMD a pseudo-terminal: the reproduction of issue 8.
        if name in SHELLS or name in ("eval", "script"):
            return _shell_script(words, i, depth)
        if name == _PROGRAM or _substitutes_program(words[i]):
            verb = _verb(words[i + 1 :])
        elif _is_python(name):
            args = _python_cli_args(words, i + 1)
            verb = _verb(args) if args is not None else None
        else:
            return None
        return verb if verb in HUMAN_ONLY else None
    return None


def _shell_script(words: list[str], i: int, depth: int) -> str | None:
    if depth >= MAX_DEPTH:
        return None
    if _base(words[i]) == "eval":
        return _found(" ".join(words[i + 1 :]), depth + 1)
    for n in range(i + 1, len(words)):
        word = words[n]
        if not word.startswith("-"):
            return None  # `bash script.sh`: a file we do not read
        # `-c`, and bundles such as `-lc` or `-ec`, take the script as the next word.
        if not word.startswith("--") and "c" in word[1:] and n + 1 < len(words):
            return _found(words[n + 1], depth + 1)
    return None


def _found(script: str, depth: int) -> str | None:
    for command in split_commands(script, depth):
        verb = human_verb(command, depth)
        if verb is not None:
            return verb
    return None


def handle(ctx: HookContext) -> JSONObject | None:
    """The PreToolUse answer for a Bash call: a denial, or None to let it run untouched."""
    tool_input = ctx.payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        from ctxkeeper.plugin.hookio import HookInputError

        raise HookInputError("tool_input.command is missing or not a string")
    verb = _found(command, 0)
    if verb is None:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": REASON.format(verb=verb),
        }
    }
