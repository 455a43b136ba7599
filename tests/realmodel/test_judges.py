"""The LLM judge and the pairwise judge on the real model, beside a rule grader.

SmolLM2-135M rarely keeps a judge's reply format: its grades fail (no verdict). A failing judge must not
erase the label grader's verdict: the run is decided by the graders that reached one, and a grading
failure is left for runs no grader could decide — as the docs define it. An advisory judge never decides.
"""

from __future__ import annotations

import pytest

from abbench.runner import run_experiment
from tests.realmodel.conftest import MODEL, routing_experiment, served_since

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("realmodel")]

QUERIES = [("Turn on the air conditioning.", "fast"), ("Plan a route to the airport.", "slow")]


def judge(server, kind="llm_judge", **kw):
    return {
        "type": kind,
        "model": MODEL,
        "base_url": server.base_url,
        "max_tokens": 24,
        "temperature": 0,
        "timeout_s": 300,
        "retries": 0,
        **kw,
    }


def run(store, server, graders, arms=None):
    name = f"judged-{len(store.query('SELECT id FROM experiments'))}"
    arms = arms or {"a": {"agent": "builtin"}}
    exp = routing_experiment(store, QUERIES, name, arms, retries=0, graders=graders)
    run_experiment(exp.id, store=store)
    return exp


def test_a_failing_judge_does_not_erase_the_label_graders_verdict(store, local_model):
    mark = local_model.requests
    exp = run(store, local_model, ["label_match", judge(local_model, pass_threshold=0.6)])
    served = served_since(local_model, mark)
    assert len(served) == len(QUERIES)  # the judge was asked once per run
    runs = store.runs.records(exp.id)
    grades = {(g.run_id, g.grader): g for g in store.grades.records(exp.id)}
    failed_judge = [r for r in runs if grades[(r.id, "llm_judge")].status == "error"]
    for r in runs:
        label = grades[(r.id, "label_match")]
        assert label.status == "ok"
        if r in failed_judge:
            # decided by label_match alone: right or wrong, never "grading failed"
            assert not r.grading_failed and bool(r.passed) == bool(label.passed)
    assert failed_judge, "the 135M judge kept its format: this test no longer shows the defect"


def test_an_advisory_judge_never_decides(store, local_model):
    exp = run(store, local_model, ["label_match", judge(local_model, pass_threshold=0.99, advisory=True)])
    grades = {(g.run_id, g.grader): g for g in store.grades.records(exp.id)}
    for r in store.runs.records(exp.id):
        assert (r.id, "llm_judge") in grades  # graded and kept
        assert bool(r.passed) == bool(grades[(r.id, "label_match")].passed) and not r.grading_failed


def test_the_pairwise_judge_runs_on_the_real_model(store, local_model):
    mark = local_model.requests
    arms = {"a": {"agent": "builtin"}, "b": {"agent": "builtin", "seed": 1}}
    exp = run(store, local_model, ["label_match", judge(local_model, "pairwise_judge")], arms=arms)
    served = served_since(local_model, mark)
    pair = [g for g in store.grades.records(exp.id) if g.grader == "pairwise_judge"]
    assert pair and len(served) >= len(QUERIES)
    assert all(g.status in ("ok", "error") for g in pair)
    # the pairwise judge never decides a run: label_match does
    assert all(not r.grading_failed for r in store.runs.records(exp.id))
