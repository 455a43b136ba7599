"""Item 1 of issue 37: a case scored the same in both arms is a tie, whatever order its scores were added
in; every sign (fixed/regressed, wins/losses, up/down, the paired difference) is taken exactly."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binomtest, ttest_rel

from abbench.compare import compare_arms
from abbench.gate import evaluate_gate
from abbench.stats import paired_difference
from tests.recorded import recorded_experiment, write_dataset

# Three rounds that add up to 0.6 as decimals; as floats 0.1 + 0.1 + 0.4 is 0.6000000000000001 and
# 0.4 + 0.1 + 0.1 is 0.6, and 0.2 × 3 is 0.6000000000000001 again.
A_ROUNDS = (0.1, 0.1, 0.4)
B_ROUNDS = ((0.4, 0.1, 0.1), (0.2, 0.2, 0.2), (0.1, 0.4, 0.1), (0.3, 0.2, 0.1))


def _exact(values) -> Fraction:
    """The mean of the values as written, in rationals: the reference every figure is checked against."""
    return sum((Fraction(repr(float(v))) for v in values), Fraction(0)) / len(values)


@pytest.fixture
def tied(store, tmp_path):
    """40 cases, 3 rounds, both arms scoring each case 0.6 in total, in other orders and splits."""
    info = write_dataset(store, tmp_path, 40, domains=("billing", "cards"))

    def outcome(i, arm, r):
        rounds = A_ROUNDS if arm == "a" else B_ROUNDS[i % len(B_ROUNDS)]
        return {"prediction": "yes", "grades": {"judge": {"score": rounds[r - 1]}}}

    exp = recorded_experiment(
        store,
        info,
        "tied",
        outcome,
        n=40,
        rounds=3,
        decision={"policy": "votes", "margin": 0.2, "min_cases": 5},
    )
    return store, exp


def test_equal_scores_in_another_order_are_ties_everywhere(tied):
    store, exp = tied
    c = compare_arms(exp.name, store=store)
    assert c.outcome == "score"
    assert (len(c.fixed), len(c.regressed), c.moved) == (0, 0, (0, 0))
    assert np.array_equal(c.case_table.a_value, c.case_table.b_value)
    # The paired difference of exact per-case means is exactly 0, with no spread: no verdict of a change.
    assert c.main.difference == 0.0
    assert c.verdict.code == "no_detectable_difference" and c.verdict.p_value == 1.0
    assert "higher in 0 case(s), lower in 0" in c.verdict.text
    votes = c.votes()
    assert (votes.wins, votes.losses, votes.ties) == (0, 0, 40)
    assert votes.outcome == "inconclusive"
    for d in c.by_domain:
        assert (d.up, d.down, d.fixed, d.regressed, d.difference) == (0, 0, 0, 0, 0.0)
        assert d.p_value == 1.0 and not (d.significant_improvement or d.significant_regression)
    score = c.usage_metric("score")
    assert score.difference == 0.0 and score.median_difference == 0.0
    # The votes policy never passes an identical candidate.
    gate = evaluate_gate(exp.name, store=store)
    assert gate.outcome != "pass" and "0 wins, 0 losses, 40 ties" in gate.votes.text


def test_signs_match_exact_rationals_on_random_scores(store, tmp_path):
    """Scores of 0–3 decimals, some tied by construction in another order: every count and the paired
    difference agree with rational arithmetic and scipy."""
    rng = random.Random(37)
    n = 60
    info = write_dataset(store, tmp_path, n, domains=("a1", "a2", "a3"))
    plan = {}
    for i in range(n):
        a = [round(rng.random(), rng.randint(0, 3)) for _ in range(3)]
        b = rng.sample(a, 3) if i % 3 else [round(rng.random(), rng.randint(0, 3)) for _ in range(3)]
        plan[i] = {"a": a, "b": b}
    exp = recorded_experiment(
        store, info, "rand", lambda i, arm, r: {"prediction": "x", "grades": {"judge": {"score": plan[i][arm][r - 1]}}},
        n=n, rounds=3,
    )  # fmt: skip
    c = compare_arms(exp.name, store=store)
    means = {arm: [_exact(plan[i][arm]) for i in range(n)] for arm in "ab"}
    up = sum(mb > ma for ma, mb in zip(means["a"], means["b"], strict=True))
    down = sum(mb < ma for ma, mb in zip(means["a"], means["b"], strict=True))
    assert c.moved == (up, down) and (len(c.fixed), len(c.regressed)) == (up, down)
    assert c.case_table.a_value.tolist() == [float(m) for m in means["a"]]
    diffs = [float(mb - ma) for ma, mb in zip(means["a"], means["b"], strict=True)]
    assert c.main.difference == pytest.approx(float(sum(Fraction(d) for d in diffs) / n), abs=1e-15)
    ref = ttest_rel([float(m) for m in means["b"]], [float(m) for m in means["a"]])
    assert c.main.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    for d in c.by_domain:
        idx = [i for i in range(n) if c.case_table.domain[i] == d.domain]
        u = sum(means["b"][i] > means["a"][i] for i in idx)
        w = sum(means["b"][i] < means["a"][i] for i in idx)
        assert (d.up, d.down) == (u, w)
        assert d.p_value == pytest.approx(binomtest(min(u, w), u + w).pvalue if u + w else 1.0)


def _reference(values) -> float:
    """Short decimals: their rational mean rounded once; a group with a value of more than 15 decimals
    (or too large to scale by 10**decimals within 2**53): the exact float sum (math.fsum) divided."""
    decimals = max(_places(v) for v in values)
    if decimals <= 15 and all(abs(v) * 10**decimals < 2**53 / len(values) for v in values):
        return float(_exact(values))
    return math.fsum(values) / len(values)


def _places(v: float) -> int:
    """Decimals of the shortest repr of `v` (1e-05 has 5, 2.5e-07 has 8)."""
    text = repr(float(v))
    mantissa, _, exponent = text.partition("e")
    places = len(mantissa.split(".")[1]) if "." in mantissa else 0
    if mantissa.endswith(".0"):
        places = 0
    return max(0, places - int(exponent or 0))


def test_exact_means_are_the_rational_means_rounded_once():
    from abbench.stats import exact_means

    rng = random.Random(3)
    pool = [round(rng.uniform(-5, 5), rng.randint(0, 17)) for _ in range(500)] + [2 / 3, 1e-300, 1e12 + 0.5]
    for _ in range(300):
        k = rng.randint(1, 7)
        values = rng.sample(pool, k)
        shuffled = rng.sample(values, k)
        expected = _reference(values)
        assert exact_means(values, [k])[0] == expected == exact_means(shuffled, [k])[0], values
    groups = [rng.sample(pool, rng.randint(1, 5)) for _ in range(50)]
    got = exact_means(np.concatenate(groups), [len(g) for g in groups])
    assert got.tolist() == [_reference(g) for g in groups]
    # equal decimal sums of different values are the same mean
    assert exact_means([0.1, 0.1, 0.4, 0.2, 0.2, 0.2, 0.3, 0.3, 0.0], [3, 3, 3]).tolist() == [0.2, 0.2, 0.2]


def test_the_paired_difference_of_reordered_rounds_is_zero():
    a = [list(A_ROUNDS)] * 30
    b = [list(B_ROUNDS[i % len(B_ROUNDS)]) for i in range(30)]
    d = paired_difference(a, b, method="t")
    assert d.difference == 0.0 and d.mean_a == d.mean_b
