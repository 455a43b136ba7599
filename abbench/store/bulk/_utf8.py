"""Text SQLite hands over as bytes, checked for UTF-8 before an export writes it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from abbench.errors import StoreError


def check_utf8(text: bytes, parts: Sequence[bytes], where: Callable[[int], str]) -> None:
    """Refuse `text` (the `parts` joined) when it is not UTF-8, naming the first bad part by `where`.

    SQLite keeps text as it was given, so only another tool can store bytes that are not UTF-8;
    written as they are they would make a file a reader refuses. The whole text is checked once (an
    ASCII text at once); the parts only when it fails.

    Raises:
        StoreError: ``"<where(i)> holds text that is not UTF-8 (<reason>)"`` and what to do.
    """
    if text.isascii():
        return
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = next((i for i, part in enumerate(parts) if not _is_utf8(part)), 0)
        raise StoreError(
            f"{where(bad)} holds text that is not UTF-8 ({exc.reason}): another tool wrote it into the "
            "store; correct that run's text, then export again"
        ) from None


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
