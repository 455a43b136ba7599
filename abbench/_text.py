"""Cutting text for messages: at a word boundary, marked by one "…", and sentences ended once."""

from __future__ import annotations

ELLIPSIS = "…"
"""What marks a cut: one character, never ``...`` or ``..``."""

_ENDS = (".", "!", "?", "…", "。", "！", "？")
_TRIM = " \t\n.,;:…"


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a word boundary, ending in a single "…".

    A text without spaces near the cut (a CJK sentence, a long identifier) is cut at the limit.
    Punctuation and dots before the cut are dropped, so the result never ends in ``..…`` or ``,…``.
    """
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2 and not text[limit - 1].isspace():
        cut = cut[:space]
    return (cut.rstrip(_TRIM) or cut) + ELLIPSIS


def clip_start(text: str, limit: int) -> str:
    """The end of `text` in at most `limit` characters, starting at a word or line boundary with a
    single "…" (for the last lines of a log, where errors are)."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    start = len(text) - (limit - 1)
    cut = text[start:]
    if not text[start - 1].isspace():
        boundary = min((i for i in (cut.find("\n"), cut.find(" ")) if i >= 0), default=-1)
        if 0 <= boundary < len(cut) // 2:
            cut = cut[boundary + 1 :]
    return ELLIPSIS + cut.lstrip(" \t")


def sentence(text: str) -> str:
    """`text` ending with one full stop: a message that already ends a sentence gets no second one."""
    text = text.rstrip()
    return text if not text or text.endswith(_ENDS) else text + "."
