"""The run widget tells one state, the store's, whichever process runs the experiment; outcomes stay apart."""

from __future__ import annotations

import re

import pytest
import yaml

from abbench.runner import ArmProgress, Progress
from abbench.widgets import RunControlWidget
from abbench.widgets._progress_view import OUTCOME_COLOURS, status_text
from tests.blocking import Gate, wait_for
from tests.conftest import start_run
from tests.runner.conftest import gated_experiment
from tests.widgets.conftest import python_arm

GREEN = OUTCOME_COLOURS["pass"]


def shown(w: RunControlWidget) -> dict:
    """What the person sees, read at one moment: the chooser's phase, the status line's, the buttons.

    Fails when two parts of the widget disagree (the list saying finished over a panel saying paused).
    """
    with w._render_lock:
        label = w.chooser.widget.label or ""
        status = re.sub(r"<[^>]+>", "", w.status_html.value)
        buttons = {
            "pause": not w.pause_button.disabled,
            "resume": not w.resume_button.disabled,
            "cancel": not w.cancel_button.disabled,
        }
        snap = w.standing
    if snap is None:
        return {}
    phase = snap.phase
    assert f" · {phase} · " in label, (label, status)
    assert status.startswith(f"#{snap.experiment.id} {snap.experiment.name}: {phase} · "), (label, status)
    assert buttons == {k: v for k, v in snap.enabled().as_dict().items() if k in buttons}, (phase, buttons)
    done = sum(b.value for b in w.bars.values())
    assert f"{done:,}/{snap.progress.total:,} done" in status, (status, done)
    return {"phase": phase, "label": label, "status": status, **buttons, "done": done}


def _run_elsewhere(store_dir, exp_id):
    """`abbench run` in a child process, as from a terminal."""
    return start_run(store_dir, exp_id)


def _shown_once_the_child_exits(proc, w: RunControlWidget, phase: str, what: str) -> dict:
    """Wait for the child run to exit cleanly, then for the widget to show `phase` (`shown`)."""
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return wait_for(lambda: (s := shown(w))["phase"] == phase and s, what)


@pytest.mark.slow
def test_a_run_in_another_process_paused_and_resumed_from_the_widget_is_followed_to_the_end(
    store, small, tmp_path
):
    gate = Gate(tmp_path / "gate")  # closed: the child's runs wait there until the test lets them go
    exp = gated_experiment(store, "elsewhere", small.fingerprint, gate, rounds=2, concurrency=2)
    proc = _run_elsewhere(store.path, exp.id)
    try:
        gate.wait_arrived(2)  # two runs in flight in the child, held
        w = RunControlWidget(store, experiment=exp.id, poll_s=0.05)
        assert w.errors.message is None
        wait_for(lambda: shown(w).get("phase") == "running", "the widget to show the run")
        assert shown(w)["pause"] and not shown(w)["resume"]

        w.pause_button.click()
        assert w.errors.message is None
        assert shown(w)["phase"] in ("pausing", "paused")  # said at once, before the child answers
        wait_for(lambda: shown(w)["phase"] == "paused", "the child to pause")
        gate.allow(2)  # the two in flight finish; no new one starts while paused
        wait_for(lambda: (s := shown(w))["done"] == 2 and "0 running" in s["status"], "the two to finish")
        state = shown(w)
        assert state["resume"] and not state["pause"] and state["cancel"] and gate.arrived() == 2

        w.resume_button.click()
        assert w.errors.message is None
        wait_for(lambda: shown(w)["phase"] == "running", "the child to resume")
        gate.open()
        # the widget was not told by the child: it reads the store, and gets there by itself
        state = _shown_once_the_child_exits(proc, w, "finished", "the widget to show the end")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert state["done"] == 48 and "48/48 done (100 %)" in state["status"]
    assert not (state["pause"] or state["resume"] or state["cancel"])
    w.reload_button.click()  # the list and the panel still agree after a reload
    assert shown(w)["phase"] == "finished" and " · finished · " in shown(w)["label"]


@pytest.mark.slow
def test_a_run_in_another_process_cancelled_from_the_widget_reads_incomplete_in_grey(store, small, tmp_path):
    gate = Gate(tmp_path / "gate", allowed=3)  # three answer; the next two wait in flight
    exp = gated_experiment(store, "stopped", small.fingerprint, gate, concurrency=2)
    proc = _run_elsewhere(store.path, exp.id)
    try:
        gate.wait_arrived(5)
        w = RunControlWidget(store, experiment=exp.id, poll_s=0.05)
        wait_for(lambda: shown(w).get("done") == 3, "the three answers")
        w.cancel_button.click()
        w.cancel_confirm_button.click()
        assert w.errors.message is None
        state = _shown_once_the_child_exits(proc, w, "cancelled", "the cancel to show")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "cancelled · incomplete: 21 of 24 runs never ran · 3/24 done (12 %)" in state["status"]
    assert "21 cancelled" in state["status"]
    assert not (state["pause"] or state["cancel"])  # nothing left to cancel
    bar = w.bars["a"]
    # c00 is slow, c01 and c02 fast: the agent's "fast" is wrong once, right twice
    assert (bar.segments["cancelled"], bar.segments["pass"], bar.segments["fail"]) == (21, 2, 1)
    html = bar.html.value
    assert f"background-color:{OUTCOME_COLOURS['cancelled']}" in html and 'title="21 cancelled"' in html
    assert html.count(GREEN) == 1  # the right answers, and nothing else green
    assert "abbench-phase-cancelled" in w.status_html.value and GREEN not in w.status_html.value


