"""Stability across rounds: how often an arm gives the same answer to a case, flips, and flaky cases."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from abbench._result import Result
from abbench.graders import normalise_label
from abbench.metrics._base import round_lists
from abbench.stats import PassK, pass_at_k_curve, repeated_se


@dataclass(frozen=True)
class Stability(Result):
    """How stable one arm's answers are from round to round.

    Attributes:
        rounds: Rounds the experiment asked for.
        n_cases: Cases answered in at least two rounds (the ones stability can be measured on).
        agreement: Mean over those cases of the share of rounds giving the case's most common answer
            (1.0: always the same answer).
        flip_rate: Share of those cases whose answers are not all the same (after label normalisation).
        flipped: Those cases' ids.
        n_graded_cases: Cases graded in at least two rounds.
        flaky_rate: Share of those cases that passed in some rounds and failed in others.
        flaky: Those cases' ids.
        within_variance: Mean within-case variance of the pass/fail outcome (Miller's σ²); 0 for an arm
            that always gives the same verdict.
        reason: Why the figures are None (one round, or no case answered twice).
        pass_k: pass@k and pass^k for k = 1 .. rounds (empty with one round or no pass/fail verdicts).
            A run that failed to execute is an attempt that did not pass; a run whose grading failed, or
            that was cancelled, is no attempt. Each case uses its own attempts n: cases with fewer than
            k are left out of that k's figures and counted in its ``n_short``.
    """

    rounds: int
    n_cases: int
    agreement: float | None
    flip_rate: float | None
    flipped: tuple[str, ...]
    n_graded_cases: int
    flaky_rate: float | None
    flaky: tuple[str, ...]
    within_variance: float | None
    reason: str | None = None
    pass_k: tuple[PassK, ...] = ()

    def pass_at(self, k: int) -> PassK | None:
        """The figures for ``k`` attempts, or None when there are none for that k."""
        return next((p for p in self.pass_k if p.k == k), None)


def stability(
    rounds: int,
    case_id: np.ndarray,
    case_pos: np.ndarray,
    prediction: np.ndarray,
    answered: np.ndarray,
    passed: np.ndarray,
    graded: np.ndarray,
    label_map: dict[str, str] | None,
    attempted: np.ndarray | None = None,
) -> Stability:
    """Stability of one arm's runs.

    Args:
        rounds: Rounds per case the experiment asked for.
        case_id: Case id of each run.
        case_pos: A case number per run (0..n-1), grouping the runs of a case.
        prediction: The answer of each run.
        answered: Runs whose execution succeeded (their answers count).
        passed: 1.0/0.0 verdict per run.
        graded: Runs with a verdict.
        label_map: The dataset's label map (answers are compared as `label_match` compares them).
        attempted: Runs that count as attempts for pass@k (graded runs and runs that failed to
            execute); default: the graded runs.
    """
    if rounds < 2:
        return Stability(
            rounds, 0, None, None, (), 0, None, (), None, "one round per case: nothing to compare"
        )
    import pandas as pd

    # Answers become integer codes (each distinct answer normalised once), cases are compared in numpy.
    raw_codes, values = pd.factorize(np.asarray(prediction[answered], dtype=object), use_na_sentinel=True)
    normal = [normalise_label(v, label_map) for v in values]
    dense = {v: i for i, v in enumerate(dict.fromkeys(normal))}
    codes = np.array([dense[v] for v in normal] + [len(dense)], dtype=np.int64)[raw_codes]
    cases = case_pos[answered]
    n_all = int(case_pos.max()) + 1 if case_pos.size else 0
    per_case = np.bincount(cases, minlength=n_all)
    agreement = flip_rate = None
    flipped: tuple[str, ...] = ()
    repeated = per_case >= 2
    if repeated.any():
        width = len(dense) + 1
        pairs, counts = np.unique(cases * width + codes, return_counts=True)
        top = np.zeros(n_all, dtype=np.int64)
        np.maximum.at(top, pairs // width, counts)
        shares = top[repeated] / per_case[repeated]
        agreement = float(shares.mean())
        moved = repeated & (top < per_case)
        flip_rate = float(moved.sum() / repeated.sum())
        flipped = tuple(_first_ids(case_pos, case_id, n_all)[moved])
    k = np.bincount(case_pos[graded], weights=passed[graded], minlength=n_all).astype(np.int64)
    n = np.bincount(case_pos[graded], minlength=n_all)
    multi = n >= 2
    flaky = tuple(_first_ids(case_pos, case_id, n_all)[multi & (k > 0) & (k < n)])
    within = None
    if multi.any():
        within = float(repeated_se(round_lists(k[multi], n[multi])).within_variance)
    reason = None
    if not repeated.any() and not multi.any():
        reason = "no case was answered in two rounds"
    return Stability(
        rounds=rounds,
        n_cases=int(repeated.sum()),
        agreement=agreement,
        flip_rate=flip_rate,
        flipped=flipped,
        n_graded_cases=int(multi.sum()),
        flaky_rate=(len(flaky) / int(multi.sum())) if multi.any() else None,
        flaky=flaky,
        within_variance=within,
        reason=reason,
        pass_k=_pass_k(rounds, case_pos, passed, graded if attempted is None else attempted, n_all),
    )


def _pass_k(
    rounds: int, case_pos: np.ndarray, passed: np.ndarray, attempted: np.ndarray, n_all: int
) -> tuple[PassK, ...]:
    if not attempted.any():
        return ()
    c = np.bincount(case_pos[attempted], weights=passed[attempted], minlength=n_all).astype(np.int64)
    n = np.bincount(case_pos[attempted], minlength=n_all)
    return pass_at_k_curve(c, n)[:rounds]


def _first_ids(case_pos: np.ndarray, case_id: np.ndarray, n: int) -> np.ndarray:
    """The case id of each case number 0..n-1 (object array)."""
    ids = np.empty(n, dtype=object)
    ids[case_pos[::-1]] = case_id[::-1]  # reversed, so the first run of each case is written last
    return ids
