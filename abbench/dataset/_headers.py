"""Header rows of tables: a cell as a name, and a second header row under the first (merged cells)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any


def cell_text(cell: Any) -> str:
    if cell is None:
        return ""
    if isinstance(cell, float) and cell.is_integer():
        return str(int(cell))
    return str(cell)


_NUMBERISH = re.compile(r"[\s\d.,:%+\-/]*")


def second_header(
    header: Sequence[Any], row: Sequence[Any], below: Sequence[Sequence[Any]], merged: set[int]
) -> bool:
    """Whether `row`, the first below the header, is a second header row rather than a case.

    Two header rows over merged cells (``Annotation`` across two columns, ``intent`` and ``domain``
    under it) read as a case otherwise. It takes every filled cell being a short name (text, at most
    four words, not a number), none of them occurring again in its column below, and at least one of
    them under a blank header cell or a cell merged across columns (`merged`: 0-based columns).
    """
    if len(below) < 2:
        return False
    filled = [(i, c) for i, c in enumerate(row) if cell_text(c).strip()]
    if len(filled) < 2:
        return False
    under_gap = False
    for i, cell in filled:
        if not isinstance(cell, str):
            return False
        text = cell.strip()
        if len(text) > 40 or len(text.split()) > 4 or "\n" in text or _NUMBERISH.fullmatch(text):
            return False
        if any(i < len(r) and cell_text(r[i]).strip() == text for r in below):
            return False
        if i >= len(header) or not cell_text(header[i]).strip() or i in merged:
            under_gap = True
    return under_gap


def two_row_names(top: Sequence[Any], sub: Sequence[Any], width: int, merged: set[int]) -> list[str]:
    """Column names from two header rows: the lower name, else the upper one (or the merged cell's)."""
    group = ""
    pairs: list[tuple[str, str]] = []
    for i in range(width):
        t = cell_text(top[i]).strip() if i < len(top) else ""
        b = cell_text(sub[i]).strip() if i < len(sub) else ""
        if t:
            group = t
        elif i not in merged:
            group = ""
        pairs.append((group, b))
    lower = [b for _, b in pairs if b]
    return [(f"{g} {b}" if g and lower.count(b) > 1 else b) if b else g for g, b in pairs]


def two_row_note(number: int, names: Sequence[str], *, merged: bool) -> str:
    why = "cells merged across columns" if merged else "names under its blank cells"
    return (
        f"row {number + 1} looks like a second header ({why} in row {number}): rows {number}–{number + 1} are "
        f"read as the header, columns {', '.join(map(repr, names))}; give --header-row {number + 1} to take "
        f"row {number + 1} alone, or --header-row {number} to read row {number + 1} as a case"
    )
