"""Cohen's kappa against scikit-learn (estimate) and statsmodels (standard errors, p-value)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

from abbench.errors import UsageError
from abbench.stats import cohen_kappa

LABELS = ["导航", "音乐", "车控", "闲聊"]


def _raters(seed, n, k, agreement):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < agreement, a, rng.integers(0, k, n))
    return a, b


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize(
    ("seed", "n", "k", "agreement"), [(0, 50, 2, 0.5), (1, 300, 4, 0.7), (2, 1000, 5, 0.2), (3, 20, 3, 0.9)]
)
def test_kappa_matches_sklearn_and_statsmodels(seed, n, k, agreement, weights):
    a, b = _raters(seed, n, k, agreement)
    result = cohen_kappa(a, b, weights=weights)
    assert result.kappa == pytest.approx(cohen_kappa_score(a, b, weights=weights), abs=1e-12)
    reference = sm_kappa(np.array(result.table), wt=weights)
    assert result.se == pytest.approx(reference.std_kappa, rel=1e-9)
    assert result.p_value == pytest.approx(reference.pvalue_two_sided, rel=1e-6, abs=1e-300)
    assert (result.interval.low, result.interval.high) == pytest.approx(
        (max(-1, reference.kappa_low), min(1, reference.kappa_upp)), rel=1e-9
    )


def test_kappa_on_chinese_labels_matches_sklearn():
    a, b = _raters(4, 400, 4, 0.6)
    la, lb = [LABELS[i] for i in a], [LABELS[i] for i in b]
    result = cohen_kappa(la, lb)
    assert result.kappa == pytest.approx(cohen_kappa_score(la, lb))
    assert result.categories == tuple(sorted(LABELS))
    assert sum(map(sum, result.table)) == 400


def test_perfect_agreement_is_one_and_table_is_diagonal():
    result = cohen_kappa(["fast", "slow", "fast"], ["fast", "slow", "fast"])
    assert result.kappa == 1.0 and result.observed_agreement == 1.0
    assert result.table == ((2, 0), (0, 1))


def test_one_shared_constant_label_gives_nan_kappa():
    result = cohen_kappa(["yes"] * 5, ["yes"] * 5)
    assert math.isnan(result.kappa) and result.as_dict()["kappa"] is None


def test_labels_fix_the_category_order_for_weights():
    scale = ["poor", "fair", "good", "great"]
    a = ["poor", "fair", "good", "great", "good", "fair"]
    b = ["fair", "fair", "great", "great", "good", "poor"]
    result = cohen_kappa(a, b, weights="linear", labels=scale)
    codes = {label: i for i, label in enumerate(scale)}
    expected = cohen_kappa_score([codes[x] for x in a], [codes[x] for x in b], weights="linear")
    assert result.kappa == pytest.approx(expected)
    assert result.categories == tuple(scale)


def test_mixed_labels_work_unweighted():
    assert cohen_kappa([1, "a", 1, "a"], [1, "a", "a", "a"]).n == 4


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        (["x", "y"], ["x"], {}, "labels_a has 2, labels_b has 1"),
        ([], [], {}, "empty"),
        (["x", None], ["x", "y"], {}, r"labels_a\[1\] is missing"),
        (["x", "y"], ["x", "y"], {"weights": "cubic"}, "weights must be"),
        ([1, "a"], [1, "a"], {"weights": "linear"}, "cannot be sorted"),
        (["x", "z"], ["x", "y"], {"labels": ["x", "y"]}, r"labels_a\[1\] is 'z'"),
        (["x"], ["x"], {"labels": ["x", "x"]}, "twice"),
    ],
)
def test_kappa_refuses_bad_input(a, b, kwargs, message):
    with pytest.raises(UsageError, match=message):
        cohen_kappa(a, b, **kwargs)


@given(st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)), min_size=1, max_size=80))
def test_kappa_is_symmetric_and_bounded(pairs):
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    forward, backward = cohen_kappa(a, b), cohen_kappa(b, a)
    if math.isnan(forward.kappa):
        assert math.isnan(backward.kappa)
        return
    assert forward.kappa == pytest.approx(backward.kappa, abs=1e-12)
    assert -1.0 <= forward.kappa <= 1.0
    assert forward.interval.low <= forward.kappa <= forward.interval.high
