"""A small POSIX-shell reader for hooks: split a command line into simple commands.

Not a shell: it only needs to see which programs a Bash tool call would run, with which
words, which files it redirects to and what it feeds them on stdin, through quoting,
``&&``/``||``/``;``/``|``/``&``, newlines, ``$( )``, backticks, redirections and heredocs.
Substitutions are read as commands of their own and also kept verbatim inside the word that
holds them (a commit message written with ``$(cat <<'EOF' ...)`` stays readable).

Import-light on purpose (con-001-5f40): ``shlex`` imports ``re``; this imports nothing.
"""

from __future__ import annotations

_BREAKS = frozenset(";&|()\n")
#: Programs that run a heredoc body as a script (``bash <<EOF``).
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox"})
_SPACE = frozenset(" \t\r")
MAX_DEPTH = 8


class Command:
    """One simple command: its words, its redirections and the text it is fed on stdin."""

    __slots__ = ("piped", "redirects", "stdin", "words")

    def __init__(self) -> None:
        self.words: list[str] = []
        #: ``(operator, target)`` pairs: ``(">", "out.txt")``, ``(">&", "2")``, ``("<", "in")``.
        self.redirects: list[tuple[str, str]] = []
        #: Heredoc bodies and here-strings, in order.
        self.stdin: list[str] = []
        #: The command whose output this one reads (``a | b``), if any.
        self.piped: Command | None = None

    def __repr__(self) -> str:
        return f"Command({self.words!r}, redirects={self.redirects!r})"


def _closing(text: str, start: int, opener: str, closer: str) -> int:
    """Index of the ``closer`` matching an opener just before ``start`` (len(text) if none)."""
    depth = 1
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'" and opener == "(":
            end = text.find("'", i + 1)
            i = len(text) if end < 0 else end + 1
            continue
        if ch == opener and opener != closer:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)


def _operator(text: str, i: int) -> str:
    """The redirection operator starting at ``text[i]`` (one of ``<``, ``>``, ``&``)."""
    for op in ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&"):
        if text.startswith(op, i):
            return op
    return text[i]


class _Reader:
    def __init__(self, text: str, depth: int) -> None:
        self.text = text
        self.depth = depth
        self.commands: list[Command] = []
        self.nested: list[Command] = []
        self.current = Command()
        self.word: list[str] = []
        self.started = False
        self.pending: str | None = None  # a redirection operator awaiting its word
        self.heredocs: list[tuple[str, bool, Command]] = []

    def end_word(self) -> None:
        if self.started:
            word = "".join(self.word)
            op, self.pending = self.pending, None
            if op is None:
                self.current.words.append(word)
            elif op in ("<<", "<<-"):
                self.heredocs.append((word, op == "<<-", self.current))
            elif op == "<<<":
                self.current.stdin.append(word)
            else:
                self.current.redirects.append((op, word))
        self.word = []
        self.started = False

    def end_command(self, piped: bool = False) -> None:
        self.end_word()
        self.pending = None
        ended = self.current
        self.current = Command()
        if ended.words or ended.redirects or ended.stdin:
            self.commands.append(ended)
            if piped:
                self.current.piped = ended

    def substitution(self, start: int, opener: str, closer: str) -> int:
        end = _closing(self.text, start, opener, closer)
        inner = self.text[start:end]
        if self.depth < MAX_DEPTH:
            self.nested.extend(parse(inner, self.depth + 1))
        self.word.append(self.text[start - (2 if opener == "(" else 1) : end + 1])
        self.started = True
        return end + 1

    def redirection(self, i: int) -> int:
        # A word of digits just before the operator is the file descriptor (`2>`), not an
        # argument; anything else before it is a word of its own (`echo hi>out`).
        if self.started and "".join(self.word).isdigit() and self.pending is None:
            self.word = []
            self.started = False
        else:
            self.end_word()
        op = _operator(self.text, i)
        self.pending = op
        return i + len(op)

    def skip_heredocs(self, i: int) -> int:
        # Bodies start on the line after the command; each ends at its delimiter line.
        for delimiter, strip, owner in self.heredocs:
            body: list[str] = []
            while i < len(self.text):
                end = self.text.find("\n", i)
                end = len(self.text) if end < 0 else end
                line = self.text[i:end]
                i = end + 1
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                body.append(line.lstrip("\t") if strip else line)
            owner.stdin.append("\n".join(body))
        self.heredocs = []
        return i

    def read(self) -> list[Command]:
        text = self.text
        i = 0
        while i < len(text):
            ch = text[i]
            nxt = text[i + 1 : i + 2]
            if ch in _SPACE:
                self.end_word()
                i += 1
            elif ch == "\n":
                self.end_command()
                i = self.skip_heredocs(i + 1) if self.heredocs else i + 1
            elif ch == "#" and not self.started:
                end = text.find("\n", i)
                i = len(text) if end < 0 else end
            elif ch == "\\":
                if nxt != "\n":
                    self.word.append(nxt)
                    self.started = True
                i += 2
            elif ch == "'":
                end = text.find("'", i + 1)
                end = len(text) if end < 0 else end
                self.word.append(text[i + 1 : end])
                self.started = True
                i = end + 1
            elif ch == '"':
                i = self.double_quoted(i + 1)
            elif ch == "$" and nxt == "(":
                i = self.substitution(i + 2, "(", ")")
            elif ch == "`":
                i = self.substitution(i + 1, "`", "`")
            elif ch in "<>" and nxt == "(":
                i = self.substitution(i + 2, "(", ")")
            elif ch in "<>" or (ch == "&" and nxt == ">"):
                i = self.redirection(i)
            elif ch == "|" and nxt not in ("|", "&"):
                self.end_command(piped=True)
                i += 1
            elif ch in _BREAKS:
                self.end_command(piped=ch == "|" and nxt == "&")
                i += 2 if ch in "&|" and nxt in ("&", "|") else 1
            else:
                self.word.append(ch)
                self.started = True
                i += 1
        self.end_command()
        if self.heredocs:
            self.skip_heredocs(len(text))
        return self.commands + self.nested

    def double_quoted(self, i: int) -> int:
        text = self.text
        self.started = True
        while i < len(text):
            ch = text[i]
            if ch == '"':
                return i + 1
            if ch == "\\" and text[i + 1 : i + 2] in ('"', "\\", "$", "`", "\n"):
                if text[i + 1] != "\n":
                    self.word.append(text[i + 1])
                i += 2
            elif ch == "$" and text[i + 1 : i + 2] == "(":
                i = self.substitution(i + 2, "(", ")")
            elif ch == "`":
                i = self.substitution(i + 1, "`", "`")
            else:
                self.word.append(ch)
                i += 1
        return i


def parse(text: str, depth: int = 0) -> list[Command]:
    """Every simple command the text would run, with its redirections and stdin.

    Commands inside substitutions come after the top-level ones; nesting stops at
    :data:`MAX_DEPTH`, so hostile input cannot recurse without bound.
    """
    return _Reader(text, depth).read()


def split_commands(text: str, depth: int = 0) -> list[list[str]]:
    """Every simple command the text would run, as lists of unquoted words."""
    return [command.words for command in parse(text, depth) if command.words]
