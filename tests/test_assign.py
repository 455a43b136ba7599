"""Online assignment: stable buckets, weights respected, experiments independent, off sends all to control."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from abbench.assign import assign, bucket
from abbench.errors import UsageError

VARIANTS = ["control", "treatment"]
UNITS = [f"user-{i}" for i in range(100_000)]


def test_the_same_unit_always_gets_the_same_variant():
    first = [assign("exp", u, VARIANTS) for u in UNITS[:2000]]
    again = [assign("exp", u, VARIANTS) for u in UNITS[:2000]]
    assert first == again
    assert assign("exp", 42, VARIANTS) == assign("exp", "42", VARIANTS)
    assert 0.0 <= bucket("exp", "x") < 1.0


def test_the_bucket_is_the_documented_hash():
    # A change of hashing would silently reshuffle every running experiment: derive it independently.
    for i in range(50):
        digest = hashlib.sha256(f"checkout\x1fu{i}".encode()).digest()
        point = int.from_bytes(digest[:8], "big") / 2**64
        assert bucket("checkout", f"u{i}") == point
        assert assign("checkout", f"u{i}", VARIANTS, weights=[3, 1]) == (
            "control" if point < 0.75 else "treatment"
        )


@pytest.mark.parametrize("weights", [None, [9, 1], [1, 2, 7], [0, 1, 1]])
def test_weights_are_respected(weights):
    import scipy.stats as scipy_stats

    variants = ["a", "b", "c"][: len(weights) if weights else 2]
    w = weights or [1] * len(variants)
    counts = Counter(assign("weights", u, variants, weights=weights) for u in UNITS)
    observed = [counts[v] for v in variants]
    expected = [len(UNITS) * x / sum(w) for x in w]
    if 0 in w:
        assert observed[w.index(0)] == 0
        observed = [o for o, x in zip(observed, w, strict=True) if x]
        expected = [e for e, x in zip(expected, w, strict=True) if x]
    assert scipy_stats.chisquare(observed, expected).pvalue > 0.001


def test_experiments_are_salted_independently():
    import scipy.stats as scipy_stats

    pairs = Counter((assign("one", u, VARIANTS), assign("two", u, VARIANTS)) for u in UNITS)
    table = [[pairs[("control", "control")], pairs[("control", "treatment")]],
             [pairs[("treatment", "control")], pairs[("treatment", "treatment")]]]  # fmt: skip
    assert scipy_stats.chi2_contingency(table).pvalue > 0.001
    assert (
        sum(
            a != b
            for a, b in zip(
                *[[assign(n, u, VARIANTS) for u in UNITS[:1000]] for n in ("one", "two")], strict=True
            )
        )
        > 400
    )


def test_a_disabled_experiment_sends_everyone_to_the_first_variant():
    assert {assign("off", u, VARIANTS, enabled=False) for u in UNITS[:500]} == {"control"}


@pytest.mark.parametrize(
    ("variants", "weights", "message"),
    [
        ([], None, "at least one variant"),
        (["a", "a"], None, "distinct"),
        (["a", "b"], [1], "1 weights for 2 variants"),
        (["a", "b"], [1, -1], "≥ 0"),
        (["a", "b"], [0, 0], "not all 0"),
        (["a", "b"], [1, float("nan")], "finite"),
    ],
)
def test_bad_arguments(variants, weights, message):
    with pytest.raises(UsageError, match=message):
        assign("exp", "u", variants, weights=weights)
