"""Sequential stopping inside a runner pass: cases in a seeded order, an anytime-valid look every few cases.

With ``stopping:`` in the definition the scheduler runs the cases in `abbench.stats.sequential_order`
(all arms and rounds of a case together). `Stopping` counts each case's runs as they finish; the longest
finished prefix of the order is fed to an anytime-valid confidence sequence on the decision pair's
per-case pass rates (`abbench.stats.SequentialTest`), and the rule (`abbench.stats.StoppingRule`) looks
after every ``check_every`` cases. Once it decides, no new run starts; the runs left are cancelled with
the rule's reason (stopped by rule, not failed) and the reason is stored on the experiment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from abbench.runner._reason import StoredReason
from abbench.store import Experiment, Store, WorkItem
from abbench.types import RunState

if TYPE_CHECKING:
    from abbench.stats import ConfidenceSequence

STOPPED_BY_RULE = "stopped by rule"
"""The reason a stopped experiment carries, and what the runs it left out say."""


@dataclass(frozen=True)
class StopReason(StoredReason):
    """Why (and where) the stopping rule ended an experiment, with the figures every view shows.

    Attributes:
        decision: ``better``, ``worse``, ``equivalent`` (B − A inside ±margin) or ``undecided`` (it ran
            every case without deciding).
        cases: Cases the decision rests on (the finished prefix of the seeded order).
        total: Cases of the experiment.
        baseline: The pair's baseline arm (A).
        candidate: Its candidate arm (B).
        difference: B − A over those cases.
        low: The anytime-valid interval's lower bound.
        high: Its upper bound.
        p_value: The anytime-valid p-value against no difference.
        alpha: The rule's level.
        margin: Its equivalence margin.
        seed: The seed of the case order.
        reason: `STOPPED_BY_RULE`.
        skipped: Arm → runs the rule left out (cancelled, not needed once it decided).
    """

    decision: str
    cases: int
    total: int
    baseline: str
    candidate: str
    difference: float
    low: float
    high: float
    p_value: float
    alpha: float
    margin: float
    seed: int
    reason: str = STOPPED_BY_RULE
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def saved(self) -> int:
        """Cases not run."""
        return self.total - self.cases

    @property
    def text(self) -> str:
        """``decided after 120 of 500 cases: better (v2 − v1 +6.0 points, anytime-valid 95% [+1.2, +10.9], p = 0.004)``."""
        head = (
            f"decided after {self.cases:,} of {self.total:,} cases"
            if self.decision != "undecided"
            else f"undecided after all {self.cases:,} of {self.total:,} cases"
        )
        figures = (
            f"{self.candidate} − {self.baseline} {100 * self.difference:+.1f} points, anytime-valid "
            f"{1 - self.alpha:.0%} [{100 * self.low:+.1f}, {100 * self.high:+.1f}], p = {self.p_value:.3g}"
        )
        return f"{head}: {self.decision} ({figures})"


def stopping_pair(exp: Experiment) -> tuple[int, int]:
    """The arm ids the rule decides on: the definition's ``decision:`` pair, else the first two arms."""
    decision = exp.spec.decision
    if decision is not None and decision.baseline is not None and decision.candidate is not None:
        return exp.arm(decision.baseline).id, exp.arm(decision.candidate).id
    return exp.arms[0].id, exp.arms[1].id


