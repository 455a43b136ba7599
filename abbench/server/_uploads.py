"""Request bodies: a size limit on every request, uploads written to disk, skill archives unpacked safely.

An archive is refused, with the member named, when a path is absolute or climbs out (``..``), when
a member is a link or a device, when it holds more files or bytes than a snapshot may (the limits of
`abbench.snapshot`), or when a member expands far beyond its compressed size (a zip bomb). Nothing is
written outside the folder it is unpacked into, and the folder is removed when the request ends.
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import threading
import zipfile
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path, PurePosixPath
from typing import Any

from abbench._archive import MAX_RATIO, ArchiveRefused, check_ratio, read_limited
from abbench._files import claimed_folder, sweep_stale_folders
from abbench.server._problems import Problem, problem_response
from abbench.snapshot import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES, DEFAULT_MAX_TOTAL_BYTES

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_CHUNK = 1 << 20


class _TooLarge(Exception):
    pass


_LARGE = re.compile(r"^/api/(datasets|skill-snapshots|experiments/[^/]+/runs)/?$")
"""The routes whose bodies may be as large as `BodyLimit.limit`: uploads, and outcomes (read in a
process of their own). Every other body is a document (a definition, a gate, a review ...)."""


def is_large(scope: Scope) -> bool:
    """Whether the request is an upload or outcomes (`_LARGE`), whose bodies are read elsewhere."""
    return scope.get("method") == "POST" and _LARGE.match(scope.get("path", "")) is not None


class BodyLimit:
    """ASGI middleware: a request body over its route's limit answers 413, read or not yet read.

    Uploads and outcomes may be `limit` bytes; every other body (a definition, a gate, a comparison,
    a review, a try) `document_limit`: what the server parses itself stays small enough to parse at
    once. The body is counted as it arrives, before any route reads it, whether it declares its
    length or not.
    """

    def __init__(self, app: ASGIApp, limit: int, document_limit: int | None = None):
        self.app = app
        self.limit = limit
        self.document_limit = document_limit if document_limit is not None else limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit if is_large(scope) else self.document_limit
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, limit)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send, limit)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        what, option = (
            ("an upload", "--max-request-mb") if limit == self.limit else ("a document", "--max-document-mb")
        )
        response = problem_response(
            413,
            "request too large",
            f"the request body is over this server's limit of {limit:,} bytes for {what}; send less "
            f"(outcomes in several requests, a smaller file), or ask whoever runs the server to raise "
            f"{option}",
            scope.get("path", ""),
            limit=limit,
        )
        await response(scope, receive, send)


_SAFE_NAME = re.compile(r"[^\w.@+-]+")


def safe_filename(name: str | None, default: str = "upload") -> str:
    """A file name from a client that cannot leave its folder: the last part, odd characters replaced."""
    base = PurePosixPath((name or "").replace("\\", "/")).name
    base = _SAFE_NAME.sub("_", base).lstrip(".")
    return base[:120] or default


def save_upload(upload: Any, folder: Path, name: str) -> Path:
    """Copy an uploaded file (read in chunks) into `folder` under `name`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with open(path, "wb") as out:
        while chunk := upload.file.read(_CHUNK):
            out.write(chunk)
    return path


_HELD: dict[Path, int] = {}
"""Each live request's folder -> the descriptor whose lock says a live server uses it."""
_HELD_LOCK = threading.Lock()


def temp_folder(spool: Path) -> Path:
    """A fresh private folder under `spool` for one request's files, held by this process (a lock)
    until `remove`: a server starting on the same spool never takes it (`sweep_spool`)."""
    spool.mkdir(parents=True, exist_ok=True)
    fd, folder = claimed_folder(spool, prefix="req-")
    with _HELD_LOCK:
        _HELD[folder] = fd
    return folder


def sweep_spool(spool: Path) -> int:
    """Remove the request folders a killed server left in `spool` (never a live server's); how many."""
    return sweep_stale_folders(spool, "req-*")


