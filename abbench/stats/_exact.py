"""Per-case means computed exactly, so that equal scores give equal means whatever their order."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from abbench.errors import UsageError

_EXACT = 2.0**53
"""Integers up to this size are exact in a float, and so are their sums below it."""
_MAX_DECIMALS = 15
"""Values with more decimals than this (2/3 as 0.6666666666666666) are added as the floats they are."""


def exact_means(values: Any, counts: Any) -> np.ndarray:
    """Each group's mean of `values` (consecutive groups of `counts` values), exact then rounded once.

    A float sum depends on the order of its terms: 0.1 + 0.1 + 0.4 is 0.6000000000000001 and
    0.4 + 0.1 + 0.1 is 0.6. Two arms whose rounds score the same would then differ by 1e-16, and a
    comparison would count the case as moved and test a difference that is not there. Here each value
    is read as the shortest decimal that gives back its float (``repr``), the decimals of a group are
    added exactly, and the sum divided by the group's size is rounded once to the nearest float. So the
    mean depends on the values alone, not on their order or grouping, and equal decimal sums give equal
    means (0.1 + 0.1 + 0.4 and 0.2 + 0.2 + 0.2 both 0.6); it is computed over whole numbers scaled by
    a power of ten, in a few vectorised passes. A group holding a value of more than 15 decimals
    (2/3 written as 0.6666666666666666, a cosine similarity) is added as the floats it holds, exactly
    (`math.fsum`) and then divided: still the same mean whatever the order.

    Args:
        values: The values, group after group (finite floats).
        counts: How many values each group has (each ≥ 1), summing to ``len(values)``.

    Returns:
        One mean per group.

    Raises:
        UsageError: a value is not finite, a count is below 1, or the counts do not add up to the values.
    """
    flat = np.asarray(values, dtype=float).ravel()
    sizes = np.asarray(counts, dtype=np.int64).ravel()
    if not np.isfinite(flat).all():
        raise UsageError("exact_means needs finite values; drop or replace NaN and infinities first")
    if (sizes < 1).any() or int(sizes.sum()) != flat.size:
        raise UsageError(
            f"exact_means: counts must be ≥ 1 each and add up to the {flat.size} values; they add up to "
            f"{int(sizes.sum())}"
        )
    if sizes.size == 0:
        return np.zeros(0)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    if np.array_equal(flat, np.rint(flat)) and float(np.abs(flat).max()) * int(sizes.max()) < _EXACT:
        whole_sums: np.ndarray = np.add.reduceat(flat, starts) / sizes  # counts: every sum is exact
        return whole_sums
    group = np.repeat(np.arange(sizes.size), sizes)
    decimals = np.maximum.reduceat(_decimals(flat), starts)
    scale = 10.0 ** np.minimum(decimals, _MAX_DECIMALS)
    at = scale[group]
    with np.errstate(over="ignore", invalid="ignore"):
        whole = np.rint(flat * at)
        exact = (whole / at == flat) & (np.abs(whole) < _EXACT / sizes[group])
    short = np.logical_and.reduceat(exact, starts) & (decimals <= _MAX_DECIMALS)
    means: np.ndarray = np.add.reduceat(np.where(exact, whole, 0.0), starts) / (sizes * scale)
    for g in np.flatnonzero(~short):
        start, n = int(starts[g]), int(sizes[g])
        means[g] = math.fsum(flat[start : start + n].tolist()) / n
    return means


def _decimals(flat: np.ndarray) -> np.ndarray:
    """Each value's fewest decimals that give it back (0.25 → 2), `_MAX_DECIMALS` + 1 where none do."""
    out = np.full(flat.size, _MAX_DECIMALS + 1, dtype=np.int64)
    todo = np.arange(flat.size)
    for k in range(_MAX_DECIMALS + 1):
        scale = 10.0**k
        x = flat[todo]
        with np.errstate(over="ignore", invalid="ignore"):
            done = np.rint(x * scale) / scale == x
        out[todo[done]] = k
        todo = todo[~done]
        if not todo.size:
            break
    return out
