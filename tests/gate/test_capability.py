"""The default capability rule follows the comparison's outcome: never a pass the evidence does not assess.

Better or not worse (on the comparison's margin) passes, a significant loss overall or in a domain blocks,
and an interval that straddles the margin is inconclusive — with the reason and about how many more cases
would settle it — in the rule's line, the decision, the CLI and its exit code.
"""

from __future__ import annotations

import json

import pytest

from abbench.compare import DEFAULT_MARGIN, compare_arms
from abbench.gate import Measured, evaluate_gate
from tests.results import cases_of, make_experiment, table_2x2, underpowered


def _twice(runs: list[list[bool]]) -> list[list[bool]]:
    """Each case's one round answered the same way in a second round (stability assessed, nothing flips)."""
    return [r * 2 for r in runs]


def test_an_underpowered_candidate_is_inconclusive_never_a_pass(store):
    g = evaluate_gate(underpowered(store), store=store)
    c = g.comparison
    assert c.verdict.outcome == "inconclusive" and c.verdict.margin == DEFAULT_MARGIN
    assert c.verdict.code == "no_detectable_difference" and c.mde.delta > 0.2  # not significantly worse
    assert g.outcome == "inconclusive" and not g.passed
    capability, *others = g.rules
    assert (
        capability.rule.name == "capability" and capability.status == "inconclusive" and not capability.blocks
    )
    assert [r.status for r in others] == ["pass", "pass", "pass"]  # only capability is left open
    n_more = c.verdict.n_more
    assert n_more is not None and n_more > 0
    assert (
        capability.message == f"capability: capability_pass == true: {c.verdict.outcome_text} → INCONCLUSIVE"
    )
    assert "straddles the margin of −2.0 points" in capability.message
    assert g.reason == "not decided by the evidence: capability: " + c.verdict.outcome_text.removeprefix(
        "inconclusive: "
    )
    assert f"about {n_more:,} more paired cases would likely settle it" in g.reason
    dim = g.decision.capability
    assert dim.conclusion == "inconclusive" and dim.assessed and dim.summary == c.verdict.outcome_text
    assert dim.evidence["outcome"] == "inconclusive" and dim.evidence["n_more"] == n_more
    assert dim.evidence["margin"] == DEFAULT_MARGIN and g.decision.conclusion == "inconclusive"
    json.dumps(g.as_dict(), allow_nan=False)


def test_the_decision_metric_and_spelled_out_rules_keep_their_meaning(store):
    exp = underpowered(store)
    g = evaluate_gate(exp, ["decision_pass == true"], store=store)
    assert g.outcome == "inconclusive" and g.rules[0].status == "inconclusive"
    assert "capability: inconclusive: the 95% CI" in g.rules[0].message
    # "Not significantly worse", written out in a gate file, still means just that.
    rules = [
        "significant_regression == false",
        "no_domain_significant_regression == true",
        "diff_ci_low >= -0.1",
    ]
    g = evaluate_gate(exp, rules, store=store)
    assert g.outcome == "pass" and [r.status for r in g.rules] == ["pass", "pass", "pass"]
    # A non_inferior rule with its own wider margin settles what the default margin cannot.
    g = evaluate_gate(exp, [{"metric": "non_inferior", "margin": 0.1}], store=store)
    assert g.outcome == "pass" and g.rules[0].value is True
    # ... and the decision beside it is judged on that margin, not unsettled at the default one.
    dim = g.decision.capability
    assert dim.conclusion == "pass" and dim.evidence["margin"] == 0.1 and g.comparison.verdict.margin == 0.1
    assert g.comparison.verdict.outcome == compare_arms(exp, store=store, margin=0.1).verdict.outcome


def test_the_decision_takes_the_narrowest_blocking_margin_and_no_warning_margin(store):
    exp = underpowered(store)
    wide, narrow = {"metric": "non_inferior", "margin": 0.1}, {"metric": "non_inferior", "margin": 0.05}
    g = evaluate_gate(exp, [wide, narrow], store=store)
    assert g.comparison.verdict.margin == 0.05 and g.decision.capability.evidence["margin"] == 0.05
    assert [r.rule.margin for r in g.rules] == [0.1, 0.05]  # each rule still settled on its own margin
    g = evaluate_gate(exp, [wide | {"severity": "warn"}, "n_paired >= 10"], store=store)
    assert g.comparison.verdict.margin == DEFAULT_MARGIN
    assert g.decision.capability.conclusion == "inconclusive"


def test_a_comparison_on_another_margin_is_not_reused(store):
    exp = underpowered(store)
    wide = compare_arms(exp, "no-skill", "doc-skill", store=store, margin=0.3)
    assert wide.verdict.outcome == "not worse"
    g = evaluate_gate(exp, store=store, measured=Measured(comparison=wide))
    assert g.outcome == "inconclusive" and g.comparison is not wide
    assert g.comparison.verdict.margin == DEFAULT_MARGIN


