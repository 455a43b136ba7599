"""Cutting text for messages: at a word boundary, marked by one "…", and sentences ended once."""

from __future__ import annotations

import unicodedata

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


def cells(text: str) -> int:
    """Terminal columns `text` takes: CJK wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def fit(text: object, width: int, *, pad: bool = True, align: str = "<") -> str:
    """`text` on one line in at most `width` terminal columns (as `clip`: at a word boundary, one "…"),
    padded to `width` unless `pad` is False, so tables with Chinese cells line up."""
    one = " ".join(str("" if text is None else text).split())
    if cells(one) > width:
        cut = one
        while cells(cut) > width - 1:
            cut = cut[:-1]
        space = cut.rfind(" ")
        if space >= len(cut) // 2 and not one[len(cut)].isspace():
            cut = cut[:space]
        one = (cut.rstrip(_TRIM) or cut) + ELLIPSIS
    if not pad:
        return one
    fill = " " * max(0, width - cells(one))
    return one + fill if align == "<" else fill + one


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


_CONTROL_NAMES = {"\n": "a line break (\\n)", "\r": "a carriage return (\\r)", "\t": "a tab (\\t)"}


def control_character(text: str) -> str | None:
    """The first control character in `text` and where (``a line break (\\n) at character 6``), or None.

    A name holding one would forge a line, or move the cursor, in every list that prints it.
    """
    for i, ch in enumerate(text):
        if unicodedata.category(ch) == "Cc" or ch in "\u2028\u2029\u0085":
            name = _CONTROL_NAMES.get(ch, f"the control character U+{ord(ch):04X}")
            return f"{name} at character {i + 1}"
    return None
