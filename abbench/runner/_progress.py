"""Progress of a running experiment, and the one observer interface every view subscribes through."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from abbench._result import Result
from abbench.runner._halt import HaltReason
from abbench.runner._pause import PauseReason
from abbench.runner._queued import QueuedWork
from abbench.runner._stopping import StopReason
from abbench.types import ExperimentStatus, RunOutcome, RunState

log = logging.getLogger(__name__)

DONE_STATES = (RunState.PASS, RunState.FAIL)
"""States a run is done in. A cancelled run is not done — nobody answered it — and is counted apart."""

_FAIL, _PASS = RunState.FAIL, RunState.PASS
"""Bound once: the tracker counts every transition, and an enum member lookup costs more than the count."""
_NO_VERDICT = (RunOutcome.EXECUTION_FAILED, RunOutcome.GRADING_FAILED, RunOutcome.SCORED)
"""The outcomes of finished runs without a verdict, which the tracker counts run by run."""


@dataclass(frozen=True)
class ArmProgress:
    """Counts of one arm's runs by state, and of its finished runs that got no verdict.

    `errors` counts ``execution_failed`` and ``grading_failed`` (runs in ``fail``; the rest of ``fail``
    is graded wrong) and ``scored`` (runs in ``pass`` with a score and no verdict; the rest of ``pass``
    is graded right; see `abbench.types.run_outcome`). `wrong_by` counts, per deciding grader, the
    wrong runs it said failed: which grader made the runs wrong (a run two graders failed counts under
    both, so the counts may add up to more than `wrong`; advisory graders never decide, never count).
    """

    arm: str
    counts: dict[str, int]
    errors: dict[str, int] = field(default_factory=dict)
    wrong_by: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """All runs of the arm."""
        return sum(self.counts.values())

    @property
    def done(self) -> int:
        """Runs that reached pass or fail (cancelled runs are not done: see `cancelled`)."""
        return sum(self.counts.get(s.value, 0) for s in DONE_STATES)

    @property
    def cancelled(self) -> int:
        """Runs cancelled before they were done."""
        return self.counts.get(RunState.CANCELLED.value, 0)

    @property
    def failed(self) -> int:
        """Runs that failed (execution or grading): no verdict, not a wrong answer."""
        return self.execution_failed + self.grading_failed

    @property
    def right(self) -> int:
        """Runs graded right (state ``pass`` with a verdict)."""
        return self.counts.get(RunState.PASS, 0) - self.scored

    @property
    def scored(self) -> int:
        """Runs graded with a score and no verdict (state ``pass``): neither right nor wrong."""
        return self.errors.get(RunOutcome.SCORED, 0)

    @property
    def wrong(self) -> int:
        """Runs graded wrong (state ``fail`` with a verdict)."""
        return self.counts.get(RunState.FAIL, 0) - self.failed

    @property
    def execution_failed(self) -> int:
        """Runs whose agent gave no usable answer."""
        return self.errors.get(RunOutcome.EXECUTION_FAILED, 0)

    @property
    def grading_failed(self) -> int:
        """Runs with an answer that no grader reached a verdict on."""
        return self.errors.get(RunOutcome.GRADING_FAILED, 0)

    def outcomes(self) -> dict[str, int]:
        """Runs per outcome key (`abbench.types.OUTCOME_WORDS`): pass, fail, execution_failed, ..."""
        out = {k: v for k, v in self.counts.items() if k != RunState.FAIL}
        out.update(
            fail=self.wrong, execution_failed=self.execution_failed, grading_failed=self.grading_failed
        )
        if self.scored:
            out[RunState.PASS], out[RunOutcome.SCORED] = self.right, self.scored
        return out

    @classmethod
    def from_outcomes(
        cls,
        arm: str,
        counts: Mapping[str, int],
        outcomes: Mapping[str, int],
        wrong_by: Mapping[str, int] | None = None,
    ) -> ArmProgress:
        """The arm whose runs per state are `counts` and per outcome `outcomes` (what `outcomes()` gives)."""
        errors = {k: int(outcomes.get(k) or 0) for k in _NO_VERDICT}
        return cls(
            arm,
            {k: int(v) for k, v in counts.items()},
            {k: v for k, v in errors.items() if v},
            {str(k): int(v) for k, v in (wrong_by or {}).items() if v},
        )

    @property
    def running(self) -> int:
        """Runs executing or being graded now."""
        return sum(self.counts.get(s, 0) for s in (RunState.RUNNING, RunState.EVALUATING))

    @property
    def pending(self) -> int:
        """Runs not started, or executed and waiting for grading."""
        return self.counts.get(RunState.PENDING, 0) + self.counts.get(RunState.EXECUTED, 0)


@dataclass(frozen=True)
class Progress(Result):
    """Where an experiment stands: counts per arm and state, throughput and time left.

    Attributes:
        experiment: The experiment's name.
        experiment_id: Its id.
        status: running, paused, cancelled, finished or interrupted.
        arms: Per-arm counts.
        elapsed_s: Time since this run started.
        throughput: Runs finished per second over the last ~10 seconds.
        eta_s: Seconds until every run is done at that throughput (None when unknown or paused).
        pairs_total: Pairs a pairwise judge has to judge in this pass (0 until the runs are done:
            pairs are judged after both arms' runs are in).
        pairs_done: Of those, pairs judged or failed so far.
        pause_reason: Why the runner paused by itself (``budget reached``, with the figures); None
            when it was not (a person's pause has no reason to show).
        notes: Warnings to show beside the status (a cost budget over runs of unknown cost).
        stop_reason: Where the stopping rule decided (``decided after 120 of 500 cases: better …``);
            None while it has not (or without ``stopping:``).
        halt_reason: Why an interrupted experiment stopped (stopped on purpose, its server stopped,
            killed, an error: `HaltReason`); None while it runs or once it is done.
        queued: Work a server's pool accepted and no process has started yet (waiting for a runner,
            or not started by a restarted server, with why: `QueuedWork`); None otherwise.
    """

    experiment: str
    experiment_id: int
    status: str
    arms: tuple[ArmProgress, ...]
    elapsed_s: float = 0.0
    throughput: float = 0.0
    eta_s: float | None = None
    at: float = field(default_factory=time.time)
    pairs_total: int = 0
    pairs_done: int = 0
    pause_reason: PauseReason | None = None
    notes: tuple[str, ...] = ()
    stop_reason: StopReason | None = None
    halt_reason: HaltReason | None = None
    queued: QueuedWork | None = None

    _keys = """experiment experiment_id status total done cancelled failed right wrong wrong_by execution_failed
        grading_failed scored running pending throughput eta_s elapsed_s arms arm_outcomes arm_wrong_by pairs_total
        pairs_done status_text pause_reason stop_reason halt_reason queued notes"""

    @property
    def status_text(self) -> str:
        """The status in words, with its reason: ``paused: budget reached — $5.02 of $5.00 spent, …``,
        ``finished: decided after 120 of 500 cases: better (…)``, ``interrupted: stopped on purpose
        (SIGTERM to abbench, pid 4242 …)``, ``created: queued on a server (…) for its remaining runs:
        waiting for a free runner``."""
        if self.queued is not None:  # newer than any halt: someone asked a server to go on since
            return f"{self.status}: {self.queued.text}"
        if self.pause_reason is not None and self.status == ExperimentStatus.PAUSED:
            return f"paused: {self.pause_reason.text}"
        if self.halt_reason is not None and self.status == ExperimentStatus.INTERRUPTED:
            return f"interrupted: {self.halt_reason.text}"
        if self.stop_reason is not None:
            return f"{self.status}: {self.stop_reason.text}"
        return self.status

    @property
    def total(self) -> int:
        """All runs."""
        return sum(a.total for a in self.arms)

    @property
    def done(self) -> int:
        """Runs in pass or fail (not the cancelled ones)."""
        return sum(a.done for a in self.arms)

    @property
    def cancelled(self) -> int:
        """Cancelled runs."""
        return sum(a.cancelled for a in self.arms)

    @property
    def failed(self) -> int:
        """Runs that failed to execute or to be graded (no verdict; wrong answers are `wrong`)."""
        return sum(a.failed for a in self.arms)

    @property
    def right(self) -> int:
        """Runs graded right."""
        return sum(a.right for a in self.arms)

    @property
    def wrong(self) -> int:
        """Runs graded wrong."""
        return sum(a.wrong for a in self.arms)

    @property
    def wrong_by(self) -> dict[str, int]:
        """Per deciding grader, the wrong runs it said failed, over all arms (`ArmProgress.wrong_by`), the
        grader that failed most first: ``{"cited_evidence": 40, "label_match": 3}``."""
        out: dict[str, int] = {}
        for a in self.arms:
            for grader, n in a.wrong_by.items():
                out[grader] = out.get(grader, 0) + n
        return by_count(out)

    @property
    def execution_failed(self) -> int:
        """Runs whose agent gave no usable answer."""
        return sum(a.execution_failed for a in self.arms)

    @property
    def grading_failed(self) -> int:
        """Runs that no grader reached a verdict on."""
        return sum(a.grading_failed for a in self.arms)

    @property
    def scored(self) -> int:
        """Runs graded with a score and no verdict (neither right nor wrong)."""
        return sum(a.scored for a in self.arms)

    @property
    def running(self) -> int:
        """Runs in flight."""
        return sum(a.running for a in self.arms)

    @property
    def pending(self) -> int:
        """Runs still to do."""
        return sum(a.pending for a in self.arms)

    @property
    def fraction(self) -> float:
        """Share of runs done, 0..1 (a cancelled experiment stays short of 1)."""
        return self.done / self.total if self.total else 1.0

    def counts(self) -> dict[str, int]:
        """Runs per state over all arms."""
        out: dict[str, int] = {s.value: 0 for s in RunState}
        for a in self.arms:
            for k, v in a.counts.items():
                out[k] = out.get(k, 0) + v
        return out

    @property
    def arm_outcomes(self) -> dict[str, dict[str, int]]:
        """Each arm's runs by outcome (`ArmProgress.outcomes`)."""
        return {a.arm: a.outcomes() for a in self.arms}

    @property
    def arm_wrong_by(self) -> dict[str, dict[str, int]]:
        """Each arm's wrong runs per grader that failed them (`ArmProgress.wrong_by`)."""
        return {a.arm: by_count(a.wrong_by) for a in self.arms}

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (`_keys`): times rounded, each arm's counts by state under its name."""
        return Result.as_dict(self) | {
            "throughput": round(self.throughput, 3),
            "eta_s": None if self.eta_s is None else round(self.eta_s, 1),
            "elapsed_s": round(self.elapsed_s, 3),
            "arms": {a.arm: dict(a.counts) for a in self.arms},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Progress:
        """The progress `as_dict` gave (over HTTP: ``GET /api/experiments/{id}``'s ``progress``).

        The totals are derived again from the arms' counts, so they agree with them by construction.
        """
        outcomes = data.get("arm_outcomes") or {}
        wrong_by = data.get("arm_wrong_by") or {}
        arms = tuple(
            ArmProgress.from_outcomes(arm, counts, outcomes.get(arm) or {}, wrong_by.get(arm))
            for arm, counts in (data.get("arms") or {}).items()
        )
        return cls(
            experiment=str(data["experiment"]),
            experiment_id=int(data["experiment_id"]),
            status=str(data["status"]),
            arms=arms,
            elapsed_s=float(data.get("elapsed_s") or 0.0),
            throughput=float(data.get("throughput") or 0.0),
            eta_s=data.get("eta_s"),
            pairs_total=int(data.get("pairs_total") or 0),
            pairs_done=int(data.get("pairs_done") or 0),
            pause_reason=PauseReason.from_dict(data.get("pause_reason")),
            notes=tuple(data.get("notes") or ()),
            stop_reason=StopReason.from_dict(data.get("stop_reason")),
            halt_reason=HaltReason.from_dict(data.get("halt_reason")),
            queued=QueuedWork.from_dict(data.get("queued")),
        )


def by_count(counts: Mapping[str, int]) -> dict[str, int]:
    """`counts` without zeros, the largest first (ties by name)."""
    return {k: n for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n}


@runtime_checkable
class Observer(Protocol):
    """Receives progress while an experiment runs (CLI progress bar, widget, log)."""

    def on_progress(self, progress: Progress) -> None:
        """Called at most every `interval` seconds while runs move, and once at the end."""
        ...


class Tracker:
    """Keeps the counts in memory as the scheduler moves runs, and tells observers (throttled)."""

    def __init__(
        self,
        experiment: str,
        experiment_id: int,
        counts: dict[str, dict[str, int]],
        arm_names: dict[int, str],
        observers: list[Observer],
        interval: float = 0.2,
        errors: dict[int, tuple[str, str]] | None = None,
    ):
        self.experiment = experiment
        self.experiment_id = experiment_id
        self._arm_counts: dict[int, dict[str, int]] = {}  # arm id -> its dict of `counts`, looked up once
        self.counts = {arm: dict(c) for arm, c in counts.items()}
        self.arm_names = arm_names
        self.observers = observers
        self.interval = interval
        self.status: str = ExperimentStatus.RUNNING  # or a phase: Phase.CANCELLING
        self.pause_reason: PauseReason | None = None
        self.stop_reason: StopReason | None = None
        self.notes: tuple[str, ...] = ()
        self.started = time.monotonic()
        self._last_emit = 0.0
        self._finished: deque[tuple[float, int]] = deque()
        self._done_count = 0
        self.pairs_total = 0
        self.pairs_done = 0
        self.errors: dict[
            int, tuple[str, str]
        ] = {}  # run id -> (arm, kind) of the finished runs without a verdict
        self.error_counts: dict[str, dict[str, int]] = {}  # arm -> kind -> runs
        self.set_errors(errors or {})
        self.wrong: dict[int, tuple[str, tuple[str, ...]]] = {}  # run id -> (arm, graders) of wrong runs
        self.wrong_counts: dict[str, dict[str, int]] = {}  # arm -> grader -> wrong runs it failed

    @property
    def counts(self) -> dict[str, dict[str, int]]:
        """Arm name -> state -> runs."""
        return self._counts

    @counts.setter
    def counts(self, counts: dict[str, dict[str, int]]) -> None:
        self._counts = counts
        self._arm_counts = {}

    def set_errors(self, errors: dict[int, tuple[str, str]]) -> None:
        """Start from these finished runs without a verdict (``{run id: (arm, kind)}``, from the store)."""
        self.errors, self.error_counts = {}, {}
        for run_id, (arm, kind) in errors.items():
            self._add_error(run_id, arm, kind)

    def set_wrong(self, wrong: Mapping[int, tuple[str, tuple[str, ...]]]) -> None:
        """Start from these wrong runs (``{run id: (arm, graders that failed it)}``, from the store)."""
        self.wrong, self.wrong_counts = {}, {}
        for run_id, (arm, graders) in wrong.items():
            self._add_wrong(run_id, arm, graders)

    def _add_wrong(self, run_id: int, arm: str, graders: tuple[str, ...]) -> None:
        self.wrong[run_id] = (arm, graders)
        per_arm = self.wrong_counts.setdefault(arm, {})
        for grader in graders:
            per_arm[grader] = per_arm.get(grader, 0) + 1

    def _drop_wrong(self, run_id: int) -> None:
        arm, graders = self.wrong.pop(run_id)
        per_arm = self.wrong_counts[arm]
        for grader in graders:
            per_arm[grader] -= 1

    def _add_error(self, run_id: int, arm: str, kind: str) -> None:
        self.errors[run_id] = (arm, kind)
        per_arm = self.error_counts.setdefault(arm, {})
        per_arm[kind] = per_arm.get(kind, 0) + 1

    def move(
        self,
        arm_id: int,
        from_state: str | None,
        to_state: str,
        run_id: int | None = None,
        outcome: str = "",
        wrong_by: tuple[str, ...] = (),
    ) -> None:
        """Count one run moving between states (`outcome`: its `run_outcome` key when it lands in fail;
        `wrong_by`: when it lands there wrong, the graders that said so)."""
        c = self._arm_counts.get(arm_id)
        if c is None:
            c = self._arm_counts[arm_id] = self.counts[self.arm_names[arm_id]]
        if from_state is not None:
            c[from_state] -= 1
        c[to_state] = c.get(to_state, 0) + 1
        if run_id is not None:
            if self.errors:
                was = self.errors.pop(run_id, None)
                if was is not None:
                    self.error_counts[was[0]][was[1]] -= 1
            if outcome in _NO_VERDICT and to_state in (_FAIL, _PASS):
                self._add_error(run_id, self.arm_names[arm_id], outcome)
            if self.wrong and run_id in self.wrong:  # re-graded or re-run: no longer wrong for that reason
                self._drop_wrong(run_id)
            if wrong_by:
                self._add_wrong(run_id, self.arm_names[arm_id], wrong_by)
        if to_state in DONE_STATES:
            self._done_count += 1
        if self.observers:
            self.maybe_emit()

    def bulk(self, arm_id: int, from_state: str, to_state: str, n: int) -> None:
        """Count `n` runs moving at once."""
        c = self.counts[self.arm_names[arm_id]]
        c[from_state] -= n
        c[to_state] = c.get(to_state, 0) + n

    def snapshot(self) -> Progress:
        """The progress now."""
        now = time.monotonic()
        self._finished.append((now, self._done_count))
        while len(self._finished) > 2 and now - self._finished[0][0] > 10:
            self._finished.popleft()
        t0, n0 = self._finished[0]
        rate = (self._done_count - n0) / (now - t0) if now - t0 > 0.2 else 0.0
        if rate == 0 and now - self.started > 0.2:
            rate = self._done_count / (now - self.started)
        arms = tuple(
            ArmProgress(
                a, dict(c), dict(self.error_counts.get(a, {})), by_count(self.wrong_counts.get(a, {}))
            )
            for a, c in self.counts.items()
        )
        left = sum(a.total - a.done - a.cancelled for a in arms)  # cancelled runs will not run
        eta = (
            left / rate
            if rate > 0 and self.status == ExperimentStatus.RUNNING
            else (0.0 if left == 0 else None)
        )
        return Progress(
            self.experiment,
            self.experiment_id,
            self.status,
            arms,
            now - self.started,
            rate,
            eta,
            pairs_total=self.pairs_total,
            pairs_done=self.pairs_done,
            pause_reason=self.pause_reason,
            stop_reason=self.stop_reason,
            notes=self.notes,
        )

    def maybe_emit(self, force: bool = False) -> None:
        """Tell the observers, unless they were told less than `interval` ago."""
        if not self.observers:
            return
        now = time.monotonic()
        if not force and now - self._last_emit < self.interval:
            return
        self._last_emit = now
        progress = self.snapshot()
        for obs in self.observers:
            try:
                obs.on_progress(progress)
            except Exception:  # a broken view must not stop the run
                log.exception("progress observer %r failed", obs)
