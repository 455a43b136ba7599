"""The values a paired comparison returns: sides, per-case changes, figures, the comparison itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from abbench._result import read_record
from abbench.compare._activation import TriggerHelp
from abbench.compare._corroboration import Corroboration
from abbench.compare._heterogeneity import Heterogeneity
from abbench.compare._text import TextChanges
from abbench.compare._verdict import Settled, Verdict, VerdictCode, settle
from abbench.compare._votes import VOTE_MARGIN, VOTE_MIN_CASES, Votes, vote_decision
from abbench.graders import DimensionTotals
from abbench.metrics import Estimate, FollowingDifference, FormatDifference, Result
from abbench.review import JudgeAgreement
from abbench.stats import (
    ConfidenceSequence,
    Interval,
    McNemarResult,
    MinDetectableEffect,
    PairedDifference,
    PairedOutcomes,
    PowerInputs,
)

CATEGORIES = ("fixed", "regressed", "unchanged_right", "unchanged_wrong", "unchanged")
"""How a case moved from A to B. Pass/fail: right means passing in more than half its graded rounds.
Scores: ``fixed`` is a higher mean score in B, ``regressed`` a lower one, ``unchanged`` equal."""


@dataclass(frozen=True)
class Side(Result):
    """One side of a comparison: an arm of an experiment.

    Attributes:
        experiment: The experiment's name.
        experiment_id: Its id.
        arm: The arm's name.
        label: ``name (agent/model, skill)``.
        snapshot: The arm's skill snapshot hash, or None.
        rounds: Rounds per case in its experiment.
    """

    experiment: str
    experiment_id: int
    arm: str
    label: str
    snapshot: str | None
    rounds: int

    @property
    def name(self) -> str:
        """How the side is named in sentences: the arm, or ``experiment/arm`` across experiments."""
        return self.arm

    @property
    def arm_name(self) -> str:
        """The arm's own name in its experiment (``v2`` of ``routing-v1/v2``; arm names hold no slash)."""
        return self.arm.split("/")[-1]


@dataclass(frozen=True)
class CaseChange(Result):
    """How one case fared in A and in B.

    Attributes:
        case_id: The case.
        domain: Its domain.
        category: One of `CATEGORIES`.
        a_passed: A's passing rounds (pass/fail outcomes; 0 for scores).
        a_graded: A's graded rounds.
        b_passed: B's passing rounds.
        b_graded: B's graded rounds.
        a_value: A's pass rate (or mean score) on the case.
        b_value: B's.
        delta: ``b_value − a_value``.
    """

    case_id: str
    domain: str
    category: str
    a_passed: int
    a_graded: int
    b_passed: int
    b_graded: int
    a_value: float
    b_value: float
    delta: float

    @property
    def rates(self) -> str:
        """``"4/5 → 1/5"``: the per-case pass counts in A and B."""
        return f"{self.a_passed:,}/{self.a_graded:,} → {self.b_passed:,}/{self.b_graded:,}"


@dataclass(frozen=True)
class CaseTable:
    """The paired cases as columns (one entry per case, dataset order): what `Comparison.cases` is built from.

    Attributes:
        case_id: Case ids.
        domain: Domains.
        category: One of `CATEGORIES` per case.
        a_passed: A's passing rounds.
        a_graded: A's graded rounds.
        b_passed: B's passing rounds.
        b_graded: B's graded rounds.
        a_value: A's per-case pass rate (or mean score).
        b_value: B's.
    """

    case_id: np.ndarray
    domain: np.ndarray
    category: np.ndarray
    a_passed: np.ndarray
    a_graded: np.ndarray
    b_passed: np.ndarray
    b_graded: np.ndarray
    a_value: np.ndarray
    b_value: np.ndarray

    def changes(self, mask: np.ndarray | None = None) -> tuple[CaseChange, ...]:
        """The cases (those where `mask` is true) as `CaseChange` values."""
        idx = np.arange(self.case_id.size) if mask is None else np.flatnonzero(mask)
        return tuple(
            CaseChange(
                str(self.case_id[i]), str(self.domain[i]), str(self.category[i]), int(self.a_passed[i]),
                int(self.a_graded[i]), int(self.b_passed[i]), int(self.b_graded[i]), float(self.a_value[i]),
                float(self.b_value[i]), float(self.b_value[i] - self.a_value[i]),
            )
            for i in idx.tolist()
        )  # fmt: skip


