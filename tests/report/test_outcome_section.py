"""The report's decision section shows an inconclusive non-inferiority rule, the outcome and the votes."""

from __future__ import annotations

from abbench.gate import evaluate_gate
from abbench.report import _sections as section
from tests.results import cases_of, make_experiment, table_2x2


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
