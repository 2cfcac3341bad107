"""The files a Bash command writes, where the command line names them as literals.

Seen: redirections (``>``, ``>>``, ``>|``, ``&>``, ``<>``), ``tee``, ``sed -i`` and ``perl -i``,
``cp``/``mv``/``install``/``ln`` targets (and what ``mv`` moves away), ``rm``/``unlink``/``shred``,
``truncate``, ``dd of=``, ``python -c`` code and Python fed on stdin (a heredoc) that opens a
literal path for writing, ``git apply``/``patch`` with the paths the patch names (read from the
patch file, a redirection or a heredoc), and ``git checkout -- PATH``/``git restore``/``git rm``/
``git mv``; ``cd DIR`` earlier in the same line moves the base of relative paths. A glob
(``src/billing/*.py``) counts as the folder before its first pattern. Not seen: a path computed
at run time (``$VAR``, ``$(...)``, ``xargs`` input) and files a script or program writes by
itself (``bash fix.sh``, ``python gen.py``, ``make``).

Import-light on purpose (con-001-5f40): ``os`` and :mod:`shellcmd` only.
"""

from __future__ import annotations

import os

from ctxkeeper.plugin.shellcmd import base, stdin_texts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxkeeper.plugin.shellcmd import Run
    from ctxkeeper.plugin.shellwords import Command

_WRITING_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_GLOB = frozenset("*?[{")
_NOT_FILES = ("/dev/", "/proc/")
#: A patch or Python file read to see what it writes: larger ones are not read.
MAX_READ = 1 << 20
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_MODE_CHARS = frozenset("rwaxbtU+")
#: Python calls that change files; code holding one of these (or a write mode) writes.
_PY_WRITERS = (
    "write_text",
    "write_bytes",
    ".touch(",
    "shutil.",
    "os.rename",
    "os.replace",
    "os.remove",
    "os.unlink",
    ".unlink(",
    "os.truncate",
    ".rename(",
)
#: Calls whose string argument is the content, not a path.
_PY_CONTENT = ("write(", "print(", "write_text(", "write_bytes(", "join(", "format(")


def _is_python(name: str) -> bool:
    if name in ("py", "pypy", "pypy3"):
        return True
    rest = name[len("python") :] if name.startswith("python") else None
    return rest is not None and all(ch.isdigit() or ch == "." for ch in rest)


