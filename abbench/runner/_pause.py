"""Why the runner paused an experiment by itself (a budget reached), with the figures every view shows.

Apart from the budget that decides it: the progress every view reads carries it too, and neither
should have to import the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from abbench import _actions as do
from abbench.errors import Action
from abbench.formatting import money_trimmed as money
from abbench.runner._reason import StoredReason

BUDGET_REACHED = "budget reached"
"""The reason an experiment paused by its budget carries."""


@dataclass(frozen=True)
class PauseReason(StoredReason):
    """Why the runner paused an experiment by itself, with the figures every view shows.

    Attributes:
        reason: ``budget reached``.
        arm: The arm whose own budget was reached; None for the experiment's budget.
        spent: Money spent by the budget's scope (known costs only); None when no cost is known.
        max_cost: Its cost limit.
        tokens: Tokens spent by the scope; None when none were reported.
        max_tokens: Its token limit.
        runs_done: Runs of the scope that were executed (or tried and failed).
        runs_total: Runs of the scope.
        unknown_cost: Attempts of the scope whose cost is unknown (not in `spent`).
        by: Which limit stopped it: ``cost`` or ``tokens``.
    """

    reason: str
    arm: str | None
    spent: float | None
    max_cost: float | None
    tokens: int | None
    max_tokens: int | None
    runs_done: int
    runs_total: int
    unknown_cost: int = 0
    by: str = "cost"

    @property
    def text(self) -> str:
        """``budget reached — $5.02 of $5.00 spent, 1,204 of 2,000 runs`` (an arm's budget names the arm)."""
        figures = []
        if self.max_cost is not None:
            figures.append(f"{money(self.spent)} of {money(self.max_cost)} spent")
        if self.max_tokens is not None:
            figures.append(f"{_count(self.tokens)} of {self.max_tokens:,} tokens")
        figures.append(f"{self.runs_done:,} of {self.runs_total:,} runs")
        if self.unknown_cost:
            figures.append(f"{self.unknown_cost:,} attempts of unknown cost not counted")
        what = self.reason if self.arm is None else f"{self.reason} for arm {self.arm}"
        return f"{what} — {', '.join(figures)}"

    def hint(self, handle: str) -> Action:
        """What raises the limit that was reached and goes on (each view words it)."""
        if self.by == "tokens":
            tokens = _suggest(self.max_tokens)
            return do.resume_with_tokens(handle, None if tokens is None else int(tokens), arm=self.arm)
        return do.resume_experiment(handle, arm=self.arm, budget=_suggest(self.max_cost) or 0)


def _count(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _suggest(limit: float | None) -> float | None:
    return None if limit is None else limit * 2
