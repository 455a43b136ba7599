"""What an experiment will cost before it runs: a pilot (or an earlier experiment) projected to every run.

The projection rests on per-run figures — a run's cost, tokens and agent time over all its attempts,
failed ones included — measured on a pilot of k cases per arm that runs as part of the experiment
(its runs are ordinary runs, never run again), or on the same arms of an earlier experiment. For an
arm with n measured runs and N runs still to go, the projected total is what the arm spent already
plus N × the mean, with a *t prediction interval* for the sum of N new runs:
N·x̄ ± t(n−1) · s · √(N + N²/n) — the uncertainty of the mean scaled to N, plus the spread of the N
runs themselves, and at least ±3/n of the projected rest (`RELATIVE_FLOOR`): a few alike pilot runs
say little about retries. Its lower end is clipped at what was spent already. Wall time assumes the
experiment's concurrency is kept busy: the arms' agent time divided by it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from abbench._result import Result
from abbench.errors import ExperimentError
from abbench.formatting import money_trimmed as money
from abbench.runner._api import run_experiment
from abbench.runner._budget import Limits, budget_limits
from abbench.store import Arm, Experiment, RunSpend, Store, open_store
from abbench.types import RunState

log = logging.getLogger(__name__)

METHOD = (
    "t prediction interval over per-run values (scipy.stats.t), scaled to the runs left, "
    "at least ±3/n of the projected rest (n measured runs)"
)
"""How the interval is made, as every view says it."""

RELATIVE_FLOOR = 3.0
"""The interval's half-width is at least ``RELATIVE_FLOOR / n`` of what the runs left are projected to
spend (n runs measured; at most ±100 %): five near-identical pilot runs once gave ±0.5 %, and the arm
then spent 19 % below its lower end."""


@dataclass(frozen=True)
class Projection(Result):
    """A projected total with its interval (None ends when fewer than 2 runs were measured)."""

    value: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class ArmEstimate(Result):
    """The projection for one arm of the experiment.

    Attributes:
        arm: The arm's name.
        model: Its model.
        runs: Its runs in the whole experiment.
        left: Of them, runs not executed yet (what the projection adds).
        measured: Runs the per-run figures come from.
        spent_cost: What its runs have cost so far (known costs); None when none is known.
        spent_tokens: Tokens so far.
        cost: Projected cost of the arm's whole experiment; None when unknown.
        tokens: Projected tokens; None when no measured run reported tokens.
        agent_s: Projected agent time of the runs left (the sum of their latencies), seconds.
        cost_unknown: Why the cost is unknown (``cost unknown (no prices for model X)``); None when known.
    """

    arm: str
    model: str | None
    runs: int
    left: int
    measured: int
    spent_cost: float | None
    spent_tokens: int | None
    cost: Projection | None
    tokens: Projection | None
    agent_s: Projection | None
    cost_unknown: str | None = None


@dataclass(frozen=True)
class Estimate(Result):
    """What an experiment is projected to cost, per arm and in all, and the budgets it would reach.

    Attributes:
        experiment: The experiment's name.
        experiment_id: Its id.
        source: What the figures come from (``pilot of 5 cases per arm``, ``experiment #3 old``).
        method: How the interval is made.
        confidence: The interval's level.
        concurrency: Runs at once, for the wall time.
        arms: Per-arm projections.
        cost: Projected cost of the whole experiment; None when an arm's is unknown.
        tokens: Projected tokens; None when an arm's are unknown.
        wall_s: Projected wall time of the runs left, seconds.
        warnings: Budgets that would (or may) be reached, and costs that are unknown.
        pilot_runs: Runs the pilot executed in this call (0 when the figures were there already).
    """

    experiment: str
    experiment_id: int
    source: str
    method: str
    confidence: float
    concurrency: int
    arms: tuple[ArmEstimate, ...]
    cost: Projection | None
    tokens: Projection | None
    wall_s: Projection | None
    warnings: tuple[str, ...]
    pilot_runs: int = 0

    def arm(self, name: str) -> ArmEstimate:
        """The projection for arm `name`."""
        for a in self.arms:
            if a.arm == name:
                return a
        raise KeyError(f"no arm {name!r}; the arms: {', '.join(a.arm for a in self.arms)}")


def _interval(values: Sequence[float], left: int, spent: float, confidence: float) -> Projection:
    """`spent` plus `left` more runs like `values`, with a t prediction interval for their sum."""
    import numpy as np
    from scipy import stats

    x = np.asarray(values, dtype=float)
    n = len(x)
    mean = float(x.mean())
    point = spent + left * mean
    if left == 0:
        return Projection(spent, spent, spent)
    if n < 2:
        return Projection(point, None, None)
    s = float(x.std(ddof=1))
    t = float(stats.t.ppf((1 + confidence) / 2, n - 1))
    half = t * s * math.sqrt(left + left * left / n)
    # A floor on the relative width: a handful of alike pilot runs (the first cases, one round) says
    # little about what makes runs differ — retries, long cases. An event absent from n runs may still
    # hit up to 3/n of them (the rule of three, 95 %), and a retry doubles a run's spend.
    half = max(half, min(1.0, RELATIVE_FLOOR / n) * left * abs(mean))
    return Projection(point, max(spent, point - half), point + half)


def _sum(parts: Sequence[Projection | None]) -> Projection | None:
    """The projections added up (bounds added: a conservative interval for the total)."""
    known = [p for p in parts if p is not None]
    if not parts or len(known) < len(parts):
        return None
    lows = [p.low for p in known if p.low is not None]
    highs = [p.high for p in known if p.high is not None]
    return Projection(
        sum(p.value for p in known),
        None if len(lows) < len(known) else sum(lows),
        None if len(highs) < len(known) else sum(highs),
    )


def _pilot(store: Store, exp: Experiment, k: int) -> list[int]:
    """The runs of the pilot still to execute: the first `k` cases of the first round, per arm."""
    runs = store.attempts.spend_of_runs(exp.id)
    first_round = min((r.round for r in runs), default=0)
    ids = []
    for arm in exp.arms:
        mine = sorted(
            (r for r in runs if r.arm_id == arm.id and r.round == first_round), key=lambda r: r.case_idx
        )
        ids += [r.run_id for r in mine[:k] if r.attempts == 0 and r.state == RunState.PENDING]
    return ids


def _measured(runs: list[RunSpend]) -> list[RunSpend]:
    return [r for r in runs if r.attempts > 0 and r.state not in (RunState.RUNNING, RunState.CANCELLED)]


def estimate_experiment(
    ref: int | str | Experiment,
    *,
    store: str | Store | None = None,
    pilot: int = 5,
    from_experiment: int | str | Experiment | None = None,
    confidence: float = 0.95,
    observers: Sequence[Any] = (),
) -> Estimate:
    """Project an experiment's cost, tokens and wall time, per arm, before (or while) it runs.

    Without `from_experiment`, a pilot of `pilot` cases per arm runs first (the first cases of the
    first round); its runs are ordinary runs of the experiment, which then reuses them — they never run
    again, and a second estimate runs nothing new. With `from_experiment`, nothing runs: the per-run
    figures come from that experiment's arms of the same names.

    Args:
        ref: The experiment.
        store: The store.
        pilot: Cases per arm the pilot runs.
        from_experiment: An earlier experiment on the same arms to take the per-run figures from.
        confidence: The interval's level.
        observers: Told about the pilot's progress.

    Raises:
        ExperimentError: `pilot` is below 1, or `from_experiment` shares no arm name with `ref`.
    """
    if pilot < 1:
        raise ExperimentError(f"the pilot needs at least 1 case per arm, not {pilot}")
    if not 0 < confidence < 1:
        raise ExperimentError(f"confidence must be between 0 and 1, not {confidence}")
    store = open_store(store)
    exp = store.experiments.get(ref)
    notes: list[str] = []
    if from_experiment is None:
        pilot_runs = _run_pilot(store, exp, pilot, observers, notes)
        source = f"pilot of {pilot} case{'s' if pilot != 1 else ''} per arm"
        here = store.attempts.spend_of_runs(exp.id)
        samples = {a.id: _measured([r for r in here if r.arm_id == a.id]) for a in exp.arms}
    else:
        other = store.experiments.get(from_experiment)
        pilot_runs, source = 0, f"experiment {other.ref}"
        here = store.attempts.spend_of_runs(exp.id)
        samples = _from_other(store, exp, other, notes)
    concurrency = int(exp.settings.concurrency)
    arms = tuple(
        _arm_estimate(arm, [r for r in here if r.arm_id == arm.id], samples.get(arm.id, []), confidence)
        for arm in exp.arms
    )
    cost = _sum([a.cost for a in arms])
    tokens = _sum([a.tokens for a in arms])
    agent = _sum([a.agent_s for a in arms])
    wall = None if agent is None else _scale(agent, 1 / max(1, concurrency))
    for a in arms:
        if a.cost_unknown:
            notes.append(f"arm {a.arm}: {a.cost_unknown}")
        if a.measured == 0:
            notes.append(f"arm {a.arm}: no measured run to project from")
    notes += _budget_warnings(exp, arms, cost, tokens)
    return Estimate(
        exp.name,
        exp.id,
        source,
        METHOD,
        confidence,
        concurrency,
        arms,
        cost,
        tokens,
        wall,
        tuple(notes),
        pilot_runs,
    )


def _run_pilot(store: Store, exp: Experiment, pilot: int, observers: Sequence[Any], notes: list[str]) -> int:
    """Run the pilot's runs not run yet (`pilot` cases per arm); how many it executed or failed."""
    ids = _pilot(store, exp, pilot)
    if not ids:
        return 0
    log.info("experiment %s: pilot of %d runs (%d cases per arm)", exp.ref, len(ids), pilot)
    summary = run_experiment(exp.id, store=store, run_ids=ids, observers=observers)
    if summary.pause_reason is not None:
        notes.append(f"the pilot stopped short: {summary.pause_reason.text}")
    # each run once: a run executed and then not graded is in `executed` and in `failed` alike
    return summary.executed + summary.execution_failed


def _from_other(
    store: Store, exp: Experiment, other: Experiment, notes: list[str]
) -> dict[int, list[RunSpend]]:
    """Per-run figures of `other`'s arms named as `exp`'s, with a note where the arms differ."""
    theirs = {a.name: a for a in other.arms}
    common = [a for a in exp.arms if a.name in theirs]
    if not common:
        raise ExperimentError(
            f"experiment {other.ref} has no arm named as {exp.ref}'s ({', '.join(a.name for a in exp.arms)}); "
            f"its arms: {', '.join(theirs)}. Estimate from an experiment on the same arms, or run a pilot"
        )
    runs = store.attempts.spend_of_runs(other.id)
    out = {}
    for arm in common:
        old = theirs[arm.name]
        changed = [
            what
            for what, a, b in (
                ("agent", arm.agent, old.agent),
                ("model", arm.model, old.model),
                ("skill", arm.snapshot, old.snapshot),
            )
            if a != b
        ]
        if changed:
            notes.append(
                f"arm {arm.name}: {', '.join(changed)} differ(s) from {other.ref}'s; the figures may not carry over"
            )
        out[arm.id] = _measured([r for r in runs if r.arm_id == old.id])
    for arm in exp.arms:
        if arm.name not in theirs:
            notes.append(f"arm {arm.name}: not in {other.ref}; nothing to project it from")
    return out


def _scale(p: Projection, factor: float) -> Projection:
    return Projection(
        p.value * factor,
        None if p.low is None else p.low * factor,
        None if p.high is None else p.high * factor,
    )


def _arm_estimate(arm: Arm, runs: list[RunSpend], sample: list[RunSpend], confidence: float) -> ArmEstimate:
    done = _measured(runs)
    left = sum(1 for r in runs if r.attempts == 0 or r.state == RunState.PENDING)
    known_costs = [r.cost for r in done if r.cost is not None]
    spent_cost = sum(known_costs) if known_costs else None
    tok = [r.tokens for r in done if r.tokens is not None]
    spent_tokens = sum(tok) if tok else None
    cost = tokens = None
    agent = Projection(0.0, 0.0, 0.0) if left == 0 else None
    unknown = None
    if sample:
        costs = [r.cost for r in sample]
        if any(c is None for c in costs) or any(r.cost is None for r in done):
            models = sorted({r.model or arm.model or "?" for r in [*sample, *done] if r.cost is None})
            unknown = f"cost unknown (no prices for model {', '.join(models)})"
        else:
            cost = _interval([c for c in costs if c is not None], left, spent_cost or 0.0, confidence)
        sample_tokens = [r.tokens for r in sample if r.tokens is not None]
        if len(sample_tokens) == len(sample):
            tokens = _interval(sample_tokens, left, float(spent_tokens or 0), confidence)
        agent = _interval([r.latency_ms / 1000.0 for r in sample], left, 0.0, confidence)
    return ArmEstimate(
        arm=arm.name,
        model=arm.model,
        runs=len(runs),
        left=left,
        measured=len(sample),
        spent_cost=spent_cost,
        spent_tokens=spent_tokens,
        cost=cost,
        tokens=tokens,
        agent_s=agent,
        cost_unknown=unknown,
    )


def _budget_warnings(
    exp: Experiment, arms: Sequence[ArmEstimate], cost: Projection | None, tokens: Projection | None
) -> list[str]:
    """Each budget the projection would (or may) reach, in words."""
    limits, arm_limits = budget_limits(exp.settings, exp.arms)
    out = []
    scopes: list[tuple[str, Limits, Projection | None, Projection | None, bool]] = []
    if limits is not None:
        unknown = any(a.cost_unknown for a in arms)
        scopes.append(("the experiment's budget", limits, cost, tokens, unknown))
    by_name = {a.arm: a for a in arms}
    for arm in exp.arms:
        if arm.id in arm_limits:
            a = by_name[arm.name]
            scopes.append(
                (f"arm {arm.name}'s budget", arm_limits[arm.id], a.cost, a.tokens, bool(a.cost_unknown))
            )
    for label, lim, c, t, unknown in scopes:
        if lim.max_cost is not None:
            if c is None:
                out.append(
                    f"{label} of {money(lim.max_cost)} cannot be checked: the cost is unknown"
                    if unknown
                    else f"{label} of {money(lim.max_cost)} cannot be checked: nothing measured"
                )
            else:
                out += _reach(label, money(lim.max_cost), lim.max_cost, c, money)
        if lim.max_tokens is not None and t is not None:
            out += _reach(
                label, f"{lim.max_tokens:,} tokens", lim.max_tokens, t, lambda v: f"{v:,.0f} tokens"
            )
    return out


def _reach(
    label: str, limit_text: str, limit: float, p: Projection, fmt: Callable[[float], str]
) -> list[str]:
    if p.value > limit:
        return [f"{label} of {limit_text} would be reached: projected {fmt(p.value)}{_bounds(p, fmt)}"]
    if p.high is not None and p.high > limit:
        return [f"{label} of {limit_text} may be reached: projected {fmt(p.value)}{_bounds(p, fmt)}"]
    return []


def _bounds(p: Projection, fmt: Callable[[float], str]) -> str:
    if p.low is None or p.high is None:
        return ""
    return f" ({fmt(p.low)} to {fmt(p.high)})"
