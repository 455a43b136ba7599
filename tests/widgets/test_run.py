"""RunControlWidget: start off the cell, pause/resume/cancel, failures with matching actions, clone, selections."""

from __future__ import annotations

import time

import pytest
from ipywidgets import TagsInput

from abbench.agents import agent_parameters, make_agent
from abbench.runner import create_experiment, start_experiment
from abbench.widgets import RunControlWidget, parse_graders, parse_params
from abbench.widgets._arm_form import params_text
from tests.blocking import SAFETY_NET_S, Gate
from tests.conftest import DEMO
from tests.widgets import agents
from tests.widgets.conftest import python_arm

GRADERS = ["tests.widgets.agents:grade"]


def wait_until(condition, timeout=SAFETY_NET_S, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    raise AssertionError("timed out waiting")


@pytest.fixture
def widget(store, small):
    w = RunControlWidget(
        store,
        dataset=small.fingerprint,
        arms={"control": python_arm(), "treatment": python_arm(sleep_ms=1)},
        graders=GRADERS,
        rounds=2,
        concurrency=4,
        name="smoke",
    )
    assert w.errors.message is None
    yield w
    if w.handle is not None and not w.handle.done():
        w.handle.cancel()
        w.handle.wait(30)


def test_the_form_describes_the_experiment(widget, small):
    assert widget.config_open and widget.chooser.value == 0
    assert widget.spec() == {
        "name": "smoke",
        "dataset": small.fingerprint,
        "arms": {
            "control": {
                "agent": "python",
                "params": {"function": "tests.widgets.agents:answer", "sees_gold": True},
            },
            "treatment": {
                "agent": "python",
                "params": {"function": "tests.widgets.agents:answer", "sees_gold": True, "sleep_ms": 1},
            },
        },
        "rounds": 2,
        "concurrency": 4,
        "graders": GRADERS,
    }
    widget.cases.value = 5
    widget.sample.value = True
    assert widget.spec()["cases"] == {"sample": 5}


def test_start_runs_off_the_cell_folds_the_definition_and_fills_the_bars(store, widget):
    widget.start_button.click()
    assert widget.errors.message is None
    assert not widget.config_open and widget.handle is not None
    progress = widget.wait(60)
    assert progress.status == "finished"
    assert {arm: (bar.value, bar.max) for arm, bar in widget.bars.items()} == {
        "control": (48, 48),
        "treatment": (48, 48),
    }
    exp = store.experiments.get("smoke")
    assert exp.status == "finished" and widget.chooser.value == exp.id
    assert "finished" in widget.status_html.value and "96/96 done (100 %)" in widget.status_html.value
    assert widget.failures_html.value == "" and widget.failure_actions.layout.display == "none"
    assert widget.pause_button.disabled and widget.cancel_button.disabled and widget.resume_button.disabled
    assert not widget.clone_button.disabled
    # wrong answers are outcomes, not failures: case ids ending in 7 are graded wrong
    assert "88 right · 8 wrong (by tests.widgets.agents:grade 8) · 0 running" in widget.status_html.value


def _started_at(gate: Gate, store, dataset, *, name: str, rounds: int) -> RunControlWidget:
    """A run widget started on one arm whose runs wait at `gate`, two at a time."""
    w = RunControlWidget(
        store,
        dataset=dataset.fingerprint,
        arms={"a": python_arm(**gate.params)},
        rounds=rounds,
        concurrency=2,
        name=name,
    )
    w.start_button.click()
    return w


def test_pause_stops_progress_and_resume_reaches_the_end(store, small, tmp_path):
    gate = Gate(tmp_path / "gate", allowed=4)  # four runs answer; the next two wait in flight
    w = _started_at(gate, store, small, name="p", rounds=3)
    gate.wait_arrived(6)
    w.pause_button.click()
    assert w.errors.message is None
    wait_until(lambda: w.progress.status == "paused")
    gate.allow(6)  # the two in flight finish; a run that ignored the pause would start two more
    wait_until(lambda: w.progress.status == "paused" and w.progress.running == 0 and w.progress.done == 6)
    assert gate.arrived() == 6  # nothing moves while paused
    assert store.experiments.get("p").status == "paused"
    assert w.pause_button.disabled and not w.resume_button.disabled
    w.resume_button.click()
    gate.open()
    progress = w.wait(SAFETY_NET_S)
    assert progress.status == "finished" and progress.done == progress.total == 72
    assert w.bars["a"].value == w.bars["a"].max == 72


def test_cancel_asks_first_and_the_cancelled_runs_can_be_run_again(store, small, tmp_path):
    gate = Gate(tmp_path / "gate", allowed=2)  # two runs answer; the next two wait in flight
    w = _started_at(gate, store, small, name="c", rounds=5)  # 24 cases × 5 rounds: 120 runs
    gate.wait_arrived(4)
    wait_until(lambda: w.progress is not None and w.progress.done == 2 and w.progress.running == 2)
    w.cancel_button.click()
    # nothing is cancelled yet: the widget asks, naming what stops and what is kept
    assert w.cancel_confirm.layout.display == "" and w.errors.message is None
    assert "2 running and 116 pending runs stop and are marked cancelled; the 2 done are kept" in (
        w.cancel_question.value
    )
    assert w.cancel_confirm_button.description == "Cancel 118 runs"
    w.cancel_keep_button.click()
    assert w.cancel_confirm.layout.display == "none"
    assert store.experiments.get("c").control == "run" and w.progress.status == "running"

    w.cancel_button.click()
    w.cancel_confirm_button.click()
    progress = w.wait(SAFETY_NET_S)
    assert progress.status == "cancelled" and w.cancel_confirm.layout.display == "none"
    counts = store.runs.counts(store.experiments.get("c").id)["a"]
    # the two held at the gate and every run not started are cancelled
    assert counts["cancelled"] == progress.total - 2 == 118 and counts["pending"] == 0, counts
    assert "cancelled" in w.status_html.value
    # undo: the cancelled runs run again (what `abbench retry --cancelled` does), off the cell
    assert w.rerun_cancelled_button.layout.display == ""
    assert w.rerun_cancelled_button.description == "Run the 118 cancelled runs"
    gate.open()
    w.rerun_cancelled_button.click()
    assert w.errors.message is None
    progress = w.wait(SAFETY_NET_S)
    assert progress.status == "finished" and progress.done == progress.total == 120
    counts = store.runs.counts(store.experiments.get("c").id)["a"]
    assert counts["cancelled"] == 0 and counts["pass"] + counts["fail"] == 120, counts
    assert w.rerun_cancelled_button.layout.display == "none"


def test_failures_are_listed_by_kind_with_the_action_that_fits(store, small, widget):
    agents.FAIL_EXECUTION.update({"c01", "c02"})
    agents.FAIL_GRADING.add("c04")
    widget.start_button.click()
    widget.wait(60)
    execution = [r for r in widget.failures if r.execution_failed]
    grading = [r for r in widget.failures if r.grading_failed]
    assert {r.case_id for r in execution} == {"c01", "c02"} and len(execution) == 8
    assert {r.case_id for r in grading} == {"c04"} and len(grading) == 4
    assert widget.rerun_button.description == "Re-run 8 execution failures"
    assert widget.regrade_button.description == "Re-grade 4 grading failures"
    # the live counts (the runner's tracker) tell the three apart, as the store does
    status = widget.status_html.value
    assert "8 execution failed · 4 grading failed" in status and " fail " not in status, status
    assert (widget.progress.execution_failed, widget.progress.grading_failed) == (8, 4)
    assert widget.progress.wrong == sum(
        r.state == "fail" and not (r.execution_failed or r.grading_failed)
        for r in store.runs.records(widget.experiment.id)
    )
    html = widget.failures_html.value
    assert "execution → re-run" in html and "grading → re-grade" in html and "agent_error" in html

    exp = store.experiments.get("smoke")
    executions_before = {r.id: r.executed_at for r in store.runs.records(exp.id) if r.case_id == "c04"}
    agents.FAIL_EXECUTION.clear()
    widget.rerun_button.click()
    assert widget.errors.message is None
    widget.wait(60)
    assert not [r for r in widget.failures if r.execution_failed]
    assert {r.case_id for r in widget.failures if r.grading_failed} == {"c04"}

    agents.FAIL_GRADING.clear()
    widget.regrade_button.click()
    widget.wait(60)
    assert widget.failures_html.value == "" and widget.regrade_button.disabled
    runs = [r for r in store.runs.records(exp.id) if r.case_id == "c04"]
    assert all(r.state == "pass" for r in runs)
    # re-grading reused the stored executions: the agent did not run again
    assert {r.id: r.executed_at for r in runs} == executions_before


def test_clone_fills_the_definition_and_starts_a_child_experiment(store, widget):
    widget.start_button.click()
    widget.wait(60)
    source = store.experiments.get("smoke")
    widget.clone_button.click()
    assert widget.errors.message is None
    assert widget.config_open and widget.name.value == "smoke-2" and widget.chooser.value == 0
    assert [r.name.value for r in widget.arm_rows] == ["control", "treatment"]
    widget.rounds.value = 1
    widget.remove_arm(widget.arm_rows[1])
    widget.start_button.click()
    assert widget.errors.message is None
    widget.wait(60)
    clone = store.experiments.get("smoke-2")
    assert clone.parent_id == source.id and [a.name for a in clone.arms] == ["control"]
    assert clone.rounds == 1 and clone.spec.graders == GRADERS
    assert widget.experiment.id == clone.id and widget.progress.total == 24


def test_the_chosen_experiment_is_kept_across_reloads_and_runs_elsewhere(store, small):
    first = create_experiment(
        {"name": "one", "dataset": small.fingerprint, "arms": {"a": python_arm()}}, store=store
    )
    w = RunControlWidget(store, experiment="one")
    assert w.chooser.value == first.id and not w.config_open
    assert (
        "definition of #1 one" in w.definition_html.value
        and "tests.widgets.agents:answer" in w.definition_html.value
    )
    create_experiment({"name": "two", "dataset": small.fingerprint, "arms": {"a": python_arm()}}, store=store)
    w.reload_button.click()
    assert w.chooser.value == first.id and w.experiment.id == first.id  # not the newest
    assert any("#2 two" in label for label in w.chooser.labels)
    w.chooser.select(0)
    w.reload()
    assert w.chooser.value == 0 and w.config_open  # "new experiment" is a choice too


def test_an_experiment_run_elsewhere_is_followed_from_the_store(store, small, tmp_path):
    gate = Gate(tmp_path / "gate")  # the run stays under way until the widget is following it
    exp = create_experiment(
        {"name": "bg", "dataset": small.fingerprint, "arms": {"a": python_arm(**gate.params)}, "rounds": 4},
        store=store,
    )
    handle = start_experiment(exp.id, store=store)  # as another cell (or the CLI) would
    gate.wait_arrived(1)
    wait_until(lambda: store.experiments.get(exp.id).status == "running")
    w = RunControlWidget(store, experiment=exp.id, poll_s=0.1)
    assert w._poller is not None
    gate.open()
    handle.wait(SAFETY_NET_S)
    wait_until(lambda: w.progress.status == "finished")
    assert w.bars["a"].value == 96 and "finished" in w.status_html.value


def test_resume_starts_an_experiment_nobody_runs(store, small):
    exp = create_experiment(
        {"name": "idle", "dataset": small.fingerprint, "arms": {"a": python_arm()}}, store=store
    )
    w = RunControlWidget(store, experiment=exp.id)
    assert w.progress.status == "created" and not w.resume_button.disabled
    w.resume_button.click()
    assert w.wait(60).status == "finished"


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"dataset": None}, "choose a dataset"),
        ({"name": ""}, "give the experiment a name"),
        ({"params": "latency_ms"}, "cannot read parameter 'latency_ms'"),
        ({"params": "{bad"}, "not valid YAML at line 1, column 5"),
        ({"params": "labels: [a, b"}, "not valid YAML"),
        ({"folder": ""}, "give the skill folder"),
    ],
)
def test_form_errors_are_shown_in_the_widget(store, small, form, message):
    w = RunControlWidget(store, dataset=small.fingerprint, arms={"a": {"agent": "builtin"}}, name="x")
    if "dataset" in form:
        w.dataset.set_options([])
    if "name" in form:
        w.name.value = form["name"]
    if "params" in form:
        w.arm_rows[0].params.value = form["params"]
    if "folder" in form:
        w.arm_rows[0].skill.value = "folder"
    w.start_button.click()
    assert message in w.errors.message and w.handle is None
    assert store.experiments.all() == []


