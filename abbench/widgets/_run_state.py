"""What the run widget shows of one experiment, read at once: its phase, counts, failures and the buttons.

Everything on screen — the chooser's label, the status line, the bars, the failures and which buttons
work — comes from one `ExperimentStanding`, so the widget never shows two states at once (a list saying
*finished* over a panel saying *paused*). A standing is read in one read transaction of the store
(`Store.reading`), whichever process runs the experiment, or taken from the run this kernel started.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from abbench.runner import Progress, experiment_status
from abbench.store import Experiment, RunRecord, Store
from abbench.types import Control, ExperimentStatus, Phase

ENDED = (ExperimentStatus.FINISHED, ExperimentStatus.CANCELLED, ExperimentStatus.INTERRUPTED)
"""Statuses in which no process is running the experiment."""
FAILURES_SHOWN = 50
"""Failed runs listed at most (the counts say how many there are)."""

PAUSABLE = (ExperimentStatus.RUNNING, Phase.RESUMING)
RESUMABLE = (ExperimentStatus.PAUSED, Phase.PAUSING, ExperimentStatus.INTERRUPTED, ExperimentStatus.CREATED)
CANCELLABLE = (
    ExperimentStatus.RUNNING,
    ExperimentStatus.PAUSED,
    Phase.PAUSING,
    Phase.RESUMING,
    ExperimentStatus.INTERRUPTED,
    ExperimentStatus.CREATED,
)


@dataclass(frozen=True)
class Buttons:
    """Which of the run widget's buttons work now (all off when no experiment is shown)."""

    pause: bool = False
    resume: bool = False
    cancel: bool = False
    clone: bool = False
    rerun: bool = False
    regrade: bool = False
    rerun_cancelled: bool = False

    def as_dict(self) -> dict[str, bool]:
        """Button name → whether it works."""
        return asdict(self)


@dataclass(frozen=True)
class Failures:
    """Runs that got no verdict: how many of each kind, and the first ones to list."""

    execution: int = 0
    grading: int = 0
    shown: tuple[RunRecord, ...] = ()

    @property
    def total(self) -> int:
        """Execution plus grading failures."""
        return self.execution + self.grading


@dataclass(frozen=True)
class ExperimentStanding:
    """One experiment as it stands at one moment.

    Attributes:
        experiment: The experiment, read with the progress (its control says what was asked).
        progress: Its counts and status.
        failures: Its failures (read with the progress).
        own: Whether the run is the one this kernel started (its progress comes from the runner).
    """

    experiment: Experiment
    progress: Progress
    failures: Failures = field(default_factory=Failures)
    own: bool = False

    @property
    def phase(self) -> str:
        """The status as people read it: ``running``, ``pausing`` (asked, runs in flight finishing),
        ``paused``, ``resuming``, ``cancelling``, ``cancelled``, ``finished``, ``interrupted`` or ``created``.

        A pause, resume or cancel asked from any process shows at once, before the runner has
        answered it (within a second).
        """
        status = self.progress.status
        if self.own:
            return status  # the runner's own tracker says paused / cancelling as it acts
        control = self.experiment.control
        if control == Control.CANCEL and status in (ExperimentStatus.RUNNING, ExperimentStatus.PAUSED):
            return Phase.CANCELLING
        if control == Control.PAUSE and status == ExperimentStatus.RUNNING:
            return Phase.PAUSING
        if (
            control == Control.RUN
            and status == ExperimentStatus.PAUSED
            and self.progress.pause_reason is None
        ):
            return Phase.RESUMING  # asked to go on; a runner that paused itself (a budget reached) is not
        return status

    @property
    def ended(self) -> bool:
        """Whether nobody runs it now (finished, cancelled or interrupted)."""
        return self.phase in ENDED

    def enabled(self) -> Buttons:
        """Which buttons work now: pause, resume, cancel, clone, rerun, regrade, rerun_cancelled (run
        the cancelled runs: once nobody runs the experiment)."""
        phase = self.phase
        return Buttons(
            pause=phase in PAUSABLE,
            resume=phase in RESUMABLE,
            cancel=phase in CANCELLABLE,
            clone=True,
            rerun=bool(self.failures.execution) and phase in ENDED,
            regrade=bool(self.failures.grading) and phase in ENDED,
            rerun_cancelled=bool(self.progress.cancelled) and phase in ENDED,
        )

    @property
    def label(self) -> str:
        """The experiment's line in the chooser, with the phase shown in the panel."""
        return experiment_label(self.experiment, self.phase)

    def same_as(self, other: ExperimentStanding | None) -> bool:
        """Whether `other` shows the same thing (so nothing needs drawing again)."""
        return (
            other is not None
            and other.own == self.own
            and other.phase == self.phase
            and other.experiment.id == self.experiment.id
            and other.progress.status == self.progress.status
            and _counts(other.progress) == _counts(self.progress)
            and other.progress.pairs_done == self.progress.pairs_done
            and other.progress.pairs_total == self.progress.pairs_total
        )


def _counts(p: Progress) -> tuple[Any, ...]:
    return tuple((a.arm, tuple(sorted(a.counts.items())), tuple(sorted(a.errors.items()))) for a in p.arms)


def listed_status(exp: Experiment) -> str:
    """An experiment's status as the store says it, *interrupted* when its process is gone."""
    if exp.status in (ExperimentStatus.RUNNING, ExperimentStatus.PAUSED) and not exp.runner_alive:
        return ExperimentStatus.INTERRUPTED
    return exp.status


def experiment_label(exp: Experiment, status: str | None = None) -> str:
    """``#3 demo · finished · demo@ab12cd · 3 arms``: an experiment's line in the chooser."""
    status = status or listed_status(exp)
    arms = len(exp.arms)
    return f"#{exp.id} {exp.name} · {status} · {exp.dataset} · {arms} arm{'' if arms == 1 else 's'}"


def read_failures(store: Store, exp_id: int) -> Failures:
    """The experiment's execution and grading failures: counts, and the first `FAILURES_SHOWN` runs."""
    execution = store.runs.select(exp_id, execution_failed=True)
    grading = store.runs.select(exp_id, grading_failed=True)
    first = sorted({*execution, *grading})[:FAILURES_SHOWN]
    shown = tuple(store.runs.records(run_ids=first)) if first else ()
    return Failures(len(execution), len(grading), shown)


def read_standing(
    store: Store, exp_id: int, previous: ExperimentStanding | None = None
) -> ExperimentStanding:
    """The experiment as the store holds it now, read in one transaction.

    The failures are read again only when the counts moved since `previous` (listing them is the
    costly part on a large experiment).
    """
    with store.reading():
        exp = store.experiments.get(exp_id)
        progress = experiment_status(exp, store=store)
        snap = ExperimentStanding(exp, progress, previous.failures if previous is not None else Failures())
        if previous is None or previous.experiment.id != exp_id or not snap.same_as(previous):
            snap = ExperimentStanding(exp, progress, read_failures(store, exp_id))
    return snap
