"""The progress view: one stacked bar per arm and a status line, every outcome apart in its own colour.

Right answers are green, wrong ones red, execution failures orange, grading failures yellow, cancelled
runs grey and striped (they never ran: never green), runs in flight blue, pending ones the empty track.
The words are `abbench.types.OUTCOME_WORDS`', as in the CLI and the report; the colours the report's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import ipywidgets as w

from abbench.formatting import elapsed as duration
from abbench.runner import ArmProgress, Progress
from abbench.types import OUTCOME_COLOURS, ExperimentStatus, Phase, RunOutcome, RunState, outcome_word
from abbench.widgets._base import escape

PHASE_COLOURS: dict[str, tuple[str, str]] = {
    ExperimentStatus.FINISHED: ("#1a6b1a", "#e6f4e6"),
    ExperimentStatus.RUNNING: ("#174a7c", "#e3eef9"),
    Phase.RESUMING: ("#174a7c", "#e3eef9"),
    Phase.PAUSING: ("#7a5200", "#fdf3dc"),
    ExperimentStatus.PAUSED: ("#7a5200", "#fdf3dc"),
    Phase.CANCELLING: ("#444", "#ececec"),
    ExperimentStatus.CANCELLED: ("#444", "#ececec"),
    ExperimentStatus.INTERRUPTED: ("#8a3b00", "#fde9dc"),
    ExperimentStatus.CREATED: ("#444", "#f6f6f6"),
}
"""Phase → (text, background) of the status badge: green only for a finished experiment."""

BAR_CSS = """<style>
.abbench-bar {display:flex; flex:0 1 420px; min-width:120px; height:16px; background:#eef1f4;
  border:1px solid #c9d1d9; border-radius:3px; overflow:hidden}
.abbench-bar span {display:block; height:100%}
.abbench-bar .abbench-seg-cancelled {background-image:repeating-linear-gradient(135deg,
  rgba(255,255,255,.45) 0 3px, transparent 3px 7px)}
.abbench-arm {display:flex; flex-wrap:wrap; align-items:center; gap:2px 8px; margin:2px 0; font-size:12px}
.abbench-arm-name {width:120px; text-align:right; overflow:hidden; text-overflow:ellipsis;
  white-space:nowrap}
.abbench-legend {font-size:12px; color:#555; margin:2px 0 4px 128px}
.abbench-legend i {display:inline-block; width:10px; height:10px; margin:0 3px 0 10px;
  vertical-align:-1px; border-radius:2px}
.abbench-phase {display:inline-block; padding:0 6px; border-radius:3px; font-weight:600}
</style>"""
"""CSS of the bars, the legend and the status badge."""

SEGMENTS: tuple[str, ...] = (
    RunState.PASS,
    RunState.FAIL,
    RunOutcome.SCORED,
    RunOutcome.EXECUTION_FAILED,
    RunOutcome.GRADING_FAILED,
    RunState.CANCELLED,
    RunState.RUNNING,
    RunState.EXECUTED,
)
"""Segment order in a bar: outcomes first, then what is still under way (pending is the empty rest)."""


def segments(arm: ArmProgress) -> dict[str, int]:
    """An arm's runs per bar segment (`SEGMENTS`): right, wrong, each failure, cancelled, in flight."""
    c = arm.counts
    return {
        RunState.PASS: arm.right,
        RunState.FAIL: arm.wrong,
        RunOutcome.SCORED: arm.scored,
        RunOutcome.EXECUTION_FAILED: arm.execution_failed,
        RunOutcome.GRADING_FAILED: arm.grading_failed,
        RunState.CANCELLED: arm.cancelled,
        RunState.RUNNING: c.get(RunState.RUNNING, 0) + c.get(RunState.EVALUATING, 0),
        RunState.EXECUTED: c.get(RunState.EXECUTED, 0),
    }


def outcome_text(p: Progress | ArmProgress, sep: str = " · ") -> str:
    """``88 right · 8 wrong (by label_match 8)`` then the failures and cancelled runs when there are any:
    the graders that made the wrong runs wrong are named, so a grader that fails every run is seen."""
    parts = [
        (RunState.PASS, p.right),
        (RunState.FAIL, p.wrong),
        (RunOutcome.SCORED, p.scored),
        (RunOutcome.EXECUTION_FAILED, p.execution_failed),
        (RunOutcome.GRADING_FAILED, p.grading_failed),
        (RunState.CANCELLED, p.cancelled),
    ]
    words = [
        f"{n:,} {outcome_word(k)}" + (wrong_by_text(p.wrong_by) if k == RunState.FAIL else "")
        for k, n in parts
        if n or k in (RunState.PASS, RunState.FAIL)
    ]
    return sep.join(words)


def wrong_by_text(wrong_by: dict[str, int]) -> str:
    """`` (by cited_evidence 40, label_match 3)``: the graders that said the wrong runs failed (a run
    two graders failed counts under both); empty when none did."""
    if not wrong_by:
        return ""
    return " (by " + ", ".join(f"{grader} {n:,}" for grader, n in wrong_by.items()) + ")"


def _pending(p: Progress | ArmProgress) -> int:
    arms = p.arms if isinstance(p, Progress) else (p,)
    return sum(a.counts.get(RunState.PENDING, 0) for a in arms)


def status_text(p: Progress, phase: str, title: str) -> str:
    """The status line: ``#1 demo: cancelled · incomplete: 114 of 120 runs never ran · 6/120 done ...``."""
    head = f"{title}: {phase}"
    missing = p.cancelled + _pending(p)
    if phase in (ExperimentStatus.CANCELLED, ExperimentStatus.INTERRUPTED) and missing:
        head += f" · incomplete: {missing:,} of {p.total:,} runs never ran"
    reason = p.pause_reason
    if phase == ExperimentStatus.PAUSED and reason is not None:
        head += f" · {reason.text}"  # paused by the runner itself (a budget reached), with the figures
    if p.stop_reason is not None:
        head += f" · {p.stop_reason.text}"  # the stopping rule decided: "decided after 120 of 500 cases"
    if phase == ExperimentStatus.INTERRUPTED and p.halt_reason is not None:
        head += f" · {p.halt_reason.text}"  # why: stopped on purpose, its process killed, an error
    if p.queued is not None:
        head += f" · {p.queued.text}"  # a server's pool holds it, or did not start it and says why
    rate = f" · {p.throughput:.1f} runs/s" if p.throughput and phase == ExperimentStatus.RUNNING else ""
    eta = f" · about {duration(p.eta_s)} left" if p.eta_s and phase == ExperimentStatus.RUNNING else ""
    pairs = f" · pairs judged {p.pairs_done:,}/{p.pairs_total:,}" if p.pairs_total else ""
    return (
        f"{head} · {p.done:,}/{p.total:,} done ({100 * p.fraction:.0f} %) · {outcome_text(p)}"
        f" · {p.running} running · {p.pending:,} pending{rate}{eta}{pairs}"
    )


def status_html(p: Progress, phase: str, title: str) -> str:
    """`status_text` with the phase as a coloured badge (green only when finished)."""
    text = status_text(p, phase, title)
    head, _, rest = text.partition(f": {phase}")
    fg, bg = PHASE_COLOURS.get(phase, ("#444", "#f6f6f6"))
    badge = (
        f'<span class="abbench-phase abbench-phase-{phase}" style="color:{fg};background:{bg}">'
        f"{escape(phase)}</span>"
    )
    return f'<div class="abbench-note abbench-status">{escape(head)}: {badge}{escape(rest)}</div>'


class ArmBar:
    """One arm's bar: a segment per outcome, and its counts beside it.

    Attributes:
        html: The widget that draws it.
        segments: Runs per segment (`SEGMENTS`) as drawn now.
        value: Runs done (right, wrong or failed).
        max: All runs of the arm.
    """

    def __init__(self, arm: str):
        self.arm = arm
        self.html = w.HTML()
        self.segments: dict[str, int] = {}
        self.value = 0
        self.max = 0
        self.text = ""

    def show(self, arm: ArmProgress) -> None:
        """Draw `arm`'s counts."""
        self.segments, self.value, self.max = segments(arm), arm.done, arm.total
        total = max(arm.total, 1)
        spans = "".join(
            f'<span class="abbench-seg-{k}" style="width:{100 * n / total:.3f}%;background-color:'
            f'{OUTCOME_COLOURS[k]}" title="{n:,} {escape(outcome_word(k))}"></span>'
            for k, n in self.segments.items()
            if n
        )
        self.text = (
            f"{arm.done:,}/{arm.total:,} done ({outcome_text(arm)}) · {arm.running} running · "
            f"{arm.pending:,} pending"
        )
        self.html.value = (
            f'<div class="abbench-arm"><span class="abbench-arm-name" title="{escape(self.arm)}">'
            f'{escape(self.arm)}</span><div class="abbench-bar" role="progressbar" aria-valuemin="0" '
            f'aria-valuemax="{arm.total}" aria-valuenow="{arm.done}">{spans}</div>'
            f"<span>{escape(self.text)}</span></div>"
        )


def legend_html(shown: Sequence[str]) -> str:
    """The colours of the segments `shown`, in words."""
    items = "".join(
        f'<i class="abbench-seg-{k}" style="background:{OUTCOME_COLOURS[k]}"></i>{escape(outcome_word(k))}'
        for k in SEGMENTS
        if k in shown
    )
    pending = '<i style="background:#eef1f4;border:1px solid #c9d1d9"></i>pending'
    return f'<div class="abbench-legend">{items}{pending}</div>'


class ProgressView:
    """The bars of every arm and their legend, drawn from a `Progress`.

    Attributes:
        bars: Arm name → its `ArmBar`.
        box: The widget holding them.
    """

    def __init__(self) -> None:
        self.bars: dict[str, ArmBar] = {}
        self.legend = w.HTML()
        self.box = w.VBox([], layout={"margin": "2px 0"})
        self._css = w.HTML(BAR_CSS)

    def show(self, progress: Progress | None) -> None:
        """Draw `progress` (None: nothing)."""
        if progress is None:
            self.box.children = []
            return
        present: set[str] = set()
        for arm in progress.arms:
            bar = self.bars.get(arm.arm)
            if bar is None:
                bar = self.bars[arm.arm] = ArmBar(arm.arm)
            bar.show(arm)
            present |= {k for k, n in bar.segments.items() if n}
        self.legend.value = legend_html(sorted(present)) if progress.arms else ""
        shown: list[Any] = [self._css, *(self.bars[a.arm].html for a in progress.arms), self.legend]
        if list(self.box.children) != shown:
            self.box.children = shown


def where_html(where: Mapping[str, Any] | None, running: bool = True) -> str:
    """Where the experiment's agents run (or, when it is not `running`, last ran): nothing for this
    machine; for Dask, the dashboard link and workers."""
    if not where or where.get("executor") != "dask":
        return ""
    scheduler = escape(str(where.get("scheduler") or "?"))
    cluster = f"a LocalCluster at {scheduler}" if where.get("local") else scheduler
    workers = list(where.get("worker_addresses") or ())
    n = int(where.get("workers") or len(workers))
    listed = f' title="{escape(", ".join(workers))}"' if workers else ""
    link = where.get("dashboard")
    dashboard = (
        f' · <a href="{escape(str(link))}" target="_blank" rel="noopener">Dask dashboard</a>' if link else ""
    )
    return (
        f'<div class="abb-where">{"executes" if running else "last executed"} on Dask: {cluster}, '
        f"<span{listed}>{n} worker{'' if n == 1 else 's'}</span>{dashboard}</div>"
    )


def when_text(value: str | None) -> str:
    """An ISO-8601 time as people read it: ``2026-11-29 22:37 UTC``."""
    if not value:
        return "—"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M") + (" UTC" if moment.tzinfo is not None else "")
