"""Paired comparisons through the whole path, checked against statsmodels and scipy."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from abbench.agents import register_agent
from abbench.compare import CATEGORIES, compare_all, compare_arms, compare_experiments
from abbench.errors import ComparisonRefused, UsageError
from abbench.gate import evaluate_gate
from abbench.stats import estimate_power_inputs, paired_proportion_interval
from abbench.types import AgentOutput, Case, Usage
from tests.results import cases_of, make_experiment, one_round, table_2x2


def _json(c) -> dict:
    data = c.as_dict()
    json.dumps(data, allow_nan=False)
    return data


@pytest.mark.parametrize(
    ("both", "fixed", "regressed", "neither"), [(30, 12, 3, 5), (10, 0, 0, 4), (5, 1, 6, 0), (0, 9, 1, 2)]
)
def test_mcnemar_on_a_known_table_equals_statsmodels(store, both, fixed, regressed, neither):
    import statsmodels.stats.contingency_tables as contingency

    a, b = table_2x2(both, fixed, regressed, neither)
    exp = make_experiment(store, "e", cases_of(len(a)), {"control": a, "treatment": b})
    c = compare_arms(exp, store=store)
    assert (c.count("fixed"), c.count("regressed")) == (fixed, regressed)
    assert (c.count("unchanged_right"), c.count("unchanged_wrong")) == (both, neither)
    ref = contingency.mcnemar([[both, regressed], [fixed, neither]], exact=True)
    assert c.mcnemar.p_value == pytest.approx(ref.pvalue)
    # At least 10 paired cases: McNemar's score test decides (the asymptotic one, without continuity
    # correction), and Tango's score interval is its inversion.
    # correction), and Tango's score interval is its inversion. No moved case: statsmodels' 0/0 is NaN, ours 1.
    score = contingency.mcnemar([[both, regressed], [fixed, neither]], exact=False, correction=False)
    expected = score.pvalue if fixed + regressed else 1.0
    assert c.verdict.test == "McNemar" and c.verdict.p_value == pytest.approx(expected)
    assert c.interval_method == "score" and (c.interval.low > 0 or c.interval.high < 0) == (expected < 0.05)
    assert c.difference.difference == pytest.approx((fixed - regressed) / len(a))
    _json(c)


def test_zero_discordant_pairs_detect_nothing_and_claim_no_certainty(store):
    a, b = table_2x2(40, 0, 0, 20)
    exp = make_experiment(store, "e", cases_of(60), {"control": a, "treatment": b})
    c = compare_arms(exp, store=store)
    assert c.mcnemar.p_value == 1.0
    assert c.verdict.code == "no_detectable_difference" and not c.verdict.significant
    assert "treatment vs control: no difference detectable at this size" in c.verdict.text
    # d̄ ± t·se is [0, 0] here and Miller's formula gives an MDE of 0: both would claim the arms are
    # certainly equal. The score interval on the 2×2 table does not; the MDE is left out with a note.
    assert c.interval_method == "score" and c.interval.low < -0.03 and c.interval.high > 0.03
    assert "+0.0 points to +0.0 points" not in c.verdict.text and "0.0 points." not in c.verdict.text
    assert c.mde is None and any(
        "the smallest detectable difference is not informative" in n for n in c.notes
    )


@pytest.mark.parametrize(("n", "rounds"), [(50, 1), (30, 3)])
def test_all_right_in_both_arms_gives_an_interval_as_wide_as_the_accuracy_allows(store, n, rounds):
    from statsmodels.stats.proportion import proportion_confint

    exp = make_experiment(
        store, "e", cases_of(n), {"control": [[True] * rounds] * n, "treatment": [[True] * rounds] * n}
    )
    c = compare_arms(exp, store=store)
    # Both margins are 100 %: Newcombe's bounds are ± the distance from 1 to Wilson's lower bound for n of n.
    low, _ = proportion_confint(n, n, alpha=0.05, method="wilson")
    assert c.interval.low == pytest.approx(-(1 - low)) and c.interval.high == pytest.approx(1 - low)
    assert f"{(1 - low) * 100:.1f} points" in c.verdict.text


def test_rounds_that_always_agree_are_decided_by_mcnemar_and_its_own_interval(store):
    # Deterministic rounds: 4 of 20 cases go from 0/2 to 2/2. Each case is one outcome per arm, so the
    # 2×2 table decides: McNemar's score test (z = 2, p = 0.0455) and Tango's interval, its inversion,
    # agree; the exact test's more cautious p = 0.125 is said beside it, with which one decided.
    from statsmodels.stats.contingency_tables import mcnemar

    a = [[False, False]] * 20
    b = [[True, True]] * 4 + [[False, False]] * 16
    exp = make_experiment(store, "e", cases_of(20), {"control": a, "treatment": b})
    c = compare_arms(exp, store=store)
    ref = mcnemar([[0, 0], [4, 16]], exact=False, correction=False).pvalue
    assert (
        c.verdict.test == "McNemar"
        and c.verdict.p_value == pytest.approx(ref)
        and c.verdict.code == "b_better"
    )
    assert c.interval_method == "score" and c.interval.low > 0
    assert "McNemar's exact test on majority outcomes gives p = 0.125: it is more cautious" in c.verdict.text


def test_every_case_fixed_is_not_certain_to_be_exactly_100_points(store):
    a, b = table_2x2(0, 12, 0, 0)
    exp = make_experiment(store, "e", cases_of(12), {"control": a, "treatment": b})
    c = compare_arms(exp, store=store)
    assert c.verdict.code == "b_better" and c.interval.high == 1.0 and c.interval.low < 0.8
    assert c.interval == paired_proportion_interval(0, 12, 0, 0, method="score")


def test_a_domain_is_called_better_or_worse_only_when_the_sign_test_and_the_mean_agree(store):
    # 20 cases slip from 3/3 to 2/3 and 8 jump from 0/3 to 3/3: most cases got worse (sign test p = 0.036),
    # yet the mean pass rate rose by 4.8 points. Neither "significantly better" nor "worse" is claimed.
    a = [[True] * 3] * 20 + [[False] * 3] * 8
    b = [[True, True, False]] * 20 + [[True] * 3] * 8
    exp = make_experiment(store, "e", cases_of(28, domains=("导航",)), {"control": a, "treatment": b})
    c = compare_arms(exp, store=store)
    (row,) = c.by_domain
    assert row.p_adjusted < 0.05 and row.difference > 0
    assert not row.significant_improvement and not row.significant_regression
    assert not c.has_domain_breakdown  # one domain only repeats the main test: views show no table


def test_cases_without_domains_get_no_domain_breakdown(store):
    # a dataset without domains (Rasa's NLU examples): no "(none)" domain repeats the main test
    a = [[True]] * 20
    b = [[False]] * 8 + [[True]] * 12
    exp = make_experiment(store, "e", cases_of(20, domains=()), {"control": a, "treatment": b})
    c = compare_arms(exp, store=store)
    assert c.verdict.code == "b_worse" and c.by_domain == () and c.significant_domain_regressions() == ()
    assert not c.has_domain_breakdown
    gate = evaluate_gate(exp, {"rules": [{"metric": "diff", "op": ">=", "value": 0}]}, store=store)
    assert "domain" not in gate.decision.capability.summary


def test_domains_without_a_moved_case_get_an_interval_not_a_point(store):
    # cases_of cycles the domains nav, car, media: six nav cases are fixed, nothing else moves.
    a = [[not (i % 3 == 0 and i < 18)] for i in range(45)]
    exp = make_experiment(store, "e", cases_of(45), {"control": a, "treatment": [[True]] * 45})
    c = compare_arms(exp, store=store)
    assert c.has_domain_breakdown
    rows = {d.domain: d for d in c.by_domain}
    assert rows["nav"].interval == paired_proportion_interval(9, 6, 0, 0)
    for quiet in ("car", "media"):
        assert rows[quiet].difference == 0 and rows[quiet].interval == paired_proportion_interval(15, 0, 0, 0)
        assert rows[quiet].interval.low < -0.1


def test_a_single_case(store):
    exp = make_experiment(store, "e", cases_of(1), {"control": [[False]], "treatment": [[True]]})
    c = compare_arms(exp, store=store)
    assert c.n_cases == 1 and c.count("fixed") == 1
    assert c.mcnemar.p_value == 1.0 and c.mde is None and not c.verdict.significant
    data = _json(c)
    assert data["difference"]["se"] is None  # undefined, shown as null rather than NaN


def test_rounds_pair_per_case_pass_rates_and_the_paired_difference_is_the_main_test(store):
    import scipy.stats as scipy_stats

    rng = np.random.default_rng(11)
    p = rng.uniform(0.1, 0.9, 40)
    a = rng.random((40, 5)) < p[:, None]
    b = rng.random((40, 5)) < np.clip(p + 0.25, 0, 1)[:, None]
    exp = make_experiment(store, "e", cases_of(40), {"control": a.tolist(), "treatment": b.tolist()})
    c = compare_arms(exp, store=store)
    d = b.mean(axis=1) - a.mean(axis=1)
    assert c.verdict.test == "paired difference"
    assert c.main.difference == pytest.approx(d.mean())
    assert c.main.se == pytest.approx(d.std(ddof=1) / np.sqrt(40))
    ref = scipy_stats.ttest_rel(b.mean(axis=1), a.mean(axis=1))
    assert c.main.p_value == pytest.approx(ref.pvalue)
    first = c.cases[0]
    assert first.rates == f"{int(a[0].sum())}/5 → {int(b[0].sum())}/5"
    majority_a, majority_b = a.mean(axis=1) > 0.5, b.mean(axis=1) > 0.5
    assert c.count("fixed") == int(np.sum(~majority_a & majority_b))
    assert c.mcnemar.b == int(np.sum(majority_a & ~majority_b))
    inputs = estimate_power_inputs(a.astype(float), b.astype(float))
    assert c.mde.delta == pytest.approx(inputs.min_detectable_effect().delta)
    assert any("more than half" in n for n in c.notes)
    assert set(c.case_table.category) <= set(CATEGORIES)


def test_clustered_difference_equals_statsmodels_ols_cluster(store):
    import statsmodels.api as sm

    rng = np.random.default_rng(5)
    domains = [f"域{i}" for i in range(8)]
    a, b = rng.random(64) < 0.5, rng.random(64) < 0.7
    exp = make_experiment(
        store,
        "e",
        cases_of(64, domains=domains),
        {"control": one_round(a.tolist()), "treatment": one_round(b.tolist())},
    )
    c = compare_arms(exp, store=store, cluster="domain")
    d = b.astype(float) - a.astype(float)
    groups = np.arange(64) % 8
    fit = sm.OLS(d, np.ones_like(d)).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    assert c.clustered.se == pytest.approx(float(fit.bse[0]))
    assert (c.interval.low, c.interval.high) == pytest.approx(tuple(fit.conf_int()[0]))
    assert c.interval_method == "clustered t"
    assert c.verdict.test == "clustered paired difference"
    assert any("only 8 clusters" in n for n in c.notes)
    # Miller's MDE ignores the clusters: the verdict must not present it as what these clustered cases detect.
    assert c.verdict.code == "no_detectable_difference"
    assert "can detect (80% power, 0.05 level) is" in c.verdict.text
    assert "if they were independent; clustered, it is larger." in c.verdict.text


def test_failed_and_cancelled_cases_are_left_out_and_listed(store):
    control = [*one_round([True] * 5), ["exec_fail"], [True], ["cancelled"]]
    treatment = [*one_round([True] * 5), [True], ["grade_fail"], ["cancelled"]]
    exp = make_experiment(store, "e", cases_of(8), {"control": control, "treatment": treatment})
    c = compare_arms(exp, store=store)
    assert c.n_cases == 5
    assert c.excluded == {
        "no graded run in A": ("c005",),
        "no graded run in B": ("c006",),
        "no graded run in either": ("c007",),
    }


def test_per_domain_rows_are_holm_adjusted_like_statsmodels(store):
    import statsmodels.stats.multitest as multitest

    control, treatment, domains = [], [], []
    plan = {"nav": (20, 0), "car": (2, 9), "media": (3, 3)}  # domain: (regressed, fixed) among 30 cases each
    for domain, (regressed, fixed) in plan.items():
        for i in range(30):
            domains.append(domain)
            if i < regressed:
                control.append([True]), treatment.append([False])
            elif i < regressed + fixed:
                control.append([False]), treatment.append([True])
            else:
                control.append([True]), treatment.append([True])
    cases = [Case(f"c{i:03d}", f"q{i}", "fast", domain=d) for i, d in enumerate(domains)]
    exp = make_experiment(store, "e", cases, {"control": control, "treatment": treatment})
    c = compare_arms(exp, store=store)
    rows = {d.domain: d for d in c.by_domain}
    raw = [rows[d].p_value for d in sorted(rows)]
    ref = multitest.multipletests(raw, method="holm")[1]
    assert [rows[d].p_adjusted for d in sorted(rows)] == pytest.approx(list(ref))
    assert rows["nav"].significant_regression and not rows["car"].significant_regression
    assert [d.domain for d in c.significant_domain_regressions()] == ["nav"]
    assert rows["nav"].test == "exact McNemar"


def test_different_fingerprints_are_refused(store):
    first = make_experiment(store, "one", cases_of(4), {"a": one_round([True] * 4)}, dataset="ds1")
    second = make_experiment(store, "two", cases_of(5), {"a": one_round([True] * 5)}, dataset="ds2")
    with pytest.raises(ComparisonRefused, match="same cases") as err:
        compare_experiments(first, second, store=store)
    assert err.value.exit_code == 1
    assert first.dataset in str(err.value) and second.dataset in str(err.value)


def test_two_experiments_pair_on_the_cases_they_share(store):
    cases = cases_of(6)
    one = make_experiment(
        store, "v1", cases, {"control": one_round([True] * 6), "treatment": one_round([False, True] * 3)}
    )
    # v2 ran 4 of the 6 cases: its runs exist only for those
    two = make_experiment(
        store, "v2", cases, {"control": one_round([True] * 6), "treatment": one_round([True] * 6)}
    )
    with store.transaction() as conn:
        conn.execute("DELETE FROM runs WHERE experiment_id=? AND case_id IN ('c004', 'c005')", (two.id,))
    c = compare_experiments(one, two, store=store)
    assert c.kind == "experiments" and c.a.arm == "v1/treatment" and c.b.arm == "v2/treatment"
    # named in sentences by experiment/arm; the arm's own name is what the experiment calls it
    assert (c.a.name, c.a.arm_name, c.b.arm_name) == ("v1/treatment", "treatment", "treatment")
    assert one.arm(c.a.arm_name).name == "treatment"
    assert c.n_cases == 4 and c.excluded == {"only in A": ("c004", "c005")}
    assert [x.case_id for x in c.fixed] == ["c000", "c002"]


def test_comparing_an_arm_with_itself_or_an_unnamed_third_arm_is_refused(store):
    exp = make_experiment(store, "e", cases_of(2), {x: one_round([True, False]) for x in ("a", "b", "c")})
    with pytest.raises(UsageError, match="has 3 arms"):
        compare_arms(exp, store=store)
    with pytest.raises(UsageError, match="compared with itself"):
        compare_arms(exp, "a", "a", store=store)


def test_three_arms_cochrans_q_equals_statsmodels(store):
    import statsmodels.stats.contingency_tables as contingency

    rng = np.random.default_rng(2)
    x = rng.random((30, 3)) < np.array([0.5, 0.7, 0.4])
    exp = make_experiment(
        store, "e", cases_of(30), {n: one_round(x[:, i].tolist()) for i, n in enumerate("abc")}
    )
    m = compare_all(exp, store=store)
    ref = contingency.cochrans_q(x.astype(int))
    assert m.cochran.statistic == pytest.approx(ref.statistic) and m.cochran.p_value == pytest.approx(
        ref.pvalue
    )
    assert [p.b for p in m.pairs] == ["b", "c"]
    import statsmodels.stats.multitest as multitest

    holm = multitest.multipletests([p.p_value for p in m.pairs], method="holm")[1]
    assert [p.p_adjusted for p in m.pairs] == pytest.approx(list(holm))
    json.dumps(m.as_dict(), allow_nan=False)


def test_text_changes_reason_and_evidence(store):
    control = [
        [{"passed": True, "reason": "rule 1", "evidence": ["SKILL.md#A"]}],
        [{"passed": True, "reason": "rule 2", "evidence": ["SKILL.md#A", "SKILL.md#B"]}],
        [{"passed": True, "reason": "same", "evidence": []}],
    ]
    treatment = [
        [{"passed": True, "reason": "rule 9", "evidence": ["SKILL.md#A"]}],
        [{"passed": True, "reason": "rule  2", "evidence": ["SKILL.md#B", "SKILL.md#C"]}],
        [{"passed": True, "reason": "same", "evidence": []}],
    ]
    exp = make_experiment(store, "e", cases_of(3), {"control": control, "treatment": treatment})
    t = compare_arms(exp, store=store).text
    assert [(r.case_id, r.reason_a, r.reason_b) for r in t.reason_changed] == [("c000", "rule 1", "rule 9")]
    assert [(e.case_id, e.appeared, e.disappeared) for e in t.evidence] == [
        ("c001", ("SKILL.md#C",), ("SKILL.md#A",))
    ]
    assert compare_arms(exp, store=store, details=False).text is None


def test_evidence_changes_list_references_in_round_order(store):
    # Six rounds citing six references: a set's order would match the rounds' once in 720 hash seeds.
    refs = [f"SKILL.md#R{i}" for i in range(6)]
    control = [[{"passed": True, "evidence": ["SKILL.md#X"]} for _ in refs]]
    treatment = [[{"passed": True, "evidence": [ref]} for ref in refs]]
    exp = make_experiment(store, "e", cases_of(1), {"control": control, "treatment": treatment})
    (change,) = compare_arms(exp, store=store).text.evidence
    assert change.appeared == tuple(refs) and change.disappeared == ("SKILL.md#X",)


def test_cost_and_latency_bootstrap_or_central_limit(store):
    rng = np.random.default_rng(9)
    cost_a, cost_b = rng.lognormal(-4, 0.5, 30), rng.lognormal(-3.5, 0.5, 30)
    control = [[{"passed": True, "cost": float(x)}] for x in cost_a]
    treatment = [[{"passed": True, "cost": float(x)}] for x in cost_b]
    exp = make_experiment(store, "e", cases_of(30), {"control": control, "treatment": treatment})
    boot = compare_arms(exp, store=store, iterations=2000, seed=1).usage_metric("cost")
    assert boot.method == "paired bootstrap" and boot.difference == pytest.approx(
        cost_b.mean() - cost_a.mean()
    )
    assert boot.interval.low < boot.difference < boot.interval.high
    clt = compare_arms(exp, store=store, bootstrap=False).usage_metric("cost")
    assert clt.method == "paired difference"
    half = clt.interval.high - clt.difference
    from scipy import stats as scipy_stats

    d = cost_b - cost_a
    assert half == pytest.approx(scipy_stats.t.ppf(0.975, 29) * d.std(ddof=1) / np.sqrt(30))


def test_few_cases_with_rounds_give_no_verdict(store):
    exp = make_experiment(
        store, "e", cases_of(3), {"control": [[True, False]] * 3, "treatment": [[True, True]] * 3}
    )
    c = compare_arms(exp, store=store)
    assert c.verdict.code == "insufficient_data" and "too few" in c.verdict.text


def test_pairwise_judge_verdicts_are_mapped_onto_the_arms(store):
    exp = make_experiment(
        store, "e", cases_of(6), {"control": one_round([True] * 6), "treatment": one_round([True] * 6)}
    )
    runs = {(r.arm, r.case_id): r.id for r in store.runs.records(exp.id)}
    with store.transaction() as conn:
        for i, verdict in enumerate(["b", "b", "b", "a", "tie", "b"]):
            a, b = runs[("control", f"c{i:03d}")], runs[("treatment", f"c{i:03d}")]
            conn.execute(
                "INSERT INTO grades (experiment_id, batch_id, run_id, other_run_id, grader, kind, status, verdict, "
                "created_at) VALUES (?, 'b', ?, ?, 'blind', 'pairwise', 'ok', ?, 'now')",
                (exp.id, a, b, verdict),
            )
    (p,) = compare_arms(exp, store=store).pairwise
    assert (p.wins_a, p.wins_b, p.ties) == (1, 4, 1)
    assert p.b_win_rate == pytest.approx(0.8)


@register_agent("analysis-scripted")
class _Scripted:
    """Answers the gold label except for the listed cases; cites a section and costs by arm."""

    def __init__(self, model=None, wrong=(), cost=0.01, **params):
        self.wrong, self.cost = set(wrong), cost

    async def run(self, task):
        pred = "wrong" if task.case.case_id in self.wrong else task.case.expected
        return AgentOutput(
            prediction=pred,
            reason=f"{task.arm} thinks so",
            confidence=0.8,
            evidence_refs=("SKILL.md#Rules",) if task.skill else (),
            usage=Usage(50, 5),
            cost=self.cost,
            latency_ms=5.0,
        )


def test_end_to_end_through_the_runner(store, tmp_path):
    from abbench.runner import create_experiment, run_experiment

    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("# Rules\n- fast is fast\n", encoding="utf-8")
    ds = store.datasets.save("e2e", cases_of(24), label_set=["fast", "slow"])
    spec = {
        "name": "e2e",
        "dataset": ds.fingerprint,
        "rounds": 2,
        "arms": {
            "control": {"agent": "analysis-scripted", "wrong": [f"c{i:03d}" for i in range(0, 24, 2)]},
            "treatment": {"agent": "analysis-scripted", "skill": str(skill), "wrong": ["c001"], "cost": 0.02},
        },
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp.id, store=store)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing leaks out as a warning
        c = compare_arms(exp.id, store=store, iterations=500)
    assert c.n_cases == 24 and c.count("fixed") == 12 and c.count("regressed") == 1
    assert c.verdict.code == "b_better"
    assert c.usage_metric("cost").difference == pytest.approx(0.01)
    assert [e.appeared for e in c.text.evidence][:1] == [("SKILL.md#Rules",)]
    assert len(c.text.reason_changed) == 11


def test_missing_rounds_use_the_rounds_that_were_graded(store):
    control = [[True, True, "exec_fail"], [False, "cancelled", False], [True, False, True]] * 4
    treatment = [[True, True, True], [True, "grade_fail", True], ["pending", False, True]] * 4
    exp = make_experiment(store, "e", cases_of(12), {"control": control, "treatment": treatment})
    c = compare_arms(exp, store=store)
    rates_a = np.array([1.0, 0.0, 2 / 3] * 4)
    rates_b = np.array([1.0, 1.0, 0.5] * 4)
    assert c.main.difference == pytest.approx((rates_b - rates_a).mean())
    assert [x.rates for x in c.cases[:3]] == ["2/2 → 3/3", "0/2 → 2/2", "2/3 → 1/2"]
    assert c.count("fixed") == 4 and c.count("regressed") == 4  # 2/3 is right, 1 of 2 is not


def test_a_judge_that_only_scores_is_compared_on_scores(store):
    import scipy.stats as scipy_stats

    rng = np.random.default_rng(4)
    a, b = rng.uniform(1, 5, 20), rng.uniform(2, 5, 20)

    def runs(values):
        return [[{"passed": None, "state": "pass", "score": float(v), "grade": None}] for v in values]

    exp = make_experiment(store, "e", cases_of(20), {"control": runs(a), "treatment": runs(b)})
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, score, created_at) "
            "SELECT experiment_id, 'b', id, 'rubric', 'judge', 'ok', score, 'now' FROM runs"
        )
    c = compare_arms(exp, store=store)
    assert c.outcome == "score" and c.unit == "score" and c.mcnemar is None
    assert c.main.difference == pytest.approx(b.mean() - a.mean())
    assert c.main.p_value == pytest.approx(scipy_stats.ttest_rel(b, a).pvalue)
    assert c.count("fixed") == int(np.sum(b > a)) and c.usage_metric("score").difference == pytest.approx(
        b.mean() - a.mean()
    )
    assert "points" not in c.verdict.text
