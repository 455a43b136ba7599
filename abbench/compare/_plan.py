"""Plan from an experiment: its discordance and variances, and how many more cases a difference needs."""

from __future__ import annotations

import os
from typing import Any

from abbench.compare._api import compare_arms
from abbench.errors import UsageError
from abbench.stats import Plan, plan_experiment


def plan_from_experiment(
    experiment: Any,
    effect: float | None = None,
    *,
    a: str | None = None,
    b: str | None = None,
    baseline: float | None = None,
    rounds: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    more: bool = True,
    store: str | os.PathLike[str] | Any | None = None,
) -> Plan:
    """Plan with an experiment's own figures: `plan_experiment` fed its discordance and variances.

    The pair is the one `compare_arms` compares (the ``decision:`` pair, or the two arms). Its observed
    discordance (the share of paired cases one arm got right and the other wrong, majority over rounds)
    and its ω², σ² (Miller 2024) go into the plan; with ``more`` (a running or finished experiment) the
    plan counts the paired cases run so far and says how many more are needed.

    Args:
        experiment: The experiment (id, ``#id``, name, or Experiment).
        effect: The difference to detect, b − a; default: the smallest difference its cases detect now
            (so the plan says nothing more is needed) — give one, e.g. 0.03.
        a: The baseline arm; b: the other (default: the experiment's pair).
        baseline: Arm A's pass rate; default: the observed one.
        rounds: Rounds per case planned; default: the experiment's.
        power: Desired power.
        alpha: Two-sided significance level.
        more: Count the cases run (a plan for this experiment); False: a plan for a new one.
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).

    Raises:
        UsageError: the experiment is graded by scores only, has fewer than two paired cases, or the
            plan's inputs are invalid (see `plan_experiment`).
    """
    c = compare_arms(experiment, a, b, store=store, alpha=alpha, power=power, bootstrap=False, details=False)
    name = c.a.experiment
    if c.outcome != "passed" or c.outcomes is None:
        raise UsageError(f"{name}: planning needs pass/fail verdicts; this comparison is of {c.outcome}s")
    if c.n_cases < 2 or c.power_inputs is None:
        raise UsageError(f"{name}: {c.n_cases:,} paired case(s) so far; a plan from it needs at least 2")
    o = c.outcomes
    discordance = (o.fixed + o.regressed) / o.n
    if effect is None:
        if c.mde is None:
            raise UsageError(
                f"{name}: no spread to estimate the detectable difference from; give effect= (CLI --effect)"
            )
        effect = c.mde.delta
    p_a = c.value_a.value if baseline is None else baseline
    if p_a is None:
        raise UsageError(f"{name}: the baseline has no pass rate yet; give baseline= (CLI --baseline)")
    p_a = min(max(float(p_a), 0.005), 0.995)
    planned = c.b.rounds if rounds is None else rounds
    source = f"{c.n_cases:,} paired cases of {name}, {c.a.arm} vs {c.b.arm} (discordance {discordance:.3g})"
    return plan_experiment(
        p_a,
        effect,
        rounds=planned,
        discordance=discordance,
        inputs=c.power_inputs,
        have=c.n_cases if more else 0,
        power=power,
        alpha=alpha,
        source=source,
    )
