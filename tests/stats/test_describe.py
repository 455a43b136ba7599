"""Percentiles and summaries of cost, tokens and latency: tolerant of gaps, strict about nonsense."""

from __future__ import annotations

import numpy as np
import pytest

from abbench.errors import UsageError
from abbench.stats import percentile, summary


@pytest.mark.parametrize("q", [0, 5, 50, 95, 99, 100])
def test_percentile_matches_numpy(q):
    values = np.random.default_rng(0).lognormal(5, 1, 999)
    assert percentile(values, q) == pytest.approx(np.percentile(values, q))


@pytest.mark.parametrize("values", [[], None, [None, None], [float("nan")], np.array([])])
def test_percentile_of_nothing_is_none(values):
    assert percentile(values, 95) is None


def test_percentile_skips_missing_values():
    assert percentile([1.0, None, 3.0, float("nan"), 2.0], 50) == 2.0


@pytest.mark.parametrize(
    ("values", "q", "message"),
    [
        ([1, 2], 101, "between 0 and 100"),
        ([1, 2], "p95", "between 0 and 100"),
        ([1, "x"], 50, r"values\[1\] is 'x'"),
        ([1, float("inf")], 50, "finite"),
    ],
)
def test_percentile_refuses_nonsense(values, q, message):
    with pytest.raises(UsageError, match=message):
        percentile(values, q)


def test_summary_of_latencies():
    values = [120, 80, None, 200, 95, 3000]
    result = summary(values)
    present = np.array([120, 80, 200, 95, 3000], dtype=float)
    assert (result.n, result.missing) == (5, 1)
    assert result.mean == pytest.approx(present.mean())
    assert result.std == pytest.approx(present.std(ddof=1))
    assert (result.min, result.max, result.total) == (80.0, 3000.0, present.sum())
    assert result.p50 == pytest.approx(np.percentile(present, 50))
    assert result.p95 == pytest.approx(np.percentile(present, 95))


def test_summary_of_nothing_reads_as_no_data():
    result = summary([])
    assert (result.n, result.mean, result.p95, result.total) == (0, None, None, 0.0)
    assert summary([None]).missing == 1
    assert summary([4.0]).std is None
