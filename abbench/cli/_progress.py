"""How the commands that run or grade show their work: the progress bar, the summary, the failures."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from abbench.types import RunOutcome, RunState, outcome_word

if TYPE_CHECKING:
    from tqdm import tqdm

    from abbench.cli._backend import Backend
    from abbench.runner import PauseReason, Progress, RunSummary
    from abbench.store import Experiment

T = TypeVar("T")


class ProgressBar:
    """A tqdm progress bar fed by the runner's observer interface; a plain line per tenth when stderr is
    not a terminal (a CI log or a pipe would otherwise get every redraw of the bar)."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.bar: tqdm[Any] | None = None
        self._tenths = -1
        self._status = ""

    def on_progress(self, progress: Progress) -> None:
        if self.quiet:
            return
        arms = " ".join(f"{a.arm}:{a.done}/{a.total}" for a in progress.arms)
        pairs = f" pairs judged {progress.pairs_done}/{progress.pairs_total}" if progress.pairs_total else ""
        if not sys.stderr.isatty():
            self._line(progress, f"{outcome_counts(progress)} · {arms}{pairs}")
            return
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(
                total=progress.total, unit="run", desc=progress.experiment[:30], dynamic_ncols=True
            )
        self.bar.n = progress.done
        self.bar.set_postfix_str(
            f"{progress.status} {outcome_counts(progress, '=')} {arms}{pairs}", refresh=False
        )
        self.bar.refresh()

    def _line(self, progress: Progress, counts: str) -> None:
        """One line when the work passes a tenth or its status changes (the last line of a run that ends
        says how it ended, not "running"), none in between."""
        tenths = progress.done * 10 // progress.total if progress.total else 10
        if tenths <= self._tenths and progress.status == self._status:
            return
        self._tenths, self._status = tenths, progress.status
        share = f" ({progress.done / progress.total:.0%})" if progress.total else ""
        click.echo(
            f"{progress.experiment}: {progress.done:,} of {progress.total:,} runs{share}, {progress.status} — {counts}",
            err=True,
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@contextmanager
def progress_bar(quiet: bool) -> Iterator[ProgressBar]:
    """A `ProgressBar` for the work inside the block, closed however the block ends."""
    bar = ProgressBar(quiet)
    try:
        yield bar
    finally:
        bar.close()


def with_progress(quiet: bool, work: Callable[[list[Any]], T]) -> T:
    """`work(observers)` with a progress bar among the observers (none when `quiet`: the runner then
    never builds a progress snapshot for nobody)."""
    if quiet:
        return work([])
    with progress_bar(quiet) as bar:
        return work([bar])


def outcome_counts(p: Any, sep: str = " ") -> str:
    """``right 5 wrong 2 (by label_match 2)`` and, when there are any, the runs that got no verdict, in
    the words of `abbench.types.OUTCOME_WORDS` (a wrong answer is never called failed). The graders that
    made the wrong runs wrong are named: a grader that fails every run shows as the reason."""
    parts: list[tuple[str, int]] = [(RunState.PASS, p.right), (RunState.FAIL, p.wrong)]
    parts += [
        (k, n)
        for k, n in (
            (RunOutcome.SCORED, p.scored),
            (RunOutcome.EXECUTION_FAILED, p.execution_failed),
            (RunOutcome.GRADING_FAILED, p.grading_failed),
        )
        if n
    ]
    return " ".join(
        f"{outcome_word(k)}{sep}{n:,}" + (wrong_by_text(p.wrong_by, sep) if k == RunState.FAIL else "")
        for k, n in parts
    )


def wrong_by_text(wrong_by: dict[str, int], sep: str = " ", head: str = " (by ") -> str:
    """`` (by cited_evidence 40, label_match 3)``: the graders that said the wrong runs failed, the one
    that failed most first (a run two graders failed counts under both); empty when none did."""
    if not wrong_by:
        return ""
    return head + ", ".join(f"{grader}{sep}{n:,}" for grader, n in wrong_by.items()) + ")"


def print_budget(reason: PauseReason | None, notes: Sequence[str], handle: str) -> None:
    """The budget's pause (with the command that goes on) and its warnings, under a status line."""
    for note in notes:
        click.echo(f"warning: {note}")
    if reason is not None:
        click.echo(f"  raise the budget and go on: {reason.hint(handle).cli}")


def print_summary(summary: RunSummary, handle: str | None = None) -> None:
    """What a run, retry, regrade or grade did: the totals, then each arm's outcomes."""
    p = summary.progress
    click.echo(
        f"{summary.experiment} (#{summary.experiment_id}): {summary.status_text} in {summary.elapsed_s:.1f} s — "
        f"executed {summary.executed}, graded {summary.graded}, "
        f"{outcome_word(RunOutcome.EXECUTION_FAILED)} {summary.execution_failed}, "
        f"{outcome_word(RunOutcome.GRADING_FAILED)} {summary.grading_failed}, cancelled {summary.cancelled}"
    )
    for arm in p.arms:
        c = arm.counts
        rest = [
            (RunOutcome.SCORED, arm.scored),
            (RunOutcome.EXECUTION_FAILED, arm.execution_failed),
            (RunOutcome.GRADING_FAILED, arm.grading_failed),
            (RunState.CANCELLED, c.get(RunState.CANCELLED, 0)),
            (RunState.PENDING, c.get(RunState.PENDING, 0)),
            (RunState.EXECUTED, c.get(RunState.EXECUTED, 0)),
        ]
        click.echo(
            f"  {arm.arm:<14} right {arm.right:>5}  wrong {arm.wrong:>5}"
            + "".join(f"  {outcome_word(k)} {n:>4}" for k, n in rest if n)
            + wrong_by_text(arm.wrong_by, head="  (wrong by ")
        )
    print_budget(summary.pause_reason, summary.notes, handle or f"#{summary.experiment_id}")


def print_failures(backend: Backend, exp: Experiment, limit: int = 10) -> None:
    """Execution and grading failures by kind, with one error of each kind and what to do.

    The store's state ``fail`` holds wrong answers and runs that never got one alike; a new user
    needs to be told that these are errors, not wrong answers, and which. The store summarises the
    failed runs alone (the runs that got a verdict are not read); past `limit` kinds, "and N more".
    """
    failures = backend.failures(exp.id, limit=limit)
    if not failures.total:
        return
    click.echo(f"failures: {failures.total:,} run(s) got no verdict (errors, not wrong answers):")
    for k in failures.kinds:
        arms = ", ".join(f"{a} {n:,}" for a, n in k.arms)
        error = " ".join(str(k.error or "").split())
        click.echo(f"  {k.kind} {k.failure_type}: {k.runs:,} ({arms})")
        if error:
            click.echo(f"    e.g. case {k.case_id}: {error[:240]}{'…' if len(error) > 240 else ''}")
    if failures.more_kinds:
        click.echo(f"  and {failures.more_kinds:,} more kind(s): {failures.more_runs:,} run(s)")
    handle = backend.command_handle(exp)
    if failures.execution:
        click.echo(f"  re-run them: abbench retry {handle} --failed")
    if failures.grading:
        click.echo(f"  re-grade them: abbench regrade {handle} --failed")
