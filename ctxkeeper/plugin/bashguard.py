"""PreToolUse on Bash: deny the human-only CLI verbs; gate the files a command writes.

``approve``, ``reject``, ``lift``, ``purge`` and ``review`` are a person's decisions, taken in
their own terminal (DESIGN.md, "Review policy"). The CLI refuses them under an agent too; this
hook stops the call before it runs and says why. It looks through the usual spellings: a
path or venv to the script, ``python -m ctxkeeper``, global options before the verb, env
assignments and wrappers (``env``, ``sudo``, ``uv run``, ``xargs``...), ``sh -c``, ``eval``,
scripts on stdin, ``find -exec``, ``tmux``/``screen``, ``at``/``crontab``, operators and
substitutions; and what the same command line makes of the program: a variable
(``v=approve; ctxkeeper $v``), an alias, a copy of the binary, or a verb left to run time
(``ctxkeeper "$@"``, ``xargs ctxkeeper``). A word that merely mentions a verb (``grep
approve``, ``echo ctxkeeper approve``, a commit message) is not a command and passes, and so
does ``review --json``, the read-only listing.

Then the files the command writes (:mod:`bashwrites`) go through the edit gate, so a
``sed -i`` of a governed file is held back with its hard constraints as an Edit would be.

Import-light on purpose (con-001-5f40).
"""

from __future__ import annotations

import os

from ctxkeeper.plugin.shellcmd import base, is_assignment, runs
from ctxkeeper.plugin.shellwords import MAX_DEPTH, split_commands

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.core._types import JSONObject
    from ctxkeeper.plugin.hookio import HookContext
    from ctxkeeper.plugin.shellcmd import Run

HUMAN_ONLY = frozenset({"approve", "reject", "lift", "purge", "review", "edit", "deprecate"})
#: Stands for a verb the command line leaves to run time (``ctxkeeper $v``).
COMPUTED = "<computed>"
_PROGRAM = "ctxkeeper"
# ``ctxkeeper.cli`` was the CLI module before the layer layout; it is still a name to catch.
_MODULES = frozenset({"ctxkeeper", "ctxkeeper.cli", "ctxkeeper.cli.app", "ctxkeeper.__main__"})
_PY_VALUE_OPTIONS = frozenset({"-X", "-W", "-Q"})
_CLI_VALUE_OPTIONS = frozenset({"--project-dir"})
#: Interpreters whose option runs code given on the command line.
_CODE_OPTIONS = {"perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "-p"), "php": ("-r",)}
#: Builtins that assign the variables named in their words.
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_COPIERS = frozenset({"cp", "ln", "install", "mv", "rsync"})
_WRITING_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})

REASON = (
    "ctxkeeper {verb} is run by a person in their own terminal, not through the agent's "
    "Bash tool: approving, rejecting, lifting and purging entries (and reviewing them) are "
    "human decisions. Entries recorded through the MCP tools stay proposed until a person "
    "reviews them; get_context and query_entries show them labelled as proposed meanwhile, "
    "and `ctxkeeper review --json` lists what awaits a person (read-only)."
)
COMPUTED_REASON = (
    "This command runs ctxkeeper with a verb that is only known when it runs (a variable, "
    "a substitution, xargs or find input, or a function's arguments), so it was held back: "
    "the human-only verbs (approve, reject, lift, purge, review) are run by a person in "
    "their own terminal. Name the verb in the command itself (`ctxkeeper list`, `ctxkeeper "
    "status`, `ctxkeeper review --json`)."
)


def _is_python(name: str) -> bool:
    if name in ("py", "pypy", "pypy3"):
        return True
    rest = name[len("python") :] if name.startswith("python") else None
    return rest is not None and all(ch.isdigit() or ch == "." for ch in rest)


def _substitutes_program(word: str) -> bool:
    """`$(which ctxkeeper)` or a backquoted lookup standing where the program name goes."""
    return word.startswith(("$(", "`")) and _PROGRAM in word


def mentions_program(word: str) -> bool:
    """A word that names the CLI: ``ctxkeeper``, a path to it or to its module, a lookup."""
    path = word.replace("\\", "/").rstrip("/")
    if base(path) == _PROGRAM or _substitutes_program(word):
        return True
    return f"/{_PROGRAM}/" in f"/{path}" and path.endswith(("__main__.py", "/cli/app.py", "cli.py"))


