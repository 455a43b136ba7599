"""Coverage: on how many of the planned runs of the pair a decision rests, and whether that is enough."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from abbench.errors import UsageError
from abbench.metrics import ArmMetrics, Result

FULL = 1.0
"""The default `min_coverage`: every planned run of the pair graded."""


@dataclass(frozen=True)
class ArmCoverage(Result):
    """One arm's planned runs and what became of them.

    Attributes:
        arm: The arm (``experiment/arm`` across experiments).
        planned: Runs planned (case × round).
        decided: Runs with a verdict (graded right or wrong; when the graders only score, graded with a
            score): what the decision rests on.
        cancelled: Cancelled runs.
        unfinished: Pending, running or waiting for grading.
        execution_failed: Runs the agent could not answer (re-run them).
        grading_failed: Runs no grader reached a verdict on (re-grade them).
        share: ``decided / planned`` (0 when nothing is planned).
        scored: Runs graded with a score and no verdict, beside verdicts the decision rests on.
    """

    arm: str
    planned: int
    decided: int
    cancelled: int
    unfinished: int
    execution_failed: int
    grading_failed: int
    share: float
    scored: int = 0

    @property
    def gap(self) -> str:
        """What the runs not decided on are: ``741 cancelled, 3 execution failed`` (empty when none)."""
        parts = [
            (self.cancelled, "cancelled"),
            (self.unfinished, "not finished"),
            (self.execution_failed, "execution failed"),
            (self.grading_failed, "grading failed"),
            (self.scored, "scored without a verdict"),
        ]
        return ", ".join(f"{n:,} {word}" for n, word in parts if n)


@dataclass(frozen=True)
class Coverage(Result):
    """On how many planned runs of the pair the decision rests.

    Attributes:
        arms: The baseline's (when there is one) and the candidate's coverage.
        required: The share of planned runs per arm that must be decided on (`min_coverage`; 1.0 = all).
        share: The lowest share over the arms.
        complete: Whether every arm reaches `required` (and something is planned).
        text: ``decided on 462 of 1,203 runs per arm``, said first in every view.
        gap: What the undecided runs are, per arm (empty when complete).
    """

    arms: tuple[ArmCoverage, ...]
    required: float
    share: float
    complete: bool
    text: str
    gap: str

    @property
    def required_text(self) -> str:
        """``every planned run`` or ``95% of the planned runs``."""
        return "every planned run" if self.required >= FULL else f"{self.required:.0%} of the planned runs"


def check_min_coverage(value: object, where: str) -> float:
    """A `min_coverage` as a share in (0, 1].

    Raises:
        UsageError: not a number in (0, 1] (the message says where it was written).
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise UsageError(
            f"{where}: min_coverage is the share of planned runs per arm a decision needs, a number above 0 "
            f"and at most 1 (0.95 = 95%); got {value!r}"
        )
    return float(value)


def _arm(name: str, m: ArmMetrics, not_needed: int = 0) -> ArmCoverage:
    c = m.counts
    by_score = m.accuracy.value is None and m.score is not None  # graders that only score: scores decide
    decided = c.passed + c.failed + (c.scored if by_score else 0)
    planned = c.runs - not_needed
    return ArmCoverage(
        name,
        planned,
        decided,
        c.cancelled - not_needed,
        c.unfinished,
        c.execution_failed,
        c.grading_failed,
        min(1.0, decided / planned) if planned > 0 else 0.0,
        0 if by_score else c.scored,
    )


def coverage(
    arms: Sequence[tuple[str, ArmMetrics]],
    required: float = FULL,
    not_needed: Mapping[str, int] | None = None,
) -> Coverage:
    """The coverage of a decision on these arms (baseline first): how many planned runs were decided on.

    `not_needed` (arm → runs) are the runs an experiment's stopping rule left out once it decided: they
    are not planned any more, so an experiment stopped by its rule is complete on the runs it needed.
    """
    skip = dict(not_needed or {})
    per = tuple(_arm(name, m, skip.get(name, 0)) for name, m in arms)
    share = min((a.share for a in per), default=0.0)
    planned = {a.planned for a in per}
    decided = {a.decided for a in per}
    if len(planned) == 1 and len(decided) == 1:
        text = f"decided on {per[0].decided:,} of {per[0].planned:,} runs" + (
            " per arm" if len(per) > 1 else ""
        )
    elif len(planned) == 1:
        text = (
            "decided on "
            + " and ".join(f"{a.decided:,} ({a.arm})" for a in per)
            + f" of {per[0].planned:,} runs per arm"
        )
    else:
        text = "decided on " + " and ".join(f"{a.decided:,} of {a.planned:,} runs of {a.arm}" for a in per)
    left_out = sorted({n for n in skip.values() if n})
    if left_out:
        text += f" (the stopping rule left out {' and '.join(f'{n:,}' for n in left_out)} runs per arm)"
    gap = "; ".join(f"{a.arm}: {a.gap}" for a in per if a.gap)
    complete = bool(per) and all(a.planned > 0 for a in per) and share >= required - 1e-12
    return Coverage(per, required, share, complete, text, gap)
