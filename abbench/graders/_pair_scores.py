"""A pairwise judge's rubric scores per arm, summed and averaged over every pair it judged.

A pairwise grade keeps both arms' scores as ``a.<dimension>`` and ``b.<dimension>`` (averaged over
the two orders when judged in both). `rubric_totals` adds them up per dimension, as the double-blind
workflow reports a contest: each arm's total and mean on each dimension over all rounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class DimensionTotals:
    """One rubric dimension's scores for both arms over the pairs judged.

    Attributes:
        dimension: The dimension's name.
        pairs: Pairs with a score for both arms on it.
        total_a: Arm A's scores summed.
        total_b: Arm B's.
        mean_a: Arm A's mean score (None without pairs).
        mean_b: Arm B's.
    """

    dimension: str
    pairs: int
    total_a: float
    total_b: float
    mean_a: float | None
    mean_b: float | None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return asdict(self)


def swap_sides(dimensions: Mapping[str, float]) -> dict[str, float]:
    """A grade's ``a.``/``b.`` scores with the sides swapped (when the comparison's A is the grade's b)."""
    flipped = {"a": "b", "b": "a"}
    out = {}
    for key, value in dimensions.items():
        side, dot, name = key.partition(".")
        out[f"{flipped.get(side, side)}{dot}{name}"] = value
    return out


def rubric_totals(grades: Iterable[Mapping[str, Any] | None]) -> tuple[DimensionTotals, ...]:
    """Each dimension's per-arm totals and means over pair grades' ``dimensions`` (``a.x``, ``b.x``).

    A pair counts on a dimension when it scored both arms on it; dimensions keep the order first seen.
    """
    sums: dict[str, list[float]] = {}
    for dims in grades:
        if not dims:
            continue
        names = dict.fromkeys(k.partition(".")[2] for k in dims if k.startswith(("a.", "b.")))
        for name in names:
            a, b = dims.get(f"a.{name}"), dims.get(f"b.{name}")
            if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                t = sums.setdefault(name, [0, 0.0, 0.0])
                t[0] += 1
                t[1] += float(a)
                t[2] += float(b)
    return tuple(
        DimensionTotals(name, int(n), ta, tb, ta / n if n else None, tb / n if n else None)
        for name, (n, ta, tb) in sums.items()
    )
