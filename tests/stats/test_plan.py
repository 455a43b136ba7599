"""plan_experiment: Connor's McNemar size against a seeded simulation, and statsmodels where it applies."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.power import tt_solve_power
from statsmodels.stats.proportion import samplesize_proportions_2indep_onetail

from abbench.errors import UsageError
from abbench.stats import PowerInputs, independent_discordance, plan_experiment


def _mcnemar_power(n: int, p_a: float, effect: float, d: float, sims: int, seed: int) -> float:
    """Share of simulated paired experiments of n cases in which McNemar's z-test rejects at α = 0.05."""
    wins_b, wins_a = (d + effect) / 2, (d - effect) / 2
    both = p_a - wins_a
    cells = np.random.default_rng(seed).multinomial(n, [wins_b, wins_a, both, 1 - d - both], sims)
    b, c = cells[:, 0], cells[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (b - c) / np.sqrt(b + c)
    return float(np.mean(np.abs(np.nan_to_num(z)) > 1.959964))


@pytest.mark.parametrize("p_a, effect, d", [(0.85, 0.05, 0.12), (0.7, 0.1, 0.3), (0.6, -0.08, 0.2)])
def test_planned_n_gives_the_target_power_in_simulation(p_a, effect, d):
    plan = plan_experiment(p_a, effect, discordance=d)
    simulated = _mcnemar_power(plan.n, p_a, effect, d, sims=4000, seed=11)
    assert simulated == pytest.approx(0.8, abs=0.03)
    # and half the cases fall well short of it
    assert _mcnemar_power(plan.n // 2, p_a, effect, d, sims=4000, seed=12) < 0.65


def test_pairing_saves_cases_and_the_unpaired_bound_matches_statsmodels():
    plan = plan_experiment(0.85, 0.05, discordance=0.12)
    expected = samplesize_proportions_2indep_onetail(
        0.05, 0.85, 0.8, ratio=1, alpha=0.05, alternative="two-sided"
    )
    assert plan.n_unpaired == int(np.ceil(expected))
    assert plan.n < plan.n_unpaired / 1.5
    # independent errors: the paired design needs about as many cases as two separate samples
    worst = plan_experiment(0.85, 0.05)
    assert worst.discordance == pytest.approx(independent_discordance(0.85, 0.9))
    assert worst.n == pytest.approx(plan.n_unpaired, rel=0.05)
    assert "independent" in worst.source


def test_fewer_disagreements_need_fewer_cases():
    sizes = [plan_experiment(0.85, 0.05, discordance=d).n for d in (0.06, 0.12, 0.2)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1] / 2


def test_from_variances_matches_statsmodels_paired_t_and_rounds_help():
    inputs = PowerInputs(0.06, 0.05, 0.05, 1.0, 1.0, 200, 0.02, True)
    one = plan_experiment(0.85, 0.05, inputs=inputs)
    sd = (0.06 + 0.05 + 0.05) ** 0.5
    # Miller's normal formula vs statsmodels' paired (one-sample) t-test on the per-case differences.
    t_n = tt_solve_power(effect_size=0.05 / sd, alpha=0.05, power=0.8, alternative="two-sided")
    assert one.method == "paired-means"
    assert one.n_exact == pytest.approx(t_n, abs=3)
    three = plan_experiment(0.85, 0.05, inputs=inputs, rounds=3)
    assert three.n < one.n
    assert three.n_exact == pytest.approx(one.n_exact * (0.06 + 0.1 / 3) / 0.16)


def test_rounds_without_variances_are_noted():
    plan = plan_experiment(0.85, 0.05, rounds=3, discordance=0.12)
    assert plan.n == plan_experiment(0.85, 0.05, discordance=0.12).n
    assert any("rounds" in note for note in plan.notes)


def test_a_running_experiment_says_how_many_more():
    plan = plan_experiment(0.85, 0.03, discordance=0.12, have=100)
    assert plan.more == plan.n - 100
    assert plan.text.startswith(f"to detect 3 points you would need about {plan.more} more cases")
    done = plan_experiment(0.6, 0.2, discordance=0.3, have=10_000)
    assert done.more == 0 and "detect 20 points" in done.text


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(baseline=1.2, effect=0.05), "baseline"),
        (dict(baseline=0.85, effect=0), "effect"),
        (dict(baseline=0.95, effect=0.1), "not a pass rate"),
        (dict(baseline=0.85, effect=0.05, discordance=0.02), "between |effect|"),
        (dict(baseline=0.85, effect=0.05, discordance=0.9), "would win on more cases"),
        (dict(baseline=0.85, effect=0.05, power=1.5), "power"),
    ],
)
def test_bad_plans_are_refused(kwargs, match):
    with pytest.raises(UsageError, match=match.replace("|", r"\|")):
        plan_experiment(**kwargs)
