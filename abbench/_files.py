"""Writing files others read: beside the target first, then renamed into place with a normal file's mode."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


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
    """
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        publish(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
