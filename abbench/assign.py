"""Online assignment: stable, weighted, experiment-salted hash bucketing of units (users, sessions) to variants."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from abbench.errors import UsageError

_SCALE = float(1 << 64)


def bucket(experiment_name: str, unit_id: str | int) -> float:
    """The unit's position in [0, 1) for this experiment: sha256 of the name-salted unit id.

    The experiment name salts the hash, so a unit's positions in two experiments are independent: being
    in the treatment of one says nothing about the other.
    """
    digest = hashlib.sha256(f"{experiment_name}\x1f{unit_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def assign(
    experiment_name: str,
    unit_id: str | int,
    variants: Sequence[str],
    weights: Sequence[float] | None = None,
    enabled: bool = True,
) -> str:
    """The variant a unit gets in an online experiment: always the same for the same unit and experiment.

    Args:
        experiment_name: The experiment; it salts the hash (rename it to reshuffle everyone).
        unit_id: The unit assigned (a user, a session, a request).
        variants: The variants, control first (e.g. ``["control", "treatment"]``).
        weights: Relative share of each variant (default: equal); ``[9, 1]`` sends 10 % to the second.
        enabled: False sends every unit to the first variant (the experiment is off).

    Raises:
        UsageError: no variants, a repeated variant, or weights that do not fit (wrong count, negative,
            not finite, or all zero).
    """
    variants = [str(v) for v in variants]
    if not variants:
        raise UsageError("assign needs at least one variant, e.g. ['control', 'treatment']")
    if len(set(variants)) != len(variants):
        raise UsageError(f"variants must be distinct; got {variants!r}")
    if weights is None:
        weights = [1.0] * len(variants)
    if len(weights) != len(variants):
        raise UsageError(f"{len(weights)} weights for {len(variants)} variants; give one weight per variant")
    try:
        w = [float(x) for x in weights]
    except (TypeError, ValueError):
        raise UsageError(f"weights must be numbers; got {list(weights)!r}") from None
    if any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
        raise UsageError(f"weights must be finite, ≥ 0 and not all 0; got {list(weights)!r}")
    if not enabled:
        return variants[0]
    point = bucket(experiment_name, unit_id) * sum(w)
    running = 0.0
    for variant, weight in zip(variants, w, strict=True):
        running += weight
        if point < running:
            return variant
    # Rounding can leave the point a hair above the last boundary: it belongs to the last weighted variant.
    return next(v for v, x in zip(reversed(variants), reversed(w), strict=True) if x > 0)
