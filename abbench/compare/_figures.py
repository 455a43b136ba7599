"""The figures of a comparison beyond its main test: cost, latency, tokens and score, and each domain."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from abbench.compare._model import DomainComparison, MetricDifference
from abbench.metrics import NO_DOMAIN
from abbench.stats import (
    Interval,
    StatsWarning,
    exact_means,
    holm_correction,
    mcnemar_exact,
    paired_bootstrap,
    paired_difference,
    paired_proportion_interval,
    paired_ratio_interval,
)
from abbench.store import CaseOutcomes

BOOTSTRAP_MAX_CASES = 20_000
"""Above this many paired cases, cost/latency/token differences use the central-limit interval.

With tens of thousands of cases the mean's sampling distribution is normal to within a fraction of a
percent even for skewed latencies, so the bootstrap's interval matches the normal one while costing
seconds; pass ``bootstrap=True`` to draw it anyway.
"""
USAGE_METRICS = ("cost", "latency_ms", "tokens")
"""Continuous per-run figures compared with the paired bootstrap."""
_WORD = {"cost": "cost", "latency_ms": "latency", "tokens": "tokens"}


def _usage_series(
    oa: CaseOutcomes, ob: CaseOutcomes, common: np.ndarray, outcome: str, lists_a: Any, lists_b: Any
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, int], int]:
    """Each figure's per-case values in both arms over the cases both reported it; how many executed runs
    of the paired cases reported none of each; how many cases both arms executed."""
    ia, ib = np.searchsorted(oa.case_idx, common), np.searchsorted(ob.case_idx, common)
    executed = (oa.executed[ia] > 0) & (ob.executed[ib] > 0)
    series, unknown = {}, {}
    for metric, reported in zip(USAGE_METRICS, ("cost_runs", "latency_runs", "token_runs"), strict=True):
        # A case's figure is its mean over the runs that reported it: a run with no cost (or latency, or
        # tokens) is left out, never counted as 0; a case where an arm reported it in no run is left out.
        na, nb = getattr(oa, reported)[ia], getattr(ob, reported)[ib]
        a, b = getattr(oa, metric)[ia] / np.maximum(na, 1), getattr(ob, metric)[ib] / np.maximum(nb, 1)
        known = executed & (na > 0) & (nb > 0)
        series[metric] = (a[known], b[known])
        unknown[metric] = int((oa.executed[ia] - na)[executed].sum() + (ob.executed[ib] - nb)[executed].sum())
    if outcome == "score" and len(lists_a):
        series["score"] = (
            exact_means(np.concatenate(lists_a), [len(v) for v in lists_a]),
            exact_means(np.concatenate(lists_b), [len(v) for v in lists_b]),
        )
    return series, unknown, int(executed.sum())


def _usage_differences(
    oa: CaseOutcomes,
    ob: CaseOutcomes,
    common: np.ndarray,
    outcome: str,
    lists_a: Any,
    lists_b: Any,
    confidence: float,
    iterations: int,
    seed: int,
    bootstrap: bool | None,
    notes: list[str],
) -> tuple[MetricDifference, ...]:
    series, unknown, n_exec = _usage_series(oa, ob, common, outcome, lists_a, lists_b)
    out = []
    use_bootstrap = bootstrap if bootstrap is not None else n_exec <= BOOTSTRAP_MAX_CASES
    if bootstrap is None and not use_bootstrap:
        notes.append(
            f"{n_exec:,} cases: cost, latency and token differences use central-limit intervals "
            f"(the bootstrap is drawn up to {BOOTSTRAP_MAX_CASES:,} cases; bootstrap=True forces it)"
        )
    for metric, (a, b) in series.items():
        n = int(a.size)
        if n == 0:
            why = (
                "no case measured in both arms"
                if n_exec == 0
                else f"{_WORD.get(metric, metric)} not reported by an agent"
            )
            out.append(MetricDifference(metric, "none", None, None, None, None, None, None, 0, why))
            continue
        if unknown.get(metric):
            notes.append(
                f"{_WORD[metric]}: {unknown[metric]:,} executed run(s) of the paired cases reported none; each case's "
                f"{_WORD[metric]} is the mean over the runs that reported it, on the {n:,} case(s) both arms reported"
            )
        mean_a, mean_b = float(a.mean()), float(b.mean())
        relative = (mean_b - mean_a) / mean_a if mean_a else None
        med_a, med_b = float(np.median(a)), float(np.median(b))
        medians: dict[str, Any] = {
            "median_a": med_a,
            "median_b": med_b,
            "median_relative": (med_b - med_a) / med_a if med_a else None,
            "median_difference": float(np.median(b - a)),
            "relative_interval": _relative_interval(a, b, confidence) if metric != "score" else None,
        }
        if n < 2:
            out.append(
                MetricDifference(
                    metric, "none", mean_a, mean_b, mean_b - mean_a, relative, None, None, n,
                    "one case: no interval", **medians,
                )
            )  # fmt: skip
            continue
        if use_bootstrap:
            boot = paired_bootstrap(a, b, iterations=iterations, seed=seed, confidence=confidence)
            out.append(
                MetricDifference(
                    metric, "paired bootstrap", mean_a, mean_b, boot.estimate, relative, boot.interval,
                    boot.p_value, n, **medians,
                )
            )  # fmt: skip
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", StatsWarning)
                d = paired_difference(a, b, confidence=confidence, method="t")
            out.append(
                MetricDifference(
                    metric, "paired difference", mean_a, mean_b, d.difference, relative,
                    d.interval if math.isfinite(d.se) else None, d.p_value if math.isfinite(d.p_value) else None, n,
                    **medians,
                )
            )  # fmt: skip
    return tuple(out)


def _relative_interval(a: np.ndarray, b: np.ndarray, confidence: float) -> Interval | None:
    """Fieller's interval of B's mean over A's, minus 1 (None with fewer than 2 cases, or unbounded)."""
    ratio = paired_ratio_interval(a, b, confidence) if a.size >= 2 else None
    if ratio is None or not (math.isfinite(ratio.low) and math.isfinite(ratio.high)):
        return None
    return Interval(ratio.low - 1.0, ratio.high - 1.0, confidence)


