"""A comparison made right after the figures (the results widget's order: metrics, then the gate's
comparison) counts each case from the codes the figures read and reads only the sums no code carries:
every figure must be the one a comparison on the store read afresh gives."""

from __future__ import annotations

import json

import numpy as np
import pytest

from abbench.compare import compare_arms
from abbench.gate import evaluate_gate
from abbench.metrics import experiment_metrics
from abbench.store import open_store
from abbench.store.bulk._outcomes import KEPT_CODES
from tests.results import cases_of, make_experiment


def _runs(rng, n: int, *, scores: bool) -> list[list]:
    """Three rounds a case: right or wrong mostly, some failures, cancelled and open runs; latencies and
    costs whose per-case sums depend on the order they are added in; scores of 0 and 1, or judges'."""
    out = []
    for _ in range(n):
        rounds = []
        for _ in range(3):
            u = rng.random()
            if u < 0.04:
                rounds.append("exec_fail")
            elif u < 0.07:
                rounds.append("grade_fail")
            elif u < 0.09:
                rounds.append("cancelled")
            elif u < 0.11:
                rounds.append("pending")
            else:
                run = {"passed": bool(rng.random() < 0.8), "latency_ms": float(rng.gamma(2.0, 150.0))}
                run["cost"] = None if rng.random() < 0.1 else float(rng.random() / 300)
                if scores:
                    run["score"] = round(float(rng.random()), 3)
                rounds.append(run)
        out.append(rounds)
    return out


@pytest.mark.parametrize("scores", [False, True])
def test_compare_and_gate_after_the_figures_are_those_read_afresh(store, scores):
    rng = np.random.default_rng(17)
    exp = make_experiment(
        store, "after", cases_of(80), {"A": _runs(rng, 80, scores=scores), "B": _runs(rng, 80, scores=scores)}
    )
    options = {"outcome": "score"} if scores else {}
    KEPT_CODES.clear()
    metrics = experiment_metrics(exp.id, store=store)
    after = compare_arms(exp.id, "A", "B", store=store, **options)
    gated = evaluate_gate(exp.id, store=store, arms=("A", "B"))
    assert KEPT_CODES.kept((str(store.db_path), exp.id), store.state_stamp(), lambda a, b: a.same(b))
    with open_store(store.path, create=False) as fresh:
        assert json.dumps(experiment_metrics(exp.id, store=fresh).as_dict(), default=repr) == json.dumps(
            metrics.as_dict(), default=repr
        )
        afresh = compare_arms(exp.id, "A", "B", store=fresh, **options)
        gate = evaluate_gate(exp.id, store=fresh, arms=("A", "B"))
    assert json.dumps(after.as_dict(), default=repr) == json.dumps(afresh.as_dict(), default=repr)
    assert json.dumps(gated.as_dict(), default=repr) == json.dumps(gate.as_dict(), default=repr)
    assert after.usage and all(u.n for u in after.usage)  # cost, latency and tokens compared
