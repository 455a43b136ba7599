"""Cost and tokens an agent does not report are unknown, never zero: a silent $0 made an arm look free."""

from __future__ import annotations

import math

import pytest

from abbench import compare_arms, create_experiment, experiment_metrics, run_experiment

AGENTS = """
def silent(task):
    return {"prediction": task.case.expected}


def billed(task):
    return {"prediction": task.case.expected, "cost": 0.002, "usage": {"input_tokens": 30, "output_tokens": 5}}
"""


@pytest.fixture
def experiment(store, dataset, tmp_path):
    (tmp_path / "agents.py").write_text(AGENTS, encoding="utf-8")
    spec = {
        "name": "unknown-cost",
        "dataset": dataset.fingerprint,
        "rounds": 2,
        "graders": ["label_match", {"type": "max_tokens", "n": 100}],
        "arms": {
            "silent": {"agent": "python", "function": f"{tmp_path / 'agents.py'}:silent", "sees_gold": True},
            "billed": {"agent": "python", "function": f"{tmp_path / 'agents.py'}:billed", "sees_gold": True},
        },
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp.id, store=store)
    return exp


RUN_USAGE = (
    "SELECT a.name, r.cost, r.input_tokens, r.output_tokens FROM runs r JOIN arms a ON a.id = r.arm_id "
    "WHERE r.experiment_id=?"
)
TOKEN_LIMIT_GRADES = (
    "SELECT a.name, g.status, g.passed, g.error FROM grades g JOIN runs r ON r.id = g.run_id "
    "JOIN arms a ON a.id = r.arm_id WHERE g.experiment_id=? AND g.grader='max_tokens'"
)


def _per_arm(rows) -> tuple[list[tuple], list[tuple]]:
    """Rows whose first column is the arm's name, split into the silent arm's and the billed arm's (the
    name left out)."""
    return tuple([tuple(r)[1:] for r in rows if r[0] == arm] for arm in ("silent", "billed"))


def test_an_agent_reporting_no_cost_or_tokens_is_stored_and_measured_as_unknown(store, experiment):
    silent, billed = _per_arm(store.query(RUN_USAGE, (experiment.id,)))
    assert silent and set(silent) == {(None, None, None)}
    assert billed and set(billed) == {(0.002, 30, 5)}

    metrics = {a.arm: a for a in experiment_metrics(experiment.id, store=store).arms}
    quiet, paid = metrics["silent"].usage, metrics["billed"].usage
    assert quiet.total_cost is None and quiet.cost_per_correct is None
    assert quiet.reason == "the agent reported no cost for any run"
    assert (quiet.cost.n, quiet.tokens.n) == (0, 0) and quiet.latency_ms.n == len(silent)
    assert paid.total_cost == pytest.approx(0.002 * len(billed))
    assert paid.cost_per_correct == pytest.approx(0.002) and paid.tokens.mean == 35


def test_a_comparison_never_reads_an_unknown_cost_as_free(store, experiment):
    c = compare_arms(experiment.id, "billed", "silent", store=store)
    cost = next(u for u in c.usage if u.metric == "cost")
    tokens = next(u for u in c.usage if u.metric == "tokens")
    for d in (cost, tokens):
        assert d.n == 0 and d.difference is None and d.relative is None, d  # not "−100 %"
        assert "not reported by an agent" in d.reason
    latency = next(u for u in c.usage if u.metric == "latency_ms")
    assert latency.n > 0 and math.isfinite(latency.difference)


def test_a_token_limit_cannot_pass_an_agent_that_reports_no_tokens(store, experiment):
    silent, billed = _per_arm(store.query(TOKEN_LIMIT_GRADES, (experiment.id,)))
    assert silent and {s for s, _, _ in silent} == {"error"}
    assert all("reported no token usage" in e for _, _, e in silent)
    assert billed and {(s, p) for s, p, _ in billed} == {("ok", 1)}


def test_regrading_from_the_store_still_reads_unknown_tokens_as_unknown(store, experiment):
    """A regrade reads the executions back from the store: NULL tokens must not come back as 0 (a pass)."""
    from abbench import regrade_experiment

    regrade_experiment(experiment.id, store=store)
    latest = store.grades.records(experiment.id, latest=True)
    silent_runs = {r.id for r in store.runs.records(experiment.id) if r.arm == "silent"}
    mine = [g for g in latest if g.grader == "max_tokens" and g.run_id in silent_runs]
    assert mine and {g.status for g in mine} == {"error"}
    assert all(
        r.output.usage is None and r.output.cost is None
        for r in store.runs.records(experiment.id)
        if r.id in silent_runs
    )
