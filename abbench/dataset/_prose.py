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


def reads_as_prose(col: str, prose: dict[str, ProseScore], used: set[str]) -> tuple[bool, str]:
    """Whether a column named like the input may be it: not when markup or JSON fills it and another
    column reads as natural language (the plain text beside an annotated one)."""
    mine = prose[col]
    if mine.markup + mine.json < 0.2:
        return True, ""
    better = [
        c for c, p in prose.items() if c != col and c not in used and p.score >= 0.5 and p.score > mine.score
    ]
    if not better:
        return True, ""
    what = "slot markup such as [date : today]" if mine.markup >= mine.json else "JSON"
    share = mine.markup if mine.markup >= mine.json else mine.json
    return False, f"{share:.0%} of its values hold {what}, and {better[0]!r} reads as plain text"


def most_prose(
    columns: tuple[str, ...], values: dict[str, list[Any]], prose: dict[str, ProseScore], used: set[str]
) -> str | None:
    best, best_key = None, (-1.0, 0.0)
    for col in columns:
        if col in used:
            continue
        texts = [v for v in values[col] if isinstance(v, str) and v.strip()]
        if not texts or len(texts) < 0.5 * len(values[col]):
            continue
        key = (round(prose[col].score, 1), prose[col].mean_length)
        if key > best_key:
            best, best_key = col, key
    return best
