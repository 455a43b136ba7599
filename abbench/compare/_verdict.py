"""The plain-language verdict of a comparison: what the data show, and never more than they support."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from functools import partial

from abbench.errors import UsageError
from abbench.formatting import NA, difference
from abbench.metrics import Result


class VerdictCode(StrEnum):
    """A verdict's code: B better, B worse, no difference detectable at this size, too little data to say."""

    B_BETTER = "b_better"
    B_WORSE = "b_worse"
    NO_DETECTABLE_DIFFERENCE = "no_detectable_difference"
    INSUFFICIENT_DATA = "insufficient_data"


class Outcome(StrEnum):
    """A comparison's outcome against a non-inferiority margin (see `OUTCOMES`)."""

    BETTER = "better"
    NOT_WORSE = "not worse"
    WORSE = "worse"
    INCONCLUSIVE = "inconclusive"


VERDICTS = tuple(VerdictCode)
"""Verdict codes: B better, B worse, no difference detectable at this size, too little data to say."""

OUTCOMES = tuple(Outcome)
"""The four outcomes of a comparison against a non-inferiority margin (see `settle`): B significantly
better; B not worse (the interval's lower bound is above −margin); B significantly worse by possibly more
than the margin; or inconclusive (too few cases, or an interval that straddles the margin)."""

DEFAULT_MARGIN = 0.02
"""The non-inferiority margin when none is given: 2 points of pass rate (0.02 in a score's unit).

Two points is about the run-to-run wobble of a few hundred cases and less than most skill changes aim
to gain, so "not more than 2 points worse" is a loss a reviewer would accept for a cheaper or simpler skill;
set your own with ``compare --margin`` or a gate rule's ``margin:``."""


@dataclass(frozen=True)
class Verdict(Result):
    """What a comparison concludes, as a code and as sentences.

    Attributes:
        code: One of `VERDICTS`.
        text: The conclusion in plain words, figures included.
        significant: Whether the main test rejects "no difference" at the chosen level.
        test: The main test: ``exact McNemar``, ``paired difference`` or ``clustered paired difference``.
        p_value: Its p-value (None when it could not be computed).
        outcome: One of `OUTCOMES`, against `margin` (see `settle`).
        margin: The non-inferiority margin the outcome was judged against.
        n_more: For an inconclusive outcome, about how many more paired cases would settle it if the
            difference stayed where it is (None when settled, or when it cannot be said).
        outcome_text: The outcome in plain words, with the margin and what would settle it.
    """

    code: str
    text: str
    significant: bool
    test: str
    p_value: float | None
    outcome: str = Outcome.INCONCLUSIVE
    margin: float = DEFAULT_MARGIN
    n_more: int | None = None
    outcome_text: str = ""


@dataclass(frozen=True)
class Settled(Result):
    """A comparison judged against a non-inferiority margin.

    Attributes:
        outcome: One of `OUTCOMES`.
        margin: The margin (in the comparison's unit: 0.02 is 2 points of pass rate).
        n_more: For an inconclusive outcome, about how many more paired cases would settle it (None
            otherwise, or when no interval exists to project).
        text: The outcome in plain words.
    """

    outcome: str
    margin: float
    n_more: int | None
    text: str


