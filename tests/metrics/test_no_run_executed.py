"""An arm none of whose runs executed has no cost figure: unknown, never $0 beside what another arm spent.
In the metrics (and their JSON), the CLI, the results widget and the report alike."""

from __future__ import annotations

import json

import pytest

from abbench.metrics import NO_RUN_EXECUTED, experiment_metrics
from abbench.runner import create_experiment, run_experiment
from abbench.testing import ScriptedOpenAIServer
from abbench.types import Case

ANSWER = json.dumps({"prediction": "fast", "reason": "a command"})


@pytest.fixture
def half_run(store):
    """Arm ``paid`` executed (priced: a known cost), arm ``idle`` never ran (its runs pending)."""
    cases = [Case(f"c{i}", f"打开空调 {i}", "fast") for i in range(3)]
    dataset = store.datasets.save("half", cases, label_set=["fast", "slow"])
    with ScriptedOpenAIServer(lambda request: ANSWER) as server:
        arm = {
            "agent": "openai",
            "model": "scripted",
            "base_url": server.base_url,
            "prices": {"input": 1.0, "output": 2.0},
        }
        spec = {"name": "half", "dataset": dataset.fingerprint, "arms": {"paid": arm, "idle": dict(arm)}}
        exp = create_experiment(spec, store=store)
        paid = [r.id for r in store.runs.records(exp.id) if r.arm == "paid"]
        run_experiment(exp.id, store=store, run_ids=paid)
    return exp


def test_an_arm_with_no_executed_run_has_no_cost_not_zero(store, half_run):
    m = experiment_metrics(half_run.name, store=store)
    usage = {a.arm: a.usage for a in m.arms}
    assert usage["paid"].total_cost > 0
    idle = usage["idle"]
    assert idle.executed == 0
    assert idle.total_cost is None and idle.cost_per_correct is None
    assert idle.reason == NO_RUN_EXECUTED
    data = {a["arm"]: a["usage"] for a in m.as_dict()["arms"]}
    assert data["idle"]["total_cost"] is None and data["idle"]["reason"] == NO_RUN_EXECUTED


def test_the_cli_says_no_run_executed(cli, store, half_run):
    out = cli("metrics", half_run.name, store=store.path).output
    idle = out[out.index("\nidle") :]
    cost = next(line for line in idle.splitlines() if line.strip().startswith("cost"))
    assert "no run executed" in cost and "$0" not in cost, cost
    data = json.loads(cli("metrics", half_run.name, "--json", store=store.path).output)
    arms = {a["arm"]: a["usage"] for a in data["arms"]}
    assert arms["idle"]["total_cost"] is None


def test_the_widget_and_the_report_say_no_run_executed(store, half_run):
    from abbench.widgets import ResultsWidget

    widget = ResultsWidget(store, experiment=half_run.name)
    row = widget.usage_html.value.split("idle", 1)[1].split("</tr>", 1)[0]
    assert NO_RUN_EXECUTED in row and "$0" not in row
    from abbench.report._sections._arms import _usage_row

    m = experiment_metrics(half_run.name, store=store)
    (idle,) = [a for a in m.arms if a.arm == "idle"]
    row = _usage_row(idle)
    assert row["cost_total"] == NO_RUN_EXECUTED
    (ran,) = [a for a in m.arms if a.arm != "idle"]
    assert set(row) == set(_usage_row(ran))  # every column the table shows has a cell: no raw None
    assert all(v is not None for v in row.values())
