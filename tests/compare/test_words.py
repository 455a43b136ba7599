"""How the comparison is worded where it is shown (CLI, report): an MDE only when it means something, the
per-domain table's interval and test named, and every count with its thousands grouped."""

from __future__ import annotations

import html

import numpy as np

from abbench.compare import compare_arms
from abbench.gate import evaluate_gate
from abbench.report import comparison_section
from tests.results import cases_of, make_experiment, table_2x2


def _page(c) -> str:
    """The report's comparison section as text (its charts left out)."""
    return html.unescape("".join(p for p in comparison_section(c) if isinstance(p, str)))


def test_no_mde_is_quoted_when_no_case_changed(store, cli):
    # Three rounds, both arms flaky in exactly the same way on every case: no case moved at all, but the
    # rounds have spread, from which Miller's formula would quote a detectable difference of round noise.
    rounds = [[True, i % 2 == 0, False] for i in range(30)]
    make_experiment(store, "same", cases_of(30), {"control": rounds, "treatment": [list(r) for r in rounds]})
    c = compare_arms("same", store=store)
    assert c.moved == (0, 0) and c.mcnemar.n_discordant == 0
    assert c.mde is None
    assert any("the smallest detectable difference is not informative" in n for n in c.notes)
    page = _page(c)
    assert "not informative: no case changed between the arms (no discordant case)" in page
    assert "would usually go unnoticed" not in page
    out = cli("compare", "same", store=store.path).output
    assert "detectable (MDE)  not informative: no case changed between the arms" in out


def test_an_mde_without_a_discordant_case_says_which_cases_it_rests_on(store):
    # Five cases go from 2/3 to 3/3 right: right in the majority of rounds in both arms (no discordant case),
    # but their per-case pass rates moved, and the MDE is estimated from them.
    a = [[True, True, False] if i < 5 else [True, i % 2 == 0, False] for i in range(30)]
    b = [[True, True, True] if i < 5 else list(a[i]) for i in range(30)]
    make_experiment(store, "moved", cases_of(30), {"control": a, "treatment": b})
    c = compare_arms("moved", store=store)
    moved = sum(np.mean(x) != np.mean(y) for x, y in zip(a, b, strict=True))  # written out: 5
    assert c.mcnemar.n_discordant == 0 and c.moved == (moved, 0) and c.mde is not None
    assert (
        f"estimated from the {moved} cases whose per-case pass rate moved (none changed its majority"
        in _page(c)
    )


def test_the_domain_table_names_its_interval_and_test(store, cli):
    a, b = table_2x2(20, 12, 4, 24)
    make_experiment(store, "once", cases_of(60), {"control": a, "treatment": b})
    page = _page(compare_arms("once", store=store))
    assert "B − A [95% Newcombe interval]" in page and "p (exact McNemar, Holm-adjusted)" in page
    assert "tested by the exact McNemar test on the cases that moved, p Holm-adjusted over 3 domains" in page
    out = cli("compare", "once", "--by-domain", store=store.path).output
    assert "p: the exact McNemar test in each domain, Holm-adjusted over 3 domains" in out
    # With rounds: per-case means, a Student t interval and the exact sign test.
    rounds = [[i % 3 == 0, True, i % 2 == 0] for i in range(30)]
    later = [[True, True, i % 2 == 0] for i in range(30)]
    make_experiment(store, "thrice", cases_of(30), {"control": rounds, "treatment": later})
    page = _page(compare_arms("thrice", store=store))
    assert "B − A [95% Student t interval]" in page and "p (exact sign test, Holm-adjusted)" in page
    assert "tested by the exact sign test on" in page and "sign test test" not in page


def test_counts_group_their_thousands_in_the_cli_the_report_and_the_gate(store, cli):
    a, b = table_2x2(1_000, 1_100, 50, 50)
    make_experiment(store, "big", cases_of(2_200), {"control": a, "treatment": b})
    out = cli("compare", "big", store=store.path).output
    assert ": 2,200 paired case(s)" in out
    assert "fixed (1,100): " in out and "b = 50 regressed, c = 1,100 fixed" in out
    assert "unchanged: 1,000 right in both, 50 wrong in both" in out
    page = _page(compare_arms("big", store=store))
    assert "1,100 fixed · 50 regressed · 1,000 right in both" in page
    gate = evaluate_gate("big", ["fixed <= 10 (warn)", "diff >= -1"], store=store)
    assert "fixed <= 10: 1,100 → warn" in gate.rules[0].message
    out = cli("gate", "big", "--rules", _write(store, "fixed <= 10 (warn)"), store=store.path).output
    assert "fixed <= 10: 1,100 → warn" in out


def _write(store, rule: str):
    path = store.path.parent / "gate.yaml"
    path.write_text(f"rules:\n  - {rule}\n  - diff >= -1\n", encoding="utf-8")
    return path
