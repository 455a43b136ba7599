"""Gate metrics pass_at_k and pass_hat_k: `k:` in a rule, its value, and k beyond the rounds refused."""

from __future__ import annotations

import pytest

from abbench.errors import UsageError
from abbench.gate import evaluate_gate, metric_names, parse_rules
from abbench.metrics import experiment_metrics
from tests.results import cases_of, make_experiment

CONTROL = [[True, True, True]] * 4 + [[True, False, False]] * 4
TREATMENT = [[True, True, True]] * 6 + [[False, False, True]] * 2


@pytest.fixture
def exp(store):
    return make_experiment(store, "e", cases_of(8), {"control": CONTROL, "treatment": TREATMENT})


def test_pass_hat_k_with_k_reads_the_arms_figure(store, exp):
    rules = [
        {"metric": "pass_hat_k", "k": 3, "op": ">=", "value": 0.7},
        {"metric": "a.pass_at_k", "k": 2, "op": ">=", "value": 0.99},
        {"metric": "pass_hat_k[2]", "op": ">=", "value": 0.99},
    ]
    result = evaluate_gate(exp, rules=rules, store=store)
    m = experiment_metrics(exp, store=store)
    hat3 = m.arm("treatment").stability.pass_at(3).pass_hat_k
    assert hat3 == pytest.approx(6 / 8)
    first, second, third = result.rules
    assert first.value == pytest.approx(hat3) and first.status == "pass"
    assert second.value == pytest.approx(m.arm("control").stability.pass_at(2).pass_at_k)
    # control: four cases always right, four right once in three (pass@2 = 1 − C(2,2)/C(3,2) = 2/3)
    assert second.value == pytest.approx((4 + 4 * 2 / 3) / 8) and second.status == "fail"
    assert third.value == pytest.approx(6 / 8) and third.status == "fail"
    assert "pass_at_k[K]" in metric_names() and "pass_hat_k[K]" in metric_names()


def test_k_beyond_the_rounds_is_refused(store, exp):
    with pytest.raises(UsageError, match=r"k must be a whole number from 1 to the experiment's 3 round"):
        evaluate_gate(exp, rules=[{"metric": "pass_hat_k", "k": 4, "op": ">=", "value": 0.5}], store=store)


@pytest.mark.parametrize("k", ["²", "٣", "1.0", "-1"])
def test_a_k_that_is_not_ascii_digits_is_refused_as_a_usage_error(store, exp, k):
    """A superscript or another script's digit (str.isdigit() takes "²", int() does not): said, never a crash."""
    with pytest.raises(UsageError, match=r"k must be a whole number from 1 to the experiment's 3 round"):
        evaluate_gate(exp, rules=[{"metric": f"pass_hat_k[{k}]", "op": ">=", "value": 0.5}], store=store)


@pytest.mark.parametrize(
    "rule, match",
    [
        ({"metric": "pass_hat_k", "op": ">=", "value": 0.5}, "needs k"),
        ({"metric": "pass_hat_k", "k": 0, "op": ">=", "value": 0.5}, "needs k"),
        ({"metric": "accuracy", "k": 2, "op": ">=", "value": 0.5}, "only pass_at_k and pass_hat_k take k"),
    ],
)
def test_bad_k_rules(rule, match):
    with pytest.raises(UsageError, match=match):
        parse_rules([rule])
