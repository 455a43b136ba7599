"""Standard errors: plain, clustered (against statsmodels OLS), and over repeated rounds."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, strategies as st

from abbench.errors import UsageError
from abbench.stats import FewClustersWarning, clustered_se, mean_se, repeated_se


def _ols(y, **fit):
    return sm.OLS(np.asarray(y, dtype=float), np.ones(len(y))).fit(**fit)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("binary", [True, False])
def test_mean_se_matches_ols(seed, binary):
    rng = np.random.default_rng(seed)
    y = rng.random(40 + 37 * seed)
    y = (y < 0.7).astype(float) if binary else y
    expected = _ols(y)
    result = mean_se(y)
    assert result.mean == pytest.approx(expected.params[0])
    assert result.se == pytest.approx(expected.bse[0], rel=1e-12)
    low, high = _ols(y, use_t=False).conf_int()[0]
    assert (result.interval.low, result.interval.high) == pytest.approx((low, high), rel=1e-12)
    t_low, t_high = _ols(y, use_t=True).conf_int()[0]
    t_result = mean_se(y, method="t")
    assert (t_result.interval.low, t_result.interval.high) == pytest.approx((t_low, t_high), rel=1e-12)


def test_mean_se_accepts_booleans_tuples_and_arrays():
    assert mean_se([True, False, True, True]).mean == 0.75
    assert mean_se((1, 0, 1, 1)).se == mean_se(np.array([1.0, 0.0, 1.0, 1.0])).se


def test_mean_se_of_one_score_has_no_standard_error():
    result = mean_se([0.4])
    assert result.mean == 0.4 and math.isnan(result.se) and math.isnan(result.interval.low)
    assert result.as_dict()["se"] is None


def test_mean_se_of_equal_scores_is_zero():
    result = mean_se([1, 1, 1, 1])
    assert result.se == 0.0 and result.interval.low == result.interval.high == 1.0


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ([], "empty"),
        ([1, float("nan")], r"scores\[1\] is nan"),
        ([1, None], r"scores\[1\] is None"),
        ([1, "x"], r"scores\[1\] is 'x'"),
        ([1, float("inf")], r"scores\[1\] is inf"),
        ([[1, 2], [3, 4]], "flat sequence"),
        ("101", "sequence of numbers"),
        (3, "sequence of numbers"),
    ],
)
def test_mean_se_refuses_bad_scores(scores, message):
    with pytest.raises(UsageError, match=message):
        mean_se(scores)


@pytest.mark.parametrize(
    ("seed", "n", "groups"),
    [(0, 60, 2), (1, 200, 7), (2, 500, 31), (3, 1000, 120), (4, 90, 45), (5, 3000, 30)],
)
def test_clustered_se_matches_statsmodels_cluster_ols(seed, n, groups):
    rng = np.random.default_rng(seed)
    clusters = rng.integers(0, groups, n)
    clusters[:groups] = np.arange(groups)  # every cluster present
    effect = rng.normal(0, 0.3, groups)
    y = (rng.random(n) < 0.5 + effect[clusters].clip(-0.45, 0.45)).astype(float)
    expected = _ols(y, cov_type="cluster", cov_kwds={"groups": clusters})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewClustersWarning)
        result = clustered_se(y, [f"域{c}" for c in clusters])
        t_result = clustered_se(y, clusters, method="t")
    assert result.se == pytest.approx(expected.bse[0], rel=1e-12)
    assert result.n_clusters == groups
    assert (result.interval.low, result.interval.high) == pytest.approx(
        tuple(expected.conf_int()[0]), rel=1e-12
    )
    expected_t = _ols(y, cov_type="cluster", cov_kwds={"groups": clusters}, use_t=True)
    assert (t_result.interval.low, t_result.interval.high) == pytest.approx(
        tuple(expected_t.conf_int()[0]), rel=1e-12
    )
    assert result.naive_se == pytest.approx(_ols(y).bse[0])
    assert result.design_effect == pytest.approx((result.se / result.naive_se) ** 2)


def test_clustered_se_refuses_a_single_cluster():
    with pytest.raises(UsageError, match=r"at least 2 clusters.*'车控'"):
        clustered_se([1, 0, 1], ["车控", "车控", "车控"])


def test_clustered_se_warns_and_flags_few_clusters():
    with pytest.warns(FewClustersWarning, match="only 3 clusters") as record:
        result = clustered_se([1, 0, 1, 1, 0, 1], ["a", "b", "c", "a", "b", "c"])
    assert result.few_clusters
    assert record[0].filename == __file__  # the warning points at the caller, not at abbench


def test_clustered_se_is_quiet_with_enough_clusters():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = clustered_se([i % 3 for i in range(90)], [i % 30 for i in range(90)])
    assert not result.few_clusters


@pytest.mark.parametrize(
    ("scores", "clusters", "message"),
    [
        ([1, 0, 1], ["a", "b"], "scores has 3, clusters has 2"),
        ([1, 0], ["a", None], r"clusters\[1\] is missing"),
        ([1, 0], [["a"], ["b"]], "not hashable"),
    ],
)
def test_clustered_se_refuses_bad_clusters(scores, clusters, message):
    with pytest.raises(UsageError, match=message):
        clustered_se(scores, clusters)


def test_repeated_se_takes_per_case_means_first():
    rounds = np.array([[1, 1, 1, 0], [0, 0, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1], [0, 1, 0, 0]], dtype=float)
    result = repeated_se(rounds)
    means = rounds.mean(axis=1)
    assert result.mean == pytest.approx(means.mean())
    assert result.se == pytest.approx(means.std(ddof=1) / math.sqrt(5))
    assert result.within_variance == pytest.approx(rounds.var(axis=1, ddof=1).mean())
    assert result.between_variance == pytest.approx(means.var(ddof=1))
    assert (result.n_cases, result.n_scores, result.rounds, result.min_rounds, result.max_rounds) == (
        5,
        20,
        4,
        4,
        4,
    )
    assert result.naive_se == pytest.approx(rounds.ravel().std(ddof=1) / math.sqrt(20))


def test_repeated_se_handles_ragged_rounds():
    ragged = [[1, 0, 1], [1], [0.5, 0.25], (1.0, 1.0, 0.0, 0.0)]
    result = repeated_se(ragged)
    means = np.array([2 / 3, 1, 0.375, 0.5])
    assert result.mean == pytest.approx(means.mean())
    assert result.se == pytest.approx(means.std(ddof=1) / 2)
    within = [np.var([1, 0, 1], ddof=1), np.var([0.5, 0.25], ddof=1), np.var([1, 1, 0, 0], ddof=1)]
    assert result.within_variance == pytest.approx(np.mean(within))
    assert result.rounds == pytest.approx(4 / (1 / 3 + 1 + 1 / 2 + 1 / 4))
    assert (result.min_rounds, result.max_rounds, result.n_scores) == (1, 4, 10)
    flat = np.concatenate([np.asarray(r, dtype=float) for r in ragged])
    assert result.naive_se == pytest.approx(flat.std(ddof=1) / math.sqrt(10))


def test_repeated_se_of_single_rounds_equals_mean_se():
    scores = [0.2, 0.9, 0.4, 0.4, 1.0]
    result, plain = repeated_se(scores), mean_se(scores)
    assert (result.mean, result.se) == pytest.approx((plain.mean, plain.se))
    assert math.isnan(result.within_variance) and result.rounds == 1


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ([[1, 0], []], r"scores_by_case\[1\] has no round scores"),
        ([[1, 0], [1, None]], r"scores_by_case\[1\]\[1\] is None"),
        ([[1, 0], 1], r"scores_by_case\[1\] is 1"),
        (np.empty((0, 3)), "empty"),
        ([], "empty"),
    ],
)
def test_repeated_se_refuses_bad_rounds(scores, message):
    with pytest.raises(UsageError, match=message):
        repeated_se(scores)


@given(st.lists(st.lists(st.floats(0, 1), min_size=1, max_size=6), min_size=2, max_size=40))
def test_repeated_se_interval_contains_the_mean(rounds):
    result = repeated_se(rounds)
    assert result.interval.low <= result.mean + 1e-12
    assert result.mean <= result.interval.high + 1e-12
    assert result.within_variance >= 0 or math.isnan(result.within_variance)


def test_clustered_se_on_real_clinc150_domains(realdata):
    """CLINC150's test split: 10 domains, a score that depends on the domain; clustering must widen."""
    import json

    data = json.loads((realdata / "clinc150" / "data_full.json").read_text())
    domains = json.loads((realdata / "clinc150" / "domains.json").read_text())
    domain_of = {intent: domain for domain, intents in domains.items() for intent in intents}
    rows = [(text, domain_of[intent]) for text, intent in data["test"] if intent in domain_of]
    # A lexical "agent" that answers well on short utterances: short ones cluster in some domains.
    scores = [len(text.split()) <= 7 for text, _ in rows]
    with pytest.warns(FewClustersWarning):
        result = clustered_se(scores, [d for _, d in rows])
    expected = _ols(
        np.array(scores, dtype=float), cov_type="cluster", cov_kwds={"groups": [d for _, d in rows]}
    )
    assert result.n_clusters == 10 and result.n == 4500
    assert result.se == pytest.approx(expected.bse[0], rel=1e-12)
    assert result.se > result.naive_se