def test_a_run_cancelled_here_never_reads_as_done(store, small, tmp_path):
    gate = Gate(tmp_path / "gate", allowed=2)
    w = RunControlWidget(
        store, dataset=small.fingerprint, arms={"a": python_arm(**gate.params)}, concurrency=2, name="c"
    )
    w.start_button.click()
    gate.wait_arrived(4)
    wait_for(lambda: w.progress is not None and w.progress.done == 2, "two answers")
    w.cancel_button.click()
    w.cancel_confirm_button.click()
    assert w.wait(120).status == "cancelled"
    state = shown(w)
    assert "incomplete: 22 of 24 runs never ran" in state["status"] and "(100 %)" not in state["status"]
    assert w.bars["a"].value == 2 and w.bars["a"].segments["cancelled"] == 22
    assert w.cancel_button.disabled and w.pause_button.disabled


def _progress(status: str, **counts) -> Progress:
    errors = {k: counts.pop(k) for k in ("execution_failed", "grading_failed") if k in counts}
    if errors:
        counts["fail"] = counts.get("fail", 0) + sum(errors.values())
    return Progress("x", 1, status, (ArmProgress("a", counts, errors),))


@pytest.mark.parametrize(
    ("progress", "phase", "said"),
    [
        (
            _progress("finished", **{"pass": 8, "fail": 2}),
            "finished",
            "finished · 10/10 done (100 %) · 8 right · 2 wrong",
        ),
        (
            _progress("finished", **{"pass": 5, "fail": 1, "execution_failed": 2, "grading_failed": 1}),
            "finished",
            "9/9 done (100 %) · 5 right · 1 wrong · 2 execution failed · 1 grading failed",
        ),
        (
            _progress("cancelled", **{"pass": 3, "cancelled": 3606}),
            "cancelled",
            "cancelled · incomplete: 3,606 of 3,609 runs never ran · 3/3,609 done (0 %) · 3 right · 0 wrong · "
            "3,606 cancelled",
        ),
        (_progress("running", **{"pass": 1, "pending": 3}), "pausing", "pausing · 1/4 done (25 %)"),
    ],
)
def test_the_status_line_says_each_outcome_apart(progress, phase, said):
    assert said in status_text(progress, phase, "#1 x")


def test_the_bar_colours_are_the_reports():
    from abbench.types import OUTCOME_COLOURS as STATE_COLOURS

    assert {k: STATE_COLOURS[k] for k in OUTCOME_COLOURS} == OUTCOME_COLOURS
    assert OUTCOME_COLOURS["cancelled"] != GREEN and len(set(OUTCOME_COLOURS.values())) == len(
        OUTCOME_COLOURS
    )


def test_the_status_line_says_where_the_stopping_rule_decided():
    from abbench.runner import StopReason

    reason = StopReason("better", 120, 500, "v1", "v2", 0.06, 0.012, 0.109, 0.004, 0.05, 0.02, 7)
    progress = Progress("x", 1, "finished", (ArmProgress("a", {"pass": 200, "fail": 40, "cancelled": 760}),),
                        stop_reason=reason)  # fmt: skip
    line = status_text(progress, "finished", "#1 x")
    assert (
        "finished · decided after 120 of 500 cases: better (v2 − v1 +6.0 points, anytime-valid 95% [+1.2, +10.9], p = 0.004)"
        in line
    )
    assert progress.status_text.startswith("finished: decided after 120 of 500 cases: better")


@pytest.mark.slow
def test_an_experiment_started_from_the_cli_appears_in_the_list_without_reload(store, small, tmp_path):
    gate = Gate(tmp_path / "gate")  # closed: the child's runs wait until the list has shown them running
    definition = tmp_path / "from-cli.yaml"
    definition.write_text(
        yaml.safe_dump(
            {
                "name": "from-cli",
                "dataset": small.fingerprint,
                "concurrency": 2,
                "arms": {"a": {"agent": "python", "function": "tests.blocking:gated", **gate.params}},
            }
        ),
        encoding="utf-8",
    )
    w = RunControlWidget(store, poll_s=0.05)
    assert not any("from-cli" in label for label in w.chooser.labels)
    proc = _run_elsewhere(store.path, definition)  # `abbench run FILE`: created and run in the child
    try:
        gate.wait_arrived(2)
        wait_for(lambda: any("from-cli · running" in label for label in w.chooser.labels), "listed running")
        gate.open()
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        wait_for(lambda: any("from-cli · finished" in label for label in w.chooser.labels), "listed finished")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert w.errors.message is None and w.chooser.value == 0  # the form stays as it was
