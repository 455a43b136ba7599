"""How a comparison is computed: one frozen set of options passed from the public entry to every step."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from abbench.compare._verdict import DEFAULT_MARGIN
from abbench.errors import UsageError
from abbench.metrics import check_level

CLUSTERS = (None, "domain")
"""What a comparison may cluster its standard errors over: nothing, or the cases' domains."""


@dataclass(frozen=True)
class CompareOptions:
    """The options of `compare_arms`, `compare_experiments` and `compare_all` (as Inspect's ``GenerateConfig``).

    The public functions take these as keyword arguments (``compare_arms(exp, "a", "b", alpha=0.01)``) or
    as one object (``options=CompareOptions(alpha=0.01)``); keyword arguments override the object's fields.

    Attributes:
        outcome: ``"auto"``, ``"passed"`` or ``"score"`` (see `abbench.metrics.experiment_metrics`).
        cluster: ``"domain"`` for cluster-robust errors over domains; None for none.
        confidence: Coverage of the intervals.
        alpha: Significance level of the tests (and of the minimum detectable effect).
        power: Power for the minimum detectable effect.
        iterations: Bootstrap replicates for cost, latency, tokens and score.
        seed: Bootstrap seed.
        bootstrap: True always bootstraps the continuous figures, False never (central-limit
            intervals), None decides by size (see `BOOTSTRAP_MAX_CASES`).
        details: Also compare the answers' words (reasons and evidence that changed): True, False, or
            None to decide by size (see `DETAILS_MAX_CASES`).
        margin: The non-inferiority margin of the verdict's outcome (better, not worse, worse,
            inconclusive; see `abbench.compare.settle`), in the comparison's unit: 0.02 = 2 points.
        grader: Compare the arms as this grader alone graded their runs (its latest grade of each run's
            current execution), not by the runs' verdicts; None: the runs' verdicts.
    """

    outcome: str = "auto"
    cluster: str | None = None
    confidence: float = 0.95
    alpha: float = 0.05
    power: float = 0.8
    iterations: int = 10_000
    seed: int = 0
    bootstrap: bool | None = None
    details: bool | None = None
    margin: float = DEFAULT_MARGIN
    grader: str | None = None

    @classmethod
    def of(cls, options: CompareOptions | None = None, **settings: Any) -> CompareOptions:
        """`options` (default: the defaults) with `settings` (keyword arguments named as the fields) applied.

        Raises:
            UsageError: a setting that is no option (the message lists them).
        """
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(settings) - set(names))
        if unknown:
            raise UsageError(
                f"unknown comparison option(s) {', '.join(map(repr, unknown))}; the options: {', '.join(names)}"
            )
        return replace(options if options is not None else cls(), **settings)

    def checked(self) -> CompareOptions:
        """The options with their levels validated (and normalised as `abbench.metrics.check_level` does).

        Raises:
            UsageError: a level outside (0, 1), or a `cluster` other than None or ``"domain"``.
        """
        confidence = check_level(self.confidence)
        alpha = check_level(self.alpha, "alpha", "0.05")
        power = check_level(self.power, "power", "0.8")
        if self.cluster not in CLUSTERS:
            raise UsageError(f"cluster must be None or 'domain'; got {self.cluster!r}")
        return replace(self, confidence=confidence, alpha=alpha, power=power)
