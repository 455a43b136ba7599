"""Issue 37 (items 7 and 12): an effect that differs across domains is detected and the verdict says what
its interval is the effect on; the decision, its test and its interval agree; figures say on how many cases
they rest and stay within what a difference of pass rates can be."""

from __future__ import annotations

import numpy as np
import pytest

from abbench.compare import cases_to_settle, compare_arms
from tests.results import cases_of, make_experiment, table_2x2

DOMAINS = tuple(f"d{i:02d}" for i in range(12))


def _by_domain(seed: int, interaction: float) -> tuple[list, list, list]:
    """300 cases in 12 domains, 3 rounds; B is ±`interaction` in alternate domains (mean 0)."""
    rng = np.random.default_rng(seed)
    cases = cases_of(300, domains=DOMAINS)
    p = rng.uniform(0.2, 0.8, 300)
    shift = np.array([interaction if i % 12 % 2 == 0 else -interaction for i in range(300)])
    a = (rng.random((300, 3)) < p[:, None]).tolist()
    b = (rng.random((300, 3)) < (p + shift)[:, None]).tolist()
    return cases, a, b


def _statsmodels_interaction(c) -> tuple[float, float]:
    """F and p of the domain term in an OLS of the per-case differences (statsmodels' ANOVA table)."""
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    t = c.case_table
    frame = pd.DataFrame({"d": t.b_value - t.a_value, "domain": t.domain.astype(str)})
    row = anova_lm(smf.ols("d ~ C(domain)", frame).fit()).loc["C(domain)"]
    return float(row["F"]), float(row["PR(>F)"])


def test_an_effect_that_differs_across_domains_is_said_with_what_each_interval_answers(store):
    cases, a, b = _by_domain(seed=7, interaction=0.15)
    exp = make_experiment(store, "e", cases, {"control": a, "treatment": b})
    c = compare_arms(exp, store=store)
    h = c.heterogeneity
    f, p = _statsmodels_interaction(c)
    assert h is not None and h.statistic == pytest.approx(f) and h.p_value == pytest.approx(p)
    assert (h.df_between, h.df_within, h.n_domains) == (11, 288, 12) and h.significant and p < 0.001
    assert "The effect differs across the 12 domains" in c.verdict.text
    assert "this interval is the effect on these cases" in c.verdict.text
    assert "cluster='domain' (--cluster domain)" in c.verdict.text
    clustered = compare_arms(exp, store=store, cluster="domain")
    assert "Clustered by domain, the interval is for the effect on a new domain" in clustered.verdict.text
    assert clustered.interval.width > c.interval.width
    assert any("effect on a new domain" in n for n in clustered.notes)


def test_no_interaction_no_word_about_it(store):
    cases, a, b = _by_domain(seed=8, interaction=0.0)
    exp = make_experiment(store, "e", cases, {"control": a, "treatment": b})
    c = compare_arms(exp, store=store)
    f, p = _statsmodels_interaction(c)
    assert c.heterogeneity.statistic == pytest.approx(f) and c.heterogeneity.p_value == pytest.approx(p)
    assert p > 0.05 and not c.heterogeneity.significant
    assert "differs across" not in c.verdict.text and "cluster" not in c.verdict.text


def test_four_cases_fixed_of_a_hundred_with_agreeing_rounds(store):
    # The case: rounds always agree, 4 fixed, 0 regressed of 100. The t test said better
    # (p = 0.045) while the interval ran from −0.5 to +8.9 and the exact test gave 0.125. Now the 2×2 table
    # decides: McNemar's score test and Tango's interval, its inversion, agree; the exact p is said beside.
    from statsmodels.stats.contingency_tables import mcnemar

    a, b = table_2x2(60, 4, 0, 36)
    three = lambda rows: [r * 3 for r in rows]  # noqa: E731 — each case's one outcome in all three rounds
    exp = make_experiment(store, "e", cases_of(100), {"control": three(a), "treatment": three(b)})
    c = compare_arms(exp, store=store)
    p = mcnemar([[60, 0], [4, 36]], exact=False, correction=False).pvalue
    assert c.verdict.test == "McNemar" and c.verdict.p_value == pytest.approx(p)
    assert c.verdict.significant == (p < 0.05) == c.interval.excludes_zero()
    assert c.verdict.code == "b_better" and c.interval.low > 0
    assert "McNemar's exact test on majority outcomes gives p = 0.125" in c.verdict.text
    assert "the McNemar test and its interval decide" in c.verdict.text


def test_an_interval_that_already_excludes_zero_asks_for_no_more_cases(store):
    # A 90 % interval with a test at 0.05: the interval lies below 0, the test does not reject. Projecting
    # "about 1 more case would settle it" from that interval would be wrong; the verdict says which decided.
    from scipy import stats

    rows_a = [[True, True]] * 20
    rows_b = [[True, False]] * 2 + [[False, False]] * 2 + [[True, True]] * 16
    exp = make_experiment(store, "e", cases_of(20), {"control": rows_a, "treatment": rows_b})
    c = compare_arms(exp, store=store, confidence=0.90, alpha=0.05)
    assert c.verdict.p_value == pytest.approx(stats.ttest_1samp([-0.5] * 2 + [-1] * 2 + [0] * 16, 0).pvalue)
    assert c.interval.high < 0 and not c.verdict.significant
    assert c.verdict.outcome == "inconclusive" and c.verdict.n_more is None
    assert "more paired case" not in c.verdict.outcome_text and "lies below 0" in c.verdict.outcome_text
    assert "the test decides — the interval is a 90% one and the test is at the 0.05 level" in c.verdict.text
    assert cases_to_settle(20, -0.1, -0.19, -0.01, 0.02) is None


def test_a_difference_of_pass_rates_stays_within_a_hundred_points(store):
    # three paired cases with rounds: Student t with 2 df reaches past +100 points; a difference of pass
    # rates cannot, and the domain rows (one case each in two domains) neither
    a = [[False, False], [False, False], [True, False]]
    b = [[True, True], [True, False], [True, True]]
    exp = make_experiment(store, "e", cases_of(3), {"control": a, "treatment": b})
    c = compare_arms(exp, store=store)
    d = np.array([1.0, 0.5, 0.5])
    from scipy import stats

    t_high = d.mean() + stats.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    assert (
        t_high > 1
        and c.interval.high == 1.0
        and c.interval.low == pytest.approx(d.mean() - stats.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3))
    )
    assert all(-1 <= r.interval.low <= r.interval.high <= 1 for r in c.by_domain if r.interval is not None)


def test_pass_hat_k_says_on_how_many_cases_it_rests(cli):
    from abbench.store import open_store

    store = open_store(cli.store_dir)
    # five rounds, but only one case had all five graded: k = 5 rests on that case alone
    full = [True] * 5
    short = [True, False, True, False, "grade_fail"]
    arms = {"control": [full] + [short] * 3, "treatment": [full] + [short] * 3}
    make_experiment(store, "passk", cases_of(4), arms)
    store.close()
    out = cli("metrics", "passk").output
    assert "each on 4 cases except k=5 on 1 case" in out
