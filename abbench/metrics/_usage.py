"""Cost, tokens and latency per arm, and how answers were grounded: evidence cited, confidence, skill read."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from abbench._result import Result
from abbench.metrics._base import Estimate, Rate, no_rate, rate
from abbench.stats import Summary, summary, wilson_interval
from abbench.store import ArmSpend

NO_RUN_EXECUTED = "no run executed"
"""Why an arm has no cost figures when none of its runs executed: unknown, never $0."""

LOW_CONFIDENCE = 0.5
"""Default threshold: an answer with a confidence below it counts as low-confidence."""


@dataclass(frozen=True)
class UsageMetrics(Result):
    """What one arm's executions cost, over runs whose execution finished.

    Attributes:
        executed: Runs with a finished execution.
        cost: Agent cost per run (mean, p50, p95, total ...), in the price table's currency.
        tokens: Input plus output tokens per run.
        input_tokens: Input tokens per run.
        output_tokens: Output tokens per run.
        latency_ms: Wall time per run in milliseconds.
        total_cost: Sum of the agent cost over the executed runs that reported one (failed gradings
            included); None when no run reported a cost, or none executed (unknown is not free: `reason`
            says which). ``cost.missing`` runs did not report one: the total is a lower bound then.
        cost_per_correct: The cost of the runs that reported one divided by how many of those runs
            were graded right — the runs without a cost are left out of both, never counted as free;
            None when none was right or no cost is known.
        judge_cost: What pointwise judges spent grading this arm's runs, apart from the agent cost (a
            pairwise judge compares two arms: its cost is in `ExperimentMetrics.judging`, not here);
            None when a judge call had no price (unknown, never 0).
        reason: Why `cost_per_correct` is None (`NO_RUN_EXECUTED` when no run executed: then
            `total_cost` is None too).
        attempts: Execution attempts, failed and retried ones included.
        failed_attempts: Of those, attempts that failed (or were cancelled while running).
        spent: What the agent spent over every attempt — failed ones too, which `total_cost` leaves
            out; None when no attempt reported a cost.
        spent_on_failures: Of `spent`, what the failed attempts cost (None when none reported one).
        spent_tokens: Input plus output tokens over every attempt (None when none reported any).
        saved: What the response cache saved: the cost of the model calls it answered, which is in
            the runs' `cost` (the answer's cost) but not in `spent`.
        cached_attempts: Attempts the response cache answered model calls of.
        unknown_cost_attempts: Attempts whose cost is unknown and left out of `spent`: killed or cancelled
            before their call answered, a server that reported no usage, a model without prices.
    """

    executed: int
    cost: Summary
    tokens: Summary
    input_tokens: Summary
    output_tokens: Summary
    latency_ms: Summary
    total_cost: float | None
    cost_per_correct: float | None
    judge_cost: float | None
    reason: str | None = None
    attempts: int = 0
    failed_attempts: int = 0
    spent: float | None = None
    spent_on_failures: float | None = None
    spent_tokens: int | None = None
    saved: float = 0.0
    cached_attempts: int = 0
    unknown_cost_attempts: int = 0

    @property
    def cost_gap(self) -> str:
        """What the cost figures leave out, in words (empty when every executed run reported a cost):
        ``92 of 240 runs reported no cost: the total counts only the other 148 (a lower bound), and the
        cost per correct answer is over them``."""
        missing, n = self.cost.missing, self.executed
        if not missing or self.total_cost is None:
            return ""
        return (
            f"{missing:,} of {n:,} runs reported no cost: the total counts only the other {n - missing:,} "
            "(a lower bound), and the cost per correct answer is over them"
        )


def usage(
    executed: np.ndarray,
    cost: np.ndarray,
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    latency_ms: np.ndarray,
    right: np.ndarray | int | None,
    judge_cost: float | None,
    spend: ArmSpend | None = None,
) -> UsageMetrics:
    """Usage figures of one arm's runs (values of runs not executed are skipped); `right` says which runs
    were graded right (None when the graders only score, so no run is right or wrong; a count when the
    runs cannot be told apart: the cost per correct answer then divides the known cost by every right
    run); `spend` is what every attempt spent (the store's ``attempt_spend``), failed ones included."""
    spend = spend or ArmSpend()
    spent = cost[executed]
    priced = ~np.isnan(spent)
    known = int(np.count_nonzero(priced))
    # Nothing executed (all pending, cancelled, or failed before a reply) costs an unknown amount, not 0.
    total = float(np.nansum(spent)) if known else None
    reason = None
    per_correct = None
    if right is None or isinstance(right, int):
        passes, any_right = right, bool(right)
    else:
        passes, any_right = int(np.count_nonzero(right[executed] & priced)), bool(right[executed].any())
    if not executed.any():
        reason = NO_RUN_EXECUTED
    elif total is None:
        reason = "the agent reported no cost for any run"
    elif passes is None:
        reason = "the graders give scores, not pass/fail verdicts: no run is right or wrong"
    elif passes:
        per_correct = total / passes
    else:
        reason = "no run graded right reported a cost" if any_right else "no run was graded as right"
    return UsageMetrics(
        executed=int(executed.sum()),
        cost=summary(cost[executed]),
        tokens=summary((input_tokens + output_tokens)[executed]),
        input_tokens=summary(input_tokens[executed]),
        output_tokens=summary(output_tokens[executed]),
        latency_ms=summary(latency_ms[executed]),
        total_cost=total,
        cost_per_correct=per_correct,
        judge_cost=None if judge_cost is None else float(judge_cost),
        reason=reason,
        attempts=spend.attempts,
        failed_attempts=spend.failed_attempts,
        spent=spend.cost,
        spent_on_failures=spend.failed_cost,
        spent_tokens=None
        if spend.input_tokens is None and spend.output_tokens is None
        else int((spend.input_tokens or 0) + (spend.output_tokens or 0)),
        saved=float(spend.saved),
        cached_attempts=spend.cached_attempts,
        unknown_cost_attempts=spend.unknown_cost,
    )


@dataclass(frozen=True)
class GroundingMetrics(Result):
    """How one arm's answers were grounded in the skill, over runs whose execution finished.

    Attributes:
        no_evidence: Share of answers citing no skill reference (None for an arm without a skill).
        low_confidence: Share of answers with a confidence below `threshold`, among answers that gave one.
        confidence_missing: Answers that gave no confidence.
        threshold: The low-confidence threshold.
        skill_read: Share of runs that opened a skill file or section (None without a skill).
        accuracy_when_read: Pass rate of graded runs that read the skill (runs pooled, Wilson).
        accuracy_when_not_read: Pass rate of graded runs that did not.
    """

    no_evidence: Rate
    low_confidence: Rate
    confidence_missing: int
    threshold: float
    skill_read: Rate
    accuracy_when_read: Estimate
    accuracy_when_not_read: Estimate


def grounding(
    has_skill: bool,
    executed: np.ndarray,
    evidence_cited: np.ndarray,
    confidence: np.ndarray,
    read_skill: np.ndarray,
    graded: np.ndarray,
    passed: np.ndarray,
    threshold: float,
    confidence_level: float,
    case_pos: np.ndarray | None = None,
) -> GroundingMetrics:
    """Grounding figures of one arm's runs (`case_pos`: each run's case, to count the cases behind the
    accuracy when the skill was read or not; without it each run counts as a case)."""
    n_exec = int(executed.sum())
    given = executed & ~np.isnan(confidence)
    low = int(np.count_nonzero(confidence[given] < threshold))
    if has_skill:
        no_evidence = rate(int(np.count_nonzero(executed & ~evidence_cited)), n_exec, confidence_level)
        read = rate(int(np.count_nonzero(executed & read_skill)), n_exec, confidence_level)
    else:
        no_evidence = no_rate("the arm has no skill to cite")
        read = no_rate("the arm has no skill to read")
    split = []
    for mask in (graded & read_skill, graded & ~read_skill):
        k, n = int(passed[mask].sum()), int(mask.sum())
        if n:
            # Runs pooled over rounds (a case's rounds may fall on both sides of the split): n runs, from
            # how many cases they came.
            interval = wilson_interval(k, n, confidence_level)
            cases = n if case_pos is None else int(np.unique(case_pos[mask]).size)
            split.append(Estimate(k / n, interval, None, "wilson over runs", cases, n, None))
        else:
            split.append(_none_estimate())
    if n_exec and not has_skill:
        split[0] = _none_estimate("the arm has no skill to read")
    return GroundingMetrics(
        no_evidence=no_evidence,
        low_confidence=rate(low, int(given.sum()), confidence_level, "no answer gave a confidence"),
        confidence_missing=int(n_exec - given.sum()),
        threshold=float(threshold),
        skill_read=read,
        accuracy_when_read=split[0],
        accuracy_when_not_read=split[1],
    )


def _none_estimate(reason: str = "no graded run in this group") -> Estimate:
    return Estimate(None, None, None, "none", 0, 0, None, reason)