def _domains(
    domains: list[str],
    lists_a: Any,
    lists_b: Any,
    va: np.ndarray,
    vb: np.ndarray,
    category: np.ndarray,
    outcome: str,
    one_round: bool,
    binary: bool,
    confidence: float,
    alpha: float,
) -> tuple[DomainComparison, ...]:
    if not domains or set(domains) == {NO_DOMAIN}:  # no case has a domain: nothing to break down
        return ()
    import pandas as pd

    # Group once by integer codes: comparing an object array with each domain name costs more.
    codes, names = pd.factorize(np.asarray(domains, dtype=object))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    members = {str(name): order[bounds[i] : bounds[i + 1]] for i, name in enumerate(names)}
    test = "exact McNemar" if one_round else "exact sign test"
    rows = []
    p_values: dict[str, float] = {}
    for domain in sorted(members, key=str):
        idx = members[domain]
        sub_a = lists_a[idx] if isinstance(lists_a, np.ndarray) else [lists_a[i] for i in idx]
        sub_b = lists_b[idx] if isinstance(lists_b, np.ndarray) else [lists_b[i] for i in idx]
        d = vb[idx] - va[idx]  # per-case values are exact means: a tie is exactly 0
        if outcome == "passed":
            fixed = int(np.count_nonzero(category[idx] == "fixed"))
            regressed = int(np.count_nonzero(category[idx] == "regressed"))
        else:
            fixed, regressed = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
        # The sign test counts the cases whose pass rate (or score) went up or down; with one round these
        # are the cases fixed and regressed, and the test is McNemar's exact test.
        up, down = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
        p = mcnemar_exact(down, up).p_value
        p_values[domain] = p
        interval = None
        if binary:
            # Domains are small and often have no case that moved: the t interval would be a point there.
            both = int(np.count_nonzero(category[idx] == "unchanged_right"))
            neither = int(np.count_nonzero(category[idx] == "unchanged_wrong"))
            interval = paired_proportion_interval(both, fixed, regressed, neither, confidence)
        elif idx.size >= 2:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", StatsWarning)
                within = paired_difference(sub_a, sub_b, confidence=confidence, method="t")
            interval = within.interval if math.isfinite(within.se) and within.se > 0 else None
            if interval is not None and outcome == "passed":  # a t interval over a few cases can pass ±100
                interval = Interval(max(-1.0, interval.low), min(1.0, interval.high), interval.confidence)
        size = [int(idx.size)]
        mean_a, mean_b = float(exact_means(va[idx], size)[0]), float(exact_means(vb[idx], size)[0])
        rows.append((domain, int(idx.size), mean_a, mean_b, float(exact_means(d, size)[0]), interval, fixed,
                     regressed, up, down))  # fmt: skip
    holm = holm_correction(p_values, alpha=alpha)
    adjusted = holm.by_label()
    out = []
    for domain, n, a, b, diff, interval, fixed, regressed, up, down in rows:
        adj = adjusted[domain]
        significant = adj is not None and math.isfinite(adj) and adj < alpha
        # The sign test counts cases that moved; with rounds its direction can disagree with the mean's
        # (many cases a little worse, a few much better). Only a direction both agree on is claimed.
        out.append(
            DomainComparison(
                domain, n, a, b, diff, interval, fixed, regressed, test, p_values[domain], adj,
                significant and diff < 0 and up < down, significant and diff > 0 and up > down, up, down,
                "Newcombe" if binary else "Student t",
            )
        )  # fmt: skip
    return tuple(out)
