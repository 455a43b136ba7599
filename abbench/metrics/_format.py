"""Format adherence: how often an arm's model answered in the format asked for, per arm and paired.

A real model does not always keep the answer contract: it wraps the JSON in prose, writes
``key: value`` lines, names a label in passing, echoes the prompt, or runs out of tokens. The tolerant
reader still finds many of those answers (``fallback``); format adherence is the share of runs whose
answer was the JSON object asked for — ``strict`` (the whole reply) or ``structured`` (asked with a
``response_format``) — among the runs whose reply was read: those plus ``fallback``, ``unreadable``
(``bad_output``) and ``truncated`` (cut at ``max_tokens``). Runs of agents that read no model reply
(builtin, python) and runs that failed otherwise (a timeout, a server error) are left out.

With one round, the share has Wilson's interval; with several, per-case shares come first and the
standard error is over cases (`abbench.metrics.estimate_rate`). Between two arms on the same cases the
difference is paired: Newcombe's interval and the exact McNemar test when each case has one reading
per arm, else the mean of per-case differences with Student's t.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from abbench._result import Result
from abbench.metrics._base import Estimate, estimate_rate
from abbench.stats import mcnemar_exact, paired_difference, paired_proportion_interval
from abbench.store import AnswerReading, Store

if TYPE_CHECKING:
    from abbench.metrics._api import ArmMetrics

READINGS = ("strict", "structured", "fallback", "unreadable", "truncated")
"""How a run's answer was read, in the order views list them."""

ADHERENT = ("strict", "structured")
"""The readings that keep the answer contract."""


@dataclass(frozen=True)
class FormatAdherence(Result):
    """How one arm's answers were read.

    Attributes:
        arm: The arm's name.
        runs: Runs whose reply was read (the denominator).
        counts: Runs per reading (`READINGS`), zeros included.
        adherence: Share of `runs` that kept the format (strict or structured), with its interval.
    """

    arm: str
    runs: int
    counts: dict[str, int]
    adherence: Estimate

    def share(self, reading: str) -> float | None:
        """The share of read runs with this reading (None when no run was read)."""
        return self.counts.get(reading, 0) / self.runs if self.runs else None

    @property
    def text(self) -> str:
        """One line for people: ``40.0% [19.8–64.3] of 10 read replies (strict 4, structured 0, …)``."""
        e = self.adherence
        if e.value is None:
            return f"n/a ({e.reason})"
        span = f" [{e.interval.low:.1%}–{e.interval.high:.1%}]" if e.interval is not None else ""
        parts = ", ".join(f"{r} {self.counts.get(r, 0)}" for r in READINGS)
        return f"{e.value:.1%}{span} of {self.runs} read replies ({parts})"


@dataclass(frozen=True)
class FormatDifference(Result):
    """Format adherence of two arms on the same cases: candidate (b) − baseline (a).

    Attributes:
        a: The baseline arm.
        b: The candidate arm.
        n_cases: Cases with a reading in both arms.
        adherence_a: The baseline's adherence on those cases.
        adherence_b: The candidate's.
        difference: ``adherence_b − adherence_a``; None without a shared case.
        interval: Its interval (low, high); None without a shared case.
        method: ``newcombe`` (one reading per case and arm) or ``paired t``.
        p_value: Exact McNemar (newcombe) or the paired t-test's; None when it cannot be computed.
        gained: Cases that kept the format only in b (one reading per case).
        lost: Cases that kept it only in a.
    """

    a: str
    b: str
    n_cases: int
    adherence_a: float | None
    adherence_b: float | None
    difference: float | None
    interval: tuple[float, float] | None
    method: str
    p_value: float | None
    gained: int | None = None
    lost: int | None = None

    @property
    def text(self) -> str:
        """One line for people: ``+30.0 points [+2.1, +51.3] (70.0% vs 40.0%, 10 cases, newcombe, p = 0.03)``."""
        if self.difference is None:
            return "n/a (no case had a read reply in both arms)"
        span = (
            f" [{self.interval[0] * 100:+.1f}, {self.interval[1] * 100:+.1f}]"
            if self.interval is not None
            else ""
        )
        p = f", p = {self.p_value:.3g}" if self.p_value is not None else ""
        return (
            f"{self.difference * 100:+.1f} points{span} ({self.adherence_b:.1%} vs {self.adherence_a:.1%}, "
            f"{self.n_cases} cases, {self.method}{p})"
        )