def test_a_missing_skill_folder_is_refused_with_the_runner_message(store, small, tmp_path):
    w = RunControlWidget(
        store, dataset=small.fingerprint, arms={"a": {"skill": str(tmp_path / "nope")}}, name="x"
    )
    assert w.arm_rows[0].skill.value == "folder"
    w.start_button.click()
    assert "is neither a folder" in w.errors.message


def test_stored_snapshots_are_offered_as_skills(store, small):
    snap = store.snapshots.freeze(DEMO / "skills" / "fast-slow-routing-v2")
    w = RunControlWidget(
        store, dataset=small.fingerprint, arms={"v2": {"agent": "builtin", "skill": snap.hash}}
    )
    row = w.arm_rows[0]
    assert row.skill.value == snap.hash
    assert any(snap.short in label for label, _ in row.skill.options)
    assert w.spec()["arms"]["v2"]["skill"] == snap.hash


@pytest.mark.parametrize(
    ("text", "params"),
    [
        ("", {}),
        ("latency_ms=50, temperature=0.3", {"latency_ms": 50, "temperature": 0.3}),
        ("model_hint=快系统，seed=2", {"model_hint": "快系统", "seed": 2}),
        ('{"latency_ms": 5, "x": [1]}', {"latency_ms": 5, "x": [1]}),
        ("labels: [a, b, c]", {"labels": ["a", "b", "c"]}),
        ("temperature: 0.3, labels: [快, 慢]", {"temperature": 0.3, "labels": ["快", "慢"]}),
        ("temperature: 0.3\nlabels:\n  - fast\n  - slow", {"temperature": 0.3, "labels": ["fast", "slow"]}),
        ("labels=[a, b], seed=2", {"labels": ["a", "b"], "seed": 2}),
        ("{labels: [a, b]}", {"labels": ["a", "b"]}),
    ],
)
def test_parse_params(text, params):
    assert parse_params(text) == params
    assert parse_params(params_text(params)) == params  # what the box shows reads back the same


