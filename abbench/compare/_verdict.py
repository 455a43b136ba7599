"""The plain-language verdict of a comparison: what the data show, and never more than they support."""

from __future__ import annotations

import math
from dataclasses import dataclass

from abbench.metrics import Result

VERDICTS = ("b_better", "b_worse", "no_detectable_difference", "insufficient_data")
"""Verdict codes: B better, B worse, no difference detectable at this size, too little data to say."""


@dataclass(frozen=True)
class Verdict(Result):
    """What a comparison concludes, as a code and as sentences.

    Attributes:
        code: One of `VERDICTS`.
        text: The conclusion in plain words, figures included.
        significant: Whether the main test rejects "no difference" at the chosen level.
        test: The main test: ``exact McNemar``, ``paired difference`` or ``clustered paired difference``.
        p_value: Its p-value (None when it could not be computed).
    """

    code: str
    text: str
    significant: bool
    test: str
    p_value: float | None


def points(value: float | None, unit: str) -> str:
    """A difference in the comparison's unit: ``+4.0 points`` for pass rates, ``+0.12`` for scores."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if unit == "points":
        return f"{value * 100:+.1f} points"
    return f"{value:+.3g}"


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
) -> Verdict:
    """Word the conclusion of a paired comparison of B against A.

    The main test decides (exact McNemar for pass/fail answered once per case, otherwise the paired
    difference of per-case means); the interval and the minimum detectable effect say how large a
    difference the data can or cannot rule out, so "no significant difference" never reads as "equal".
    """
    ci = (
        f"{confidence:.0%} CI {points(low, unit)} to {points(high, unit)}"
        if low is not None and high is not None and math.isfinite(low) and math.isfinite(high)
        else "no interval"
    )
    moved = ""
    if fixed is not None and regressed is not None:
        moved = (
            f"; {fixed} fixed, {regressed} regressed"
            if unit == "points"
            else f"; higher in {fixed} case(s), lower in {regressed}"
        )
    if n_cases == 0:
        return Verdict(
            "insufficient_data",
            f"{name_b} vs {name_a}: no case has a graded run in both, so there is nothing to compare yet.",
            False,
            test,
            None,
        )
    if test != "exact McNemar" and n_cases < min_cases:
        return Verdict(
            "insufficient_data",
            f"{name_b} vs {name_a}: only {n_cases} case(s) are graded in both arms, too few for a paired interval "
            f"(at least {min_cases} are needed). {name_b} − {name_a} = {points(difference, unit)}{moved}; "
            "treat this as anecdote, not evidence.",
            False,
            test,
            p_value,
        )
    significant = p_value is not None and math.isfinite(p_value) and p_value < alpha
    detail = f"{name_b} − {name_a} = {points(difference, unit)} ({ci}; {test} {_p(p_value)}{moved})"
    if significant and difference is not None and difference > 0:
        code, text = "b_better", f"{name_b} is better than {name_a}: {detail}."
    elif significant and difference is not None and difference < 0:
        code, text = "b_worse", f"{name_b} is worse than {name_a}: {detail}."
    elif significant:
        code, text = (
            "no_detectable_difference",
            f"{name_b} vs {name_a}: the test rejects equality but the mean difference is 0: {detail}.",
        )
    else:
        code = "no_detectable_difference"
        text = f"{name_b} vs {name_a}: no difference detectable at this size: {detail}."
        if mde is not None and math.isfinite(mde):
            text += (
                f" The smallest difference {n_cases} cases can detect ({power:.0%} power, {alpha:g} level) "
                f"is {magnitude(mde, unit)}"
                + (
                    " if they were independent; clustered, it is larger."
                    if test.startswith("clustered")
                    else "."
                )
            )
        if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
            text += f" The data rule out changes beyond {points(low, unit)} to {points(high, unit)}."
    # Newcombe's interval comes from the margins, the test from the moved cases (McNemar) or the per-case
    # differences: near the threshold they can disagree, and the reader should know which one decided.
    bounded = low is not None and high is not None and math.isfinite(low) and math.isfinite(high)
    if bounded and (low > 0 or high < 0) != significant:
        text += f" (The interval and the {test} test disagree at this size; the test decides.)"
    if (
        test != "exact McNemar"
        and mcnemar_p is not None
        and math.isfinite(mcnemar_p)
        and (mcnemar_p < alpha) != significant
    ):
        text += f" McNemar's exact test on majority outcomes gives {_p(mcnemar_p)}."
    return Verdict(
        code, text, significant, test, p_value if p_value is not None and math.isfinite(p_value) else None
    )
