"""What a retry takes up: the runs it executes again, and the grading failures it grades again instead."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from abbench.errors import ExperimentError
from abbench.store import Experiment, StoreLike, open_store


@dataclass(frozen=True)
class RetrySelection:
    """The runs a retry takes up, by what it does to each.

    Attributes:
        rerun: Runs to execute again (they go back to pending): execution failures, cancelled runs,
            disagreements, the cases named.
        regrade: Grading failures, to grade again from their stored executions: the agent's answer is
            kept, and paying for another agent run would not repair a grader.
    """

    rerun: tuple[int, ...]
    regrade: tuple[int, ...]

    @property
    def text(self) -> str:
        """``re-grading 3 grading failures from the stored answers (no agent run), re-running 5 runs``."""
        return self._said("re-grading", "re-running")

    @property
    def done_text(self) -> str:
        """`text` once done: ``re-graded 3 grading failures …, re-ran 5 runs``."""
        return self._said("re-graded", "re-ran")

    def _said(self, regrade: str, rerun: str) -> str:
        said = []
        if self.regrade:
            n = len(self.regrade)
            said.append(
                f"{regrade} {n:,} grading failure{'s' if n != 1 else ''} from the stored answers (no agent run)"
            )
        if self.rerun:
            n = len(self.rerun)
            said.append(f"{rerun} {n:,} run{'s' if n != 1 else ''}")
        return ", ".join(said) or "nothing to retry"


def select_retry(
    ref: int | str | Experiment,
    *,
    store: StoreLike = None,
    failed: bool = False,
    execution_failed: bool = False,
    grading_failed: bool = False,
    cancelled: bool = False,
    disagreements: bool = False,
    cases: Sequence[str] | None = None,
    arms: Sequence[str] | None = None,
) -> RetrySelection:
    """Which runs `retry_runs` would re-run and which it would re-grade (nothing is changed).

    `failed` is `execution_failed` and `grading_failed` together. Named `cases` (and `arms`) narrow
    the kinds asked for; named alone, every run of those cases runs again.

    Raises:
        ExperimentError: nothing was asked for, or nothing matches.
    """
    store = open_store(store)
    exp = store.experiments.get(ref)
    if not (failed or execution_failed or grading_failed or cancelled or disagreements or cases):
        raise ExperimentError(
            "say which runs to retry: failed (execution and grading failures), execution_failed, "
            "grading_failed, cancelled, disagreements and/or cases"
        )
    kinds = {
        "execution_failed": failed or execution_failed,
        "cancelled": cancelled,
        "disagreements": disagreements,
    }
    regrading = failed or grading_failed
    rerun: list[int] = []
    if any(kinds.values()) or not regrading:
        rerun = store.runs.select(exp.id, **kinds, cases=cases, arms=arms)
    regrade: list[int] = []
    if regrading:
        taken = set(rerun)
        regrade = [
            i
            for i in store.runs.select(exp.id, grading_failed=True, cases=cases, arms=arms)
            if i not in taken
        ]
    if not (rerun or regrade):
        raise ExperimentError(f"no run of {exp.name!r} matches; nothing to retry")
    return RetrySelection(tuple(rerun), tuple(regrade))