@dataclass(frozen=True)
class MetricDifference(Result):
    """A continuous figure (cost, latency, tokens, score) compared per case: B − A.

    Attributes:
        metric: ``cost``, ``latency_ms``, ``tokens`` or ``score``.
        method: ``paired bootstrap`` or ``paired difference`` (central limit, for many cases).
        value_a: A's mean of per-case means.
        value_b: B's.
        difference: ``value_b − value_a``.
        relative: ``difference / value_a`` (None when A's value is 0).
        interval: Interval of the difference.
        p_value: Two-sided p-value against no difference.
        n: Cases measured in both arms.
        reason: Why the figures are None.
        median_a: A's median over cases (beside the mean: a few slow or dear runs move the mean only).
        median_b: B's.
        median_relative: ``(median_b − median_a) / median_a`` (None when A's median is 0).
        median_difference: The median of the per-case differences B − A.
        relative_interval: Interval of `relative` (B's mean over A's, minus 1): Fieller's interval for
            the ratio of the paired means (`abbench.stats.paired_ratio_interval`), so that "B costs more than
            10 % extra" is tested with A's own uncertainty (None for scores, or when unbounded).
    """

    metric: str
    method: str
    value_a: float | None
    value_b: float | None
    difference: float | None
    relative: float | None
    interval: Interval | None
    p_value: float | None
    n: int
    reason: str | None = None
    median_a: float | None = None
    median_b: float | None = None
    median_relative: float | None = None
    median_difference: float | None = None
    relative_interval: Interval | None = None


@dataclass(frozen=True)
class DomainComparison(Result):
    """The comparison within one domain.

    Attributes:
        domain: The domain.
        n_cases: Paired cases in it.
        value_a: A's pass rate (or mean score) there.
        value_b: B's.
        difference: ``value_b − value_a``.
        interval: Interval of the difference: Newcombe's square-and-add for pass/fail cases with one
            outcome per arm, else Student t with n − 1 df (domains are small); None without spread.
        fixed: Cases fixed there (with rounds: right in the majority of B's rounds and not of A's; for
            scores: a higher mean).
        regressed: Cases regressed there.
        test: ``exact McNemar`` (pass/fail answered once) or ``exact sign test`` (per-case differences).
        p_value: The exact test's p-value, on `up` and `down`.
        p_adjusted: Holm-adjusted over the domains tested.
        significant_regression: B worse there after adjustment.
        significant_improvement: B better there after adjustment.
        up: Cases whose pass rate (or mean score) is higher in B: what the test counts (with one round,
            the cases fixed).
        down: Cases whose pass rate (or mean score) is lower in B (with one round, the cases regressed).
        interval_method: ``Newcombe`` or ``Student t``: how `interval` was built, for the views to name it.
    """

    domain: str
    n_cases: int
    value_a: float | None
    value_b: float | None
    difference: float | None
    interval: Interval | None
    fixed: int
    regressed: int
    test: str
    p_value: float | None
    p_adjusted: float | None
    significant_regression: bool
    significant_improvement: bool
    up: int = 0
    down: int = 0
    interval_method: str = ""

    @property
    def moved_text(self) -> str:
        """The cases that moved, as the test counted them: ``8 fixed, 2 regressed`` with one round,
        ``19 up, 4 down`` when cases ran several rounds or are scored (their pass rate or mean score
        rose or fell; the majority's fixed/regressed is a coarser count the test did not use)."""
        if self.test == "exact McNemar":
            return f"{self.up:,} fixed, {self.down:,} regressed"
        return f"{self.up:,} up, {self.down:,} down"


