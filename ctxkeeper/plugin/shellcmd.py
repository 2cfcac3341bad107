"""What a Bash command line runs: every program with its words, through wrappers and scripts.

:func:`runs` reads the line with :mod:`shellwords` and looks through what hands its words to
another program: env assignments and compound-command keywords, wrappers (``env``, ``sudo``,
``timeout``, ``xargs``...), runners (``uv run``, ``pipx run``...), ``sh -c``/``bash -c``,
``eval``, ``script -c``, ``su -c``, scripts fed to a shell or to ``at`` on stdin (a heredoc, a
here-string, a piped ``echo``), ``find -exec``, and ``tmux``/``screen`` commands and keys.
The Bash guard (human verbs) and the write finder (files a command changes) both read its
answer, so they see the same programs.

Import-light on purpose (con-001-5f40): it imports only :mod:`shellwords`.
"""

from __future__ import annotations

from ctxkeeper.plugin.shellwords import MAX_DEPTH, SHELLS, Command, parse

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
    "parallel": frozenset({"-j", "-S", "--jobs"}),
    "watch": frozenset({"-n", "-d"}),
    "strace": frozenset({"-e", "-o", "-p"}),
    "ltrace": frozenset({"-e", "-o", "-p"}),
    "unbuffer": frozenset(),
    "chronic": frozenset(),
    "systemd-run": frozenset({"-p", "-u", "--unit", "--property", "-E", "--setenv"}),
    "flock": frozenset({"-w", "--timeout", "-E"}),
    "chroot": frozenset(),
    "taskset": frozenset(),
}
#: Wrappers whose first word after the options is theirs (a lock file, a directory, a mask).
_WRAPPER_OPERAND = frozenset({"timeout", "flock", "chroot", "taskset"})
#: Wrappers that append words read at run time (from stdin) to the command they run.
OPEN_ENDED = frozenset({"xargs", "parallel"})
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
#: Programs that run what they read on stdin later, as a shell script.
_SCHEDULERS = frozenset({"at", "batch"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
#: tmux commands whose words (or keys) become a shell command, and tmux options with a value.
_TMUX_RUNS = frozenset(
    {
        "send-keys",
        "send",
        "new-session",
        "new",
        "new-window",
        "neww",
        "split-window",
        "splitw",
        "run-shell",
        "run",
        "respawn-pane",
        "respawnp",
        "respawn-window",
        "respawnw",
    }
)
_TMUX_VALUE_OPTIONS = frozenset(
    {"-t", "-s", "-n", "-c", "-x", "-y", "-e", "-F", "-L", "-S", "-f", "-N", "-l", "-b"}
)
_TMUX_KEYS = frozenset({"Enter", "C-m", "KPEnter", "Space", "C-c", "C-d", "Escape", "Tab"})
_SCREEN_VALUE_OPTIONS = frozenset({"-S", "-c", "-e", "-h", "-p", "-s", "-t", "-T"})


class Run:
    """One program a command line runs: its words from the program on, and where it came from."""

    __slots__ = ("argv", "command", "open_ended", "script")

    def __init__(
        self, argv: list[str], command: Command, *, open_ended: bool, script: bool
    ) -> None:
        self.argv = argv
        #: The simple command it is part of (its redirections and stdin).
        self.command = command
        #: Run by ``xargs``/``parallel``: more words are appended at run time.
        self.open_ended = open_ended
        #: Found in text another program runs as a script (tmux keys, ``at``, cron lines).
        self.script = script

    def __repr__(self) -> str:
        return f"Run({self.argv!r})"


def base(word: str) -> str:
    """The program name of a word: its last path component, without ``.exe``."""
    name = word.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-4] if name.lower().endswith(".exe") else name


def is_assignment(word: str) -> bool:
    """``NAME=value``: a shell variable assignment."""
    name, eq, _ = word.partition("=")
    return bool(eq) and bool(name) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def skip_options(words: list[str], i: int, takes_value: frozenset[str]) -> int:
    """The index of the first word after the options starting at ``i``."""
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        if words[i] == "--":
            return i + 1
        i += 2 if words[i] in takes_value else 1
    return i


def stdin_texts(command: Command) -> list[str]:
    """What a command reads on stdin, where the command line itself holds it: heredocs,
    here-strings, and the words of an ``echo``/``printf`` piped into it."""
    texts = list(command.stdin)
    source = command.piped
    if source is not None and source.words and base(source.words[0]) in ("echo", "printf"):
        words = [w for w in source.words[1:] if not (w.startswith("-") and len(w) == 2)]
        texts.append(" ".join(words).replace("\\n", "\n"))
    return texts


class _Walker:
    def __init__(self) -> None:
        self.found: list[Run] = []

    def text(self, script: str, depth: int, *, scheduled: bool = False) -> None:
        if depth > MAX_DEPTH:
            return
        for command in parse(script, depth):
            self.words(command.words, command, depth, open_ended=False, script=scheduled)

    def words(
        self, words: list[str], command: Command, depth: int, *, open_ended: bool, script: bool
    ) -> None:
        i = 0
        while True:
            while i < len(words) and (is_assignment(words[i]) or words[i] in _KEYWORDS):
                i += 1
            if i >= len(words):
                # Assignments alone, or redirections alone (`> file`): still a command.
                self.found.append(Run([], command, open_ended=open_ended, script=script))
                return
            name = base(words[i])
            if name in _WRAPPERS:
                if name == "env" and "-S" in words[i + 1 :]:
                    at = words.index("-S", i + 1)
                    self.text(" ".join(words[at + 1 :]), depth + 1)
                    return
                open_ended = open_ended or name in OPEN_ENDED
                i = skip_options(words, i + 1, _WRAPPERS[name])
                if name in _WRAPPER_OPERAND and i < len(words):
                    if name == "flock" and words[i] in ("-c", "--command"):
                        self.text(" ".join(words[i + 1 : i + 2]), depth + 1)
                        return
                    i += 1
                continue
            if name in _RUNNERS:
                i = skip_options(words, i + 1, _RUNNERS[name])
                if name != "uvx" and i < len(words) and words[i] in ("run", "exec"):
                    i = skip_options(words, i + 1, _RUNNERS[name])
                continue
            break
        argv = words[i:]
        self.found.append(Run(argv, command, open_ended=open_ended, script=script))
        self.nested(argv, command, depth, open_ended=open_ended)

    def nested(self, argv: list[str], command: Command, depth: int, *, open_ended: bool) -> None:
        """Commands the program itself runs from its words or its stdin."""
        if depth >= MAX_DEPTH:
            return
        name = base(argv[0])
        if name == "eval":
            self.text(" ".join(argv[1:]), depth + 1)
        elif name in SHELLS or name in ("script", "su", "runuser", "sg"):
            self._shell(argv, command, depth)
        elif name in _SCHEDULERS:
            if "-f" not in argv:
                for body in stdin_texts(command):
                    self.text(body, depth + 1, scheduled=True)
        elif name == "crontab" and argv[-1:] == ["-"]:
            for body in stdin_texts(command):
                self.text(body, depth + 1, scheduled=True)
        elif name == "find":
            self._find(argv, command, depth)
        elif name == "tmux":
            self._tmux(argv, depth)
        elif name == "screen":
            self._screen(argv, command, depth, open_ended=open_ended)

    def _shell(self, argv: list[str], command: Command, depth: int) -> None:
        for n in range(1, len(argv)):
            word = argv[n]
            if not word.startswith("-"):
                if base(argv[0]) in ("su", "runuser", "sg") and n + 1 < len(argv):
                    continue  # the user or group name
                return  # `bash script.sh`: a file we do not read
            # `-c`, and bundles such as `-lc` or `-ec`, take the script as the next word.
            if not word.startswith("--") and "c" in word[1:] and n + 1 < len(argv):
                self.text(argv[n + 1], depth + 1)
                return
            if word == "--command" and n + 1 < len(argv):
                self.text(argv[n + 1], depth + 1)
                return
        if base(argv[0]) in SHELLS:  # `bash` or `bash -s`: the script is on stdin
            for body in stdin_texts(command):
                self.text(body, depth + 1)

    def _find(self, argv: list[str], command: Command, depth: int) -> None:
        n = 1
        while n < len(argv):
            if argv[n] in _FIND_EXEC:
                end = n + 1
                while end < len(argv) and argv[end] not in (";", "+"):
                    end += 1
                self.words(argv[n + 1 : end], command, depth + 1, open_ended=False, script=False)
                n = end
            n += 1

    def _tmux(self, argv: list[str], depth: int) -> None:
        n = skip_options(argv, 1, _TMUX_VALUE_OPTIONS)
        if n >= len(argv) or argv[n] not in _TMUX_RUNS:
            return
        rest = argv[skip_options(argv, n + 1, _TMUX_VALUE_OPTIONS) :]
        # Keys are typed into the pane's shell: Enter and C-m end a line.
        lines = ["\n" if word in _TMUX_KEYS else word for word in rest]
        self.text(" ".join(lines), depth + 1, scheduled=True)

    def _screen(self, argv: list[str], command: Command, depth: int, *, open_ended: bool) -> None:
        if "-X" in argv:
            at = argv.index("-X")
            if argv[at + 1 : at + 2] == ["stuff"]:
                self.text(" ".join(argv[at + 2 :]), depth + 1, scheduled=True)
            return
        n = 1
        while n < len(argv) and argv[n].startswith("-"):
            # A bundle such as `-dmS NAME` takes a value when its last letter does.
            n += 2 if "-" + argv[n][-1] in _SCREEN_VALUE_OPTIONS else 1
        if n < len(argv):
            self.words(argv[n:], command, depth + 1, open_ended=open_ended, script=False)


def runs(text: str) -> list[Run]:
    """Every program the command line would run, outer ones first, each with its words."""
    walker = _Walker()
    walker.text(text, 0)
    return walker.found