def _finite(*values: float | None) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def cases_to_settle(
    n_cases: int, difference: float | None, low: float | None, high: float | None, margin: float
) -> int | None:
    """About how many *more* paired cases would settle an inconclusive comparison, if the difference
    stayed where it is.

    An interval's half-width shrinks as 1/√n: with ``n`` cases now and a lower half-width
    ``w = difference − low`` (that is ``z·SE`` for a Student t or normal interval), ``N`` cases give
    about ``w·√(n/N)``. The comparison settles as *not worse* once the lower bound clears −margin,
    ``w·√(n/N) < difference + margin``, so ``N = n·(w / (difference + margin))²``; or as *worse* once
    the upper bound falls below 0, ``N = n·((high − difference) / −difference)²`` (when the difference
    is negative). The answer is the smaller, minus ``n``, rounded up. It is a projection at the observed
    difference — about even odds, not a power calculation (see `abbench.stats` for the power of a
    planned design).

    Returns:
        The number of additional paired cases; None without a finite interval or a difference, or when
        the interval already clears −margin or lies below 0 (nothing to project: if the comparison is
        still unsettled, it is the test that disagrees with its interval, and the verdict says so).
    """
    if n_cases < 1 or difference is None or low is None or high is None or not _finite(difference, low, high):
        return None
    if low > -margin or high < 0:
        return None  # the interval already settles it (a test that disagrees is said by the verdict)
    needed = []
    w_low, w_high = difference - low, high - difference
    if difference + margin > 0 and w_low > 0:
        needed.append(n_cases * (w_low / (difference + margin)) ** 2)
    if difference < 0 and w_high > 0:
        needed.append(n_cases * (w_high / -difference) ** 2)
    if not needed:
        return None
    return max(1, math.ceil(min(needed)) - n_cases)


def settle(
    *,
    name_a: str,
    name_b: str,
    n_cases: int,
    unit: str,
    difference: float | None,
    low: float | None,
    high: float | None,
    significant: bool,
    margin: float = DEFAULT_MARGIN,
    enough: bool = True,
    confidence: float = 0.95,
) -> Settled:
    """Judge B against A on a non-inferiority margin: better, not worse, worse or inconclusive.

    *Better*: the main test finds B significantly better. *Not worse*: the interval's lower bound is
    above ``−margin`` — with a two-sided 95 % interval that is the one-sided non-inferiority test at
    2.5 % rejecting "B is worse by the margin or more" (a significant loss smaller than the margin is
    not worse too: the margin is what the reader accepts). *Worse*: the test finds B significantly worse
    and the interval reaches beyond the margin. *Inconclusive*: too few cases (`enough` false), no
    interval, or an interval that straddles ``−margin`` without a significant difference; the text says
    about how many more cases would settle it (`cases_to_settle`).

    Args:
        name_a: The baseline's name.
        name_b: The candidate's name.
        n_cases: Paired cases.
        unit: ``points`` (pass rates) or ``score``.
        difference: B − A.
        low: The interval's lower bound.
        high: Its upper bound.
        significant: Whether the main test rejects "no difference".
        margin: The non-inferiority margin (≥ 0, in the comparison's unit).
        enough: False when there are too few cases to judge at all.
        confidence: The interval's coverage, for the text.
    """
    if margin < 0 or not math.isfinite(margin):
        raise UsageError(f"margin must be a number ≥ 0 (0.02 = 2 points); got {margin!r}")
    m = magnitude(margin, unit)
    bounded = _finite(low, high)
    ci = f"{confidence:.0%} CI {points(low, unit)} to {points(high, unit)}" if bounded else "no interval"
    n_more = None
    if not enough or n_cases == 0 or difference is None:
        outcome = Outcome.INCONCLUSIVE
        text = f"inconclusive: too few paired cases ({n_cases:,}) to judge {name_b} against the {m} margin"
    elif significant and difference > 0:
        outcome = Outcome.BETTER
        text = f"better: {name_b} is significantly better than {name_a} ({points(difference, unit)}, {ci})"
    elif bounded and low is not None and low > -margin:
        outcome = Outcome.NOT_WORSE
        text = (
            f"not worse: {name_b} is at most {m} worse than {name_a} — the lower bound "
            f"{points(low, unit)} is above −{m}"
        )
        if significant and difference < 0:
            text += f" (significantly lower, {points(difference, unit)}, but within the margin)"
    elif significant and difference < 0:
        outcome = Outcome.WORSE
        text = (
            f"worse: {name_b} is significantly worse than {name_a} ({points(difference, unit)}, {ci}), "
            f"possibly by more than the {m} margin"
        )
    else:
        outcome = Outcome.INCONCLUSIVE
        n_more = cases_to_settle(n_cases, difference, low, high, margin)
        text = _unsettled(name_a, name_b, n_cases, ci, m, high if bounded else None, n_more)
    return Settled(outcome, margin, n_more, text + ".")