def read_small(path: str) -> str | None:
    """A regular file's text, if it is small; never blocks on a FIFO or a device."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if (info.st_mode & 0o170000) != 0o100000 or info.st_size > MAX_READ:
            return None
        return os.read(fd, MAX_READ).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


class _Finder:
    def __init__(self, cwd: str, root: str) -> None:
        self.cwd = cwd
        self.root = root
        self.found: dict[str, None] = {}

    def path(self, word: str, base_dir: str | None = None) -> str | None:
        """The absolute path a literal word names; None when computed at run time."""
        if not word or word == "-" or "$" in word or "`" in word or "\0" in word:
            return None
        if word.startswith("~"):
            word = os.path.expanduser(word)
        if _GLOB.intersection(word):
            # The shell expands it at run time; the folder before the pattern is certain.
            fixed = []
            for part in word.split("/"):
                if _GLOB.intersection(part):
                    break
                fixed.append(part)
            word = "/".join(fixed) or "."
        return os.path.normpath(os.path.join(base_dir or self.cwd, word))

    def add(self, word: str, base_dir: str | None = None) -> None:
        path = self.path(word, base_dir)
        if path is not None and not path.startswith(_NOT_FILES):
            self.found[path] = None

    def redirects(self, command: Command) -> None:
        for op, target in command.redirects:
            if op in _WRITING_REDIRECTS and not (
                op == ">&" and (target.isdigit() or target == "-")
            ):
                self.add(target)

    def run(self, run: Run) -> None:
        argv = run.argv
        if not argv:
            return
        name = base(argv[0])
        if name in ("cd", "pushd"):
            self._cd(argv)
        elif name == "tee":
            self._operands(argv, frozenset({"--output-error"}))
        elif name == "sed":
            self._in_place(argv, "ef", "l")
        elif name == "perl":
            self._in_place(argv, "eE", "")
        elif name in ("cp", "mv", "install", "ln"):
            self._copy(argv, name)
        elif name in ("rm", "unlink", "shred"):
            self._operands(argv, frozenset({"-n", "--iterations", "-s", "--size"}))
        elif name == "truncate":
            self._operands(argv, frozenset({"-s", "--size", "-r", "--reference"}))
        elif name == "dd":
            for word in argv[1:]:
                if word.startswith("of="):
                    self.add(word[3:])
        elif _is_python(name):
            self._python(argv, run.command)
        elif name == "git":
            self._git(argv, run.command)
        elif name == "patch":
            self._patch(argv, run.command)

    def _cd(self, argv: list[str]) -> None:
        operands = [w for w in argv[1:] if not w.startswith("-")]
        target = self.path(operands[0]) if operands else None
        if target is not None:
            self.cwd = target

    def _operands(self, argv: list[str], takes_value: frozenset[str]) -> None:
        i = 1
        while i < len(argv):
            word = argv[i]
            if word == "--":
                for rest in argv[i + 1 :]:
                    self.add(rest)
                return
            if word.startswith("-") and word != "-":
                i += 2 if word in takes_value else 1
                continue
            self.add(word)
            i += 1

    def _in_place(self, argv: list[str], code_letters: str, value_letters: str) -> None:
        """``sed -i``/``perl -i``: the files after the script are edited where they lie."""
        in_place = has_script = False
        files: list[str] = []
        i = 1
        while i < len(argv):
            word = argv[i]
            if word == "--":
                files += argv[i + 1 :]
                break
            if word.startswith("--"):
                in_place = in_place or word.startswith("--in-place")
                if word in ("--expression", "--file", "--line-length"):
                    has_script = has_script or word != "--line-length"
                    i += 1
                elif word.startswith(("--expression=", "--file=")):
                    has_script = True
            elif word.startswith("-") and len(word) > 1:
                for j, letter in enumerate(word[1:], 1):
                    last = j == len(word) - 1
                    if letter == "i":
                        in_place = True
                        if last and argv[i + 1 : i + 2] == [""]:
                            i += 1  # BSD sed: `-i ''`, an empty backup suffix
                        break  # the rest of the word is the backup suffix
                    if letter in code_letters or letter in value_letters:
                        has_script = has_script or letter in code_letters
                        i += 1 if last else 0
                        break
            elif not has_script:
                has_script = True  # the script itself
            else:
                files.append(word)
            i += 1
        if in_place:
            for word in files:
                self.add(word)

    def _copy(self, argv: list[str], name: str) -> None:
        value_options = {"-t", "--target-directory", "-S", "--suffix"}
        if name == "install":
            value_options |= {"-m", "--mode", "-o", "--owner", "-g", "--group"}
        target_dir: str | None = None
        operands: list[str] = []
        options = True
        i = 1
        while i < len(argv):
            word = argv[i]
            if options and word == "--":
                options = False
            elif options and word.startswith("--target-directory="):
                target_dir = word.partition("=")[2]
            elif options and word.startswith("-t") and len(word) > 2 and not word.startswith("--"):
                target_dir = word[2:]
            elif options and word in value_options:
                if word in ("-t", "--target-directory") and i + 1 < len(argv):
                    target_dir = argv[i + 1]
                i += 1
            elif options and word.startswith("-") and word != "-":
                if name == "install" and word == "-d":
                    return  # makes directories, writes no file
            else:
                operands.append(word)
            i += 1
        if target_dir is None and len(operands) >= 2:
            target = operands.pop()
            absolute = self.path(target)
            into = len(operands) > 1 or target.endswith("/")
            if not into and absolute is not None and name != "ln":
                into = os.path.isdir(absolute)
            if not into:
                self.add(target)
            else:
                target_dir = target
        if target_dir is not None:
            for source in operands:
                self.add(os.path.join(target_dir, os.path.basename(source.rstrip("/"))))
        if name == "mv":
            for source in operands:
                self.add(source)  # moved away: the file there is gone

    def _python(self, argv: list[str], command: Command) -> None:
        i = 1
        code: list[str] = []
        while i < len(argv):
            word = argv[i]
            if word == "-c":
                code = argv[i + 1 : i + 2]
                break
            if word.startswith("-c"):
                code = [word[2:]]
                break
            if word == "-m" or (word.startswith("-m") and len(word) > 2):
                return
            if word in ("-X", "-W"):
                i += 2
                continue
            if word.startswith("-") and word != "-":
                i += 1
                continue
            if word != "-":
                return  # a script file: what it writes is not in the command line
            break
        for text in code or stdin_texts(command):
            for word in python_write_paths(text):
                self.add(word)

    def _git(self, argv: list[str], command: Command) -> None:
        i = 1
        top = self.root
        while i < len(argv) and argv[i].startswith("-"):
            if argv[i] == "-C" and i + 1 < len(argv):
                top = os.path.join(top, argv[i + 1])
            i += 2 if argv[i] in ("-C", "-c") else 1
        if i >= len(argv):
            return
        verb, rest = argv[i], argv[i + 1 :]
        if verb == "apply":
            self._git_apply(rest, command, top)
        elif verb == "checkout" and "--" in rest:
            for word in rest[rest.index("--") + 1 :]:
                self.add(word)
        elif verb in ("restore", "rm"):
            self._operands(["git", *rest], frozenset({"-s", "--source", "--pathspec-from-file"}))
        elif verb == "mv":
            self._copy(["mv", *rest], "mv")

    def _git_apply(self, args: list[str], command: Command, top: str) -> None:
        if {"--check", "--stat", "--numstat", "--summary"} & set(args) and "--apply" not in args:
            return  # reports on the patch, changes nothing
        strip = 1
        directory = ""
        files: list[str] = []
        i = 0
        while i < len(args):
            word = args[i]
            if word.startswith("-p") and word[2:].isdigit():
                strip = int(word[2:])
            elif word == "-p" and i + 1 < len(args) and args[i + 1].isdigit():
                strip = int(args[i + 1])
                i += 1
            elif word.startswith("--directory="):
                directory = word.partition("=")[2]
            elif not word.startswith("-"):
                files.append(word)
            i += 1
        texts = [read_small(self.path(f) or "") or "" for f in files] or self._patch_stdin(command)
        for text in texts:
            for name in patch_paths(text, (strip,)):
                self.add(os.path.join(directory, name), top)

    def _patch(self, argv: list[str], command: Command) -> None:
        strips: tuple[int, ...] = (1, 0)
        where = self.cwd
        patch_files: list[str] = []
        operands: list[str] = []
        i = 1
        while i < len(argv):
            word = argv[i]
            value = argv[i + 1] if i + 1 < len(argv) else ""
            if word.startswith("-p") and word[2:].isdigit():
                strips = (int(word[2:]),)
            elif word in ("-p", "--strip") and value.isdigit():
                strips = (int(value),)
                i += 1
            elif word in ("-d", "--directory"):
                where = self.path(value) or where
                i += 1
            elif word in ("-i", "--input"):
                patch_files.append(value)
                i += 1
            elif word in ("-o", "--output"):
                self.add(value)
                i += 1
            elif word in ("-r", "--reject-file", "-B", "--prefix", "-z", "--suffix", "-D"):
                i += 1
            elif not word.startswith("-"):
                operands.append(word)
            i += 1
        if operands:
            self.add(operands[0], where)  # `patch FILE PATCH`: FILE is the one patched
            patch_files += operands[1:2]
        texts = [read_small(self.path(f) or "") or "" for f in patch_files]
        for text in texts or self._patch_stdin(command):
            for name in patch_paths(text, strips):
                self.add(name, where)

    def _patch_stdin(self, command: Command) -> list[str]:
        texts = stdin_texts(command)
        for op, target in command.redirects:
            if op == "<":
                texts.append(read_small(self.path(target) or "") or "")
        source = command.piped
        if source is not None and source.words[:1] == ["cat"]:
            texts += [read_small(self.path(w) or "") or "" for w in source.words[1:]]
        return texts


def _unquote_git(name: str) -> str:
    return name[1:-1] if len(name) > 1 and name[0] == name[-1] == '"' else name


def patch_paths(text: str, strips: tuple[int, ...]) -> list[str]:
    """The files a unified or git diff changes, with ``strips`` leading components removed."""
    names: list[str] = []
    for line in text.splitlines():
        if line.startswith(("--- ", "+++ ")):
            name = _unquote_git(line[4:].split("\t", 1)[0].strip())
            if name and name != "/dev/null":
                for strip in strips:
                    parts = name.split("/")
                    if len(parts) > strip:
                        names.append("/".join(parts[strip:]))
        elif line.startswith(("rename from ", "rename to ", "copy to ")):
            names.append(_unquote_git(line.split(" ", 2)[2].strip()))
        elif line.startswith("diff --git "):
            a_side, _, b_side = line[len("diff --git ") :].partition(" b/")
            for name in (a_side, "b/" + b_side):
                parts = _unquote_git(name).split("/")
                if b_side and len(parts) > 1:
                    names.append("/".join(parts[1:]))
    return list(dict.fromkeys(names))


def _literals(code: str) -> list[tuple[int, str]]:
    """Python string literals in code, with where each starts (f-strings with fields left out)."""
    found: list[tuple[int, str]] = []
    i = 0
    while i < len(code):
        ch = code[i]
        if ch == "#":
            end = code.find("\n", i)
            i = len(code) if end < 0 else end
            continue
        if ch not in "'\"":
            i += 1
            continue
        prefix = ""
        back = i
        while back > 0 and code[back - 1].lower() in "rbfu" and len(prefix) < 2:
            back -= 1
            prefix = code[back:i].lower()
        quote = ch * 3 if code.startswith(ch * 3, i) else ch
        j = i + len(quote)
        while j < len(code) and not code.startswith(quote, j):
            j += 2 if code[j] == "\\" and "r" not in prefix else 1
        value = code[i + len(quote) : j]
        if not ("f" in prefix and "{" in value):
            found.append((back, value))
        i = j + len(quote)
    return found


def python_write_paths(code: str) -> list[str]:
    """The literal paths Python code may write: every path-like string literal, once the code
    opens a file for writing or calls a file-changing function (a read-only script names none)."""
    literals = _literals(code)
    modes = [v for _, v in literals if v and set(v) <= _MODE_CHARS and set(v) & set("wax+")]
    if not modes and not any(marker in code for marker in _PY_WRITERS):
        return []
    paths = []
    for start, value in literals:
        if not value or "\n" in value or len(value) > 4096 or set(value) <= _MODE_CHARS:
            continue
        if code[:start].rstrip().endswith(_PY_CONTENT):
            continue
        paths.append(value)
    return paths


def written_paths(runs: list[Run], cwd: str, root: str) -> list[str]:
    """Absolute paths of the files these runs write, in order, each once."""
    finder = _Finder(cwd, root)
    seen: set[int] = set()
    for run in runs:
        if id(run.command) not in seen:
            seen.add(id(run.command))
            finder.redirects(run.command)
        finder.run(run)
    return list(finder.found)
