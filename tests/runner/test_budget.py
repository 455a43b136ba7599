"""Spend under control: a budget stops new runs at the right point, pauses with its figures, and resumes.

Agents stop at a `Gate` the test opens, so which runs are in flight when the budget is judged is the
test's doing, never the machine's speed.
"""

from __future__ import annotations

import pytest

from abbench.errors import AgentError
from abbench.runner import (
    create_experiment,
    experiment_status,
    resume_experiment,
    run_experiment,
    start_experiment,
)
from abbench.types import AgentOutput, Usage
from tests.blocking import Gate, wait_for


def priced(task):
    """A python agent that answers with a cost of 0.001 and 12 tokens per run (10 in, 2 out)."""
    return AgentOutput(prediction="fast", usage=Usage(10, 2), cost=0.001)


def unpriced(task):
    """A python agent whose cost is unknown (no prices), its tokens reported."""
    return AgentOutput(prediction="fast", usage=Usage(10, 2))


def spends_then_fails(task):
    """A python agent that pays for a model call, then fails (not retryable)."""
    task.spending.add_call(Usage(10, 2), 0.001, "m1")
    raise AgentError("the reply did not parse", "bad_output", retryable=False)


def _spec(dataset, arm, **over):
    spec = {
        "name": "budget",
        "dataset": dataset.fingerprint,
        "arms": {"only": arm},
        "concurrency": 2,
        "retries": 0,
        "graders": ["label_match"],
    }
    spec.update(over)
    return spec


@pytest.fixture
def ten(store):
    from tests.runner.conftest import make_cases

    return store.datasets.save("ten", make_cases(10), label_set=["fast", "slow"])


def test_budget_stops_new_runs_when_the_next_would_pass_it(store, ten, tmp_path):
    gate = Gate(tmp_path / "gate")
    arm = {"agent": "scripted", **gate.params}  # cost 0.001 per run
    exp = create_experiment(_spec(ten, arm, budget={"max_cost": 0.0035}), store=store)
    handle = start_experiment(exp.id, store=store)
    gate.wait_arrived(2)  # nothing finished yet: runs start up to the concurrency
    gate.allow(1)
    # one finished (0.001): one in flight (0.001) and one more (0.001) stay within 0.0035
    gate.wait_arrived(3)
    gate.open()
    summary = handle.wait(120)
    # 0.003 spent: a fourth would make 0.004
    assert gate.arrived() == 3
    assert summary.status == "paused" and summary.executed == 3
    reason = summary.pause_reason
    assert reason.reason == "budget reached" and reason.arm is None
    assert reason.spent == pytest.approx(0.003) and reason.max_cost == 0.0035
    assert (reason.runs_done, reason.runs_total) == (3, 10)
    progress = experiment_status(exp.id, store=store)
    assert progress.status == "paused"
    assert progress.status_text == "paused: budget reached — $0.003 of $0.0035 spent, 3 of 10 runs"
    assert progress.counts()["pending"] == 7


def test_resume_with_a_higher_budget_finishes(store, ten, calls):
    exp = create_experiment(_spec(ten, {"agent": "scripted"}, budget={"max_cost": 0.0035}), store=store)
    first = run_experiment(exp.id, store=store)
    assert first.status == "paused" and first.executed + first.failed <= 4
    done = first.executed
    summary = resume_experiment(exp.id, store=store, budget=1.0, run=True)
    assert summary.status == "finished" and summary.executed == 10 - done
    assert sum(calls.agent.values()) == 10  # no run executed twice
    exp = store.experiments.get(exp.id)
    assert exp.spec.budget is not None and exp.spec.budget.max_cost == 1.0 and exp.pause_reason is None
    assert experiment_status(exp.id, store=store).status_text == "finished"


def test_failed_attempts_spend_counts(store, ten):
    arm = {"agent": "python", "function": "tests.runner.test_budget:spends_then_fails"}
    exp = create_experiment(_spec(ten, arm, concurrency=1, budget={"max_cost": 0.0025}), store=store)
    summary = run_experiment(exp.id, store=store)
    # two failed runs spent 0.002; a third would pass 0.0025
    assert summary.status == "paused" and summary.failed == 2 and summary.executed == 0
    assert summary.pause_reason.spent == pytest.approx(0.002)


def test_an_arm_budget_stops_only_that_arm(store, ten):
    arms = {
        "cheap": {"agent": "scripted"},
        "capped": {"agent": "scripted", "budget": {"max_tokens": 30}},
    }
    exp = create_experiment(_spec(ten, None, arms=arms, concurrency=1), store=store)
    summary = run_experiment(exp.id, store=store)
    counts = {a.arm: a for a in summary.progress.arms}
    assert counts["cheap"].pending == 0 and counts["capped"].counts["pending"] == 8  # 2 × 12 tokens
    assert summary.status == "paused"
    assert summary.pause_reason.text == "budget reached for arm capped — 24 of 30 tokens, 2 of 10 runs"