def _per_case(rows: Sequence[AnswerReading]) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for r in rows:
        out.setdefault(r.case_idx, []).append(1.0 if r.reading in ADHERENT else 0.0)
    return out


def format_adherence(arm: str, rows: Sequence[AnswerReading], confidence: float = 0.95) -> FormatAdherence:
    """One arm's format adherence from its runs' readings (`store.grades.answer_readings`)."""
    counts = dict.fromkeys(READINGS, 0)
    for r in rows:
        counts[r.reading] = counts.get(r.reading, 0) + 1
    per_case = _per_case(rows)
    k = np.array([sum(v) for v in per_case.values()], dtype=np.int64)
    n = np.array([len(v) for v in per_case.values()], dtype=np.int64)
    return FormatAdherence(arm, len(rows), counts, estimate_rate(k, n, confidence))


def format_difference(
    a: str,
    rows_a: Sequence[AnswerReading],
    b: str,
    rows_b: Sequence[AnswerReading],
    confidence: float = 0.95,
) -> FormatDifference:
    """The paired difference in format adherence between arms `a` and `b` over the cases both read."""
    case_a, case_b = _per_case(rows_a), _per_case(rows_b)
    shared = sorted(set(case_a) & set(case_b))
    if not shared:
        return FormatDifference(a, b, 0, None, None, None, None, "none", None)
    lists_a, lists_b = [case_a[c] for c in shared], [case_b[c] for c in shared]
    mean_a = float(np.mean([np.mean(v) for v in lists_a]))
    mean_b = float(np.mean([np.mean(v) for v in lists_b]))
    if all(len(v) == 1 for v in lists_a) and all(len(v) == 1 for v in lists_b):
        pairs = [(int(x[0]), int(y[0])) for x, y in zip(lists_a, lists_b, strict=True)]
        both = sum(1 for x, y in pairs if x and y)
        gained = sum(1 for x, y in pairs if y and not x)
        lost = sum(1 for x, y in pairs if x and not y)
        neither = len(pairs) - both - gained - lost
        interval = paired_proportion_interval(both, gained, lost, neither, confidence)
        p = mcnemar_exact(gained, lost).p_value
        return FormatDifference(
            a, b, len(shared), mean_a, mean_b, mean_b - mean_a, (interval.low, interval.high), "newcombe", p,
            gained, lost,
        )  # fmt: skip
    if len(shared) < 2:
        return FormatDifference(a, b, len(shared), mean_a, mean_b, mean_b - mean_a, None, "paired t", None)
    d = paired_difference(lists_a, lists_b, confidence=confidence, method="t")
    t_p = None if d.p_value is None or np.isnan(d.p_value) else float(d.p_value)
    return FormatDifference(
        a,
        b,
        len(shared),
        mean_a,
        mean_b,
        float(d.difference),
        (d.interval.low, d.interval.high),
        "paired t",
        t_p,
    )


def with_format_adherence(
    store: Store, exp_id: int, arms: list[ArmMetrics], names: dict[int, str], confidence: float
) -> list[ArmMetrics]:
    """`arms` with their `ArmMetrics.format_adherence`, read from the store (unchanged when no run of
    theirs had its reply read)."""
    by_arm: dict[str, list[AnswerReading]] = {}
    for r in store.grades.answer_readings(exp_id, list(names)):
        by_arm.setdefault(names[r.arm_id], []).append(r)
    return [
        dataclasses.replace(a, format_adherence=format_adherence(a.arm, by_arm[a.arm], confidence))
        if by_arm.get(a.arm)
        else a
        for a in arms
    ]
