"""Reading a skill folder safely: the ignore list, the size limits, symlink checks and the content hash.

The content hash is the identity of a snapshot. It is the sha256 of::

    b"abbench-snapshot-v1\\0"
    then, for every file in order of its relative path's UTF-8 bytes:
        len(path) as 8-byte big-endian unsigned, path (UTF-8, forward slashes),
        len(data) as 8-byte big-endian unsigned, data (the file's bytes)

Length prefixes make the encoding unambiguous (no path or content can imitate a boundary), and the
version prefix lets a future encoding never collide with this one. File modes, timestamps and
ignored files are not part of the identity.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from abbench.errors import SnapshotError
from abbench.snapshot._model import SnapshotFile

log = logging.getLogger(__name__)

HASH_PREFIX = b"abbench-snapshot-v1\0"
"""Opens every content hash; bump the version if the encoding ever changes."""

DEFAULT_MAX_FILE_BYTES = 5 * 1024 * 1024
"""Largest file a snapshot accepts (5 MB): skills are text an agent reads, not data stores."""

DEFAULT_MAX_TOTAL_BYTES = 50 * 1024 * 1024
"""Largest total a snapshot accepts (50 MB)."""

DEFAULT_MAX_FILES = 5000
"""Most files a snapshot accepts; more usually means the wrong folder was given."""

IGNORED_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".ipynb_checkpoints",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".abbench",
        ".DS_Store",
        "Thumbs.db",
        "desktop.ini",
    }
)
"""File and folder names never copied into a snapshot: version-control data, caches, OS litter."""

IGNORED_PATTERNS = ("*.pyc", "*.pyo", "._*", "*.swp", "*~", ".#*")
"""Name patterns never copied: compiled Python, macOS resource forks, editor swap and backup files."""


def is_ignored(name: str) -> bool:
    """Whether a file or folder with this name is left out of snapshots (see `IGNORED_NAMES`)."""
    return name in IGNORED_NAMES or any(fnmatch.fnmatchcase(name, p) for p in IGNORED_PATTERNS)


def is_ignored_path(path: str) -> bool:
    """Whether any part of a relative path (forward slashes) is ignored."""
    return any(is_ignored(part) for part in path.split("/") if part)


def content_hash(files: Iterable[tuple[str, bytes]]) -> str:
    """The snapshot hash of (relative path, bytes) pairs (see the module docstring for the encoding)."""
    h = hashlib.sha256(HASH_PREFIX)
    for path, data in sorted(((p.encode("utf-8"), d) for p, d in files), key=lambda x: x[0]):
        h.update(len(path).to_bytes(8, "big"))
        h.update(path)
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def is_binary(data: bytes) -> bool:
    """Whether bytes are binary for indexing purposes: a NUL byte, or not valid UTF-8."""
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def human_size(n: int) -> str:
    """Bytes in words: ``512 B``, ``13.3 KB``, ``5 MB``."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            text = f"{value:.1f}".rstrip("0").rstrip(".") if unit != "B" else str(int(value))
            return f"{text} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