class Stopping:
    """The stopping rule of one runner pass: orders the work, counts finished cases, looks, stops.

    Args:
        store: The open store (read once, at the start: what earlier passes finished).
        experiment: The experiment, whose definition has ``stopping:``.
        items: The work of this pass.
        stop: Called once when the rule decides (the scheduler then starts no new run).
    """

    def __init__(
        self, store: Store, experiment: Experiment, items: list[WorkItem], stop: Callable[[], None]
    ) -> None:
        # imported here: only an experiment with a stopping rule needs numpy and scipy (start-up stays fast)
        from abbench.stats import SequentialTest, StoppingRule, sequential_order

        spec = experiment.spec.stopping
        assert spec is not None
        self.rule = StoppingRule(spec.alpha, spec.margin, spec.min_cases, spec.check_every)
        self.seed = int(experiment.spec.seed)
        self.arm_a, self.arm_b = stopping_pair(experiment)
        self.names = {a.id: a.name for a in experiment.arms}
        self._stop = stop
        outcomes = store.runs.case_outcomes(experiment.id, scores=False)
        self.order = sequential_order(outcomes.case_idx, self.seed)
        self.rank = {int(c): i for i, c in enumerate(self.order.tolist())}
        self.total = int(self.order.size)
        # case -> arm -> [passed, graded], from what is stored, then counted as runs finish
        self.counts: dict[int, dict[int, list[int]]] = {}
        for arm, case, passed, graded in zip(
            outcomes.arm_id.tolist(), outcomes.case_idx.tolist(), outcomes.passed.tolist(),
            outcomes.graded.tolist(), strict=True,
        ):  # fmt: skip
            if arm in (self.arm_a, self.arm_b):
                self.counts.setdefault(case, {})[arm] = [passed, graded]
        self.left: dict[int, int] = {}  # case -> runs of this pass not finished yet
        for item in items:
            self.left[item.case_idx] = self.left.get(item.case_idx, 0) + 1
        self._counted: set[int] = set()
        self.test = SequentialTest(self.rule.alpha)
        self.fed = 0  # cases fed to the sequence
        self.looked = 0  # prefix cases passed (fed or left out: no graded run in an arm)
        self._buffer: tuple[list[float], list[float]] = ([], [])
        self.last: ConfidenceSequence | None = None
        self.reason: StopReason | None = None
        self.ahead = max(self.rule.check_every, int(experiment.spec.concurrency))
        self.moved = asyncio.Event()  # set (and replaced) whenever the finished prefix grows

    def ordered(self, items: list[WorkItem]) -> list[WorkItem]:
        """The work in the seeded case order, a case's arms and rounds together."""
        rank, end = self.rank, self.total
        return sorted(items, key=lambda i: (rank.get(i.case_idx, end), i.round, i.arm_id))

    def may_start(self, item: WorkItem) -> bool:
        """Whether `item`'s case lies within `ahead` cases of the finished prefix: the runner starts
        nothing further ahead, so a slow case holds the others back instead of letting the whole
        queue run before the rule can look (and the saving is lost)."""
        return self.rank.get(item.case_idx, 0) < self.looked + self.ahead

    def wake(self) -> None:
        """Wake every worker waiting for the prefix to grow."""
        self.moved.set()
        self.moved = asyncio.Event()

    def finished(self, item: WorkItem, to_state: str, outcome: str) -> None:
        """Count one run of this pass reaching pass, fail or cancelled; look when a checkpoint is reached."""
        if item.run_id in self._counted or self.reason is not None:
            return
        self._counted.add(item.run_id)
        if item.arm_id in (self.arm_a, self.arm_b):
            tally = self.counts.setdefault(item.case_idx, {}).setdefault(item.arm_id, [0, 0])
            if to_state == RunState.PASS:
                tally[0] += 1
                tally[1] += 1
            elif to_state == RunState.FAIL and outcome == "fail":
                tally[1] += 1
        self.left[item.case_idx] = self.left.get(item.case_idx, 1) - 1
        self.advance()
        self.wake()  # a run less in flight: a worker held back may start now

    def advance(self) -> None:
        """Feed the finished prefix of the order, looking at every checkpoint, until it decides or waits."""
        order, left = self.order, self.left
        while self.reason is None and self.looked < self.total:
            case = int(order[self.looked])
            if left.get(case, 0) > 0:
                return
            self.looked += 1
            per_arm = self.counts.get(case, {})
            a, b = per_arm.get(self.arm_a, (0, 0)), per_arm.get(self.arm_b, (0, 0))
            if a[1] and b[1]:  # paired: graded in both arms (as a comparison pairs them)
                self._buffer[0].append(a[0] / a[1])
                self._buffer[1].append(b[0] / b[1])
            n = self.fed + len(self._buffer[0])
            if self.rule.looks(n, self.total) or self.looked == self.total:
                self._look(n)

    def _look(self, n: int) -> None:
        import numpy as np

        buf_a, buf_b = self._buffer
        cs = self.test.update(np.asarray(buf_a), np.asarray(buf_b))
        self._buffer = ([], [])
        self.fed = n
        self.last = cs
        if n == 0:
            return
        decision = self.rule.decide(cs, self.total)
        if decision is None and self.looked == self.total:
            decision = cs.decide(self.rule.margin)
        if decision is None:
            return
        self.reason = self._reason(cs, decision)
        if self.looked < self.total:
            self._stop()

    def _reason(self, cs: ConfidenceSequence, decision: str) -> StopReason:
        iv = cs.interval
        return StopReason(
            decision, self.looked, self.total, self.names[self.arm_a], self.names[self.arm_b],
            cs.difference, iv.low, iv.high, cs.p_value, self.rule.alpha, self.rule.margin, self.seed,
        )  # fmt: skip

    @property
    def stopped(self) -> bool:
        """Whether the rule decided before the last case."""
        return self.reason is not None and self.reason.cases < self.total
