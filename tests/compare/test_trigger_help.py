"""Trigger vs help: the effect's split sums to the total, on constructed runs and against a hand computation."""

from __future__ import annotations

import itertools
import random

import pytest
from statsmodels.stats.proportion import proportion_confint

from abbench.compare import FORMULA, MIRROR_FORMULA, trigger_help
from abbench.metrics import ActivationRun


def run(arm, case, passed, loaded, offered=True, has_skill=True, rnd=0, outcome=None):
    return ActivationRun(
        arm=arm,
        case_idx=case,
        case_id=f"c{case}",
        round=rnd,
        outcome=outcome or ("pass" if passed else "fail"),
        expected_skill="pdf",
        skills_offered=("pdf",) if offered else None,
        skills_loaded=(("pdf",) if loaded else ()) if offered else None,
        passed=passed,
        has_skill=has_skill,
    )


def parts_sum(t):
    return t.loaded_more_often + t.helped_more_when_loaded + t.when_not_loaded


def test_hand_computed_split_against_a_no_skill_baseline():
    # Baseline (no skill): 10 cases, 4 right.  Offered arm: loads on cases 0-5 (6 of 10) and gets 5 of
    # them right; of the 4 it did not load on, 1 right.
    base = [run("base", i, i < 4, False, offered=False, has_skill=False) for i in range(10)]
    cand = [run("cand", i, (i < 5) if i < 6 else i == 9, i < 6) for i in range(10)]
    t = trigger_help(base, cand, range(10))
    # by hand: p_A = 0, m_A = 0.4; p_B = 0.6, h_B = 5/6, m_B = 1/4
    assert t.a.activation == 0 and t.a.when_not_loaded == pytest.approx(0.4) and t.a.when_loaded is None
    assert t.b.activation == pytest.approx(0.6)
    assert t.b.when_loaded == pytest.approx(5 / 6) and t.b.when_not_loaded == pytest.approx(0.25)
    assert t.total == pytest.approx(0.6 - 0.4)
    assert t.activation_difference == pytest.approx(0.6)
    assert t.help_when_loaded == pytest.approx(5 / 6 - 0.4)
    assert t.loaded_more_often == pytest.approx(0.6 * (5 / 6 - 0.4))  # 0.26
    assert t.helped_more_when_loaded == 0.0
    assert t.when_not_loaded == pytest.approx(0.4 * (0.25 - 0.4))  # -0.06
    assert parts_sum(t) == pytest.approx(t.total) and t.residual == pytest.approx(
        t.total - t.loaded_more_often
    )
    assert t.formula == FORMULA and t.reason is None
    # intention-to-treat vs per-protocol, with statsmodels' Wilson intervals
    assert t.b.intention_to_treat.value == pytest.approx(0.6)
    assert (t.b.per_protocol.low, t.b.per_protocol.high) == pytest.approx(
        proportion_confint(5, 6, method="wilson")
    )
    assert t.b.loaded_runs == 6 and t.b.graded == 10


def test_against_an_injected_arm_uses_the_mirror_split():
    injected = [run("inj", i, i < 7, True, offered=False) for i in range(10)]
    offered = [run("off", i, i < 4 or i == 8, i < 5) for i in range(10)]
    t = trigger_help(injected, offered, range(10))
    assert t.a.activation == 1.0 and t.a.mode == "injected"
    assert t.formula == MIRROR_FORMULA
    # p_B = 0.5, h_B = 4/5, m_B = 1/5, h_A = 0.7
    assert t.help_when_loaded == pytest.approx(0.7 - 0.2)
    assert t.loaded_more_often == pytest.approx(-0.5 * 0.5)
    assert t.helped_more_when_loaded == pytest.approx(0.5 * (0.8 - 0.7))
    assert t.when_not_loaded == 0.0
    assert t.total == pytest.approx(0.5 - 0.7) and parts_sum(t) == pytest.approx(t.total)