@dataclass(frozen=True)
class Limits:
    """How much a snapshot may hold; raise them for a skill that legitimately carries more.

    Attributes:
        max_file_bytes: Largest single file.
        max_total_bytes: Largest total over every file.
        max_files: Most files.
    """

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES
    max_files: int = DEFAULT_MAX_FILES

    def __post_init__(self) -> None:
        for name in ("max_file_bytes", "max_total_bytes", "max_files"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise SnapshotError(f"{name} must be a positive whole number, not {value!r}")


@dataclass(frozen=True, slots=True)
class Entry:
    """One file read from a skill folder: its relative path, bytes, and whether it is executable."""

    path: str
    data: bytes
    executable: bool = False


@dataclass(frozen=True)
class FolderContent:
    """Everything read from a skill folder, checked against the limits.

    Attributes:
        entries: The files, sorted by path.
        hash: Their content hash.
        nested_git: Sub-folders that are git repositories of their own (submodules, nested clones).
    """

    entries: tuple[Entry, ...]
    hash: str
    nested_git: tuple[str, ...] = ()

    @property
    def paths(self) -> frozenset[str]:
        """The relative paths of every file."""
        return frozenset(e.path for e in self.entries)

    @cached_property
    def files(self) -> tuple[SnapshotFile, ...]:
        """The `SnapshotFile` of every entry, sorted by path."""
        return tuple(
            SnapshotFile(e.path, hashlib.sha256(e.data).hexdigest(), len(e.data), is_binary(e.data))
            for e in self.entries
        )

    def write_to(self, dest: Path) -> None:
        """Write every file under `dest` (created; must not hold other files), keeping the executable bit."""
        dest.mkdir(parents=True, exist_ok=True)
        for entry in self.entries:
            _write_file(dest, entry)


def _write_file(dest: Path, entry: Entry) -> None:
    target = dest.joinpath(*entry.path.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(entry.data)
    if entry.executable:
        target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _problem_list(problems: list[str], limit: int = 20) -> str:
    shown = "\n  ".join(problems[:limit])
    more = f"\n  ... and {len(problems) - limit} more" if len(problems) > limit else ""
    return f"\n  {shown}{more}"


class _Walker:
    """Walks one skill folder, collecting files and every problem (reported together at the end)."""

    def __init__(self, root: Path, limits: Limits, exclude: Path | None, shown_root: str):
        self.root = root
        self.limits = limits
        self.exclude = exclude
        self.shown_root = shown_root
        self.entries: list[Entry] = []
        self.problems: list[str] = []
        self.oversize: list[str] = []
        self.nested_git: list[str] = []
        self.total = 0
        self.count = 0

    def walk(self, folder: Path, rel: str, chain: frozenset[Path]) -> None:
        try:
            children = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            self.problems.append(f"{rel or '.'}/: cannot list the folder ({exc.strerror or exc})")
            return
        for child in children:
            name = child.name
            path = f"{rel}/{name}" if rel else name
            if is_ignored(name):
                if name == ".git" and rel:
                    self.nested_git.append(rel)
                continue
            try:
                path.encode("utf-8")
            except UnicodeEncodeError:
                shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                self.problems.append(f"{shown}: the file name is not valid UTF-8; rename it")
                continue
            real = Path(os.path.realpath(child.path))
            if self.exclude is not None and (real == self.exclude or real.is_relative_to(self.exclude)):
                continue
            if child.is_symlink():
                target = os.readlink(child.path)
                if not real.is_relative_to(self.root):
                    self.problems.append(
                        f"{path}: symlink to {target} leaves the skill folder; copy the file into the "
                        f"folder or remove the link"
                    )
                    continue
                if not real.exists():
                    self.problems.append(f"{path}: broken symlink (to {target}); fix or remove it")
                    continue
                inside = real.relative_to(self.root).as_posix()
                if is_ignored_path(inside):
                    self.problems.append(
                        f"{path}: symlink to {target} points into an ignored location ({inside}); "
                        f"copy the file into the folder instead"
                    )
                    continue
            try:
                st = real.stat()
            except OSError as exc:
                self.problems.append(f"{path}: cannot read it ({exc.strerror or exc})")
                continue
            if stat.S_ISDIR(st.st_mode):
                if real in chain:
                    self.problems.append(f"{path}: symlink loop (points back at {real}); remove the link")
                    continue
                self.walk(real if child.is_symlink() else Path(child.path), path, chain | {real})
            elif stat.S_ISREG(st.st_mode):
                self.add_file(Path(child.path), path, st)
            else:
                self.problems.append(f"{path}: not a regular file (a device, socket or pipe); remove it")

    def add_file(self, file: Path, path: str, st: os.stat_result) -> None:
        self.count += 1
        if self.count > self.limits.max_files:
            raise SnapshotError(
                f"{self.shown_root} holds more than {self.limits.max_files} files; is it really the skill "
                f"folder (the one with SKILL.md)? If it is, raise the limit (max_files=)"
            )
        size = st.st_size
        if size > self.limits.max_file_bytes:
            self.oversize.append(
                f"{path}: {human_size(size)}, over the {human_size(self.limits.max_file_bytes)} per-file "
                f"limit; remove it or raise the limit (max_file_bytes=, CLI --max-file-size)"
            )
        self.total += size
        if self.oversize or self.total > self.limits.max_total_bytes:
            return  # keep walking to report every problem, but stop reading bytes
        try:
            data = file.read_bytes()
        except OSError as exc:
            self.problems.append(f"{path}: cannot read it ({exc.strerror or exc})")
            return
        self.entries.append(Entry(path, data, bool(st.st_mode & stat.S_IXUSR)))


def read_folder(
    folder: str | os.PathLike[str],
    limits: Limits | None = None,
    *,
    exclude: str | os.PathLike[str] | None = None,
    shown_as: str | None = None,
) -> FolderContent:
    """Read every file of a skill folder, refusing what a snapshot must not hold.

    Ignored names (`IGNORED_NAMES`, `IGNORED_PATTERNS`) are skipped. A symlink is followed when it
    stays inside the folder (the snapshot holds the target's bytes under the link's path).

    Args:
        folder: The skill folder.
        limits: Size limits (defaults: 5 MB per file, 50 MB in total, 5,000 files).
        exclude: A folder never read (the store, when it sits inside the skill folder).
        shown_as: How to name the folder in messages (default: its path).

    Raises:
        SnapshotError: the folder is missing or empty, or holds symlinks that leave it, broken links,
            special files, undecodable names, or files over the limits (every problem is listed).
    """
    limits = limits or Limits()
    path = Path(folder).expanduser()
    shown = shown_as or str(folder)
    if not path.exists():
        raise SnapshotError(f"no folder at {shown}; give the path of a skill folder (the one with SKILL.md)")
    if not path.is_dir():
        hint = f" (its folder is {path.parent})" if path.name.lower() == "skill.md" else ""
        raise SnapshotError(f"{shown} is a file, not a folder; give the skill folder{hint}")
    root = path.resolve()
    walker = _Walker(root, limits, Path(exclude).resolve() if exclude else None, shown)
    walker.walk(root, "", frozenset({root}))
    problems = walker.problems + walker.oversize
    if walker.total > limits.max_total_bytes:
        problems.append(
            f"the files add up to {human_size(walker.total)}, over the {human_size(limits.max_total_bytes)} "
            f"total limit; remove large files or raise the limit (max_total_bytes=, CLI --max-total-size)"
        )
    if problems:
        raise SnapshotError(f"cannot snapshot {shown}:{_problem_list(problems)}")
    if not walker.entries:
        raise SnapshotError(
            f"{shown} holds no files to snapshot (ignored: {', '.join(sorted(IGNORED_NAMES))}, "
            f"{', '.join(IGNORED_PATTERNS)})"
        )
    entries = tuple(sorted(walker.entries, key=lambda e: e.path.encode("utf-8")))
    digest = content_hash((e.path, e.data) for e in entries)
    log.debug("read %d files (%s) from %s: %s", len(entries), human_size(walker.total), shown, digest)
    return FolderContent(entries, digest, tuple(walker.nested_git))
