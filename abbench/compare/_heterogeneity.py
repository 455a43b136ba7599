"""Whether B − A differs from domain to domain: the arm × domain interaction, and what each interval answers."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from abbench.metrics import NO_DOMAIN, Result

HETEROGENEITY_TEST = "one-way ANOVA of per-case differences by domain"
"""How the interaction is tested: the F test that every domain has the same mean paired difference."""

CLUSTERED_ANSWERS = (
    "clustered by domain, the interval is for the effect on a new domain drawn like these (the domains "
    "taken as a sample of domains), which is wider than the effect on these cases"
)
"""What `cluster="domain"` answers, in the words of the verdict and the notes."""


@dataclass(frozen=True)
class Heterogeneity(Result):
    """Whether the difference B − A varies across domains more than chance allows.

    Each paired case has a difference ``b − a`` (of pass rates, or of mean scores); with no arm × domain
    interaction every domain has the same mean difference. The one-way ANOVA F test (scipy's
    ``f_oneway``; the same F as the interaction term of an OLS with one effect per case and per arm ×
    domain) tests that. When it is significant, the unclustered interval answers "the effect on these
    cases, with the domains as represented here", and ``cluster="domain"`` answers "the effect on a new
    domain drawn like these" — the two can disagree, and the verdict says which one it gives.

    Attributes:
        test: `HETEROGENEITY_TEST`.
        statistic: F.
        df_between: Domains − 1.
        df_within: Cases − domains.
        p_value: P(F ≥ statistic) with no interaction.
        n_domains: Domains with a paired case.
        n_cases: Paired cases in them.
        share: ``max(0, 1 − 1/F)``: the share of the spread of the domains' mean differences beyond what
            chance gives (I², as in a meta-analysis).
        alpha: The level it was judged at.
        significant: ``p_value < alpha``.
        text: One sentence: whether the effect differs across domains, with F, df and p.
    """

    test: str
    statistic: float
    df_between: int
    df_within: int
    p_value: float
    n_domains: int
    n_cases: int
    share: float
    alpha: float
    significant: bool
    text: str


def heterogeneity(delta: np.ndarray, domains: list[str], alpha: float = 0.05) -> Heterogeneity | None:
    """The arm × domain interaction test on the paired cases' differences.

    Args:
        delta: Each paired case's difference ``b − a``.
        domains: Each paired case's domain (`abbench.metrics.NO_DOMAIN` for none).
        alpha: The level the test is judged at.

    Returns:
        The test, or None when it cannot be made: fewer than two domains, no case left to estimate the
        spread within domains (every domain has one case), or no spread at all.
    """
    import pandas as pd
    from scipy.stats import f_oneway

    # Group by integer codes (comparing an object array with each name costs more, at 100,000 cases).
    codes, names = pd.factorize(np.asarray(domains, dtype=object))
    if not len(names) or set(names.tolist()) <= {NO_DOMAIN}:
        return None
    order = np.argsort(codes, kind="stable")
    groups = np.split(delta[order], np.searchsorted(codes[order], np.arange(1, len(names))))
    k, n = len(groups), int(delta.size)
    if k < 2 or n <= k:
        return None
    within = sum(float(((g - g.mean()) ** 2).sum()) for g in groups)
    if not within > 0:
        return None  # no spread inside any domain: F is infinite or undefined, not evidence
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = f_oneway(*groups)
    f, p = float(result.statistic), float(result.pvalue)
    if not (math.isfinite(f) and math.isfinite(p)):
        return None
    significant = p < alpha
    p_text = "p < 0.001" if p < 0.001 else f"p = {p:.3f}"
    figures = f"F = {f:.2f} on {k - 1} and {n - k} df, {p_text}"
    if significant:
        text = f"the effect differs across the {k} domains ({HETEROGENEITY_TEST}: {figures})"
    else:
        text = f"no significant difference of the effect across the {k} domains ({figures})"
    return Heterogeneity(
        HETEROGENEITY_TEST, f, k - 1, n - k, p, k, n, max(0.0, 1.0 - 1.0 / f) if f > 0 else 0.0, alpha,
        significant, text,
    )  # fmt: skip


def what_it_answers(h: Heterogeneity | None, clustered: bool) -> str:
    """The verdict's sentence on the estimand: said when the effect differs across domains, or when
    clustered (empty otherwise)."""
    if clustered:
        return f" {CLUSTERED_ANSWERS[0].upper()}{CLUSTERED_ANSWERS[1:]}" + (
            f"; {h.text}." if h is not None and h.significant else "."
        )
    if h is None or not h.significant:
        return ""
    return (
        f" {h.text[0].upper()}{h.text[1:]}: this interval is the effect on these cases, with the domains as "
        "represented here; for the effect on a new domain, compare with cluster='domain' (--cluster domain), "
        "which is wider."
    )
