"""Plan an experiment before running it: how many cases a paired comparison of two arms needs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from scipy import special

from abbench.errors import UsageError
from abbench.stats._base import _Result, check_probability
from abbench.stats._power import (
    RULE_OF_THUMB,
    WHY_THEY_DIFFER,
    PowerInputs,
    _rounds,
    rule_of_thumb_n,
    sample_size_two_proportions,
)


@dataclass(frozen=True)
class Plan(_Result):
    """How many cases two arms on the same cases need to tell a difference apart.

    Attributes:
        n: Cases needed (paired: every case runs in both arms), rounded up.
        n_exact: The formula's unrounded value.
        n_unpaired: Cases per arm if the arms ran on *different* cases (the two-proportion bound); None
            when ``baseline + effect`` leaves (0, 1).
        n_rule_of_thumb: Cases per arm by the symmetric rule of thumb `abbench.stats.RULE_OF_THUMB`,
            ``(z_α/2 + z_β)²·2p(1−p)/δ²`` (the same for a rise or a fall), beside `n_unpaired`; the text
            says why they differ (`abbench.stats.WHY_THEY_DIFFER`).
        baseline: Arm A's expected pass rate.
        effect: The difference worth detecting, b − a.
        rounds: Rounds per case planned.
        discordance: Share of cases the arms answer differently (one right, one wrong), when known.
        method: ``"mcnemar"`` (Connor's formula from the discordance) or ``"paired-means"`` (Miller's
            formula from an earlier experiment's variances, where rounds shrink round-to-round noise).
        source: Where the discordance or variances came from, in words.
        have: Cases already run (0 for a new experiment).
        alpha: Two-sided significance level.
        power: Desired power.
        notes: Caveats, in words.
    """

    n: int
    n_exact: float
    n_unpaired: int | None
    baseline: float
    effect: float
    rounds: float
    discordance: float | None
    method: str
    source: str
    have: int
    alpha: float
    power: float
    notes: tuple[str, ...] = ()
    n_rule_of_thumb: int | None = None

    @property
    def more(self) -> int:
        """Cases still to run: ``n − have``, at least 0."""
        return max(0, self.n - self.have)

    @property
    def text(self) -> str:
        """The plan in one sentence."""
        points = f"{abs(self.effect) * 100:.3g} points"
        if self.have:
            if not self.more:
                return f"the {self.have} cases run already detect {points} with {self.power:.0%} power"
            return (
                f"to detect {points} you would need about {self.more} more cases "
                f"({self.n} in all; {self.have} run)"
            )
        unpaired = f"; {self.n_unpaired} per arm on different cases" if self.n_unpaired else ""
        if self.n_unpaired and self.n_rule_of_thumb:
            unpaired += (
                f" (the rule of thumb {RULE_OF_THUMB} says {self.n_rule_of_thumb} per arm for a rise or a fall: "
                f"{WHY_THEY_DIFFER})"
            )
        return (
            f"to detect {points} from {self.baseline:.0%} with {self.power:.0%} power (α = {self.alpha:g}) "
            f"you need about {self.n} cases, each run in both arms{unpaired}"
        )


def _rate(value: Any, name: str) -> float:
    return check_probability(value, name, "0.85")


def _effect(value: Any, baseline: float) -> float:
    try:
        d = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"effect must be a difference of pass rates, e.g. 0.05; got {value!r}") from None
    if d == 0.0 or not math.isfinite(d) or abs(d) >= 1.0:
        raise UsageError(
            f"effect must be a non-zero difference of pass rates between -1 and 1; got {value!r}"
        )
    return d


def independent_discordance(p_a: float, p_b: float) -> float:
    """The discordance of two arms whose errors are independent: ``p_a(1 − p_b) + p_b(1 − p_a)``.

    Raises:
        UsageError: never for rates in [0, 1]; the callers check them.
    """
    return p_a * (1.0 - p_b) + p_b * (1.0 - p_a)


def _check_discordance(d: Any, p_a: float, effect: float) -> float:
    try:
        x = float(d)
    except (TypeError, ValueError):
        raise UsageError(f"discordance must be a share of cases between 0 and 1; got {d!r}") from None
    # b wins on (x + δ)/2 of the cases, a on (x − δ)/2: both ≥ 0, and within what each arm's rates allow.
    wins_b, wins_a = (x + effect) / 2.0, (x - effect) / 2.0
    if not math.isfinite(x) or wins_a < -1e-12 or x > 1.0:
        raise UsageError(
            f"discordance {d!r} is impossible for an effect of {effect:g}: the share of cases the arms answer "
            f"differently must lie between |effect| = {abs(effect):g} and 1"
        )
    if wins_b > 1.0 - p_a + 1e-12 or wins_a > p_a + 1e-12:
        raise UsageError(
            f"discordance {d!r} is impossible with a baseline of {p_a:g} and an effect of {effect:g}: "
            f"arm B would win on more cases than arm A gets wrong; give a smaller discordance"
        )
    return x


def plan_experiment(
    baseline: float,
    effect: float,
    *,
    rounds: float = 1,
    discordance: float | None = None,
    inputs: PowerInputs | None = None,
    have: int = 0,
    power: float = 0.8,
    alpha: float = 0.05,
    source: str | None = None,
) -> Plan:
    """Cases needed for two arms, run on the same cases, to detect ``effect`` with the given power.

    Without ``inputs``, the test planned for is McNemar's on the discordant cases, and the size is
    Connor's (1987, *Biometrics* 43:207–211): ``n = (z_{α/2}·√d + z_β·√(d − δ²))² / δ²`` with ``d`` the
    discordance (the share of cases on which one arm is right and the other wrong) and ``δ`` the effect.
    The fewer cases the arms disagree on, the fewer are needed: two arms that share their mistakes need far
    fewer cases than two independent samples. Without a ``discordance``, the errors are taken as
    independent, ``d = p_a(1 − p_b) + p_b(1 − p_a)`` — the worst case for two versions of one agent.

    With ``inputs`` (ω², σ² and rounds measured on an earlier experiment, see
    :func:`~abbench.stats.estimate_power_inputs`) the size is Miller's (2024, §5) for the paired
    difference of per-case means, in which more ``rounds`` shrink the round-to-round noise; with one round
    its variance ``ω² + σ²_A + σ²_B`` is ``d − δ²``, the discordance again. A discordance alone cannot
    tell case-to-case differences from round-to-round noise, so there rounds do not lower the count.

    Args:
        baseline: Arm A's expected pass rate (e.g. 0.85).
        effect: The difference worth detecting, b − a (e.g. 0.05 for 5 points).
        rounds: Rounds per case planned.
        discordance: Share of cases the arms answer differently, from an earlier experiment.
        inputs: Variances from an earlier (or this) experiment; takes precedence over ``discordance``.
        have: Cases already run; the plan then says how many more are needed.
        power: Desired power.
        alpha: Two-sided significance level.
        source: Where the discordance or inputs came from, for the plan's text.

    Raises:
        UsageError: a rate, the power or alpha outside (0, 1); a zero effect; ``baseline + effect``
            outside [0, 1]; a discordance that the rates make impossible.

    Example:
        >>> plan_experiment(0.85, 0.05, discordance=0.12).n
        375
    """
    p_a = _rate(baseline, "baseline")
    delta = _effect(effect, p_a)
    p_b = p_a + delta
    if not 0.0 <= p_b <= 1.0:
        raise UsageError(
            f"baseline {p_a:g} + effect {delta:g} = {p_b:g} is not a pass rate; give a smaller effect"
        )
    power, alpha = check_probability(power, "power", "0.8"), check_probability(alpha, "alpha", "0.05")
    rounds = _rounds(rounds, "rounds")
    if isinstance(have, bool) or not isinstance(have, int) or have < 0:
        raise UsageError(f"have must be a whole number of cases ≥ 0; got {have!r}")
    notes: list[str] = []
    if inputs is not None:
        sizing = _paired_means_size(inputs, delta, rounds, alpha, power, notes, source)
        discordance = None if discordance is None else float(discordance)
    else:
        sizing = _mcnemar_size(p_a, p_b, delta, rounds, alpha, power, discordance, notes, source)
        discordance = sizing.discordance
    n_exact, method, src = sizing.n_exact, sizing.method, sizing.source
    unpaired = thumb = None
    if 0.0 < p_b < 1.0:
        unpaired = sample_size_two_proportions(p_a, p_b, alpha=alpha, power=power).n_a
        thumb = math.ceil(rule_of_thumb_n(p_a, delta, alpha, power) - 1e-9)
    n = max(2, math.ceil(n_exact - 1e-9))
    return Plan(
        n, n_exact, unpaired, p_a, delta, rounds, discordance, method, src, have, alpha, power, tuple(notes),
        thumb,
    )  # fmt: skip


class _Sizing(NamedTuple):
    """The exact count of one planning method, and what it rests on."""

    n_exact: float
    method: str
    source: str
    discordance: float | None = None


def _paired_means_size(
    inputs: PowerInputs,
    delta: float,
    rounds: float,
    alpha: float,
    power: float,
    notes: list[str],
    source: str | None,
) -> _Sizing:
    """Miller's count for the paired difference of per-case means, from measured variances."""
    size = inputs.sample_size(delta, alpha=alpha, power=power, rounds_a=rounds, rounds_b=rounds)
    if not inputs.within_identified and rounds > 1:
        notes.append(
            "the earlier experiment had one round per case: its round-to-round noise could not be "
            "separated, so the count for more rounds is pessimistic"
        )
    src = source or f"variances of an earlier experiment ({inputs.n_cases} cases)"
    return _Sizing(size.n_exact, "paired-means", src)


def _mcnemar_size(
    p_a: float,
    p_b: float,
    delta: float,
    rounds: float,
    alpha: float,
    power: float,
    discordance: float | None,
    notes: list[str],
    source: str | None,
) -> _Sizing:
    """Connor's count for McNemar's test, at the discordance given or the independent-errors one."""
    if discordance is None:
        d = independent_discordance(p_a, p_b)
        src = source or "errors taken as independent (the worst case; a discordance plans for fewer cases)"
    else:
        d = _check_discordance(discordance, p_a, delta)
        src = source or f"a discordance of {d:.3g}"
    z_a, z_b = float(special.ndtri(1.0 - alpha / 2.0)), float(special.ndtri(power))
    n_exact = (z_a * math.sqrt(d) + z_b * math.sqrt(max(0.0, d - delta * delta))) ** 2 / (delta * delta)
    if rounds > 1:
        notes.append(
            "a discordance alone cannot separate round-to-round noise, so more rounds do not lower this "
            "count; plan from an earlier experiment with rounds to see what they save"
        )
    return _Sizing(n_exact, "mcnemar", src, d)
