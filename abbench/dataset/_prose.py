"""How much a column's values read as natural language: what tells the input from labels, ids and markup."""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_PROSE_SAMPLE = 500
# Slot annotations written into the text: MASSIVE/ATIS-style "[date : today]", Rasa's "[today](date)",
# inline tags "<date>today</date>" / "<B-date>", and template slots "{{date}}".
_MARKUP = re.compile(
    r"\[[^\[\]\n]{1,80}?\s:\s[^\[\]\n]{1,200}\]"
    r"|\[[^\[\]\n]{1,200}\]\([\w.:-]{1,80}\)"
    r"|</?[A-Za-z][\w.:-]{0,40}(?:\s[^<>\n]{0,200})?>"
    r"|\{\{[^{}\n]{1,80}\}\}"
)


@dataclass(frozen=True)
class ProseScore:
    """How much a column's sampled values read as natural language (what an input is).

    Attributes:
        score: 0..1: the mean over values of their share of letters (any script, CJK included)
            times a length factor (three words or more count fully), less the share of values that
            carry markup or JSON.
        markup: Share of values with slot markup (``[date : today]``, ``<date>``, ``[x](slot)``).
        json: Share of values that are JSON objects or arrays.
        n: Text values looked at.
        mean_length: Their mean length in characters.
    """

    score: float
    markup: float = 0.0
    json: float = 0.0
    n: int = 0
    mean_length: float = 0.0

    def describe(self) -> str:
        """The score in words."""
        parts = [f"prose score {self.score:.2f}"]
        if self.markup:
            parts.append(f"{self.markup:.0%} with markup")
        if self.json:
            parts.append(f"{self.json:.0%} JSON")
        return ", ".join(parts)


def prose_score(values: list[Any]) -> ProseScore:
    """Score sampled values by how much they read as natural language (see `ProseScore`).

    The first 500 values are looked at, each by its first 300 characters: enough to tell prose from
    markup, labels and numbers, at a cost that does not grow with the width of the file's cells.
    """
    texts = [v for v in values if v not in (None, "")][:_PROSE_SAMPLE]
    if not texts:
        return ProseScore(0.0)
    total = 0.0
    markup = structured = 0
    lengths = 0
    for v in texts:
        if isinstance(v, (list, dict)):
            structured += 1
            continue
        if not isinstance(v, str):
            continue
        text = v.strip()
        lengths += len(text)
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]") and _parses(text):
            structured += 1
            continue
        if _MARKUP.search(text):
            markup += 1
            continue
        text = text[:300]
        chars = [ch for ch in text if not ch.isspace()]
        if not chars:
            continue
        letters = sum(1 for ch in chars if unicodedata.category(ch)[0] == "L")
        words = len(text.split()) + len(_CJK.findall(text)) / 2
        total += letters / len(chars) * min(1.0, words / 3)
    n = len(texts)
    score = max(0.0, total / n - (markup + structured) / n)
    return ProseScore(score, markup / n, structured / n, n, lengths / n)


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def is_text(value: Any) -> bool:
    """Whether a cell holds words: a string with a letter in it (any script).

    The same rule for every format: ``1``, ``"1"``, ``"2.5"`` and ``"2024-05-01"`` are not text, whether
    an Excel cell kept the number or a CSV file wrote it out.
    """
    return isinstance(value, str) and any(unicodedata.category(ch)[0] == "L" for ch in value[:300])


def not_text(values: list[Any]) -> str | None:
    """Why a column cannot be the input when most of its filled values are not text, else None."""
    present = [v for v in values if v not in (None, "")]
    if not present:
        return "it is empty"
    odd = [v for v in present if not is_text(v)]
    if len(odd) <= 0.2 * len(present):
        return None
    what = "numbers" if all(_is_number(v) for v in odd) else "not text"
    shown = ", ".join(repr(str(v)) for v in list(dict.fromkeys(map(str, odd)))[:3])
    return f"its values are mostly {what} ({shown} …)"


def _is_number(value: Any) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    try:
        float(str(value).strip().replace(",", ""))
    except ValueError:
        return False
    return True


_OUTRANKED = 0.5
"""A column named like the input yields to one whose prose score is more than twice its own (ids beside sentences)."""


def reads_as_prose(col: str, prose: dict[str, ProseScore], used: set[str]) -> tuple[bool, str]:
    """Whether a column named like the input may be it: a name never beats the values.

    It may not when markup or JSON fills it and another column reads as natural language (the plain
    text beside an annotated one), nor when another column reads more than twice as much as language
    (``sentence_no`` codes or ``text_ref`` tags beside the review sentences).
    """
    mine = prose[col]
    better = [
        c for c, p in prose.items() if c != col and c not in used and p.score >= 0.5 and p.score > mine.score
    ]
    if not better:
        return True, ""
    best = max(better, key=lambda c: prose[c].score)
    if mine.markup + mine.json >= 0.2:
        what = "slot markup such as [date : today]" if mine.markup >= mine.json else "JSON"
        share = mine.markup if mine.markup >= mine.json else mine.json
        return False, f"{share:.0%} of its values hold {what}, and {best!r} reads as plain text"
    if mine.score < _OUTRANKED * prose[best].score:
        return False, (
            f"its values read little as language (prose score {mine.score:.2f}) and {best!r} reads "
            f"much more so ({prose[best].score:.2f})"
        )
    return True, ""


def most_prose(
    columns: tuple[str, ...], values: dict[str, list[Any]], prose: dict[str, ProseScore], used: set[str]
) -> str | None:
    """The unused column that reads most as language (score, then length), among those mostly of text."""
    best, best_key = None, (-1.0, 0.0)
    for col in columns:
        if col in used:
            continue
        texts = [v for v in values[col] if is_text(v)]
        if not texts or len(texts) < 0.5 * len(values[col]):
            continue
        key = (round(prose[col].score, 1), prose[col].mean_length)
        if key > best_key:
            best, best_key = col, key
    return best