def test_the_parameters_hint_is_what_the_box_accepts(store, small):
    w = RunControlWidget(store, dataset=small.fingerprint, arms={"a": {"agent": "builtin"}}, name="x")
    row = w.arm_rows[0]
    row.params.value = row.params.placeholder
    spec = w.spec()
    assert spec["arms"]["a"]["params"]["labels"] == ["fast", "slow"]
    make_agent("builtin", **spec["arms"]["a"]["params"])  # and the agent takes it


def test_the_form_is_built_from_the_agents_declared_parameters(store, small):
    w = RunControlWidget(
        store, dataset=small.fingerprint, arms={"a": {"agent": "builtin", "temperature": 0.3}}, name="x"
    )
    row = w.arm_rows[0]
    declared = [p.name for p in agent_parameters("builtin")]
    assert list(row.fields) == declared and {"temperature", "labels", "price_in_per_mtok"} <= set(declared)
    for name in declared:  # every declared parameter is one the agent takes
        make_agent(  # raises on a parameter it does not take
            "builtin", **{name: ["fast"] if name == "labels" else 1}
        )
    assert row.fields["temperature"].value == "0.3"
    assert isinstance(row.fields["labels"], TagsInput)  # a list is edited as a list
    row.fields["labels"].value = ["fast, slow"]  # typed (or pasted) as one tag: two items
    assert row.fields["labels"].value == ["fast", "slow"]
    row.fields["price_in_per_mtok"].value = "0.15"
    assert w.errors.message is None
    assert w.spec()["arms"]["a"]["params"] == {
        "temperature": 0.3,
        "labels": ["fast", "slow"],
        "price_in_per_mtok": 0.15,
    }
    assert parse_params(row.params.value) == w.spec()["arms"]["a"]["params"]  # the YAML box follows the form
    row.params.value = "temperature: 0.5, labels: [a, b]"  # and the form follows the box
    assert (row.fields["temperature"].value, row.fields["labels"].value) == ("0.5", ["a", "b"])
    row.fields["labels"].value = []  # no items: the agent's default, and the box says none
    assert "labels" not in parse_params(row.params.value)
    assert row.fields["price_in_per_mtok"].value == ""
    row.agent.value = "openai"
    assert "base_url" in row.fields and "top_sections" not in row.fields


