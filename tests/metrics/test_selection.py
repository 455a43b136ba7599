"""Skill selection accuracy and the wrong-sibling share, on constructed runs, against statsmodels and scipy."""

from __future__ import annotations

import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from abbench.compare import trigger_help
from abbench.metrics import ActivationRun, activation_report, arm_activation, compare_activation

SKILLS = ("pdf", "docx", "xlsx")


def run(arm, case, loaded, expected="pdf", offered=SKILLS, outcome="pass"):
    return ActivationRun(
        arm=arm, case_idx=case, case_id=f"c{case}", round=0, outcome=outcome, expected_skill=expected,
        skills_offered=offered, skills_loaded=tuple(loaded), passed=outcome == "pass",
    )  # fmt: skip


def test_selection_counts_the_first_load_among_runs_that_loaded_and_matches_statsmodels_wilson():
    runs = [
        *(run("b", i, ["pdf"]) for i in range(7)),  # right choice
        run("b", 7, ["docx", "pdf"]),  # a sibling first, corrected: a wrong selection
        run("b", 8, ["xlsx"]),  # the wrong sibling
        run("b", 9, []),  # loaded nothing: not a selection at all
        run("b", 10, ["pdf"], expected="none"),  # must not trigger: no right skill to select
        run("b", 11, ["pdf"], outcome="execution_failed"),  # left out
    ]
    a = arm_activation(runs)
    assert (a.selection.value, a.selection.n_cases) == (pytest.approx(7 / 9), 9)
    low, high = proportion_confint(7, 9, alpha=0.05, method="wilson")
    assert (a.selection.interval.low, a.selection.interval.high) == pytest.approx((low, high))
    assert a.recall.value == pytest.approx(8 / 10)  # recall counts any load of the expected skill
    assert a.wrong_skill.value == pytest.approx(2 / 10)


def test_selection_is_not_assessed_with_one_skill_offered_never_zero():
    a = arm_activation([run("a", i, ["pdf"], offered=("pdf",)) for i in range(3)])
    assert a.selection.value is None and "one skill offered" in a.selection.reason


def test_selection_is_compared_case_by_case_with_exact_mcnemar():
    # arm a picks right on cases 0-9, arm b on 0-3 and 8-9; b picks right on 10-11 where a did not
    a = [run("a", i, ["pdf"] if i < 10 else ["docx"]) for i in range(12)]
    b = [run("b", i, ["pdf"] if i < 4 or i >= 8 else ["xlsx"]) for i in range(12)]
    c = compare_activation(a + b, "a", "b", "selection")
    assert (c.both, c.only_a, c.only_b, c.neither) == (6, 4, 2, 0)
    assert c.p_value == pytest.approx(stats.binomtest(2, 6, 0.5).pvalue)
    assert c.diff == pytest.approx((8 - 10) / 12)
    report = activation_report(a + b, ["a", "b"])
    assert [x.what for x in report.comparisons] == ["loaded", "correct", "selection"]


def test_the_wrong_sibling_is_its_own_share_in_the_split():
    base = [run("a", i, [], offered=None, outcome="pass" if i % 2 else "fail") for i in range(8)]
    base = [ActivationRun(**{**r.__dict__, "skills_loaded": None, "has_skill": False}) for r in base]
    cand = [
        *(run("b", i, ["pdf"]) for i in range(4)),
        run("b", 4, ["docx"], outcome="fail"),
        run("b", 5, ["xlsx"], outcome="pass"),
        run("b", 6, [], outcome="fail"),
        run("b", 7, [], outcome="pass"),
    ]
    t = trigger_help(base, cand, range(8))
    assert t.b.sibling_runs == 2 and t.b.wrong_sibling == pytest.approx(2 / 8)
    assert t.b.when_sibling.value == pytest.approx(1 / 2)
    low, high = proportion_confint(1, 2, alpha=0.05, method="wilson")
    assert (t.b.when_sibling.interval.low, t.b.when_sibling.interval.high) == pytest.approx((low, high))
    assert t.a.wrong_sibling is None  # offered nothing
    # the split still sums: siblings are part of "not loaded"
    assert t.loaded_more_often + t.helped_more_when_loaded + t.when_not_loaded == pytest.approx(t.total)