def test_unknown_cost_never_counts_as_zero(store, ten):
    arm = {"agent": "python", "function": "tests.runner.test_budget:unpriced", "model": "m-free"}
    exp = create_experiment(_spec(ten, arm, budget={"max_cost": 0.0001}), store=store)
    summary = run_experiment(exp.id, store=store)
    assert summary.status == "finished"  # nothing to enforce the cost budget with
    assert summary.notes == (
        "arm only: cost unknown (no prices for model m-free): the cost budget cannot be enforced on its "
        "runs: give the model's prices (prices: {input, output}) or a max_tokens budget",
    )
    assert experiment_status(exp.id, store=store).notes == summary.notes


def test_unknown_cost_relies_on_max_tokens(store, ten):
    arm = {"agent": "python", "function": "tests.runner.test_budget:unpriced", "model": "m-free"}
    spec = _spec(ten, arm, concurrency=1, budget={"max_cost": 0.0001, "max_tokens": 40})
    exp = create_experiment(spec, store=store)
    summary = run_experiment(exp.id, store=store)
    assert summary.status == "paused" and summary.executed == 3  # 36 tokens; a fourth would pass 40
    assert summary.pause_reason.by == "tokens" and summary.pause_reason.spent is None
    assert "max_tokens budget is what holds" in summary.notes[0]
    assert summary.pause_reason.text == (
        "budget reached — unknown of $0.0001 spent, 36 of 40 tokens, 3 of 10 runs, "
        "3 attempts of unknown cost not counted"
    )


def test_the_report_and_the_widget_say_why_it_paused(store, ten):
    from abbench.report._provenance import experiment_provenance
    from abbench.report._sections._runs import provenance_section
    from abbench.widgets import RunControlWidget

    exp = create_experiment(
        _spec(ten, {"agent": "scripted"}, concurrency=1, budget={"max_cost": 0.0035}), store=store
    )
    run_experiment(exp.id, store=store)
    said = "budget reached — $0.003 of $0.0035 spent, 3 of 10 runs"
    prov = experiment_provenance(exp.id, store=store)
    assert prov.status == "paused" and prov.paused_because == said
    assert f"status paused: {said}" in "".join(str(p) for p in provenance_section(prov))
    widget = RunControlWidget(store=store)
    widget.select_experiment(exp.id)
    assert (
        "abbench-phase-paused" in widget.status_html.value
        and f"paused</span> · {said}" in widget.status_html.value
    )


def test_a_runner_paused_by_a_person_takes_the_raised_budget_on_resume(store, ten, tmp_path):
    gate = Gate(tmp_path / "gate")
    arm = {"agent": "scripted", **gate.params}
    exp = create_experiment(_spec(ten, arm, concurrency=1, budget={"max_cost": 0.0035}), store=store)
    handle = start_experiment(exp.id, store=store)
    gate.wait_arrived(1)
    handle.pause()
    wait_for(lambda: store.experiments.get(exp.id).status == "paused", "the runner to pause")
    assert resume_experiment(exp.id, store=store, budget=1.0) is True  # the runner is alive: it goes on
    gate.open()
    summary = handle.wait(120)
    # the old limit would have stopped it after three runs
    assert summary.status == "finished" and summary.executed == 10 and gate.arrived() == 10


@pytest.mark.parametrize(
    ("budget", "said"),
    [
        ({"max_cost": -1}, "budget.max_cost: Input should be greater than 0"),
        ({"max_cots": 5}, "budget: unknown key 'max_cots' (did you mean 'max_cost'?); valid keys: max_cost"),
        ({}, "budget: a budget needs max_cost and/or max_tokens, e.g. {max_cost: 5.00}"),
    ],
)
@pytest.mark.parametrize("where", ["experiment", "arm"])
def test_a_bad_budget_is_refused_with_its_place(budget, said, where):
    from abbench.errors import ExperimentError
    from abbench.runner import load_spec

    spec = {"name": "x", "dataset": "d", "arms": {"a": {"agent": "builtin"}}}
    if where == "arm":
        spec["arms"]["a"]["budget"] = budget
        said = "arms.a." + said
    else:
        spec["budget"] = budget
    with pytest.raises(ExperimentError) as err:
        load_spec(spec)
    assert said in str(err.value)


def test_resume_refuses_a_limit_that_is_not_positive(store, ten):
    from abbench.errors import ExperimentError, NotFoundError

    exp = create_experiment(_spec(ten, {"agent": "scripted"}), store=store)
    with pytest.raises(ExperimentError, match="budget must be a positive number, not 0"):
        resume_experiment(exp.id, store=store, budget=0)
    with pytest.raises(NotFoundError, match="has no arm 'nope'"):
        resume_experiment(exp.id, store=store, budget=1, arm="nope")
