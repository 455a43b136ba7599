"""The decision in three dimensions — capability, cost, stability — each with its evidence and a conclusion."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from abbench.compare import (
    NOT_CORROBORATED,
    VOTE_MARGIN,
    VOTE_MIN_CASES,
    Comparison,
    Outcome,
    VerdictCode,
    Votes,
    magnitude,
    points,
)
from abbench.formatting import money_sig, money_sig as _money
from abbench.gate._words import Conclusion
from abbench.metrics import ArmMetrics, Result
from abbench.stats import paired_proportion_interval, wilson_interval

COST_WARN_SHARE = 0.25
"""The cost dimension and the default rules warn when the candidate's mean cost per case is shown to be more
than this share above the baseline's: the lower bound of the interval of its relative change
(`cost_change_ci_low`) is above it.

A quarter more per case is what a budget notices, and well above the run-to-run wobble of token counts;
the mean (not the median) is compared because cost is billed as a sum. The warning holds even when the
cost dimension does not block because the candidate is significantly better: a stakeholder should see the
price (the dimension says `Conclusion.WARN`, and a gate whose rules say nothing of cost gets the warning
rule added, see `abbench.gate.evaluate_gate`)."""


@dataclass(frozen=True)
class DecisionPolicy:
    """When each dimension blocks.

    Attributes:
        capability_margin: None (the default) follows the comparison's outcome against its own margin
            (`abbench.compare.Verdict.outcome`, `abbench.compare.DEFAULT_MARGIN` unless the comparison
            was given another): capability passes when B is better or not worse, blocks when B is
            significantly worse overall or in a domain, and is *inconclusive* when the interval straddles
            the margin (the summary says about how many more cases would settle it). A number makes it a
            strict non-inferiority test: block unless the difference's lower bound is above ``−margin``
            (0.02 = "not more than 2 points worse").
        cost_tolerance: Block when B's mean cost per case is shown to exceed A's by more than this share
            (0.10 = 10 %): the lower bound of the interval of B's cost over A's (Fieller's, see
            `abbench.compare.MetricDifference.relative_interval`) is above ``1 + cost_tolerance`` — and B
            is not significantly better.
        cost_warn_share: Warn (`Conclusion.WARN`, never a block) when B's mean cost per case is shown to
            exceed A's by more than this share and the cost dimension does not block: the candidate pays
            for itself, but a budget notices.
        flip_tolerance: Block when B's flip rate is shown to exceed A's by more than this (absolute, 0.05 =
            5 points): on the cases both arms answered in two or more rounds, the lower bound of the score
            interval of the paired difference of flip rates is above it. A margin the noise must clear,
            so identical arms almost never block on it.
        max_flip_rate: Also block when B's flip rate is shown to be above this: the lower bound of its
            Wilson interval is (None: no absolute limit).
        capability: ``difference`` (the paired difference, above) or ``votes``: capability passes only
            when B wins the per-case votes — at least `vote_min_cases` decided cases, a net-win share of at
            least `vote_margin`, and an exact sign test below the comparison's alpha (see
            `abbench.compare.vote_decision`); fewer decided cases leave it not assessed.
        vote_margin: The net-win share the votes need.
        vote_min_cases: The fewest decided cases the votes decide on.
    """

    capability_margin: float | None = None
    cost_tolerance: float = 0.10
    cost_warn_share: float = COST_WARN_SHARE
    flip_tolerance: float = 0.05
    max_flip_rate: float | None = None
    capability: str = "difference"
    vote_margin: float = VOTE_MARGIN
    vote_min_cases: int = VOTE_MIN_CASES


@dataclass(frozen=True)
class Dimension(Result):
    """One dimension of the decision.

    Attributes:
        name: ``capability``, ``cost`` or ``stability``.
        conclusion: ``pass``, ``block``, ``inconclusive`` (the evidence was weighed and does not settle
            it: capability with an interval straddling the margin) or ``not assessed`` (the data could not
            speak to it). `summary` says why. Neither is a pass: the gate rule on the dimension has no
            value, and is inconclusive or missing.
        summary: The evidence in one or two sentences.
        evidence: The figures behind it.
        assessed: False when the conclusion is ``not assessed`` (an inconclusive dimension was assessed).
    """

    name: str
    conclusion: Conclusion
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)
    assessed: bool = True


@dataclass(frozen=True)
class Decision(Result):
    """Capability, cost and stability, and the overall conclusion.

    Attributes:
        conclusion: ``block`` if any dimension blocks, else ``inconclusive`` if one is inconclusive or
            none could be assessed, else ``pass`` (a dimension not assessed is shown as such, never as
            passed).
        capability: Is B at least as good?
        cost: Does B cost more without paying for itself?
        stability: Does B answer less consistently across rounds?
        coverage: On how many planned runs of the pair it rests (set by `abbench.gate.evaluate_gate`).
        votes: The per-case votes, when capability is decided by votes.
    """

    conclusion: Conclusion
    capability: Dimension
    cost: Dimension
    stability: Dimension
    coverage: Any = None
    votes: Votes | None = None

    @property
    def dimensions(self) -> tuple[Dimension, Dimension, Dimension]:
        """The three dimensions in order."""
        return (self.capability, self.cost, self.stability)

    @property
    def headline(self) -> str:
        """The conclusion as a heading says it: a pass names the dimensions it did not assess, so that
        it never reads as a pass on all three."""
        missing = [d.name for d in self.dimensions if not d.assessed]
        if self.conclusion == "pass" and missing:
            return f"pass on what was assessed — not assessed: {', '.join(missing)}"
        return self.conclusion


def _f(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def decide(
    comparison: Comparison | None,
    arm_a: ArmMetrics | None,
    arm_b: ArmMetrics,
    policy: DecisionPolicy | None = None,
) -> Decision:
    """The three-dimension decision on arm B against arm A.

    Args:
        comparison: B against A (None when there is nothing to compare with: every dimension that needs a
            comparison is then not assessed).
        arm_a: A's metrics (for its flip rate).
        arm_b: B's metrics.
        policy: When each dimension blocks (default `DecisionPolicy()`).
    """
    policy = policy or DecisionPolicy()
    votes = None
    if policy.capability == "votes" and comparison is not None and comparison.n_cases:
        votes = comparison.votes(policy.vote_margin, policy.vote_min_cases)
        capability = _capability_votes(comparison, votes)
    else:
        capability = _capability(comparison, policy)
    cost = _cost(comparison, policy)
    names = (comparison.a.name, comparison.b.name) if comparison is not None else (None, arm_b.arm)
    stability = _stability(comparison, arm_a, arm_b, policy, names)
    dims = (capability, cost, stability)
    if any(d.conclusion == Conclusion.BLOCK for d in dims):
        conclusion = Conclusion.BLOCK
    elif not any(d.assessed for d in dims) or any(d.conclusion == Conclusion.INCONCLUSIVE for d in dims):
        conclusion = Conclusion.INCONCLUSIVE
    else:
        conclusion = Conclusion.PASS
    return Decision(conclusion, capability, cost, stability, votes=votes)


NOT_ASSESSED = Conclusion.NOT_ASSESSED


def _not_assessed(name: str, summary: str, evidence: dict[str, Any] | None = None) -> Dimension:
    return Dimension(name, NOT_ASSESSED, summary, evidence or {}, assessed=False)


def _capability(c: Comparison | None, policy: DecisionPolicy) -> Dimension:
    if c is None or c.main is None:
        # No evidence is no reason to ship: the capability rule has no value, and a block rule without
        # one blocks (or leaves the gate inconclusive when nothing else could be assessed either).
        return _not_assessed(
            "capability",
            "not assessed: no paired comparison (one arm, or no case graded in both); nothing shows the candidate "
            "is not worse",
        )
    main = c.main
    low = _f(c.interval.low) if c.interval is not None else None
    high = _f(c.interval.high) if c.interval is not None else None
    regressions = c.significant_domain_regressions()
    evidence = {
        "difference": _f(main.difference),
        "ci_low": low,
        "ci_high": high,
        "p_value": c.verdict.p_value,
        "test": c.verdict.test,
        "fixed": c.count("fixed"),
        "regressed": c.count("regressed"),
        "mde": _f(c.mde.delta) if c.mde else None,
        "domains_significantly_worse": [d.domain for d in regressions],
        "outcome": str(c.verdict.outcome),
        "margin": c.verdict.margin,
        "n_more": c.verdict.n_more,
    }
    reasons = []
    if c.verdict.code == VerdictCode.B_WORSE:
        reasons.append(f"{c.b.name} is significantly worse ({points(main.difference, c.unit)})")
    if regressions:
        listed = ", ".join(f"{d.domain} ({points(d.difference, c.unit)})" for d in regressions[:5])
        reasons.append(f"significantly worse in {len(regressions):,} domain(s): {listed}")
    if policy.capability_margin is not None:
        evidence["margin"] = policy.capability_margin
        if low is None or low < -policy.capability_margin:
            reasons.append(
                f"cannot rule out a loss beyond the {magnitude(policy.capability_margin, c.unit)} margin "
                f"(lower bound {points(low, c.unit)})"
            )
    if c.verdict.code == VerdictCode.INSUFFICIENT_DATA:
        return _not_assessed("capability", f"not assessed: {c.verdict.text}", evidence)
    second = c.corroboration
    if second is not None:
        evidence["corroboration"] = second.outcome
        if second.outcome == NOT_CORROBORATED:
            # a regression (or a win) the second judge does not find counts neither way: unsettled
            return Dimension("capability", Conclusion.INCONCLUSIVE, f"{second.text}.", evidence)
    if reasons:
        return Dimension("capability", Conclusion.BLOCK, "; ".join(reasons) + ".", evidence)
    if policy.capability_margin is None and c.verdict.outcome == Outcome.INCONCLUSIVE:
        # Not significantly worse is not shown not worse: an interval that straddles the margin could
        # hide a loss larger than it, so the dimension is unsettled — never a pass (the outcome's text
        # says why, and about how many more cases would settle it).
        return Dimension("capability", Conclusion.INCONCLUSIVE, c.verdict.outcome_text, evidence)
    return Dimension("capability", Conclusion.PASS, c.verdict.text, evidence)


def _capability_votes(c: Comparison, votes: Votes) -> Dimension:
    """Capability by per-case votes (see `abbench.compare.vote_decision`): pass when B wins them, block when
    it loses them, and inconclusive when they do not decide — not enough evidence is never a block."""
    evidence = {"policy": "votes", **{k: v for k, v in votes.as_dict().items() if k != "text"}}
    said = f"{votes.text}."
    if votes.decided < votes.min_cases:
        return _not_assessed("capability", f"not assessed: {said}", evidence)
    if votes.outcome == Outcome.BETTER:
        return Dimension("capability", Conclusion.PASS, said, evidence)
    if votes.outcome == Outcome.WORSE:
        return Dimension("capability", Conclusion.BLOCK, f"{c.b.name} loses the votes: {said}", evidence)
    other = ""
    if c.verdict.code in (VerdictCode.B_BETTER, VerdictCode.B_WORSE):
        word = "better" if c.verdict.code == VerdictCode.B_BETTER else "worse"
        p = c.verdict.p_value
        other = (
            f" The {c.verdict.test} test says {word}"
            + (f" (p = {p:.3f})" if p is not None else "")
            + ", but this experiment decides by votes."
        )
    return Dimension(
        "capability",
        Conclusion.INCONCLUSIVE,
        f"inconclusive: the votes do not decide whether {c.b.name} wins — {said}{other}",
        evidence,
    )


_usd = partial(money_sig, signed=True)  # a signed cost difference: +$0.00020


def _cost(c: Comparison | None, policy: DecisionPolicy) -> Dimension:
    u = c.usage_metric("cost") if c is not None else None
    if c is None or u is None or u.difference is None:
        return _not_assessed("cost", "not assessed: cost is not recorded for both arms on the same cases")
    evidence = {
        "cost_a": u.value_a,
        "cost_b": u.value_b,
        "difference": u.difference,
        "relative": u.relative,
        "ci_low": u.interval.low if u.interval else None,
        "ci_high": u.interval.high if u.interval else None,
        "method": u.method,
        "tolerance": policy.cost_tolerance,
        "median_a": u.median_a,
        "median_b": u.median_b,
        "median_relative": u.median_relative,
    }
    if not u.value_a and not u.value_b:
        return _not_assessed("cost", "not assessed: no cost recorded (0 in both arms)", evidence)
    change = (
        f"{_usd(u.difference)} per case ({u.relative:+,.0%})"
        if u.relative is not None
        else f"{_usd(u.difference)} per case"
    )
    ci = f", {c.confidence:.0%} CI {_usd(u.interval.low)} to {_usd(u.interval.high)}" if u.interval else ""
    if u.median_a is not None and u.median_b is not None:
        # The mean is what the bill adds up to, the median what a typical case costs: a few dear runs move
        # the first and not the second, and the reader should see both before being alarmed or reassured.
        mrel = f" ({u.median_relative:+,.0%})" if u.median_relative is not None else ""
        ci += f"; median per case {_money(u.median_a)} → {_money(u.median_b)}{mrel}"
    rel = u.relative_interval
    evidence["relative_ci_low"] = rel.low if rel is not None else None
    evidence["relative_ci_high"] = rel.high if rel is not None else None
    significant_more = u.interval is not None and u.interval.low > 0
    # The tolerance is a margin the noise must clear: blocked only when the interval of B's cost over A's
    # lies beyond it, so identical arms (whose ratio is 1) almost never block, whatever their spread.
    beyond = rel is not None and rel.low > policy.cost_tolerance
    ratio = (
        f"; B's cost over A's {rel.low:+,.0%} to {rel.high:+,.0%} ({c.confidence:.0%} CI, Fieller)"
        if rel is not None
        else ""
    )
    better = c.verdict.code == VerdictCode.B_BETTER
    tolerance = f"the {policy.cost_tolerance:.0%} tolerance"
    if beyond and not better:
        return Dimension(
            "cost",
            Conclusion.BLOCK,
            f"{c.b.name} costs more: {change}{ci}{ratio} — beyond {tolerance} even at the interval's lower "
            "bound, without a significant gain in capability.",
            evidence,
        )
    if significant_more and better:
        summary = f"{c.b.name} costs more ({change}{ci}{ratio}) and is significantly better."
    elif significant_more and u.relative is not None and u.relative > policy.cost_tolerance:
        summary = f"{c.b.name} costs more ({change}{ci}{ratio}), not shown beyond {tolerance}."
    elif significant_more:
        summary = f"{c.b.name} costs more ({change}{ci}{ratio}), within {tolerance}."
    else:
        summary = f"Cost change {change}{ci}{ratio}: no significant increase."
    if rel is not None and rel.low > policy.cost_warn_share:
        # Paid for by a significant gain, so it does not block; but a reader must not see a plain pass.
        evidence["warn_share"] = policy.cost_warn_share
        said = (
            f"warn: more than {policy.cost_warn_share:.0%} dearer per case even at the interval's lower bound"
        )
        return Dimension("cost", Conclusion.WARN, f"{summary} {said[0].upper()}{said[1:]}.", evidence)
    return Dimension("cost", Conclusion.PASS, summary, evidence)


def _paired_flips(
    c: Comparison | None, a: ArmMetrics | None, b: ArmMetrics
) -> tuple[int, int, int, int] | None:
    """Both arms' flips on the paired cases graded in two or more rounds in each: (both flipped, only B,
    only A, neither) — None when no case was answered twice by both."""
    if c is None or a is None:
        return None
    t = c.case_table
    twice = (t.a_graded >= 2) & (t.b_graded >= 2)
    if not twice.any():
        return None
    ids = t.case_id[twice].tolist()
    in_a, in_b = set(a.stability.flipped), set(b.stability.flipped)
    fa = np.fromiter((i in in_a for i in ids), dtype=bool, count=len(ids))
    fb = np.fromiter((i in in_b for i in ids), dtype=bool, count=len(ids))
    return (
        int(np.count_nonzero(fa & fb)),
        int(np.count_nonzero(fb & ~fa)),
        int(np.count_nonzero(fa & ~fb)),
        int(np.count_nonzero(~fa & ~fb)),
    )


def _stability(
    c: Comparison | None,
    a: ArmMetrics | None,
    b: ArmMetrics,
    policy: DecisionPolicy,
    names: tuple[str | None, str],
) -> Dimension:
    """Stability: B blocks only when the data show it flips more than A by more than the tolerance (the
    paired score interval's lower bound is above it), or more often than ``max_flip_rate`` (Wilson's)."""
    name_a, name_b = names[0] or (a.arm if a is not None else "A"), names[1]
    sb = b.stability
    if sb.flip_rate is None:
        return _not_assessed("stability", f"not assessed: {sb.reason or 'no case answered twice'}")
    fa = a.stability.flip_rate if a is not None else None
    evidence: dict[str, Any] = {
        "flip_rate_b": sb.flip_rate,
        "flip_rate_a": fa,
        "flaky_b": len(sb.flaky),
        "flaky_a": len(a.stability.flaky) if a is not None else None,
        "tolerance": policy.flip_tolerance,
        "max_flip_rate": policy.max_flip_rate,
    }
    confidence = c.confidence if c is not None else 0.95
    tol = f"{policy.flip_tolerance * 100:g}-point tolerance"
    said, reasons = [], []
    paired = _paired_flips(c, a, b)
    if paired is not None:
        both, only_b, only_a, neither = paired
        n = sum(paired)
        rate_b, rate_a, diff = (both + only_b) / n, (both + only_a) / n, (only_b - only_a) / n
        iv = paired_proportion_interval(both, only_b, only_a, neither, confidence, method="score")
        evidence.update(paired_cases=n, paired_flip_rate_b=rate_b, paired_flip_rate_a=rate_a, difference=diff)
        evidence.update(ci_low=iv.low, ci_high=iv.high)
        figures = (
            f"on the {n:,} cases both answered in two or more rounds, {name_b} changes its answer on "
            f"{rate_b:.0%} against {rate_a:.0%} for {name_a}: {diff * 100:+.1f} points ({confidence:.0%} CI "
            f"{iv.low * 100:+.1f} to {iv.high * 100:+.1f})"
        )
        if iv.low > policy.flip_tolerance:
            reasons.append(f"{figures}, beyond the {tol} even at the interval's lower bound")
        elif diff > policy.flip_tolerance:
            said.append(f"{figures}: not shown beyond the {tol}")
        else:
            said.append(figures)
    else:
        against = f" (against {fa:.0%} for {name_a})" if fa is not None else ""
        said.append(f"{name_b} changes its answer across rounds on {sb.flip_rate:.0%} of cases{against}")
    if policy.max_flip_rate is not None and sb.n_cases:
        low = wilson_interval(len(sb.flipped), sb.n_cases, confidence).low
        evidence["flip_rate_b_ci_low"] = low
        if low > policy.max_flip_rate:
            reasons.append(
                f"flip rate {sb.flip_rate:.0%} is above the {policy.max_flip_rate:.0%} limit (lower bound {low:.0%})"
            )
    if reasons:
        return Dimension(
            "stability",
            Conclusion.BLOCK,
            "; ".join(reasons) + f"; {len(sb.flaky):,} flaky case(s).",
            evidence,
        )
    return Dimension(
        "stability", Conclusion.PASS, "; ".join(said) + f"; {len(sb.flaky):,} flaky case(s).", evidence
    )
