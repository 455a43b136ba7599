"""pass@k and pass^k through the whole path (store → metrics → CLI), failed executions counted as not passed."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.metrics import experiment_metrics
from abbench.stats import pass_at_k
from tests.results import cases_of, make_experiment

RUNS = [
    [True, True, True],
    [True, False, True],
    [True, "exec_fail", False],  # an execution failure is an attempt that did not pass: c=1, n=3
    [False, "grade_fail", True],  # a grading failure is no attempt: c=1, n=2
    [False, False, False],
]


def test_metrics_give_the_unbiased_curve_per_arm(store):
    exp = make_experiment(store, "e", cases_of(5), {"only": RUNS})
    s = experiment_metrics(exp, store=store).arm("only").stability
    assert [p.k for p in s.pass_k] == [1, 2, 3]
    passed, attempts = [3, 2, 1, 1, 0], [3, 3, 3, 2, 3]
    for k in (1, 2, 3):
        ref = pass_at_k(passed, attempts, k)
        got = s.pass_at(k)
        assert (got.pass_at_k, got.pass_hat_k) == pytest.approx((ref.pass_at_k, ref.pass_hat_k))
        assert got.pass_hat_k_interval == ref.pass_hat_k_interval
    # k = 3: the case with a grading failure has two attempts and is left out, counted
    assert (s.pass_at(3).n_cases, s.pass_at(3).n_short) == (4, 1)
    assert s.pass_at(3).pass_hat_k == pytest.approx(1 / 4)
    # k = 1 is the pass rate with execution failures counted as wrong
    assert s.pass_at(1).pass_at_k == pytest.approx((1 + 2 / 3 + 1 / 3 + 1 / 2 + 0) / 5)


def test_one_round_has_no_curve(store):
    exp = make_experiment(store, "e", cases_of(3), {"only": [[True], [False], [True]]})
    assert experiment_metrics(exp, store=store).arm("only").stability.pass_k == ()


def test_cli_metrics_prints_a_line_per_arm_and_json(store):
    make_experiment(store, "e", cases_of(5), {"a": RUNS, "b": [[True, True, True]] * 5})
    runner = CliRunner()
    out = runner.invoke(cli, ["--store", str(store.path), "metrics", "e"])
    assert out.exit_code == 0, out.output
    lines = [line for line in out.output.splitlines() if "pass^k" in line]
    assert len(lines) == 2
    assert "pass@k 50.0 / 73.3 / 75.0% · pass^k 50.0 / 26.7 / 25.0% for k = 1..3" in lines[0]
    assert "pass^k 100.0 / 100.0 / 100.0% for k = 1..3" in lines[1]
    assert "k=3: 1" in lines[0]
    data = json.loads(runner.invoke(cli, ["--store", str(store.path), "metrics", "e", "--json"]).output)
    arm = next(a for a in data["arms"] if a["arm"] == "a")
    curve = arm["stability"]["pass_k"]
    assert [p["k"] for p in curve] == [1, 2, 3] and curve[2]["n_short"] == 1