def _unsettled(
    name_a: str, name_b: str, n_cases: int, ci: str, m: str, high: float | None, n_more: int | None
) -> str:
    """Why a comparison is inconclusive, and about how many more cases would settle it."""
    if high is not None and high < 0:
        text = (
            f"inconclusive: the {ci} lies below 0, but the test that decides does not find {name_b} "
            f"worse than {name_a} at this size (see the verdict), so these {n_cases:,} cases settle neither way"
        )
    elif high is not None:
        text = (
            f"inconclusive: the {ci} straddles the margin of −{m}, so these {n_cases:,} cases can neither show "
            f"{name_b} is not worse than {name_a} nor that it is worse"
        )
    else:
        text = f"inconclusive: no interval, so nothing shows {name_b} is within {m} of {name_a}"
    if n_more is not None:
        text += f"; about {n_more:,} more paired cases would likely settle it if the difference holds"
    return text


points = partial(difference, word="points", missing=NA)
"""A difference in the comparison's unit: ``+4.0 points`` for pass rates, ``+0.12`` for scores."""


def magnitude(value: float | None, unit: str) -> str:
    """An unsigned size in the comparison's unit: ``9.0 points`` or ``0.12``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if unit == "points":
        return f"{abs(value) * 100:.1f} points"
    return f"{abs(value):.3g}"


def _p(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def verdict(
    *,
    name_a: str,
    name_b: str,
    n_cases: int,
    unit: str,
    difference: float | None,
    low: float | None,
    high: float | None,
    confidence: float,
    test: str,
    p_value: float | None,
    alpha: float,
    mde: float | None,
    power: float,
    fixed: int | None,
    regressed: int | None,
    mcnemar_p: float | None,
    min_cases: int,
    margin: float = DEFAULT_MARGIN,
    estimand: str = "",
) -> Verdict:
    """Word the conclusion of a paired comparison of B against A.

    The main test decides (McNemar's score test for pass/fail with one outcome per case and arm — the
    exact test below `min_cases` cases —, otherwise the paired difference of per-case means); the
    interval, the inversion of the same test, and the minimum detectable effect say how large a
    difference the data can or cannot rule out, so "no significant difference" never reads as "equal".
    The outcome against `margin` (better, not worse, worse, inconclusive) comes from `settle`: "no
    difference detectable at this size" is *not worse* when the interval's lower bound clears −margin
    and *inconclusive* otherwise; too little data is inconclusive. `estimand` (a sentence) says what the
    interval is the effect on when that needs saying: the effect differs across domains, or is clustered.
    """
    significant = p_value is not None and math.isfinite(p_value) and p_value < alpha
    settled = settle(
        name_a=name_a, name_b=name_b, n_cases=n_cases, unit=unit, difference=difference, low=low,
        high=high, significant=significant, margin=margin, confidence=confidence,
        enough=n_cases > 0 and (test == "exact McNemar" or n_cases >= min_cases),
    )  # fmt: skip

    def make(code: str, text: str, significant: bool, p: float | None) -> Verdict:
        return Verdict(
            code, text, significant, test, p, settled.outcome, margin, settled.n_more, settled.text
        )

    moved = _moved(fixed, regressed, unit)
    vs = f"{name_b} vs {name_a}"
    if n_cases == 0:
        return make(
            VerdictCode.INSUFFICIENT_DATA, f"{vs}: no case has a graded run in both, so there is nothing to compare yet.",
            False, None,
        )  # fmt: skip
    if test != "exact McNemar" and n_cases < min_cases:
        return make(
            VerdictCode.INSUFFICIENT_DATA,
            f"{vs}: only {n_cases:,} case(s) are graded in both arms, too few for a paired interval "
            f"(at least {min_cases:,} are needed). {name_b} − {name_a} = {points(difference, unit)}{moved}; "
            "treat this as anecdote, not evidence.",
            False,
            p_value,
        )
    ci = (
        f"{confidence:.0%} CI {points(low, unit)} to {points(high, unit)}"
        if _finite(low, high)
        else "no interval"
    )
    detail = f"{name_b} − {name_a} = {points(difference, unit)} ({ci}; {test} {_p(p_value)}{moved})"
    if significant:
        code, text = _significant(name_a, name_b, difference, detail)
    else:
        code = VerdictCode.NO_DETECTABLE_DIFFERENCE
        text = f"{vs}: no difference detectable at this size: {detail}." + _what_is_ruled_out(
            n_cases, unit, low, high, test, alpha, mde, power
        )
    text += _disagreements(low, high, significant, test, mcnemar_p, alpha, confidence) + estimand
    return make(code, text, significant, p_value if p_value is not None and math.isfinite(p_value) else None)


def _moved(fixed: int | None, regressed: int | None, unit: str) -> str:
    """``; 3 fixed, 1 regressed`` (pass rates) or ``; higher in 3 case(s), lower in 1`` (scores)."""
    if fixed is None or regressed is None:
        return ""
    if unit == "points":
        return f"; {fixed:,} fixed, {regressed:,} regressed"
    return f"; higher in {fixed:,} case(s), lower in {regressed:,}"


def _significant(name_a: str, name_b: str, difference: float | None, detail: str) -> tuple[str, str]:
    """The verdict code and sentence of a significant main test."""
    if difference is not None and difference > 0:
        return VerdictCode.B_BETTER, f"{name_b} is better than {name_a}: {detail}."
    if difference is not None and difference < 0:
        return VerdictCode.B_WORSE, f"{name_b} is worse than {name_a}: {detail}."
    return (
        VerdictCode.NO_DETECTABLE_DIFFERENCE,
        f"{name_b} vs {name_a}: the test rejects equality but the mean difference is 0: {detail}.",
    )


def _what_is_ruled_out(
    n_cases: int,
    unit: str,
    low: float | None,
    high: float | None,
    test: str,
    alpha: float,
    mde: float | None,
    power: float,
) -> str:
    """After "no difference detectable": the smallest difference these cases could detect, and the
    changes the interval rules out — so the reader never takes it for "equal"."""
    text = ""
    if mde is not None and math.isfinite(mde):
        text += (
            f" The smallest difference {n_cases:,} cases can detect ({power:.0%} power, {alpha:g} level) "
            f"is {magnitude(mde, unit)}"
            + (" if they were independent; clustered, it is larger." if test.startswith("clustered") else ".")
        )
    if _finite(low, high):
        text += f" The data rule out changes beyond {points(low, unit)} to {points(high, unit)}."
    return text


def _disagreements(
    low: float | None,
    high: float | None,
    significant: bool,
    test: str,
    mcnemar_p: float | None,
    alpha: float,
    confidence: float = 0.95,
) -> str:
    """Where the interval or McNemar's exact test on majority outcomes says otherwise than the main test,
    which of them decided and why."""
    text = ""
    # The interval is the inversion of the main test (Tango's score interval for McNemar's score test, the t
    # interval for the t test): they part only when the exact test decides (too few cases for the score
    # test) or when the interval's coverage is not 1 − alpha.
    if low is not None and high is not None and _finite(low, high) and (low > 0 or high < 0) != significant:
        said = "excludes" if low > 0 or high < 0 else "includes"
        does = "rejects" if significant else "does not reject"
        if abs(confidence - (1 - alpha)) > 1e-9:
            why = f"the interval is a {confidence:.0%} one and the test is at the {alpha:g} level"
        elif test == "exact McNemar":
            why = "with so few paired cases only the exact test is trusted"
        else:
            why = "they are different methods"
        text += f" (The {confidence:.0%} interval {said} 0 while the {test} test {does} no difference: the test decides — {why}.)"
    if (
        test != "exact McNemar"
        and mcnemar_p is not None
        and math.isfinite(mcnemar_p)
        and (mcnemar_p < alpha) != significant
    ):
        why = (
            "it is more cautious when few cases moved"
            if test == "McNemar"
            else "it sees only whether each case's majority moved, not its rounds"
        )
        text += f" McNemar's exact test on majority outcomes gives {_p(mcnemar_p)}: {why}; the {test} test and its interval decide."
    return text
