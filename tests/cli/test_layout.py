"""How the command line is put together: the order of its commands, and the progress bar of long commands."""

from __future__ import annotations

import io

import pytest

from abbench.cli import cli
from abbench.cli._progress import ProgressBar, progress_bar, with_progress
from abbench.runner import ArmProgress, Progress

FLOW = [
    "import",
    "datasets",
    "profiles",
    "snapshot",
    "snapshots",
    "show-ref",
    "diff-skill",
    "create",
    "experiments",
    "run",
    "status",
    "pause",
    "cancel",
    "retry",
    "regrade",
    "clone",
    "try",
    "resume",
    "estimate",
    "prompt",
    "grade",
    "grades",
    "judge-report",
    "import-results",
    "plan",
    "compare",
    "metrics",
    "gate",
    "review",
    "reviews",
    "disagreements",
    "case",
    "cache",
    "export",
    "report",
    "demo",
    "keys",
    "serve",
]


def test_help_lists_the_commands_in_the_order_of_the_flow():
    # Each module registers its commands when imported; moving a command to another module must not
    # move it in `abbench --help`.
    assert list(cli.commands) == FLOW


def _progress(done: int, status: str = "running") -> Progress:
    return Progress("demo", 1, status, (ArmProgress("v1", {"pass": done, "pending": 4 - done}),))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_is_closed_when_the_work_fails(monkeypatch):
    bars: list[ProgressBar] = []

    def work(observers: list[ProgressBar]) -> None:
        bar = observers[0]
        bars.append(bar)
        bar.on_progress(_progress(1))
        assert bar.bar is not None  # drawn
        raise RuntimeError("the agent went away")

    monkeypatch.setattr("sys.stderr", _Terminal())
    with pytest.raises(RuntimeError, match="went away"):
        with_progress(False, work)
    assert bars and bars[0].bar is None


def test_a_quiet_run_gets_no_observer_draws_nothing_and_returns_the_work(monkeypatch):
    """Quiet, the runner is handed no observer at all: it builds no progress snapshot for nobody."""
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    handed: list[list[ProgressBar]] = []

    def work(observers: list[ProgressBar]) -> str:
        handed.append(observers)
        for obs in observers:
            obs.on_progress(_progress(2))
        return "summary"

    assert with_progress(True, work) == "summary"
    assert handed == [[]]
    assert err.getvalue() == ""
    # a quiet bar, where one is still made (`progress_bar(True)`), draws nothing either
    with progress_bar(True) as bar:
        bar.on_progress(_progress(2))
    assert bar.bar is None and err.getvalue() == ""


def test_without_a_terminal_the_progress_is_a_line_per_tenth(monkeypatch):
    """A CI log or a pipe gets no redraws of the bar: one line as each tenth of the runs is passed."""
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    bar = ProgressBar()
    for done in (0, 1, 1, 2, 3, 4, 4):
        bar.on_progress(_progress(done))
    bar.close()
    lines = err.getvalue().splitlines()
    assert [line.split(" runs")[0] for line in lines] == [f"demo: {n} of 4" for n in (0, 1, 2, 3, 4)]
    assert lines[-1] == "demo: 4 of 4 runs (100%), running — right 4 wrong 0 · v1:4/4"


def test_the_last_line_says_how_the_work_ended(monkeypatch):
    """`grade` on a finished experiment passed its last tenth while running: the end is a line of its own."""
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    bar = ProgressBar()
    for done, status in ((0, "running"), (4, "running"), (4, "finished"), (4, "finished")):
        bar.on_progress(_progress(done, status))
    lines = err.getvalue().splitlines()
    assert len(lines) == 3 and lines[-1] == "demo: 4 of 4 runs (100%), finished — right 4 wrong 0 · v1:4/4"
