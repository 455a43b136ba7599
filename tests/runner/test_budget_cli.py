"""Budgets through the command line, in child processes: run pauses with its figures, status says why,
resume raises the limit and finishes; and the openai adapter's failed attempts count against a budget."""

from __future__ import annotations

import json

import pytest

from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from abbench.testing import Reply, ScriptedOpenAIServer
from tests.conftest import run_abbench

from .conftest import make_cases

PRICED = {"agent": "python", "function": "tests.runner.test_budget:priced"}  # 0.001 and 12 tokens a run


@pytest.mark.slow
def test_run_pauses_status_says_why_and_resume_with_a_higher_budget_finishes(tmp_path):
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    ds = store.datasets.save("cli", make_cases(10), label_set=["fast", "slow"])
    spec = {
        "name": "capped",
        "dataset": ds.fingerprint,
        "arms": {"only": PRICED},
        "concurrency": 1,
        "budget": {"max_cost": 0.0035},
    }
    exp = create_experiment(spec, store=store)
    ran = run_abbench("--store", store_dir, "run", exp.id, "-q")
    assert ran.returncode == 3, ran.stderr  # paused on its budget: its work is not done
    said = "paused: budget reached — $0.003 of $0.0035 spent, 3 of 10 runs"
    assert said in ran.stdout
    assert "raise the budget and go on: abbench resume capped --budget 0.01" in ran.stdout

    status = run_abbench("--store", store_dir, "status", exp.id)
    assert said in status.stdout
    data = json.loads(run_abbench("--store", store_dir, "status", exp.id, "--json").stdout)
    assert data["status"] == "paused" and data["pause_reason"]["spent"] == pytest.approx(0.003)
    assert data["status_text"] == said

    # going on without a higher budget would stop at once: the command says what to do instead
    again = run_abbench("--store", store_dir, "resume", exp.id)
    assert again.returncode == 0 and "raise the budget to go on" in again.stdout
    assert store.runs.counts(exp.id)["only"]["pending"] == 7

    resumed = run_abbench("--store", store_dir, "resume", exp.id, "--budget", "8.00", "-q")
    assert resumed.returncode == 0, resumed.stderr
    assert "budget of #1 capped now $8.00" in resumed.stdout and ": finished in" in resumed.stdout
    counts = store.runs.counts(exp.id)["only"]
    assert counts["pending"] == 0 and counts["pass"] + counts["fail"] == 10
    assert run_abbench("--store", store_dir, "status", exp.id).stdout.startswith("capped (#1): finished")


@pytest.mark.slow
def test_estimate_in_a_child_process_warns_of_the_budget(tmp_path):
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    ds = store.datasets.save("cli", make_cases(20), label_set=["fast", "slow"])
    spec = {"name": "est", "dataset": ds.fingerprint, "arms": {"only": PRICED}, "budget": {"max_cost": 0.01}}
    exp = create_experiment(spec, store=store)
    out = run_abbench("--store", store_dir, "estimate", exp.id, "--pilot", "4", "-q")
    assert out.returncode == 0, out.stderr
    assert "estimate from the pilot of 4 cases per arm; the pilot ran 4 runs" in out.stdout
    assert "$0.02" in out.stdout  # 20 runs at 0.001
    assert "warning: the experiment's budget of $0.01 would be reached: projected $0.02" in out.stdout
    # the pilot's runs are the experiment's: four of twenty are done
    assert store.runs.counts(exp.id)["only"]["pending"] == 16


def test_failed_openai_attempts_count_against_the_budget(store, skill_dir):
    ds = store.datasets.save("oa", make_cases(6), label_set=["fast", "slow"])
    # every reply is unreadable: 1,000 tokens in and 100 out at $1/$2 per million = $0.0012 per call
    with ScriptedOpenAIServer(lambda request: Reply.text("no idea at all", usage=(1000, 100))) as server:
        arm = {
            "agent": "openai",
            "model": "scripted",
            "base_url": server.base_url,
            "skill": str(skill_dir),
            "prices": {"input": 1.0, "output": 2.0},
            "max_retries": 0,
        }
        spec = {
            "name": "oa",
            "dataset": ds.fingerprint,
            "arms": {"gpt": arm},
            "concurrency": 1,
            "retries": 1,
            "budget": {"max_cost": 0.005},
        }
        exp = create_experiment(spec, store=store)
        summary = run_experiment(exp.id, store=store)
        calls = len(server.requests)
    spent = store.attempts.spend_by_run(exp.id)[exp.arms[0].id]
    assert summary.status == "paused" and summary.executed == 0
    assert spent.failed_attempts == spent.attempts and spent.cost == pytest.approx(calls * 0.0012)
    assert spent.cost <= 0.005 < spent.cost + 0.0012 * (calls / summary.failed)  # stopped at the limit
    assert summary.pause_reason.spent == pytest.approx(spent.cost)
    assert summary.failed < 6
