"""File primitives for the store: refuse symlinks, write atomically, lock across processes."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time

from ctxkeeper.core.errors import LockTimeoutError, StoreError, UnsafeStoreError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import BinaryIO, TypeVar

    _T = TypeVar("_T")

# con-003-a7ed: O_NOFOLLOW makes the kernel refuse a symlink at the last path component, closing the gap
# between our lstat check and the open (a cloned repository is untrusted input).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_LOCK_TIMEOUT_S = 30.0
#: Temporary files ``write_atomic`` leaves behind only when the process is killed mid-write.
TEMP_PREFIX = ".tmp-"
TEMP_SUFFIX = ".part"


def check_not_link(path: str) -> None:
    """Refuse a symlink or a multiply-linked file at ``path`` (absent is fine).

    A hard link would let an append-mode write (the journal) land in a file outside the
    store, so it is refused like a symlink.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if os.path.islink(path):
        raise UnsafeStoreError(
            f"{path} is a symbolic link; ctxkeeper never follows links inside .context/ "
            "(a repository could redirect writes onto another file). Replace it with a real file."
        )
    if not os.path.isdir(path) and info.st_nlink > 1:
        raise UnsafeStoreError(
            f"{path} has {info.st_nlink} hard links; ctxkeeper writes only files it alone owns. "
            "Copy it to a fresh file (cp, then mv) and retry."
        )


def read_bytes(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist; never follows a symlink."""
    return _read(path, lambda handle: handle.read())


def read_lines(path: str) -> list[bytes] | None:
    """The file's lines without their newlines, or None when it does not exist; never follows
    a symlink. Read a line at a time, so the whole file is never held beside its lines."""
    return _read(path, lambda handle: [line.removesuffix(b"\n") for line in handle])


def _read(path: str, how: Callable[[BinaryIO], _T]) -> _T | None:
    check_not_link(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _unusable(path, exc) from None
    try:
        handle = os.fdopen(fd, "rb")
    except OSError as exc:  # a directory opens read-only but is no file to read
        os.close(fd)
        raise _unusable(path, exc) from None
    with handle:
        try:
            return how(handle)
        except OSError as exc:
            raise _unusable(path, exc) from None


def _unusable(path: str, exc: OSError) -> StoreError:
    if os.path.isdir(path):
        return StoreError(f"{path} is a directory where ctxkeeper expects a file; move it aside")
    return StoreError(f"{path} cannot be read: {exc.strerror or exc}")


def fsync_dir(directory: str) -> None:
    with contextlib.suppress(OSError):  # Not every filesystem lets a directory be fsynced.
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: str, data: bytes | Sequence[bytes], *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` (bytes, or parts written in order) so a reader sees the
    old or the new file, never half.

    :param durable: fsync the file and its directory; a derived cache skips this, since
        losing it to a crash only costs a rebuild.
    """
    check_not_link(path)
    if os.path.isdir(path):
        raise StoreError(f"{path} is a directory where ctxkeeper expects a file; move it aside")
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX)
    try:
        # mkstemp makes the file private (0600); store files are ordinary project files.
        os.fchmod(fd, _file_mode(path))
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                handle.writelines(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(directory)


def _file_mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def append_durably(path: str, data: bytes) -> int:
    """Append ``data`` in one write, fsync it, and return the file's size before the append."""
    check_not_link(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
    except OSError as exc:
        raise _unusable(path, exc) from None
    try:
        start = os.fstat(fd).st_size
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    return start


def orphaned_temp_files(directory: str) -> list[str]:
    """Names of ``write_atomic`` temporaries a killed process left in ``directory``."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(n for n in names if n.startswith(TEMP_PREFIX) and n.endswith(TEMP_SUFFIX))


def truncate(path: str, size: int) -> None:
    """Cut a torn tail off an append-only file (crash recovery)."""
    check_not_link(path)
    fd = os.open(path, os.O_WRONLY | _NOFOLLOW)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def exclusive_lock(path: str, *, timeout: float = _LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold an inter-process lock on ``path`` (created if missing) for the block."""
    check_not_link(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644)
    try:
        _acquire(fd, path, timeout)
        try:
            yield
        finally:
            _release(fd)
    finally:
        os.close(fd)


try:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _release(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

except ImportError:  # pragma: no cover - Windows has no fcntl; msvcrt locks a byte range.
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined,unused-ignore]
        except OSError:
            return False
        return True

    def _release(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined,unused-ignore]


def _acquire(fd: int, path: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.001
    while not _try_lock(fd):
        if time.monotonic() >= deadline:
            raise LockTimeoutError(
                f"another ctxkeeper process has held {path} for over {timeout:.0f} s; "
                "retry, or find the stuck process"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
