"""Items 2 and 4 of issue 37: a cost, token count or latency a run did not report is unknown, never 0.
A case's figure is its mean over the runs that reported it; a paired difference uses only cases both
arms reported; `metrics` says how many runs reported no cost; a latency never recorded is not 0 ms."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy.stats import ttest_rel

from abbench.compare import compare_arms
from abbench.export import export
from abbench.gate import evaluate_gate
from abbench.metrics import experiment_metrics
from tests.recorded import recorded_experiment, write_dataset

N = 40


def _cli(store, *args):
    from abbench.cli import cli

    return CliRunner().invoke(cli, ["--store", str(store.path), *args], catch_exceptions=False).output


def test_a_round_without_a_cost_is_not_free(store, tmp_path):
    """A's second round reports no cost; every reported run costs $0.0020 in both arms: no difference."""
    info = write_dataset(store, tmp_path, N)

    def outcome(i, arm, r):
        o = {"prediction": "yes" if i % 2 else "no", "latency_ms": 500.0}
        if not (arm == "a" and r == 2):
            o["cost"] = 0.002
        return o

    exp = recorded_experiment(store, info, "cost", outcome, n=N, rounds=2, graders=["label_match"])
    c = compare_arms(exp.name, store=store)
    cost = c.usage_metric("cost")
    assert (cost.value_a, cost.value_b, cost.difference, cost.relative, cost.n) == (0.002, 0.002, 0.0, 0.0, N)
    assert any(n.startswith("cost: 40 executed run(s) of the paired cases reported none") for n in c.notes)
    gate = evaluate_gate(exp.name, store=store)
    cost_rules = [r for r in gate.rules if r.rule.metric in ("cost_pass", "cost_change")]
    assert all(r.status == "pass" for r in cost_rules), [
        (r.rule.metric, r.value, r.status) for r in cost_rules
    ]


@pytest.fixture
def priced(store, tmp_path):
    """240 runs (40 cases × 3 rounds × 2 arms), costs and tokens missing at random (about 38 % of runs)."""
    rng = random.Random(92)
    info = write_dataset(store, tmp_path, N)
    plan = {}
    for i in range(N):
        for arm in "ab":
            for r in (1, 2, 3):
                right = rng.random() < (0.6 if arm == "a" else 0.7)
                gold = "yes" if i % 2 else "no"
                o = {"prediction": gold if right else ("no" if gold == "yes" else "yes")}
                if rng.random() > 0.38:
                    o["cost"] = round(rng.uniform(0.001, 0.004) * (1.3 if arm == "b" else 1), 6)
                if rng.random() > 0.3:
                    o["usage"] = {"input_tokens": rng.randint(100, 900), "output_tokens": rng.randint(1, 50)}
                if rng.random() > 0.25:
                    o["latency_ms"] = round(rng.uniform(200, 900), 1)
                plan[(i, arm, r)] = o
    exp = recorded_experiment(store, info, "priced", lambda i, arm, r: plan[(i, arm, r)], n=N, rounds=3,
                              graders=["label_match"])  # fmt: skip
    rows = [
        {
            "case": i, "arm": arm, "right": o["prediction"] == ("yes" if i % 2 else "no"), "cost": o.get("cost"),
            "tokens": sum(o["usage"].values()) if "usage" in o else None, "latency": o.get("latency_ms"),
        }
        for (i, arm, r), o in plan.items()
    ]  # fmt: skip
    return store, exp, pd.DataFrame(rows).astype({"cost": float, "tokens": float, "latency": float})


@pytest.mark.parametrize(
    ("metric", "column"), [("cost", "cost"), ("tokens", "tokens"), ("latency_ms", "latency")]
)
def test_paired_usage_is_over_the_runs_and_cases_that_reported_it(priced, metric, column):
    store, exp, df = priced
    c = compare_arms(exp.name, store=store, bootstrap=False)
    # pandas' mean skips missing values: each case's mean over the runs that reported it, then the
    # cases both arms reported
    per_case = df.pivot_table(index="case", columns="arm", values=column, aggfunc="mean").dropna()
    u = c.usage_metric(metric)
    assert u.n == len(per_case)
    assert u.value_a == pytest.approx(per_case["a"].mean()) and u.value_b == pytest.approx(
        per_case["b"].mean()
    )
    assert u.difference == pytest.approx((per_case["b"] - per_case["a"]).mean())
    assert u.p_value == pytest.approx(ttest_rel(per_case["b"], per_case["a"]).pvalue)


def test_metrics_say_how_many_runs_reported_no_cost(priced):
    store, exp, df = priced
    m = experiment_metrics(exp.name, store=store)
    out = _cli(store, "metrics", exp.name)
    for arm in "ab":
        runs = df[df.arm == arm]
        u = m.arm(arm).usage
        unpriced = int(runs.cost.isna().sum())
        assert unpriced > 0 and u.cost.missing == unpriced
        assert u.total_cost == pytest.approx(runs.cost.sum())
        # over the priced runs only: their cost over how many of them were right
        priced_runs = runs.dropna(subset=["cost"])
        assert u.cost_per_correct == pytest.approx(priced_runs.cost.sum() / priced_runs.right.sum())
        assert f"{unpriced} of {len(runs)} runs reported no cost" in out
        latency = runs.latency.dropna()
        assert u.latency_ms.n == len(latency) and u.latency_ms.mean == pytest.approx(latency.mean())
        assert u.latency_ms.p50 == pytest.approx(np.percentile(latency, 50))
    assert f"(over the {len(df[df.arm == 'a'].latency.dropna())} of 120 runs that reported it)" in out


def test_a_latency_never_recorded_is_unknown_not_zero(store, tmp_path):
    info = write_dataset(store, tmp_path, N)
    exp = recorded_experiment(
        store, info, "nolat", lambda i, arm, r: {"prediction": "yes" if (i + r) % 3 else "no"}, n=N, rounds=2,
        graders=["label_match"],
    )  # fmt: skip
    m = experiment_metrics(exp.name, store=store)
    a = m.arm("a")
    assert a.usage.executed == 2 * N and a.usage.latency_ms.n == 0 and a.usage.latency_ms.mean is None
    assert a.stability.flip_rate is not None  # the runs are executed: their answers are compared
    c = compare_arms(exp.name, store=store)
    lat = c.usage_metric("latency_ms")
    assert lat.method == "none" and lat.difference is None and lat.p_value is None
    out = _cli(store, "metrics", exp.name)
    assert "latency             not reported by the agent" in out and "0.0 ms" not in out
    assert "0 ms" not in _cli(store, "compare", exp.name)
    gate = evaluate_gate(exp.name, ["p95_latency_ms <= 1000"], store=store)
    assert gate.rules[0].value is None and gate.rules[0].status != "pass"
    for fmt in ("csv", "jsonl"):
        path = tmp_path / f"runs.{fmt}"
        export(exp.name, "runs", fmt, path, store=store)
        if fmt == "jsonl":
            assert {json.loads(line)["latency_ms"] for line in path.read_text().splitlines()} == {None}
        else:
            frame = pd.read_csv(path)
            assert frame["latency_ms"].isna().all() and len(frame) == 4 * N