def test_the_cli_says_why_and_exits_1_or_0_with_allow_inconclusive(store, cli):
    underpowered(store)
    n_more = evaluate_gate("vira", store=store).comparison.verdict.n_more
    result = cli("gate", "vira")
    assert result.exit_code == 1, result.output
    out = result.output
    assert "doc-skill vs no-skill: GATE INCONCLUSIVE — decided on 120 of 120 runs per arm" in out
    assert (
        "  inconclusive: not decided by the evidence: capability: the 95% CI -7.6 points to +24.3 points"
        in out
    )
    assert f"about {n_more:,} more paired cases would likely settle it" in out
    # The reason is told once; the rule's line, the decision and the outcome point back to it.
    assert out.count("straddles the margin") == 1
    assert "  ? capability: capability_pass == true: inconclusive: (as above) → INCONCLUSIVE" in out
    assert "  capability inconclusive (as above)\n" in out and "outcome: inconclusive: (as above)" in out
    assert "PASS" not in out
    allowed = cli("gate", "vira", "--allow-inconclusive")
    assert allowed.exit_code == 0 and "inconclusive allowed (--allow-inconclusive): exit 0" in allowed.output
    data = json.loads(cli("gate", "vira", "--json").output)
    assert data["outcome"] == "inconclusive" and data["rules"][0]["status"] == "inconclusive"
    assert data["decision"]["capability"]["conclusion"] == "inconclusive"


@pytest.mark.parametrize(
    ("table", "outcome"),
    [
        ((990, 5, 5, 0), "not worse"),  # 1,000 cases, 5 fixed and 5 regressed: 95% CI about ±0.8 points
        ((30, 20, 0, 10), "better"),
    ],
)
def test_a_candidate_shown_not_worse_or_better_passes(store, table, outcome):
    a, b = table_2x2(*table)
    n = sum(table)
    exp = make_experiment(store, "shown", cases_of(n), {"control": _twice(a), "treatment": _twice(b)})
    g = evaluate_gate(exp, store=store)
    assert g.comparison.verdict.outcome == outcome
    assert g.decision.capability.conclusion == "pass" and g.rules[0].status == "pass"
    assert g.outcome == "pass" and g.passed


def test_a_significantly_worse_candidate_blocks(store):
    a, b = table_2x2(30, 0, 20, 10)
    g = evaluate_gate(
        make_experiment(store, "worse", cases_of(60), {"control": a, "treatment": b}), store=store
    )
    assert g.comparison.verdict.outcome == "worse"
    assert g.outcome == "block" and g.decision.capability.conclusion == "block"
    assert g.rules[0].status == "fail" and g.rules[0].blocks
    assert "treatment is significantly worse" in g.decision.capability.summary


def test_a_domain_significantly_worse_blocks_a_candidate_better_overall(store):
    cases = cases_of(90)  # nav, car, media in turn: 30 each
    a = [[c.domain == "nav"] for c in cases]  # A right on nav only
    b = [[c.domain != "nav"] for c in cases]  # B loses every nav case and wins every other
    g = evaluate_gate(make_experiment(store, "domain", cases, {"control": a, "treatment": b}), store=store)
    assert g.comparison.verdict.outcome == "better"
    assert g.outcome == "block" and g.decision.capability.conclusion == "block"
    assert "significantly worse in 1 domain(s): nav" in g.decision.capability.summary


def test_one_arm_or_an_unfinished_experiment_never_passes(store, cli):
    a, b = table_2x2(30, 20, 0, 10)  # clearly better, once finished
    solo = make_experiment(store, "solo", cases_of(60), {"treatment": b}, dataset="solo")
    g = evaluate_gate(solo, store=store)
    assert g.decision.capability.conclusion == "not assessed" and g.rules[0].status == "missing"
    # Nothing to compare with: no rule has a value, so nothing is decided (and capability alone would block).
    assert g.outcome == "inconclusive" and not g.passed and g.rules[0].blocks
    assert g.reason == "no rule could be assessed: every rule's metric has no value on these data"
    b_pending = [["pending"] if i % 10 == 0 else runs for i, runs in enumerate(b)]
    unfinished = make_experiment(store, "unfinished", cases_of(60), {"control": a, "treatment": b_pending})
    g = evaluate_gate(unfinished, store=store)
    assert g.outcome == "incomplete" and not g.passed
    thin = underpowered(store, "vira-unfinished", b_last=("pending", "pending"))
    g = evaluate_gate(thin, store=store)
    assert g.outcome == "incomplete" and not g.passed
    for name, said in (
        ("solo", "INCONCLUSIVE"),
        ("unfinished", "INCOMPLETE"),
        ("vira-unfinished", "INCOMPLETE"),
    ):
        result = cli("gate", name)
        assert result.exit_code == 1 and f"GATE {said}" in result.output and "PASS" not in result.output
        allowed = cli(
            "gate", name, "--allow-inconclusive"
        )  # lets an inconclusive gate exit 0, never passes it
        assert allowed.exit_code == (0 if said == "INCONCLUSIVE" else 1) and "PASS" not in allowed.output


def test_a_significant_loss_within_the_margin_still_blocks(store):
    # 5,000 cases, 25 fixed and 75 regressed: −1.0 point, interval about −1.4 to −0.6. The comparison calls
    # it not worse (within the 2-point margin); the default gate, as before, never passes a measured loss.
    a, b = table_2x2(4000, 25, 75, 900)
    g = evaluate_gate(
        make_experiment(store, "small-loss", cases_of(5000), {"control": a, "treatment": b}), store=store
    )
    assert g.comparison.verdict.outcome == "not worse" and g.comparison.verdict.code == "b_worse"
    assert g.decision.capability.conclusion == "block" and g.outcome == "block"
    assert "treatment is significantly worse (-1.0 points)" in g.decision.capability.summary