def _wants_json(args: list[str]) -> bool:
    # argparse takes any unambiguous prefix of an option: `--js` is `--json`.
    return any(len(a) >= 3 and "--json".startswith(a) for a in args)


def _code_verb(code: str) -> str | None:
    """Code run by ``python -c`` (or ``perl -e``...) that runs the CLI with a human verb: it
    names ctxkeeper and either a quoted verb (``main(["purge", ...])``) or the verb right
    after the name (``os.system("ctxkeeper approve x")``). The code itself is not parsed."""
    if _PROGRAM not in code:
        return None
    json_listing = "--json" in code
    tokens = "".join(ch if ch.isalnum() or ch in "_.-/" else " " for ch in code).split()
    for n, token in enumerate(tokens):
        if base(token) == _PROGRAM or token in _MODULES:
            rest = [t for t in tokens[n + 1 : n + 4] if not t.startswith("-")]
            if rest and rest[0] in HUMAN_ONLY and not (rest[0] == "review" and json_listing):
                return rest[0]
    for verb in sorted(HUMAN_ONLY):
        if (f'"{verb}"' in code or f"'{verb}'" in code) and not (verb == "review" and json_listing):
            return verb
    return None


class _Names:
    """What the command line itself makes of names: variables, aliases, copies of the CLI."""

    def __init__(self, found: list[Run]) -> None:
        self.variables: dict[str, list[str]] = {}
        self.aliases: dict[str, list[str]] = {}
        self.programs: set[str] = set()
        for run in found:
            self._learn(run)

    def _assign(self, word: str) -> None:
        name, _, value = word.partition("=")
        self.variables.setdefault(name, []).append(value)

    def _learn(self, run: Run) -> None:
        words = run.command.words
        for word in words:
            if not is_assignment(word):
                break
            self._assign(word)
        argv = run.argv
        if not argv:
            return
        name = base(argv[0])
        if name in _DECLARERS:
            for word in argv[1:]:
                if is_assignment(word):
                    self._assign(word)
        elif name == "for" and len(argv) > 2 and argv[2] == "in":
            self.variables.setdefault(argv[1], []).extend(argv[3:])
        elif name == "alias":
            for word in argv[1:]:
                alias, eq, value = word.partition("=")
                commands = split_commands(value) if eq else []
                if commands:
                    self.aliases[alias] = commands[0]
        elif name in _COPIERS and any(mentions_program(w) for w in argv[1:-1]):
            self.programs.add(argv[-1])
        if any(mentions_program(w) for w in argv):
            self.programs.update(t for op, t in run.command.redirects if op in _WRITING_REDIRECTS)

    def expand(self, word: str) -> list[str]:
        """The values a word can take from variables assigned in the same command line."""
        if "$" not in word:
            return [word]
        out = [word]
        for name, values in self.variables.items():
            for token in ("${" + name + "}", "$" + name):
                if any(token in w for w in out):
                    out = [w.replace(token, v) for w in out for v in values][:64]
        return out

    def is_program(self, word: str) -> bool:
        if base(word) == _PROGRAM or _substitutes_program(word) or word in self.programs:
            return True
        return any(base(word) == base(p) for p in self.programs if "/" in p)


def _python_cli_args(words: list[str], i: int) -> list[str] | None:
    """After the interpreter: the CLI's words when it runs ctxkeeper, else None."""
    while i < len(words):
        word = words[i]
        if word == "-m" or (word.startswith("-m") and len(word) > 2):
            module = words[i + 1] if word == "-m" and i + 1 < len(words) else word[2:]
            rest = i + 2 if word == "-m" else i + 1
            return words[rest:] if module in _MODULES else None
        if word == "-c":
            verb = _code_verb(words[i + 1] if i + 1 < len(words) else "")
            return [verb] if verb else None
        if word == "-":
            return None
        if word in _PY_VALUE_OPTIONS:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            # A script: the package directory itself, its __main__.py, cli/app.py (or the
            # cli.py of the flat layout).
            return words[i + 1 :] if mentions_program(word) else None
    return None


