"""Gate rules on activation metrics: not assessed (no value, never a pass) unless an arm offers skills and
cases say which skill should trigger."""

from __future__ import annotations

from abbench.gate import GateOutcome, evaluate_gate
from tests.results import cases_of, make_experiment, table_2x2

METRICS = ("activation_recall", "activation_precision", "false_activation_rate")


def test_activation_rules_on_injected_arms_are_not_assessed_and_never_pass(store):
    a, b = table_2x2(30, 12, 3, 5)
    exp = make_experiment(store, "injected", cases_of(50), {"control": a, "treatment": b})
    result = evaluate_gate(exp, [f"{m} >= 0" for m in METRICS], store=store)
    assert result.outcome == GateOutcome.INCONCLUSIVE  # no rule could be assessed at all
    for rule in result.rules:
        assert rule.value is None
        assert rule.status == "missing" and "does not offer skills" in rule.message
    mixed = evaluate_gate(exp, ["accuracy >= 0", "activation_recall >= 0.9"], store=store)
    assert mixed.outcome == GateOutcome.BLOCK  # a block rule with no value blocks
    warned = evaluate_gate(
        exp,
        ["accuracy >= 0", *({"metric": m, "op": ">=", "value": 0, "allow_missing": True} for m in METRICS)],
        store=store,
    )
    assert warned.outcome == GateOutcome.PASS_WITH_WARNINGS