def test_neither_arm_loading_leaves_everything_to_the_residual():
    a = [run("a", i, i < 3, False) for i in range(6)]
    b = [run("b", i, i < 4, False) for i in range(6)]
    t = trigger_help(a, b, range(6))
    assert t.help_when_loaded is None and "neither arm loaded" in t.reason
    assert t.loaded_more_often == 0.0 and t.residual == pytest.approx(1 / 6) == pytest.approx(t.total)


@pytest.mark.parametrize("seed", range(12))
def test_parts_sum_to_the_total_on_random_rounds(seed):
    rng = random.Random(seed)
    n_cases, rounds = rng.randint(5, 40), rng.randint(1, 4)
    offered_a = rng.random() < 0.5
    runs_a, runs_b = [], []
    for c, r in itertools.product(range(n_cases), range(rounds)):
        if rng.random() < 0.1:  # an execution failure: left out of accuracy and activation
            runs_b.append(run("b", c, None, False, rnd=r, outcome="execution_failed"))
        else:
            runs_b.append(run("b", c, rng.random() < 0.6, rng.random() < 0.5, rnd=r))
        runs_a.append(run("a", c, rng.random() < 0.5, offered_a and rng.random() < 0.3, offered=offered_a,
                          has_skill=offered_a, rnd=r))  # fmt: skip
    cases = {r.case_idx for r in runs_b if r.outcome != "execution_failed"}
    t = trigger_help(runs_a, runs_b, cases)

    # the total is the difference of per-case means, as the comparison computes it
    def mean(runs):
        per = {}
        for x in runs:
            if x.case_idx in cases and x.outcome in ("pass", "fail"):
                per.setdefault(x.case_idx, []).append(x.outcome == "pass")
        return sum(sum(v) / len(v) for v in per.values()) / len(per)

    assert t.total == pytest.approx(mean(runs_b) - mean(runs_a), abs=1e-12)
    assert parts_sum(t) == pytest.approx(t.total, abs=1e-12)
    assert t.loaded_more_often + t.residual == pytest.approx(t.total, abs=1e-12)
    for arm in (t.a, t.b):
        acc = arm.activation * (arm.when_loaded or 0) + (1 - arm.activation) * (arm.when_not_loaded or 0)
        assert acc == pytest.approx(arm.intention_to_treat.value, abs=1e-12)


def test_a_sibling_loaded_instead_is_not_having_the_skill():
    """v2 offered beside a decoy: a run that loaded only the decoy did not have the skill under test, so
    it counts with the runs that did not load it (the demo's 39 decoy loads were counted as loaded)."""

    def offered(case, passed, loaded):
        return ActivationRun(
            arm="b", case_idx=case, case_id=f"c{case}", round=0, outcome="pass" if passed else "fail",
            expected_skill=None, skills_offered=("routing", "decoy"), skills_loaded=loaded, passed=passed,
        )  # fmt: skip

    b = [
        offered(0, True, ("routing",)),
        offered(1, True, ("decoy",)),
        offered(2, False, ("decoy", "routing")),
        offered(3, False, ()),
    ]
    assert [r.skill for r in b] == ["routing"] * 4 and [r.loaded for r in b] == [True, False, True, False]
    a = [
        run("a", i, passed, loaded=True, offered=False) for i, passed in enumerate([True, True, False, True])
    ]
    t = trigger_help(a, b, range(4))
    assert t.b.activation == pytest.approx(0.5) and t.b.when_loaded == pytest.approx(0.5)
    assert t.b.when_not_loaded == pytest.approx(0.5)
    assert parts_sum(t) == pytest.approx(t.total) == pytest.approx(-0.25)
    expected_named = ActivationRun(
        arm="b", case_idx=0, case_id="c0", round=0, outcome="pass", expected_skill="decoy",
        skills_offered=("routing", "decoy"), skills_loaded=("decoy",), passed=True,
    )  # fmt: skip
    assert expected_named.skill == "decoy" and expected_named.loaded  # the case names the skill it needs