def _verb_of(args: list[str], names: _Names, *, open_ended: bool) -> str | None:
    """The human verb (or :data:`COMPUTED`) the CLI's words run, else None."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _CLI_VALUE_OPTIONS else 1
    if i >= len(args):
        return COMPUTED if open_ended else None
    for verb in names.expand(args[i]):
        if verb == "review" and _wants_json(args):
            continue  # the read-only listing
        if verb in HUMAN_ONLY:
            return verb
        if "$" in verb or "`" in verb or verb == "{}":
            return COMPUTED
    return None


def _cli_args(argv: list[str], names: _Names, depth: int) -> list[str] | None:
    """The CLI's words when ``argv`` runs ctxkeeper (by any name this line gives it)."""
    for program in names.expand(argv[0]):
        if names.is_program(program):
            return argv[1:]
        name = base(program)
        if name in names.aliases and depth < MAX_DEPTH:
            alias = names.aliases.pop(name)  # an alias does not expand inside itself
            try:
                return _cli_args([*alias, *argv[1:]], names, depth + 1)
            finally:
                names.aliases[name] = alias
        if _is_python(name):
            return _python_cli_args(argv, 1)
        for option in _CODE_OPTIONS.get(name, ()):
            if option in argv[:-1]:
                verb = _code_verb(argv[argv.index(option) + 1])
                return [verb] if verb else None
    return None


def _run_verb(run: Run, names: _Names) -> str | None:
    starts = [0]
    if run.script:
        # Text typed into a shell or run later (tmux keys, `at`, a cron line): the CLI may
        # start anywhere in it (a cron line begins with its five time fields).
        starts += [n for n, w in enumerate(run.argv) if n and mentions_program(w)]
    for start in starts:
        argv = run.argv[start:]
        args = _cli_args(argv, names, 0) if argv else None
        verb = _verb_of(args, names, open_ended=run.open_ended) if args is not None else None
        if verb is not None:
            return verb
    return None


def human_verb(command: str) -> str | None:
    """The human-only verb a Bash command line runs, :data:`COMPUTED`, or None."""
    found = runs(command)
    names = _Names(found)
    for run in found:
        verb = _run_verb(run, names)
        if verb is not None:
            return verb
    return None


def _deny(reason: str) -> JSONObject:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def _in_project(path: str, roots: tuple[str, ...]) -> bool:
    candidates = (path, os.path.realpath(path))
    return any(p == r or p.startswith(r.rstrip("/") + "/") for p in candidates for r in roots)


def gate_writes(ctx: HookContext, command: str, found: list[Run]) -> JSONObject | None:
    """The edit gate's answer for every project file the command writes, merged into one."""
    from ctxkeeper.plugin.bashwrites import written_paths

    cwd = ctx.payload.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        cwd = ctx.root
    root = os.path.abspath(ctx.root)
    roots = (root, os.path.realpath(root))
    paths = [p for p in written_paths(found, cwd, root) if _in_project(p, roots)]
    if not paths:
        return None  # Nothing in the project: the edit gate's modules are not even imported.
    from ctxkeeper.plugin import editgate

    denials: list[str] = []
    notes: list[str] = []
    for path in paths:
        answer = editgate.gate(ctx, path)
        specific = answer.get("hookSpecificOutput") if answer else None
        if not isinstance(specific, dict):
            continue
        if specific.get("permissionDecision") == "deny":
            denials.append(str(specific.get("permissionDecisionReason")))
        else:
            notes.append(str(specific.get("additionalContext")))
    if denials:
        # The soft ones go in the reason too: the command did not run, so no context rides along.
        return _deny("\n\n".join(denials + notes))
    if notes:
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "additionalContext": "\n\n".join(notes),
            }
        }
    return None


def handle(ctx: HookContext) -> JSONObject | None:
    """The PreToolUse answer for a Bash call: a denial, context, or None to let it run."""
    tool_input = ctx.payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        from ctxkeeper.plugin.hookio import HookInputError

        raise HookInputError("tool_input.command is missing or not a string")
    found = runs(command)
    names = _Names(found)
    for run in found:
        verb = _run_verb(run, names)
        if verb == COMPUTED:
            return _deny(COMPUTED_REASON)
        if verb is not None:
            return _deny(REASON.format(verb=verb))
    return gate_writes(ctx, command, found)