def test_looking_at_another_experiment_while_a_run_ends_keeps_it_shown(store, small, tmp_path):
    gate = Gate(tmp_path / "gate")  # the run goes on (held) until the person has looked elsewhere
    other = create_experiment(
        {"name": "other", "dataset": small.fingerprint, "arms": {"z": python_arm()}}, store=store
    )
    w = RunControlWidget(
        store, dataset=small.fingerprint, arms={"a": python_arm(**gate.params)}, rounds=2, name="bg"
    )
    w.start_button.click()
    handle = w.handle
    gate.wait_arrived(1)
    w.chooser.select(other.id)  # the person looks elsewhere while the run goes on
    assert w.experiment.id == other.id and w.progress.status == "created"
    gate.open()
    # the run's last report reaches the widget (from the runner's thread) before wait returns
    handle.wait(SAFETY_NET_S)
    assert w.chooser.value == other.id and w.experiment.id == other.id
    assert w.progress.experiment == "other" and "#1 other" in w.status_html.value
    w.chooser.select(store.experiments.get("bg").id)
    assert w.progress.status == "finished" and w.bars["a"].value == 48


@pytest.mark.parametrize(
    ("text", "graders"),
    [
        ("", []),
        ("label_match", ["label_match"]),
        ("label_match, read_skill", ["label_match", "read_skill"]),
        (
            "label_match, {type: llm_judge, model: m, rubric: {a: b}}",
            ["label_match", {"type": "llm_judge", "model": "m", "rubric": {"a": "b"}}],
        ),
        ('["tests.widgets.agents:grade"]', ["tests.widgets.agents:grade"]),
    ],
)
def test_parse_graders(text, graders):
    assert parse_graders(text) == graders


