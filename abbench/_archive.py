"""Zip archives from outside (a skill uploaded to the server, an Excel workbook): how far a member may
expand, checked from the archive's directory before the member is read, and again while it is read."""

from __future__ import annotations

from typing import IO

MAX_RATIO = 200
"""A member expanding more than this many times its compressed size is taken for a zip bomb. Text and
XML compress 5–20 times; a sheet repeating one row, 50–100 times; a bomb, thousands of times."""
SMALL_MEMBER = 1 << 16
"""Members expanding to less than this are never bombs, however well they compress."""
_CHUNK = 1 << 20


class ArchiveRefused(Exception):
    """Raised when an archive member is refused; each view words it (`member` and `why`)."""

    def __init__(self, member: str, why: str):
        super().__init__(f"{member}: {why}")
        self.member = member
        self.why = why


def check_ratio(member: str, size: int, compressed: int) -> None:
    """Refuse a member whose directory says it expands more than `MAX_RATIO` times.

    Raises:
        ArchiveRefused: ``expands 5,000 times (a zip bomb?)``.
    """
    if size > SMALL_MEMBER and size > MAX_RATIO * max(compressed, 1):
        raise ArchiveRefused(member, f"expands {size // max(compressed, 1):,} times (a zip bomb?)")


def read_limited(src: IO[bytes], member: str, limit: int, out: IO[bytes] | None = None) -> bytes:
    """Read `src` (an open member) in chunks, refusing it past `limit` bytes — what its header said:
    a crafted archive may say less than it holds. Writes to `out` when given (returns b"" then).

    Raises:
        ArchiveRefused: ``holds more bytes than its header says (a zip bomb?)``.
    """
    seen = 0
    parts: list[bytes] = []
    while chunk := src.read(_CHUNK):
        seen += len(chunk)
        if seen > limit:
            raise ArchiveRefused(member, "holds more bytes than its header says (a zip bomb?)")
        if out is not None:
            out.write(chunk)
        else:
            parts.append(chunk)
    return b"".join(parts)