@dataclass(frozen=True)
class PairwiseSummary(Result):
    """A blind pairwise judge's verdicts between the two arms (in arm order, not presentation order).

    Attributes:
        grader: The judge.
        n: Pairs judged.
        wins_a: Pairs where A's answer was preferred.
        wins_b: Pairs where B's was.
        ties: Ties (including verdicts that flipped between the two presentation orders).
        b_win_rate: ``wins_b / (wins_a + wins_b)`` (None when every pair tied).
        p_value: Exact sign test of wins_b against wins_a.
        dimensions: With a rubric: each dimension's totals and means for A and B over every pair
            judged (`abbench.graders.rubric_totals`, in this comparison's arm order).
    """

    grader: str
    n: int
    wins_a: int
    wins_b: int
    ties: int
    b_win_rate: float | None
    p_value: float
    dimensions: tuple[DimensionTotals, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return Result.as_dict(self) | {"dimensions": [d.as_dict() for d in self.dimensions]}


@dataclass(frozen=True)
class Comparison(Result):
    """Everything a paired comparison of arm B against arm A found (differences are B − A).

    Attributes:
        kind: ``arms`` (two arms of one experiment) or ``experiments``.
        a: The baseline side.
        b: The side compared with it.
        dataset: The dataset fingerprint both ran on.
        outcome: ``passed`` (pass/fail) or ``score``.
        unit: ``points`` (pass rates, shown ×100) or ``score``.
        confidence: Coverage of the intervals.
        alpha: Significance level of the tests.
        power: Power used for the minimum detectable effect.
        n_cases: Cases graded in both arms (the paired cases).
        excluded: Cases left out, by reason, with their ids.
        value_a: A's pass rate (or mean score) over the paired cases.
        value_b: B's.
        case_table: Every paired case and how it moved, as columns (`cases` gives them as values).
        outcomes: The 2×2 table of per-case outcomes (majority over rounds); None for scores.
        mcnemar: Exact McNemar on those outcomes; None for scores.
        mcnemar_midp: Mid-p McNemar.
        difference: Paired difference of per-case means (Student t).
        clustered: The same, with cluster-robust errors (when clustering was asked for).
        interval: The interval of the difference the verdict and the gate use (``diff_ci_low``): for
            pass/fail cases with one outcome per arm (one round, or rounds that always agree) Tango's score
            interval on the 2×2 table — the inversion of McNemar's score test that decides there, honest
            when no case moved; otherwise `main`'s Student t interval. Within [−1, 1] for pass rates. None
            when it cannot be computed (one case, or no spread at all).
        interval_method: ``score``, ``t``, ``clustered t``, ``anytime-valid`` or ``none``.
        power_inputs: ω², σ² and rounds estimated from these data.
        mde: The smallest difference this many cases detect with the chosen power.
        usage: Cost, latency, tokens (and score) differences.
        by_domain: Per-domain comparisons, Holm-adjusted.
        text: Reasons and evidence that changed (None when not asked for).
        pairwise: Pairwise judges' verdicts between the arms.
        review_agreement: Judge-versus-human agreement on reviewed runs of these arms, when reviews exist.
        verdict: The conclusion in words.
        notes: How the figures were made, and caveats found in these data.
        sequential: For the pair an experiment's ``stopping:`` rule monitored, the anytime-valid
            confidence sequence whose interval and p-value are `interval` and the verdict's (the
            ``interval_method`` is ``anytime-valid``); None otherwise.
        trigger_help: When either arm offers its skills: accuracy intention-to-treat and per protocol
            per arm, and the effect split into loading more often and helping when loaded (None otherwise).
        format_adherence: How much more often B's model answered in the format asked for than A's, paired
            over the cases both arms' replies were read on (`abbench.metrics.FormatDifference`); None
            when neither arm's replies were read (builtin, python agents).
        heterogeneity: Whether B − A differs across domains (the arm × domain interaction test), None
            without two domains to tell apart; when significant the verdict says what its interval is the
            effect on (these cases, or a new domain with ``cluster="domain"``).
        grader: The grader whose grades alone the arms were compared by (``grader=``); None: the runs'
            verdicts, which combine every deciding grader.
        corroboration: With the experiment's ``judges: [primary, secondary]``: whether the second judge
            corroborates the first's regression or win, and how far they agree
            (`abbench.compare.Corroboration`); None otherwise.
        skill_following: How much more of the applicable skill sections B's runs followed than A's, as a
            skill-following judge saw them, paired over the cases it judged in both arms
            (`abbench.metrics.FollowingDifference`); None when it judged no run of either arm.
    """

    kind: str
    a: Side
    b: Side
    dataset: str
    outcome: str
    unit: str
    confidence: float
    alpha: float
    power: float
    n_cases: int
    excluded: dict[str, tuple[str, ...]]
    value_a: Estimate
    value_b: Estimate
    case_table: CaseTable = field(repr=False, metadata={"export": False})
    outcomes: PairedOutcomes | None
    mcnemar: McNemarResult | None
    mcnemar_midp: McNemarResult | None
    difference: PairedDifference | None
    clustered: PairedDifference | None
    interval: Interval | None
    interval_method: str
    power_inputs: PowerInputs | None
    mde: MinDetectableEffect | None
    usage: tuple[MetricDifference, ...]
    by_domain: tuple[DomainComparison, ...]
    text: TextChanges | None
    pairwise: tuple[PairwiseSummary, ...]
    review_agreement: JudgeAgreement | None
    verdict: Verdict
    notes: tuple[str, ...]
    sequential: ConfidenceSequence | None = None
    trigger_help: TriggerHelp | None = None
    format_adherence: FormatDifference | None = None
    heterogeneity: Heterogeneity | None = None
    grader: str | None = None
    corroboration: Corroboration | None = None
    skill_following: FollowingDifference | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (see `Result.as_dict`), with every paired case under ``cases``."""
        data = super().as_dict()
        data["cases"] = [c.as_dict() for c in self.cases]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """The comparison `as_dict` wrote (a server's answer): every field read back, the paired cases
        from ``cases``."""
        cases = data.get("cases") or []
        columns = {f: [c[f] for c in cases] for f in CaseTable.__dataclass_fields__}
        return read_record(cls, {**data, "case_table": columns})

    @cached_property
    def cases(self) -> tuple[CaseChange, ...]:
        """Every paired case and how it moved from A to B, in dataset order."""
        return self.case_table.changes()

    def _category(self, name: str) -> tuple[CaseChange, ...]:
        return self.case_table.changes(self.case_table.category == name)

    def count(self, category: str) -> int:
        """How many paired cases fall in `category` (see `CATEGORIES`)."""
        return int(np.count_nonzero(self.case_table.category == category))

    @property
    def moved(self) -> tuple[int, int]:
        """(cases whose pass rate or score rose in B, cases where it fell): finer than fixed/regressed
        when cases ran several rounds (2/3 → 3/3 rises without changing the majority)."""
        delta = self.case_table.b_value - self.case_table.a_value
        return int(np.count_nonzero(delta > 0)), int(np.count_nonzero(delta < 0))

    @property
    def fixed(self) -> tuple[CaseChange, ...]:
        """Cases wrong in A and right in B (for scores: higher in B)."""
        return self._category("fixed")

    @property
    def regressed(self) -> tuple[CaseChange, ...]:
        """Cases right in A and wrong in B (for scores: lower in B)."""
        return self._category("regressed")

    @property
    def unchanged_right(self) -> tuple[CaseChange, ...]:
        """Cases right in both."""
        return self._category("unchanged_right")

    @property
    def unchanged_wrong(self) -> tuple[CaseChange, ...]:
        """Cases wrong in both."""
        return self._category("unchanged_wrong")

    @property
    def main(self) -> PairedDifference | None:
        """The paired difference the verdict rests on (clustered when clustering was asked for)."""
        return self.clustered or self.difference

    def settle(self, margin: float) -> Settled:
        """The outcome against another non-inferiority margin (better, not worse, worse, inconclusive):
        what a gate rule ``{metric: non_inferior, margin: M}`` reads. The verdict's own is `verdict.outcome`."""
        iv = self.interval
        main = self.main
        return settle(
            name_a=self.a.name, name_b=self.b.name, n_cases=self.n_cases, unit=self.unit,
            difference=main.difference if main is not None else None,
            low=iv.low if iv is not None else None, high=iv.high if iv is not None else None,
            significant=self.verdict.significant, margin=margin, confidence=self.confidence,
            enough=self.verdict.code != VerdictCode.INSUFFICIENT_DATA,
        )  # fmt: skip

    def votes(self, margin: float = VOTE_MARGIN, min_cases: int = VOTE_MIN_CASES) -> Votes:
        """B against A by per-case votes (wins, ties, losses, the exact sign test; see `vote_decision`)."""
        return vote_decision(self.case_table.category, margin=margin, min_cases=min_cases, alpha=self.alpha)

    def usage_metric(self, metric: str) -> MetricDifference | None:
        """The comparison of one continuous figure (``cost``, ``latency_ms``, ``tokens``, ``score``)."""
        return next((u for u in self.usage if u.metric == metric), None)

    @property
    def has_domain_breakdown(self) -> bool:
        """Whether per-domain comparisons say more than the main one: two domains or more (one domain
        would only repeat the main test); `abbench.metrics.ExperimentMetrics.has_domain_breakdown`'s rule."""
        return len(self.by_domain) >= 2

    def significant_domain_regressions(self) -> tuple[DomainComparison, ...]:
        """Domains where B is significantly worse after Holm's adjustment."""
        return tuple(d for d in self.by_domain if d.significant_regression)
