"""The double-blind workflow's own judge reply formats, read for the pairwise judge.

The workflow abbench's pairwise judge was built from asks its judge for a winner in brackets
(``[WINNER]plan1[/WINNER]``, ``[WINNER]2[/WINNER]``, ``[WINNER]平局[/WINNER]``), a winner line
(``胜者：方案2``, ``winner: plan2``) and scores per plan and dimension (``plan1-准确性: 9/10``). Judges
also answer in plain prose ("plan2 更好"): that is read only when nothing else names a winner, and the
grade says so (method ``free_text``).

Every pattern here is fixed, anchored or bounded (no nested repeats), and only the first
`MAX_SCAN_CHARS` characters of a reply are scanned, so no reply can make reading slow.
"""

from __future__ import annotations

import re
import unicodedata

MAX_SCAN_CHARS = 100_000
"""The characters of a reply the workflow readers scan (a judge's reply is a few hundred)."""

_SLOT_WORDS = r"plan|方案|response|answer|回答|答案|回复|选项|candidate|候选|option"
_WINNER_TAG = re.compile(
    r"\[(winner|胜者|获胜者|获胜方|result|结果)\][ \t]*([^\[\]\n]{1,40}?)[ \t]*\[/(?:winner|胜者|获胜者|获胜方|result|结果)\]",
    re.I,
)
# ``plan1-准确性: 9/10``, ``方案2 完整性：8``, ``- **Plan 1 - accuracy**: 7/10``
_PLAN_SCORE = re.compile(
    r"[ \t>*#\-•]{0,8}(?:" + _SLOT_WORDS + r")[ \t]{0,3}([12一二])[ \t]{0,3}[\-_:：.·/ \t(（][ \t]{0,3}"
    r"([^:：=\n*()（）]{1,40}?)[ \t)）*]{0,6}[:：=][ \t]{0,3}([^\n]{1,40})",
    re.I,
)
# "plan2 更好", "方案一更优", "Response 2 is better", "answer 1 wins"
_SLOT_BETTER = re.compile(
    r"(?:" + _SLOT_WORDS + r")[ \t]{0,3}([12一二])[ \t]{0,3}"
    r"(?:更好|更优|更佳|较好|较优|胜出|获胜|胜|is[ \t]+better|is[ \t]+the[ \t]+(?:better|winner)|wins)",
    re.I,
)
# "更好的是方案2", "胜者是 plan 1", "I prefer response 2"
_BETTER_SLOT = re.compile(
    r"(?:更好的是|更优的是|胜者是|获胜的是|我选择|i[ \t]+prefer|the[ \t]+winner[ \t]+is)[ \t]{0,3}(?:"
    + _SLOT_WORDS
    + r")[ \t]{0,3}([12一二])",
    re.I,
)
_FREE_TIE = ("平局", "不分上下", "难分高下", "打平", "it's a tie", "it is a tie")
_DIGIT = {"1": 1, "2": 2, "一": 1, "二": 2}


def _scanned(text: str) -> str:
    return unicodedata.normalize("NFKC", text[:MAX_SCAN_CHARS])


def winner_tag(text: str) -> str | None:
    """What a ``[WINNER]…[/WINNER]`` tag says (the last one written), or None."""
    found = _WINNER_TAG.findall(_scanned(text))
    return found[-1][1].strip() if found else None


def plan_scores(text: str) -> dict[int, dict[str, str]]:
    """Scores written one a line per plan and dimension: slot (1, 2) -> dimension -> the text after it."""
    out: dict[int, dict[str, str]] = {}
    for line in _scanned(text).splitlines():
        m = _PLAN_SCORE.match(line)
        if m:
            out.setdefault(_DIGIT[m.group(1)], {}).setdefault(m.group(2).strip(), m.group(3).strip())
    return out


def free_text_winner(text: str) -> str | None:
    """The winner a prose reply names ("plan2 更好"): ``"1"``, ``"2"``, ``"tie"``, or None when it names
    none — or both (a reply that calls each plan better is not read)."""
    body = _scanned(text)
    slots = {_DIGIT[m] for m in _SLOT_BETTER.findall(body)} | {_DIGIT[m] for m in _BETTER_SLOT.findall(body)}
    if len(slots) == 1:
        return str(slots.pop())
    if slots:
        return None
    folded = body.casefold()
    return "tie" if any(word in folded for word in _FREE_TIE) else None
