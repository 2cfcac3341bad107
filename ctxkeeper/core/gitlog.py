"""The repository's history as data: one ``git log`` pass, parsed without trusting it.

Every call runs git directly (no shell) with a timeout, and reads its output as bytes: a commit
subject or a file name can hold any character, so fields are separated by NUL (``-z``), which
neither can contain, and file names are taken by position, never by their look.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Final, TypeGuard

from ctxkeeper.core import githead

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

#: Seconds before a git call is given up on (the log of a large repository included).
PROBE_TIMEOUT: Final = 10.0
LOG_TIMEOUT: Final = 60.0
SUBJECT_MAX: Final = 200
#: A header: our record mark, then sha, parents, commit time and subject, 0x1f-separated.
_FORMAT: Final = "--format=%x1e%H%x1f%P%x1f%ct%x1f%s"
_STATUS: Final = frozenset("ACDMRTUXB")
_SHA: Final = "(?:[0-9a-f]{40}|[0-9a-f]{64})"
#: A header after its mark: sha, parents (space-separated), commit time, subject (anything).
_HEADER: Final = re.compile(
    rf"({_SHA})\x1f((?:{_SHA}(?: {_SHA})*)?)\x1f([0-9]{{1,12}})\x1f(.*)", re.DOTALL
)


class GitError(Exception):
    """git is missing, is not a repository here, failed or timed out."""


@dataclass(frozen=True)
class Repo:
    """What one probe learned about the repository holding the project root."""

    head: str | None
    """HEAD's commit (None: a repository with no commit yet)."""
    shallow: bool
    prefix: str
    """The project root relative to the repository's top level ("" when they are the same)."""


