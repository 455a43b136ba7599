"""`abbench plan`: a new experiment's size, one planned from an earlier one, and what a running one lacks."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from abbench.cli import cli
from abbench.compare import compare_arms, plan_from_experiment
from abbench.stats import plan_experiment
from tests.results import cases_of, make_experiment


def _run(store, *args):
    return CliRunner().invoke(cli, ["--store", str(store.path), *args])


def _pilot(store, name="pilot", n=60, rounds=1):
    rng = np.random.default_rng(5)
    a = rng.random((n, rounds)) < 0.8
    b = np.where(rng.random((n, rounds)) < 0.85, a, ~a)  # B agrees with A on ~85 % of the answers
    b[:6] = True
    return make_experiment(store, name, cases_of(n), {"control": a.tolist(), "treatment": b.tolist()})


def test_plan_for_a_new_experiment(store):
    out = _run(store, "plan", "--baseline", "0.85", "--effect", "0.05", "--discordance", "0.12", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["n"] == plan_experiment(0.85, 0.05, discordance=0.12).n == 375
    assert data["method"] == "mcnemar" and data["more"] == 375
    text = _run(store, "plan", "--baseline", "0.85", "--effect", "0.05").output
    assert "to detect 5 points from 85% with 80% power" in text and "per arm on different cases" in text


def test_plan_from_an_earlier_experiment_uses_its_discordance_and_variances(store):
    _pilot(store)
    c = compare_arms("pilot", store=store)
    observed = (c.outcomes.fixed + c.outcomes.regressed) / c.n_cases
    out = _run(store, "plan", "--baseline", "0.85", "--effect", "0.05", "--from", "pilot", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["discordance"] == observed and data["have"] == 0
    assert data["n"] == c.power_inputs.sample_size(0.05).n
    assert "pilot" in data["source"]


def test_plan_for_a_running_experiment_says_how_many_more(store):
    _pilot(store, "live", n=40, rounds=2)
    plan = plan_from_experiment("live", 0.03, store=store)
    assert plan.have == 40 and plan.more == plan.n - 40 > 0
    out = _run(store, "plan", "live", "--effect", "0.03")
    assert out.exit_code == 0, out.output
    assert (
        f"to detect 3 points you would need about {plan.more} more cases ({plan.n} in all; 40 run)"
        in out.output
    )


def test_usage_errors(store):
    assert _run(store, "plan", "--effect", "0.05").exit_code == 2
    both = _run(store, "plan", "--baseline", "0.8", "--effect", "0.05", "--discordance", "0.1", "--from", "x")
    assert both.exit_code == 2 and "use one" in both.output
    bad = _run(store, "plan", "--baseline", "0.85", "--effect", "0.05", "--discordance", "0.01")
    assert bad.exit_code != 0 and "between |effect|" in bad.output
