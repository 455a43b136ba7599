"""The report's decision section shows an inconclusive non-inferiority or capability rule, the outcome and the votes."""

from __future__ import annotations

from abbench import report as section
from abbench.gate import evaluate_gate
from tests.results import cases_of, make_experiment, table_2x2, underpowered


def _html(parts) -> str:
    return "".join(p for p in parts if isinstance(p, str))


def test_an_inconclusive_gate_says_what_the_evidence_does_not_decide(store):
    a, b = table_2x2(180, 3, 3, 14)
    exp = make_experiment(store, "even", cases_of(200), {"control": a, "treatment": b})
    gate = evaluate_gate(exp, [{"metric": "non_inferior", "margin": 0.02}], store=store)
    html = _html(section.decision_section(gate))
    assert ">INCONCLUSIVE<" in html and "the evidence does not decide" in html
    assert (
        "straddles the margin of −2.0 points" in html and "more paired cases would likely settle it" in html
    )
    assert "<b>Outcome</b> — inconclusive:" in html
    assert "not worse by more than 2 points (lower bound above −2)" in html


def test_the_decision_section_shows_the_votes(store):
    a, b = table_2x2(80, 14, 3, 3)
    exp = make_experiment(store, "votes", cases_of(100), {"control": a, "treatment": b},
                          decision={"policy": "votes"})  # fmt: skip
    html = _html(section.decision_section(evaluate_gate(exp, store=store)))
    assert "votes: 14 wins, 3 losses, 83 ties; net +11 (+65 % of decided) · sign test p = 0.006" in html
    assert "capability · pass" in html and ">14 – 3<" in html


def test_the_paired_comparison_says_its_outcome(store):
    from abbench.compare import compare_arms

    a, b = table_2x2(180, 3, 3, 14)
    exp = make_experiment(store, "even", cases_of(200), {"control": a, "treatment": b})
    html = _html(section.comparison_section(compare_arms(exp, store=store, margin=0.05)))
    assert "Outcome — not worse: treatment is at most 5.0 points worse than control" in html


def test_the_default_gate_on_too_few_cases_is_inconclusive_with_the_cases_that_would_settle_it(store):
    gate = evaluate_gate(underpowered(store), store=store)  # default rules; 60 cases, CI about −7.6 to +24.3
    n_more = gate.comparison.verdict.n_more
    html = _html(section.decision_section(gate))
    assert ">INCONCLUSIVE<" in html and "PASS" not in html
    assert "the evidence does not decide" in html
    # The rule by its name and why, never its metric id and condition (the rules table keeps those).
    assert "<li>capability: the 95% CI -7.6 points to +24.3 points" in html
    assert f"about {n_more:,} more paired cases would likely settle it" in html
    # The capability card says inconclusive (amber), not pass (green) nor a loss (red), and why.
    assert '<div class="abb-card warn"><h4>capability · inconclusive</h4>' in html
    assert "straddles the margin of −2.0 points, so these 60 cases can neither show" in html
    assert '<tr class="warn"><td>capability</td><td class="n">—</td><td>INCONCLUSIVE</td>' in html