def _bad(member: str, why: str) -> Problem:
    return Problem(
        422,
        "archive refused",
        f"the archive member {member!r} {why}; send a .tar.gz or .zip of the skill folder alone "
        "(e.g. tar czf skill.tgz -C SKILL_FOLDER .)",
    )


def _member_path(name: str, root: Path) -> Path:
    parts = PurePosixPath(name.replace("\\", "/"))
    if parts.is_absolute() or ".." in parts.parts or re.match(r"^[A-Za-z]:", name):
        raise _bad(name, "has an absolute path or climbs out of the folder (..)")
    target = (root / parts).resolve()
    if not target.is_relative_to(root.resolve()):
        raise _bad(name, "would be written outside the folder")
    return target


class _Budget:
    def __init__(self) -> None:
        self.files = 0
        self.total = 0

    def add(self, name: str, size: int, compressed: int | None = None) -> None:
        self.files += 1
        self.total += size
        if self.files > DEFAULT_MAX_FILES:
            raise _bad(name, f"is past the {DEFAULT_MAX_FILES:,} files a snapshot may hold")
        if size > DEFAULT_MAX_FILE_BYTES:
            raise _bad(name, f"is {size:,} bytes, over the {DEFAULT_MAX_FILE_BYTES:,} a skill file may be")
        if self.total > DEFAULT_MAX_TOTAL_BYTES:
            raise _bad(
                name, f"takes the content past the {DEFAULT_MAX_TOTAL_BYTES:,} bytes a snapshot may hold"
            )
        if compressed is not None:
            try:
                check_ratio(name, size, compressed)
            except ArchiveRefused as exc:
                raise _bad(exc.member, exc.why) from None


def _copy_limited(src: Any, dst: Path, name: str, limit: int) -> None:
    with open(dst, "wb") as out:
        try:
            read_limited(src, name, limit, out)
        except ArchiveRefused as exc:
            raise _bad(exc.member, exc.why) from None


def _unzip(path: Path, root: Path) -> None:
    budget = _Budget()
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            target = _member_path(info.filename, root)
            mode = (info.external_attr >> 16) & 0o170000
            if mode and mode not in (0o100000, 0o040000):
                raise _bad(info.filename, "is a link or a special file, not a plain file or folder")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            budget.add(info.filename, info.file_size, info.compress_size)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src:
                _copy_limited(src, target, info.filename, info.file_size)


def _untar(path: Path, root: Path) -> None:
    budget = _Budget()
    compressed = path.stat().st_size
    with tarfile.open(path, "r:*") as tf:
        for member in tf:
            target = _member_path(member.name, root)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            if not member.isfile():
                raise _bad(member.name, "is a link or a special file, not a plain file or folder")
            budget.add(member.name, member.size)
            if budget.total > 1 << 20 and budget.total > MAX_RATIO * compressed:
                raise _bad(member.name, f"takes the archive past {MAX_RATIO} times its size (a tar bomb?)")
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tf.extractfile(member)
            if src is None:
                raise _bad(member.name, "cannot be read")
            with src:
                _copy_limited(src, target, member.name, member.size)


def unpack_skill(archive: Path, root: Path) -> Path:
    """Unpack a skill archive (zip, tar, tar.gz/bz2/xz) into `root`; returns the skill folder in it.

    An archive of one folder gives that folder. Raises a 422 `Problem` naming the member refused.
    """
    root.mkdir(parents=True, exist_ok=True)
    try:
        if zipfile.is_zipfile(archive):
            _unzip(archive, root)
        elif tarfile.is_tarfile(archive):
            _untar(archive, root)
        else:
            raise Problem(
                422,
                "archive refused",
                "the upload is neither a zip nor a tar archive; send skill.zip or skill.tgz",
            )
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        raise Problem(
            422, "archive refused", f"the archive cannot be read ({exc}); send it again, whole"
        ) from exc
    entries = [p for p in root.iterdir() if p.name not in ("__MACOSX",)]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return root


def remove(path: Path) -> None:
    """Remove a request's folder (quietly: it may already be gone), then let go of its lock."""
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        os.remove(path)
    with _HELD_LOCK:
        fd = _HELD.pop(path, None)
    if fd is not None:
        os.close(fd)
