"""Estimates: a pilot that the experiment then reuses, an interval that holds, budgets it warns of.

Per-run costs and tokens here are deterministic functions of the case, so the actual total after the
run is known exactly and the projection made from the pilot can be checked against it.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.errors import ExperimentError
from abbench.formatting import money_trimmed as money
from abbench.runner import clone_experiment, create_experiment, estimate_experiment, run_experiment
from abbench.types import AgentOutput, Usage
from tests.runner.conftest import log_call, make_cases


def varied(task):
    """A python agent whose cost and tokens follow its case: 1, 2 or 3 thousandths, 10/20/30 tokens."""
    log_call("agent", ("varied", task.case.case_id, task.round, task.arm))
    k = 1 + int(task.case.case_id[1:]) % 3
    return AgentOutput(prediction="fast", usage=Usage(8 * k, 2 * k), cost=0.001 * k)


def unpriced(task):
    log_call("agent", ("unpriced", task.case.case_id, task.round, task.arm))
    return AgentOutput(prediction="fast", usage=Usage(10, 2))


VARIED = {"agent": "python", "function": "tests.runner.test_estimate:varied", "model": "m1"}


@pytest.fixture
def thirty(store):
    return store.datasets.save("thirty", make_cases(30), label_set=["fast", "slow"])


def _spec(dataset, arms, **over):
    spec = {"name": "est", "dataset": dataset.fingerprint, "arms": arms, "concurrency": 2, "retries": 0}
    spec.update(over)
    return spec


def _actual(store, exp_id) -> tuple[float, int]:
    spend = store.attempts.spend_by_run(exp_id)
    return (
        sum(s.cost or 0 for s in spend.values()),
        sum((s.input_tokens or 0) + (s.output_tokens or 0) for s in spend.values()),
    )


def test_the_pilot_runs_once_and_the_experiment_reuses_it(store, thirty, calls):
    arms = {"a": VARIED, "b": {**VARIED, "model": "m2"}}
    exp = create_experiment(_spec(thirty, arms, cases={"limit": 12}), store=store)
    first = estimate_experiment(exp.id, store=store, pilot=5)
    assert first.pilot_runs == 10 and calls.agent_total("varied") == 10
    assert {a.arm: (a.measured, a.left, a.runs) for a in first.arms} == {"a": (5, 7, 12), "b": (5, 7, 12)}
    again = estimate_experiment(exp.id, store=store, pilot=5)
    assert again.pilot_runs == 0 and calls.agent_total("varied") == 10  # nothing ran again
    assert again.cost == first.cost
    summary = run_experiment(exp.id, store=store)
    assert summary.executed == 14 and summary.status == "finished"
    assert calls.agent_total("varied") == 24 and set(calls.agent.values()) == {1}  # each run once


def test_the_interval_contains_the_actual_total(store, thirty):
    exp = create_experiment(_spec(thirty, {"only": VARIED}, budget={"max_cost": 0.05}), store=store)
    est = estimate_experiment(exp.id, store=store, pilot=5)
    arm = est.arm("only")
    # the pilot's cases c000-c004 cost 1, 2, 3, 1, 2 thousandths: 0.009, then 25 more at 0.0018
    assert arm.spent_cost == pytest.approx(0.009) and arm.cost.value == pytest.approx(0.009 + 25 * 0.0018)
    assert arm.cost.low < arm.cost.value < arm.cost.high
    assert est.method.startswith("t prediction interval")
    assert est.warnings == (
        f"the experiment's budget of $0.05 would be reached: projected $0.054 "
        f"({money(arm.cost.low)} to {money(arm.cost.high)})",
    )
    exp_spec = store.experiments.get(exp.id).spec.as_json()
    exp_spec.pop("budget")
    store.experiments.set_spec(exp.id, exp_spec)  # let it run to the end, to know the actual total
    run_experiment(exp.id, store=store)
    cost, tokens = _actual(store, exp.id)
    assert cost == pytest.approx(0.060) and tokens == 600
    assert arm.cost.low <= cost <= arm.cost.high
    assert arm.tokens.low <= tokens <= arm.tokens.high
    assert est.wall_s is not None and est.wall_s.value >= 0


def test_an_estimate_from_an_earlier_experiment_runs_nothing(store, thirty, calls):
    old = create_experiment(_spec(thirty, {"only": VARIED}, cases={"limit": 6}), store=store)
    run_experiment(old.id, store=store)
    assert calls.agent_total("varied") == 6
    new = clone_experiment(old.id, name="est-full", store=store)
    est = estimate_experiment(new.id, store=store, from_experiment=old.id)
    assert calls.agent_total("varied") == 6 and est.pilot_runs == 0
    assert est.source == f"experiment {old.ref}"
    (arm,) = est.arms
    assert arm.measured == 6 and arm.left == 6 and arm.cost.value == pytest.approx(6 * 0.002)
    with pytest.raises(ExperimentError, match="no arm named as"):
        other = create_experiment(_spec(thirty, {"x": VARIED}, name="x"), store=store)
        estimate_experiment(other.id, store=store, from_experiment=old.id)


def test_unknown_prices_are_unknown_never_zero(store, thirty):
    arms = {"free": {"agent": "python", "function": "tests.runner.test_estimate:unpriced", "model": "m-free"}}
    exp = create_experiment(_spec(thirty, arms, budget={"max_cost": 1.0}), store=store)
    est = estimate_experiment(exp.id, store=store, pilot=3)
    (arm,) = est.arms
    assert arm.cost is None and est.cost is None
    assert arm.cost_unknown == "cost unknown (no prices for model m-free)"
    assert arm.tokens.value == pytest.approx(30 * 12)
    assert "arm free: cost unknown (no prices for model m-free)" in est.warnings
    assert "the experiment's budget of $1.00 cannot be checked: the cost is unknown" in est.warnings
    out = CliRunner().invoke(cli, ["--store", str(store.path), "estimate", str(exp.id), "-q"])
    assert out.exit_code == 0, out.output
    assert "cost unknown (no prices for model m-free)" in out.output and "$0.00" not in out.output
    data = json.loads(
        CliRunner().invoke(cli, ["--store", str(store.path), "estimate", str(exp.id), "--json"]).output
    )
    assert data["cost"] is None and data["arms"][0]["cost_unknown"].startswith("cost unknown")


def test_a_pilot_leaves_the_experiment_unfinished(store, thirty):
    from abbench.runner import experiment_status

    exp = create_experiment(_spec(thirty, {"only": VARIED}), store=store)
    estimate_experiment(exp.id, store=store, pilot=2)
    progress = experiment_status(exp.id, store=store)
    assert progress.status == "created" and progress.done == 2 and progress.pending == 28


def alike(task):
    """Every run costs the same: a pilot of these shows no spread at all."""
    return AgentOutput(prediction="fast", usage=Usage(10, 2), cost=0.001)


def half_graded(ctx):
    """Reaches no verdict on odd cases (a grading failure after a successful execution)."""
    from abbench.errors import GradingError
    from abbench.graders import GradeResult

    if int(ctx.case.case_id[1:]) % 2:
        raise GradingError("no verdict on odd cases")
    return GradeResult(passed=True)


def test_alike_pilot_runs_give_an_honest_interval_and_are_counted_once(store, thirty):
    arms = {"only": {"agent": "python", "function": "tests.runner.test_estimate:alike", "model": "m1"}}
    graders = ["tests.runner.test_estimate:half_graded"]
    exp = create_experiment(_spec(thirty, arms, graders=graders), store=store)
    est = estimate_experiment(exp.id, store=store, pilot=5)
    # 5 runs, 2 of them not graded: 5 runs, not 7
    assert est.pilot_runs == 5
    (arm,) = est.arms
    rest = 25 * 0.001
    assert arm.cost.value == pytest.approx(0.005 + rest)
    # no spread in the pilot, yet not ±0: at least 3/5 of the rest either side
    assert arm.cost.high - arm.cost.value >= 0.6 * rest * (1 - 1e-9)
    assert arm.cost.value - arm.cost.low >= 0.6 * rest * (1 - 1e-9)
