"""A small POSIX-shell reader for hooks: split a command line into simple commands.

Not a shell: it only needs to see which programs a Bash tool call would run and with which
words, through quoting, ``&&``/``||``/``;``/``|``/``&``, newlines, ``$( )``, backticks and
heredocs. Substitutions are read as commands of their own and also kept verbatim inside the
word that holds them (a commit message written with ``$(cat <<'EOF' ...)`` stays readable).

Import-light on purpose (con-001-5f40): ``shlex`` imports ``re``; this imports nothing.
"""

from __future__ import annotations

_BREAKS = frozenset(";&|()\n")
#: Programs that run a heredoc body as a script (``bash <<EOF``).
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox"})
_SPACE = frozenset(" \t\r")
MAX_DEPTH = 8


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


class _Reader:
    def __init__(self, text: str, depth: int) -> None:
        self.text = text
        self.depth = depth
        self.commands: list[list[str]] = []
        self.nested: list[list[str]] = []
        self.words: list[str] = []
        self.word: list[str] = []
        self.started = False
        self.heredocs: list[tuple[str, bool]] = []

    def end_word(self) -> None:
        if self.started:
            word = "".join(self.word)
            self.words.append(word)
            if word.startswith("<<") and not word.startswith("<<<"):
                strip = word.startswith("<<-")
                delimiter = word[3:] if strip else word[2:]
                self.heredocs.append((delimiter, strip))
        self.word = []
        self.started = False

    def end_command(self) -> None:
        self.end_word()
        if self.words:
            # `<< EOF` with a space: the delimiter is the next word.
            for n, (delimiter, strip) in enumerate(self.heredocs):
                if not delimiter:
                    marker = "<<-" if strip else "<<"
                    if marker in self.words:
                        at = self.words.index(marker)
                        if at + 1 < len(self.words):
                            self.heredocs[n] = (self.words[at + 1], strip)
            self.commands.append(self.words)
        self.words = []

    def substitution(self, start: int, opener: str, closer: str) -> int:
        end = _closing(self.text, start, opener, closer)
        inner = self.text[start:end]
        if self.depth < MAX_DEPTH:
            self.nested.extend(split_commands(inner, self.depth + 1))
        self.word.append(self.text[start - (2 if opener == "(" else 1) : end + 1])
        self.started = True
        return end + 1

    def skip_heredocs(self, i: int) -> int:
        # Bodies start on the line after the command; each ends at its delimiter line. A body
        # fed to a shell is a script, so it is read as commands too.
        owner = self.commands[-1][0] if self.commands else ""
        runs_body = owner.rsplit("/", 1)[-1] in SHELLS
        for delimiter, strip in self.heredocs:
            body: list[str] = []
            while i < len(self.text):
                end = self.text.find("\n", i)
                end = len(self.text) if end < 0 else end
                line = self.text[i:end]
                i = end + 1
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                body.append(line)
            if runs_body and self.depth < MAX_DEPTH:
                self.nested.extend(split_commands("\n".join(body), self.depth + 1))
        self.heredocs = []
        return i

    def read(self) -> list[list[str]]:
        text = self.text
        i = 0
        while i < len(text):
            ch = text[i]
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
                if text[i + 1 : i + 2] != "\n":
                    self.word.append(text[i + 1 : i + 2])
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
            elif ch == "$" and text[i + 1 : i + 2] == "(":
                i = self.substitution(i + 2, "(", ")")
            elif ch == "`":
                i = self.substitution(i + 1, "`", "`")
            elif ch in "<>" and text[i + 1 : i + 2] == "(":
                i = self.substitution(i + 2, "(", ")")
            elif ch in _BREAKS:
                self.end_command()
                i += 1
            else:
                self.word.append(ch)
                self.started = True
                i += 1
        self.end_command()
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


def split_commands(text: str, depth: int = 0) -> list[list[str]]:
    """Every simple command the text would run, as lists of unquoted words.

    Commands inside substitutions come after the top-level ones; nesting stops at
    :data:`MAX_DEPTH`, so hostile input cannot recurse without bound.
    """
    return _Reader(text, depth).read()
