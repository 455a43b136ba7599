"""A sequentially monitored experiment's comparison: the anytime-valid interval and p-value, never the fixed-n ones.

An experiment with ``stopping:`` was looked at after every few cases; the fixed-n interval and p-value of
its cases would be the "peeking" error of online A/B testing. Its decision pair is therefore compared
with the confidence sequence the runner monitored (`abbench.stats.SequentialTest`), fed the paired
cases in the same seeded order (`abbench.stats.sequential_order`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from abbench.stats import ConfidenceSequence, confidence_sequence, sequential_order
from abbench.store import Arm, Experiment

ANYTIME_VALID = "anytime-valid"
"""The `Comparison.interval_method` (and the gate's word) of a sequentially monitored pair."""


def _pair_of(exp: Experiment) -> tuple[str, str]:
    decision = exp.spec.decision
    if decision is not None and decision.baseline is not None and decision.candidate is not None:
        return decision.baseline, decision.candidate
    return exp.arms[0].name, exp.arms[1].name


def monitored(ea: Experiment, arm_a: Arm, eb: Experiment, arm_b: Arm) -> bool:
    """Whether this comparison is of the pair an experiment's stopping rule monitored (either order)."""
    if ea.id != eb.id or ea.spec.stopping is None or len(ea.arms) < 2:
        return False
    return {arm_a.name, arm_b.name} == set(_pair_of(ea))


def sequential_main(
    exp: Experiment, cases: np.ndarray, all_cases: np.ndarray, va: np.ndarray, vb: np.ndarray, main: Any,
    notes: list[str],
) -> tuple[Any, ConfidenceSequence]:  # fmt: skip
    """The main test replaced by the confidence sequence over the paired `cases` (values `va`, `vb`).

    Args:
        exp: The experiment (its ``stopping:`` gives the level, its seed the order).
        cases: The paired cases' dataset positions.
        all_cases: Every case of the experiment (the order is a permutation of them).
        va: A's per-case pass rates, aligned with `cases`.
        vb: B's.
        main: The fixed-n main test (its interval, p-value and method are replaced).
        notes: Where the note that says so goes.
    """
    rule = exp.spec.stopping
    assert rule is not None
    order = sequential_order(all_cases, int(exp.spec.seed))
    rank = np.empty(int(order.max()) + 1 if order.size else 0, dtype=np.int64)
    rank[order] = np.arange(order.size)
    at = np.argsort(rank[cases], kind="stable")
    cs = confidence_sequence(va[at], vb[at], alpha=rule.alpha)
    stop = exp.stop_reason or {}
    where = (
        f"stopped by its rule after {stop['cases']:,} of {stop['total']:,} cases ({stop.get('decision')})"
        if stop.get("cases", 0) < stop.get("total", 0)
        else "monitored by its stopping rule"
    )
    notes.append(
        f"{where}: the interval and p-value are the anytime-valid ones of the confidence sequence "
        f"(Waudby-Smith & Ramdas 2024) at {1 - rule.alpha:.0%} over {cs.n:,} paired cases in the seeded "
        "order, not the fixed-n ones, which looking after every few cases would invalidate"
    )
    return replace(
        main, test="anytime-valid confidence sequence", interval=cs.interval, interval_method=ANYTIME_VALID,
        p_value=cs.p_value,
    ), cs  # fmt: skip
