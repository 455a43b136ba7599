"""Trigger vs help: was an arm's effect due to loading its skill more often, or to the skill helping once loaded?

For each arm X, over the cases graded in both arms, with each case weighing the same (its graded rounds
share its weight, as the comparison's per-case means do):

- ``p_X``: activation, the share of graded runs that had the skill (loaded from the catalogue; an
  injected skill counts as loaded in every run, no skill as never);
- ``h_X``: accuracy when loaded (per protocol), ``m_X``: accuracy when not loaded; so the
  intention-to-treat accuracy (every case) is ``acc_X = p_X·h_X + (1 − p_X)·m_X``.

The effect ``Δ = acc_B − acc_A`` (the comparison's difference) splits exactly into three parts::

    Δ = (p_B − p_A) × help                  because it was loaded more often (help = h_B − m_A)
      + p_A × (h_B − h_A)                   because it helped more when loaded
      + (1 − p_B) × (m_B − m_A)             when not loaded (the catalogue's own effect, say)

A run that loaded a *sibling* (another skill of the catalogue, never the one under test) counts as not
loaded; its share of the graded runs is reported on its own (``ArmTriggerHelp.wrong_sibling``, with the
accuracy of those runs), so "loaded the wrong sibling" is told apart from "loaded nothing".

``help_when_loaded = h_B − m_A`` is what a loaded run of B gains over a run of A without the skill; the
last two parts are the residual. When A loads in every run (``m_A`` undefined, e.g. A injects its skill)
the mirror split is used: ``help = h_A − m_B``, ``Δ = (p_B − p_A)·help + p_B·(h_B − h_A) +
(1 − p_A)·(m_B − m_A)``. A term whose weight is 0 is 0 even when its accuracy is undefined. The split
describes these runs; it is not a causal estimate (runs that load are the agent's choice, so they differ
from those that do not) and carries no interval.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from abbench._result import Result
from abbench.metrics import ActivationRun, Estimate, estimate_rate
from abbench.stats import wilson_interval

FORMULA = "Δ = (p_B − p_A) × (h_B − m_A) + p_A × (h_B − h_A) + (1 − p_B) × (m_B − m_A)"
"""The split of the effect (see the module docstring; the mirror form when A always loads)."""
MIRROR_FORMULA = "Δ = (p_B − p_A) × (h_A − m_B) + p_B × (h_B − h_A) + (1 − p_A) × (m_B − m_A)"
"""The split used when A loads its skill in every run (it has no accuracy when not loaded)."""


@dataclass(frozen=True)
class ArmTriggerHelp(Result):
    """One arm's accuracy split by whether its skill was loaded, over the paired cases.

    Attributes:
        arm: The arm's name.
        mode: ``offered``, ``injected`` or ``none``.
        graded: Graded runs counted (execution failures are left out, as accuracy leaves them out).
        loaded_runs: Of those, runs that had the skill.
        activation: ``p``: the case-weighted share of graded runs that had the skill.
        intention_to_treat: Accuracy over every paired case, loaded or not (the comparison's figure).
        per_protocol: Accuracy of the runs that loaded the skill (runs pooled, Wilson).
        not_loaded: Accuracy of the runs that did not.
        when_loaded: ``h``, case-weighted accuracy when loaded (None when never loaded).
        when_not_loaded: ``m``, case-weighted accuracy when not loaded (None when always loaded).
        sibling_runs: Of the graded runs, those that loaded a sibling of the skill under test and never
            it (counted in the not-loaded ones).
        wrong_sibling: Their case-weighted share of the graded runs (None when nothing was offered).
        when_sibling: Accuracy of those runs (runs pooled, Wilson).
    """

    arm: str
    mode: str
    graded: int
    loaded_runs: int
    activation: float | None
    intention_to_treat: Estimate
    per_protocol: Estimate
    not_loaded: Estimate
    when_loaded: float | None
    when_not_loaded: float | None
    sibling_runs: int = 0
    wrong_sibling: float | None = None
    when_sibling: Estimate | None = None


def _sibling(r: ActivationRun) -> bool:
    """The run loaded another skill of its catalogue, never the one under test."""
    return r.skills_offered is not None and bool(r.skills_loaded) and not r.loaded


@dataclass(frozen=True)
class TriggerHelp(Result):
    """The arm-vs-baseline effect split into loading more often, helping more when loaded, and the rest.

    Attributes:
        a: The baseline's split.
        b: The candidate's split.
        n_cases: Cases graded in both arms.
        total: ``acc_B − acc_A`` (per-case means; equals the comparison's difference).
        activation_difference: ``p_B − p_A``.
        help_when_loaded: The help per loaded run (``h_B − m_A``, or the mirror ``h_A − m_B``).
        loaded_more_often: ``activation_difference × help_when_loaded``.
        helped_more_when_loaded: The loaded runs' own difference, at the other arm's activation.
        when_not_loaded: The not-loaded runs' difference, at their share.
        residual: ``total − loaded_more_often`` (the last two parts).
        formula: The split used.
        reason: Why a part could not be measured (no value), else None.
    """

    a: ArmTriggerHelp
    b: ArmTriggerHelp
    n_cases: int
    total: float | None
    activation_difference: float | None
    help_when_loaded: float | None
    loaded_more_often: float | None
    helped_more_when_loaded: float | None
    when_not_loaded: float | None
    residual: float | None
    formula: str
    reason: str | None = None


def _none(reason: str) -> Estimate:
    return Estimate(None, None, None, "none", 0, 0, None, reason)


def _pooled(k: int, n: int, confidence: float, reason: str) -> Estimate:
    if n == 0:
        return _none(reason)
    return Estimate(k / n, wilson_interval(k, n, confidence), None, "wilson over runs", n, n, None)


def _arm(runs: Sequence[ActivationRun], cases: Sequence[int], confidence: float) -> ArmTriggerHelp:
    """One arm's split over `cases` (graded runs only)."""
    pos = {c: i for i, c in enumerate(cases)}
    graded = [r for r in runs if r.case_idx in pos and r.outcome in ("pass", "fail")]
    n_cases = len(cases)
    n = np.zeros(n_cases)
    k = np.zeros(n_cases)
    kl, nl = np.zeros(n_cases), np.zeros(n_cases)
    ks, ns = np.zeros(n_cases), np.zeros(n_cases)
    for r in graded:
        i = pos[r.case_idx]
        y = float(r.outcome == "pass")
        n[i] += 1
        k[i] += y
        if r.loaded:
            nl[i] += 1
            kl[i] += y
        elif _sibling(r):
            ns[i] += 1
            ks[i] += y
    mode = "offered" if any(r.skills_offered is not None for r in runs) else (
        "injected" if any(r.has_skill for r in runs) else "none"
    )  # fmt: skip
    weight = 1.0 / (n_cases * np.maximum(n, 1))
    p = float(np.sum(nl * weight)) if n_cases else None
    loaded_acc, unloaded_acc = float(np.sum(kl * weight)), float(np.sum((k - kl) * weight))
    h = loaded_acc / p if p else None
    m = unloaded_acc / (1.0 - p) if p is not None and p < 1.0 else None
    total_l, total_n = int(nl.sum()), int(n.sum())
    return ArmTriggerHelp(
        arm=next((r.arm for r in runs), ""),
        mode=mode,
        graded=total_n,
        loaded_runs=total_l,
        activation=p,
        intention_to_treat=estimate_rate(k.astype(np.int64), n.astype(np.int64), confidence),
        per_protocol=_pooled(int(kl.sum()), total_l, confidence, "no graded run loaded the skill"),
        not_loaded=_pooled(
            int(k.sum() - kl.sum()), total_n - total_l, confidence, "every graded run loaded it"
        ),
        when_loaded=h,
        when_not_loaded=m,
        sibling_runs=int(ns.sum()),
        wrong_sibling=float(np.sum(ns * weight)) if n_cases and mode == "offered" else None,
        when_sibling=_pooled(int(ks.sum()), int(ns.sum()), confidence, "no graded run loaded a sibling"),
    )


def _term(weight: float, value: float | None) -> float | None:
    """``weight × value``: 0 when the weight is 0, whatever the value; None when an undefined value counts."""
    if abs(weight) < 1e-15:
        return 0.0
    return None if value is None else weight * value


def _diff(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else x - y


def trigger_help(
    runs_a: Sequence[ActivationRun],
    runs_b: Sequence[ActivationRun],
    cases: Collection[int],
    confidence: float = 0.95,
) -> TriggerHelp:
    """Split the effect of arm B over arm A on `cases` (see the module docstring for the formula).

    Args:
        runs_a: The baseline's runs (`abbench.metrics.ActivationRun`, with their outcomes).
        runs_b: The candidate's runs.
        cases: The case positions graded in both arms (the comparison's paired cases).
        confidence: Coverage of the accuracy intervals.
    """
    order = sorted(cases)
    a, b = _arm(runs_a, order, confidence), _arm(runs_b, order, confidence)
    if not order or a.activation is None or b.activation is None:
        return TriggerHelp(a, b, 0, None, None, None, None, None, None, None, FORMULA, "no paired case")
    pa, pb = a.activation, b.activation
    total = (pb * (b.when_loaded or 0.0) + (1 - pb) * (b.when_not_loaded or 0.0)) - (
        pa * (a.when_loaded or 0.0) + (1 - pa) * (a.when_not_loaded or 0.0)
    )
    formula, help_ = FORMULA, _diff(b.when_loaded, a.when_not_loaded)
    helped = _term(pa, _diff(b.when_loaded, a.when_loaded))
    not_loaded = _term(1 - pb, _diff(b.when_not_loaded, a.when_not_loaded))
    if a.when_not_loaded is None and b.when_not_loaded is not None:
        formula, help_ = MIRROR_FORMULA, _diff(a.when_loaded, b.when_not_loaded)
        helped = _term(pb, _diff(b.when_loaded, a.when_loaded))
        not_loaded = _term(1 - pa, _diff(b.when_not_loaded, a.when_not_loaded))
    loaded_more = _term(pb - pa, help_)
    reason = None
    if help_ is None:
        reason = (
            "neither arm loaded a skill: there is no help when loaded to measure"
            if pa == 0 and pb == 0
            else "both arms had their skill in every run: no run without it to measure the help against"
        )
    residual = None if loaded_more is None else total - loaded_more
    return TriggerHelp(
        a, b, len(order), total, pb - pa, help_, loaded_more, helped, not_loaded, residual, formula, reason
    )
