"""The vote-based decision: per-case wins, ties and losses, an exact sign test and a net-win margin."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from abbench.compare._verdict import Outcome
from abbench.errors import UsageError
from abbench.metrics import Result

VOTE_MARGIN = 0.2
"""The net-win share the vote policy asks for by default: (wins − losses) / decided cases ≥ 0.2."""
VOTE_MIN_CASES = 5
"""The fewest decided (won or lost) cases the vote policy decides on by default."""


@dataclass(frozen=True)
class Votes(Result):
    """B against A by per-case votes: each case a win, a tie or a loss for B.

    Attributes:
        wins: Cases B won: right in the majority of its rounds where A was not (for scores: a higher
            mean score).
        losses: Cases A won the same way.
        ties: Cases both got right, both got wrong (or equal scores).
        decided: ``wins + losses``.
        net: ``(wins − losses) / decided`` (None when nothing was decided).
        p_value: The exact one-sided sign test of "B wins more often than it loses" (a binomial test of
            wins among decided cases against ½), None when nothing was decided.
        p_worse: The same test in the other direction (B loses more often than it wins).
        margin: The net-win share asked for.
        min_cases: The fewest decided cases asked for.
        alpha: The sign test's level.
        outcome: ``better`` (enough decided cases, net ≥ margin and p < alpha), ``worse`` (net ≤ −margin
            and p_worse < alpha), or ``inconclusive``.
        text: The votes in one line: ``votes: 14 wins, 3 losses, 83 ties; net +11 (+65 % of decided) · sign test p = 0.006 → better …``.
    """

    wins: int
    losses: int
    ties: int
    decided: int
    net: float | None
    p_value: float | None
    p_worse: float | None
    margin: float
    min_cases: int
    alpha: float
    outcome: str
    text: str

    @property
    def passed(self) -> bool:
        """Whether the vote policy passes: B wins by the margin, on enough cases, significantly."""
        return self.outcome == Outcome.BETTER


def vote_decision(
    category: np.ndarray | list[str] | tuple[str, ...],
    *,
    margin: float = VOTE_MARGIN,
    min_cases: int = VOTE_MIN_CASES,
    alpha: float = 0.05,
) -> Votes:
    """Decide B against A by per-case votes (the policy dotnet/skills uses on Vally).

    Each paired case is a vote: a *win* for B when B is right in the majority of its graded rounds and
    A is not (``fixed``), a *loss* the other way round (``regressed``), a *tie* otherwise; for scores, a
    higher or lower mean score. B passes when at least `min_cases` cases are decided, the net-win share
    ``(wins − losses) / (wins + losses)`` is at least `margin`, and the exact sign test (scipy's
    ``binomtest`` of the wins among decided cases against ½, one-sided) gives p < `alpha`. With pass/fail
    outcomes the sign test on these votes is the exact McNemar test on majority outcomes, one-sided.

    Args:
        category: Each paired case's category (see `abbench.compare.CATEGORIES`), as
            ``Comparison.case_table.category`` holds them.
        margin: The net-win share asked for, in [0, 1].
        min_cases: The fewest decided cases to decide on (≥ 1).
        alpha: The sign test's level.

    Raises:
        UsageError: a margin outside [0, 1], min_cases below 1, or alpha outside (0, 1).
    """
    from scipy.stats import binomtest

    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin <= 1:
        raise UsageError(
            f"votes margin must be a share in [0, 1] (0.2 = net 20 % of decided cases); got {margin!r}"
        )
    if isinstance(min_cases, bool) or not isinstance(min_cases, int) or min_cases < 1:
        raise UsageError(f"votes min_cases must be a whole number ≥ 1; got {min_cases!r}")
    if not 0 < alpha < 1:
        raise UsageError(f"alpha must be between 0 and 1; got {alpha!r}")
    cat = np.asarray(category)
    wins, losses = int(np.count_nonzero(cat == "fixed")), int(np.count_nonzero(cat == "regressed"))
    ties = int(cat.size) - wins - losses
    decided = wins + losses
    net = (wins - losses) / decided if decided else None
    p = binomtest(wins, decided, 0.5, alternative="greater").pvalue if decided else None
    p_worse = binomtest(wins, decided, 0.5, alternative="less").pvalue if decided else None
    if decided < min_cases:
        outcome = Outcome.INCONCLUSIVE
        why = f"only {decided:,} decided case(s), at least {min_cases:,} needed"
    elif net is not None and p is not None and net >= margin and p < alpha:
        outcome, why = Outcome.BETTER, f"net ≥ {margin:.0%} and p < {alpha:g}"
    elif net is not None and p_worse is not None and net <= -margin and p_worse < alpha:
        outcome, why = Outcome.WORSE, f"net ≤ −{margin:.0%} and p < {alpha:g} for more losses"
    else:
        outcome = Outcome.INCONCLUSIVE
        why = (
            f"net below the {margin:.0%} margin"
            if net is None or net < margin
            else f"the sign test is not significant at {alpha:g}"
        )
    net_text = (
        f"net {wins - losses:+,d} ({net * 100:+.0f} % of decided)" if net is not None else "nothing decided"
    )
    p_text = "" if p is None else (" · sign test p < 0.001" if p < 0.001 else f" · sign test p = {p:.3f}")
    text = f"votes: {wins:,} wins, {losses:,} losses, {ties:,} ties; {net_text}{p_text} → {outcome} ({why})"
    return Votes(
        wins,
        losses,
        ties,
        decided,
        net,
        _finite(p),
        _finite(p_worse),
        float(margin),
        min_cases,
        alpha,
        outcome,
        text,
    )


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None
