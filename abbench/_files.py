"""Writing files others read: beside the target first, then renamed into place with a normal file's mode;
temporary files and folders a killed process left, removed by the next writer; and whether a folder has
room."""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not Unix: no lock tells a live writer's file from a dead one's
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)


def readable_mode() -> int:
    """The mode a file created normally would get (0o666 less the umask), for files made by mkstemp (0o600)."""
    try:
        # /proc reads the umask without changing it; os.umask can only read it by setting it
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def publish(tmp: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Give the temporary file `tmp` a shared file's mode (not mkstemp's private one) and rename it to `target`."""
    os.chmod(tmp, readable_mode())
    os.replace(tmp, target)


def keep_empty(path: str, flags: int) -> int:
    """An ``open(..., opener=keep_empty)`` that empties a file only when it holds something.

    Writing a new temporary file is the common case, and truncating even an empty file costs its
    close on ext4 (which then allocates and starts writing every block at once, ~0.3 s for 700 MB).
    """
    fd = os.open(path, flags & ~os.O_TRUNC, 0o666)
    try:
        if flags & os.O_TRUNC and os.fstat(fd).st_size:
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def atomic_path(target: Path, suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary path beside `target` to write to; published as `target` when the block succeeds.

    A failed write never leaves half a file behind: on any exception the temporary file is removed.
    What a killed process left beside `target` (its temporary files, which nobody holds any more) is
    removed first (`sweep_stale`); another live process's is left alone.
    """
    sweep_stale(target.parent, f".{target.name}.*{suffix}")
    fd, tmp = claimed_temp(target.parent, prefix=f".{target.name}.", suffix=suffix)
    try:
        yield tmp
        publish(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    finally:
        os.close(fd)


def _hold(fd: int) -> bool:
    """Take the lock that says "a live process writes this file" (kept until `fd` closes, or the
    process ends, however it ends); False when another holds it. Always True without ``fcntl``."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _linked(fd: int, path: str | os.PathLike[str]) -> bool:
    """Whether `path` still names the file open as `fd` (a sweeper did not remove it meanwhile)."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except OSError:
        return False


def claimed_temp(folder: Path, *, prefix: str, suffix: str) -> tuple[int, Path]:
    """A new temporary file in `folder`, held (locked) by this process for as long as the descriptor
    stays open: `sweep_stale` never removes it while this process lives. Close the descriptor when done.
    """
    while True:
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=folder)
        if _hold(fd) and _linked(fd, name):
            return fd, Path(name)
        os.close(fd)  # a sweeper took it between its creation and the lock: make another


_SERIAL = itertools.count()


def claimed_file(folder: Path, *, prefix: str, suffix: str) -> tuple[int, Path]:
    """`claimed_temp` for files written by the thousand (transcripts): a new file in `folder` named by
    this process's id and a counter, created with a normal file's mode, held (locked) by this process
    while the descriptor stays open. It costs two system calls more than a plain ``open`` (the lock,
    and one ``fstat`` that sees a sweeper did not unlink it meanwhile), not ``mkstemp``'s random
    names and a ``chmod`` before it is published.
    """
    while True:
        path = folder / f"{prefix}{os.getpid()}-{next(_SERIAL)}{suffix}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue  # a killed process of the same id (reused) left one of that name
        if _hold(fd) and os.fstat(fd).st_nlink:
            return fd, path
        os.close(fd)  # a sweeper took it between its creation and the lock: make another


def sweep_stale(folder: Path, pattern: str) -> int:
    """Remove the files in `folder` matching `pattern` that no live process holds (`claimed_temp`):
    what a killed process left. Returns how many; none without ``fcntl`` (a lock cannot tell).
    """
    return _sweep(folder, pattern, 0, Path.unlink, "temporary files")


def _sweep(folder: Path, pattern: str, kind: int, remove: Callable[[Path], object], what: str) -> int:
    """Remove what in `folder` matches `pattern`, opens with the `kind` flag (never through a link) and
    no live process holds; `what` names them in the log."""
    if fcntl is None or not folder.is_dir():
        return 0
    removed = 0
    for path in folder.glob(pattern):
        try:
            fd = os.open(path, os.O_RDONLY | kind | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue  # not of that kind (or a link to one), or gone meanwhile
        try:
            if _hold(fd) and _linked(fd, path):
                remove(path)
                removed += 1
        except OSError:
            continue
        finally:
            os.close(fd)
    if removed:
        log.info("removed %d %s a stopped process left in %s", removed, what, folder)
    return removed


def claimed_folder(parent: Path, *, prefix: str) -> tuple[int, Path]:
    """A new private folder in `parent`, held (locked) by this process for as long as the returned
    descriptor stays open: `sweep_stale_folders` never removes it while this process lives. Close the
    descriptor once the folder is removed."""
    while True:
        folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        try:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            continue  # a sweeper took it between its creation and the open: make another
        if _hold(fd) and _linked(fd, folder):
            return fd, folder
        os.close(fd)


def sweep_stale_folders(parent: Path, pattern: str) -> int:
    """Remove the folders in `parent` matching `pattern` that no live process holds (`claimed_folder`):
    what a killed process left. Returns how many; none without ``fcntl`` (a lock cannot tell).
    """
    return _sweep(parent, pattern, getattr(os, "O_DIRECTORY", 0), _remove_tree, "folders")


def _remove_tree(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


ROOM_BYTES = 16 * 2**20
"""Free space a store must have before a pass calls an agent: a batch of the runner's writer and its
transcripts fit in it many times over (a pass that could not record what it paid for would pay again)."""


def check_room(folder: Path, nbytes: int = ROOM_BYTES) -> None:
    """Raise the OSError a write of `nbytes` more into `folder` would meet (a full disk, a quota, a
    file-size limit, a read-only folder); return when it fits.

    The space is reserved and given back at once (``posix_fallocate`` on an unnamed file, so a kill
    leaves nothing behind): it costs no write of data, and no fsync.
    """
    fd, named = _scratch(folder)
    try:
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, nbytes)
        else:  # no fallocate (macOS): write the zeros
            chunk = bytes(2**20)
            for _ in range(0, nbytes, len(chunk)):
                os.write(fd, chunk)
    finally:
        os.close(fd)
        if named is not None:
            with contextlib.suppress(OSError):
                os.unlink(named)


def _scratch(folder: Path) -> tuple[int, str | None]:
    """A file to probe `folder` with: unnamed where the system allows (Linux ``O_TMPFILE``), else a
    hidden one (its name, to remove)."""
    if hasattr(os, "O_TMPFILE"):
        try:
            return os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600), None
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise  # ENOSPC, EROFS, EACCES: that is the answer
    sweep_stale(folder, ".room-*.tmp")
    fd, path = claimed_temp(folder, prefix=".room-", suffix=".tmp")
    return fd, str(path)
