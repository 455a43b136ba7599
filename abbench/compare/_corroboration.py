"""The record of a second judge's corroboration (`Corroboration`), and the rule it applies (`apply_rule`).

Apart from the reading of the store (`abbench.compare._corroborate`) so `Comparison` can name it as a
field type without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

from abbench._result import Result
from abbench.compare._verdict import Outcome
from abbench.stats import Kappa

NOT_CORROBORATED = "not corroborated"
"""The outcome of a regression or a win the second judge does not find (rule ``both``), or that the two
judges find in opposite directions (rule ``either``)."""

_DECISIVE = (Outcome.BETTER, Outcome.WORSE)


@dataclass(frozen=True)
class Corroboration(Result):
    """Whether the second judge corroborates the first on arm B against arm A.

    Attributes:
        primary: The primary judge's grader name.
        secondary: The secondary judge's.
        rule: ``both``, ``either`` or ``advisory`` (`abbench.store.JudgesSpec`).
        kind: ``judge`` (pointwise: pass/fail per run) or ``pairwise`` (a winner per pair).
        primary_outcome: B against A as the primary alone sees it: better, not worse, worse, inconclusive.
        secondary_outcome: The same for the secondary.
        outcome: What counts under the rule: the primary's outcome, the one both (or either) found, or
            ``not corroborated``.
        corroborated: Whether the decisive outcome (better or worse) is corroborated; None when neither
            judge found one.
        n: Runs (pointwise) or pairs (pairwise) both judges judged: what the agreement is measured on.
        agreement: Share of those on which the two judges agree.
        kappa: Cohen's kappa between the two judges, with its interval (None: see `reason`).
        regressed: Cases the primary finds regressed (pointwise), and of them the ones the secondary
            finds regressed too in `regressed_corroborated`.
        regressed_corroborated: See `regressed`.
        fixed: Cases the primary finds fixed.
        fixed_corroborated: Of those, the ones the secondary finds fixed too.
        reason: Why `kappa` is None.
    """

    primary: str
    secondary: str
    rule: str
    kind: str
    primary_outcome: str
    secondary_outcome: str
    outcome: str
    corroborated: bool | None
    n: int
    agreement: float | None
    kappa: Kappa | None
    regressed: tuple[str, ...] = ()
    regressed_corroborated: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    fixed_corroborated: tuple[str, ...] = ()
    reason: str | None = None

    _extra_keys = "text"

    @property
    def text(self) -> str:
        """One line: what each judge found, what counts, and how far they agree."""
        found = f"{self.primary} says {self.primary_outcome}, {self.secondary} says {self.secondary_outcome}"
        if self.outcome == NOT_CORROBORATED:
            head = f"{self.primary_outcome}: not corroborated ({found}; rule {self.rule})"
        elif self.corroborated:
            head = f"{self.outcome}, corroborated ({found}; rule {self.rule})"
        else:
            head = f"{self.outcome} ({found}; rule {self.rule})"
        if self.kappa is not None:
            iv = self.kappa.interval
            head += (
                f"; the judges agree on {self.agreement:.0%} of {self.n} {self._unit}, "
                f"kappa {self.kappa.kappa:.2f} [{iv.low:.2f}, {iv.high:.2f}]"
            )
        elif self.reason:
            head += f"; kappa: {self.reason}"
        return head

    @property
    def _unit(self) -> str:
        return "pairs" if self.kind == "pairwise" else "runs"


def apply_rule(rule: str, primary: str, secondary: str) -> tuple[str, bool | None]:
    """What counts of the two judges' outcomes under `rule`, and whether the decisive one is corroborated.

    ``both``: a decisive outcome (better, worse) of the primary counts only when the secondary finds the
    same, else it is ``not corroborated``. ``either``: a decisive outcome of either counts (two opposite
    ones are ``not corroborated``). ``advisory``: the primary's outcome counts; the secondary is shown.
    """
    p_decisive, s_decisive = primary in _DECISIVE, secondary in _DECISIVE
    if rule == "either":
        found = {x for x, decisive in ((primary, p_decisive), (secondary, s_decisive)) if decisive}
        if len(found) == 2:
            return NOT_CORROBORATED, False
        if found:
            return found.pop(), True
        return primary, None
    if not p_decisive:
        return primary, None
    corroborated = secondary == primary
    if rule == "advisory" or corroborated:
        return primary, corroborated
    return NOT_CORROBORATED, False