@dataclass(slots=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    time: int
    """Committer time, seconds since the epoch (converted to ISO-8601 before it is shown)."""
    subject: str
    paths: list[str] = field(default_factory=list)
    renames: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    """Paths this commit deleted or renamed away."""


def is_sha(text: object) -> TypeGuard[str]:
    return isinstance(text, str) and githead.is_sha(text)


def _env() -> dict[str, str]:
    # An inherited GIT_DIR, GIT_CONFIG_* or GIT_INDEX_FILE (a git hook's environment) would
    # point every read at another repository or configuration: git finds the project itself
    # (con-023-e6c0).
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    # Reads only: no index refresh behind a concurrent git, no prompt, no pager, plain C text,
    # and no fetch of missing objects in a partial clone (rename detection reads blobs).
    env.update(
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        GIT_NO_LAZY_FETCH="1",
        LC_ALL="C",
    )
    return env


#: Options every call carries: no filesystem monitor a repository's config could name.
_SAFE_CONFIG: Final = ("-c", "core.fsmonitor=false")


_deadline: float | None = None


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Every git call inside shares one time budget (a hook's drift check must not outlast the
    hook): each waits at most what is left, and none starts once it is spent."""
    global _deadline
    outer = _deadline
    _deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _deadline = outer


def _time_left(timeout: float) -> float:
    if _deadline is None:
        return timeout
    left = _deadline - time.monotonic()
    if left <= 0:
        raise GitError("the time for reading git history ran out")
    return min(timeout, left)


def run_git(
    root: str, args: Sequence[str], *, stdin: bytes | None = None, timeout: float = PROBE_TIMEOUT
) -> tuple[int, bytes]:
    """Run ``git -C root ARGS``; return the exit status and stdout.

    :raise GitError: git is not installed, cannot start, or did not finish in time.
    """
    try:
        proc = subprocess.run(
            ["git", "-C", root, *_SAFE_CONFIG, *args],
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=_time_left(timeout),
            env=_env(),
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed (not found on PATH)") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} did not finish within {timeout:g} seconds") from None
    except OSError as exc:
        raise GitError(f"git could not run: {exc.strerror or exc}") from None
    return proc.returncode, proc.stdout


def probe(root: str) -> Repo:
    """HEAD, shallowness and the root's place in the repository.

    :raise GitError: no git, or ``root`` is not inside a work tree.
    """
    status, out = run_git(
        root,
        [
            "rev-parse",
            "--is-inside-work-tree",
            "--is-shallow-repository",
            "--show-prefix",
            "HEAD^{commit}",
        ],
    )
    # Before the first commit HEAD does not resolve: git fails, after printing the rest.
    lines = out.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 3 or lines[0].strip() != "true":
        raise GitError(f"{root} is not inside a git work tree")
    shallow = lines[1].strip() == "true"
    prefix = lines[2].strip().rstrip("/")
    head = lines[3].strip() if status == 0 and len(lines) > 3 else None
    return Repo(head if is_sha(head) else None, shallow, prefix)


def head_sha(root: str) -> str | None:
    """``git rev-parse HEAD``, or None without git, a repository or a commit."""
    try:
        status, out = run_git(root, ["rev-parse", "--verify", "-q", "HEAD^{commit}"])
    except GitError:
        return None
    sha = out.decode("ascii", "replace").strip()
    return sha if status == 0 and is_sha(sha) else None


def present(root: str, shas: Iterable[str]) -> set[str]:
    """The commits among ``shas`` this clone holds (a shallow clone lacks the older ones)."""
    wanted = sorted({s for s in shas if is_sha(s)})
    if not wanted:
        return set()
    status, out = run_git(
        root, ["cat-file", "--batch-check"], stdin=("\n".join(wanted) + "\n").encode()
    )
    if status != 0:
        raise GitError("git cat-file failed")
    found: set[str] = set()
    for line in out.decode("ascii", "replace").splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[1] == "commit" and parts[0] in wanted:
            found.add(parts[0])
    return found


def merge_base(root: str, shas: Sequence[str]) -> str | None:
    """A common ancestor of every commit in ``shas`` (None when they share none)."""
    if len(shas) == 1:
        return shas[0]
    status, out = run_git(root, ["merge-base", "--octopus", *shas], timeout=LOG_TIMEOUT)
    sha = out.decode("ascii", "replace").strip().split("\n")[0] if status == 0 else ""
    return sha if is_sha(sha) else None


def side_graph(
    root: str, starts: Sequence[str], head: str
) -> tuple[dict[str, tuple[str, ...]], set[str]]:
    """The commits reachable from ``starts`` but not from ``head``, each with its parents,
    and the boundary: the commits of ``head``'s history those lead to. Parents only, no
    diffs: ``git rev-list --parents --boundary``, cheap beside the log pass."""
    revisions = [*(s for s in starts if is_sha(s)), f"^{head}"]
    status, out = run_git(
        root,
        ["rev-list", "--parents", "--boundary", "--stdin"],
        stdin=("\n".join(revisions) + "\n").encode(),
        timeout=LOG_TIMEOUT,
    )
    if status != 0:
        raise GitError("git rev-list failed")
    side: dict[str, tuple[str, ...]] = {}
    boundary: set[str] = set()
    for line in out.decode("ascii", "replace").splitlines():
        edge = line.startswith("-")
        shas = line.lstrip("-").split(" ")
        if not all(is_sha(s) for s in shas):
            continue
        if edge:
            boundary.add(shas[0])
        else:
            side[shas[0]] = tuple(shas[1:])
    return side, boundary


def log(
    root: str,
    tips: Sequence[str],
    exclude: Sequence[str] = (),
    *,
    relative: bool,
    ignore_missing: bool = False,
    limit: int | None = None,
) -> list[Commit]:
    """One pass: every commit reachable from ``tips`` and not from ``exclude``, newest first
    (by commit time: a skewed clock may list a parent before its child; callers that need
    ancestry order use the parents), each with the paths it touched (both sides of a rename),
    its renames and the paths it removed.

    :param relative: report paths relative to the root and leave out the rest (the project
        is a subdirectory of the repository).
    :param ignore_missing: skip a tip this clone does not hold instead of failing.
    :param limit: read at most this many commits (the newest).
    """
    revisions = [*(t for t in tips if is_sha(t)), *(f"^{x}" for x in exclude if is_sha(x))]
    args = [
        "-c",
        "core.quotePath=false",
        "log",
        "--stdin",
        "-z",
        "--name-status",
        "-M",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-show-signature",
        "--no-notes",
        "--encoding=UTF-8",
        _FORMAT,
    ]
    if relative:
        args.append("--relative")
    if ignore_missing:
        args.append("--ignore-missing")
    if limit is not None:
        args.append(f"--max-count={limit}")
    return _streamed_log(root, args, ("\n".join(revisions) + "\n").encode())


def _streamed_log(root: str, args: Sequence[str], stdin: bytes) -> list[Commit]:
    """Run the log and parse its output as it arrives, so the parse overlaps git's work."""
    allowed = _time_left(LOG_TIMEOUT)
    try:
        proc = subprocess.Popen(
            ["git", "-C", root, *_SAFE_CONFIG, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
    except FileNotFoundError:
        raise GitError("git is not installed (not found on PATH)") from None
    except OSError as exc:
        raise GitError(f"git could not run: {exc.strerror or exc}") from None
    timer = threading.Timer(allowed, proc.kill)
    timer.start()
    parser = _LogParser()
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # git exited early; its status says why
        fd = proc.stdout.fileno()
        while chunk := os.read(fd, 1 << 16):
            parser.feed(chunk)
        status = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    if status < 0:
        raise GitError(f"git log did not finish within {allowed:g} seconds")
    if status != 0:
        raise GitError("git log failed")
    commits = parser.finish()
    if parser.broken:
        # A log this parser cannot read must not pass for a short history (no drift).
        raise GitError("git log printed output ctxkeeper could not read")
    return commits


def parse_log(data: bytes) -> list[Commit]:
    """Parse ``git log -z --name-status`` output written with :data:`_FORMAT`.

    File names are consumed by position after their status letter, so a name that looks like
    a header or a status cannot derail the parse; a malformed header ends it (what came before
    is kept).
    """
    parser = _LogParser()
    parser.feed(data)
    return parser.finish()


class _LogParser:
    """The parse of :func:`parse_log`, fed in chunks: NUL-separated tokens, whole ones only
    (a UTF-8 character never holds a zero byte, so each token decodes on its own)."""

    def __init__(self) -> None:
        self.commits: list[Commit] = []
        self.current: Commit | None = None
        self.rest = b""
        self.status = ""
        self.names: list[str] = []
        self.wanted = 0
        self.broken = False

    def feed(self, chunk: bytes) -> None:
        data = self.rest + chunk
        cut = data.rfind(b"\0")
        if cut < 0:
            self.rest = data
            return
        self.rest = data[cut + 1 :]
        if not self.broken:
            self._tokens(data[:cut].decode("utf-8", "surrogateescape").split("\0"))

    def finish(self) -> list[Commit]:
        if self.rest and not self.broken:
            self._tokens(self.rest.decode("utf-8", "surrogateescape").split("\0"))
        return self.commits

    def _tokens(self, tokens: list[str]) -> None:
        for token in tokens:
            if self.wanted:
                self.names.append(token)
                self.wanted -= 1
                if not self.wanted:
                    self._apply()
                continue
            token = token.removeprefix("\n")
            if not token:
                continue
            if token.startswith("\x1e"):
                self.current = _header(token[1:])
                if self.current is None:
                    self.broken = True
                    return
                self.commits.append(self.current)
                continue
            score = token[1:]
            if self.current is None or token[0] not in _STATUS or (score and not score.isdigit()):
                self.broken = True
                return
            self.status = token[0]
            self.names = []
            self.wanted = 2 if token[0] in "RC" else 1

    def _apply(self) -> None:
        current, names, status = self.current, self.names, self.status
        assert current is not None
        current.paths.extend(names)
        if status == "R":
            current.renames.append((names[0], names[1]))
        if status in "RD":
            current.removed.append(names[0])


def _header(text: str) -> Commit | None:
    match = _HEADER.fullmatch(text)
    if match is None:
        return None
    sha, parents, seconds, subject = match.groups()
    return Commit(sha, tuple(parents.split()), int(seconds), _clean_subject(subject))


def _clean_subject(text: str) -> str:
    """A subject as one printable line: control characters become spaces, and it is capped."""
    if text.isprintable() and len(text) <= SUBJECT_MAX and "  " not in text:
        return text.strip()
    cleaned = "".join(" " if (ord(c) < 32 or 0x7F <= ord(c) < 0xA0) else c for c in text)
    cleaned = cleaned.encode("utf-8", "replace").decode("utf-8")
    cleaned = " ".join(cleaned.split())
    return cleaned if len(cleaned) <= SUBJECT_MAX else cleaned[: SUBJECT_MAX - 1] + "…"


def iso(seconds: int) -> str:
    """An epoch time as ctxkeeper writes instants: ``2026-11-30T09:15:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