def test_bad_graders_are_refused_in_the_widget(store, small):
    w = RunControlWidget(store, dataset=small.fingerprint, name="g")
    w.graders_text.value = "label_match, {type: "
    w.start_button.click()
    assert "cannot read the graders" in w.errors.message
    w.graders_text.value = "label_match, [1]"
    w.start_button.click()
    assert "a grader is a name or a definition" in w.errors.message


def test_a_new_experiment_after_a_run_gets_a_free_name(store, small):
    w = RunControlWidget(store, dataset=small.fingerprint, arms={"a": python_arm()}, name="once")
    w.start_button.click()
    w.wait(60)
    w.chooser.select(0)
    assert w.config_open and w.name.value != "once" and w.name.value.startswith("small-")


def test_the_status_line_counts_pairs_being_judged(store, small):
    from abbench.runner import ArmProgress, Progress

    exp = create_experiment(
        {"name": "pairs", "dataset": small.fingerprint, "arms": {"a": python_arm(), "b": python_arm()}},
        store=store,
    )
    w = RunControlWidget(store, experiment=exp.id)
    done = {"pass": 4}
    arms = (ArmProgress("a", done), ArmProgress("b", done))
    w.on_progress(Progress(exp.name, exp.id, "running", arms, pairs_total=4, pairs_done=1))
    assert "8/8 done" in w.status_html.value and "pairs judged 1/4" in w.status_html.value
    w.on_progress(Progress(exp.name, exp.id, "running", arms))
    assert "pairs judged" not in w.status_html.value  # no pairwise judge, nothing said


def test_an_experiment_last_run_on_dask_says_where_with_the_dashboard(store, small):
    """Finished on a cluster: the widget names it in the past ("last executed on"), as `abbench status`."""
    from abbench.runner import run_experiment

    exp = create_experiment(
        {"name": "on-dask", "dataset": small.fingerprint, "arms": {"a": python_arm()}}, store=store
    )
    run_experiment(exp.id, store=store)
    where = {
        "executor": "dask",
        "scheduler": "tcp://127.0.0.1:8786",
        "local": True,
        "workers": 2,
        "worker_addresses": ["tcp://127.0.0.1:4001", "tcp://127.0.0.1:4002"],
        "dashboard": "http://127.0.0.1:8787/status",
    }
    store.experiments.set_executor(exp.id, where)
    w = RunControlWidget(store, experiment="on-dask")
    shown = w.where_html.value
    assert "last executed on Dask: a LocalCluster at tcp://127.0.0.1:8786" in shown, shown
    assert "2 workers" in shown and 'title="tcp://127.0.0.1:4001, tcp://127.0.0.1:4002"' in shown
    assert 'href="http://127.0.0.1:8787/status"' in shown
    store.experiments.set_executor(exp.id, None)
    w.reload()
    assert w.where_html.value == ""  # the last pass ran here
