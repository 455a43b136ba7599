"""A case's earlier turns as every view shows them (`CaseView.turns`, `CaseView.history_excerpt`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from abbench._text import clip


def earlier_turns(case: Any) -> tuple[dict[str, str], ...]:
    """The conversation before the case's input, oldest first, as the agent was given it: one ``{"role",
    "content"}`` per turn, the role ``user`` or ``assistant`` (`abbench.agents.history_turns` reads every
    form a dataset holds); () for a single-turn case. Every view shows these with the input: the verdict
    on "the third one" rests on them."""
    from abbench.agents import history_turns  # loaded only by a case that has a history

    history = case.history
    return tuple(history_turns(history)) if history not in (None, "", []) else ()


@dataclass(frozen=True, slots=True)
class TurnExcerpt:
    """One earlier turn as a view shows it.

    Attributes:
        role: ``user`` or ``assistant``.
        text: Its content, cut at a word boundary and ending in "…" when `left_out` > 0 (raw text: a view
            escapes it for its medium).
        left_out: Characters of the content not in `text` (0: whole).
    """

    role: str
    text: str
    left_out: int = 0


@dataclass(frozen=True, slots=True)
class HistoryExcerpt:
    """The latest earlier turns of a case, each cut to a length, with what was left out counted.

    Attributes:
        total: Earlier turns the case has.
        turns: Those shown, oldest first.
    """

    total: int
    turns: tuple[TurnExcerpt, ...]

    @property
    def hidden(self) -> int:
        """Earlier turns not shown (older than those shown)."""
        return self.total - len(self.turns)

    @property
    def cut(self) -> bool:
        """Whether a turn shown was cut."""
        return any(t.left_out for t in self.turns)


def history_excerpt(case: Any, latest: int | None = None, chars: int | None = None) -> HistoryExcerpt:
    """The case's last `latest` earlier turns, each cut at `chars` characters, with what was left out
    counted (None: every turn, whole; `CaseView.history_excerpt`): how a view bounds a history of any
    length."""
    turns = case.turns
    shown = turns if latest is None else turns[len(turns) - latest :] if latest > 0 else ()
    excerpts = []
    for t in shown:
        text = t["content"]
        if chars is not None and len(text) > chars:
            kept = clip(text, chars)[:-1]  # without its "…"
            excerpts.append(TurnExcerpt(t["role"], f"{kept}…", len(text) - len(kept)))
        else:
            excerpts.append(TurnExcerpt(t["role"], text))
    return HistoryExcerpt(len(turns), tuple(excerpts))
