"""Skill instruction-following per arm and paired: the share of applicable SKILL.md sections a run followed.

A skill-following judge (`abbench.graders.skill_instruction_following`) says of each section of the
skill a run loaded whether the run *followed* it, *skipped* it (it applied and the run did not do it)
or whether it was *not applicable*; the store keeps the references of each kind
(`abbench.store.SectionGrade`). A run's figure is ``followed / (followed + skipped)``; a run where no
section applied has none and is counted apart.

Per arm, the share is the mean over cases of each case's mean over its rounds — rounds of one case are
not independent cases — with Student's t interval over the per-case means (n − 1 df), clipped to
[0, 1]; when every case has the same share (no spread, so a zero standard error would claim certainty)
Wilson's interval over the cases stands in, as for pass rates. Beside it, each section's tally: how
often it was skipped out of how often it applied, most skipped first — *where* the skill was ignored.

Between two arms on the cases both had judged, the difference is paired: the mean of per-case
differences with Student's t (`abbench.stats.paired_difference`, ``method="t"``).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from abbench._result import Result
from abbench.metrics._base import Estimate
from abbench.stats import Interval, StatsWarning, paired_difference, repeated_se, wilson_interval
from abbench.store import SectionGrade, Store

if TYPE_CHECKING:
    from abbench.metrics._api import ArmMetrics

MOST_SKIPPED = 5
"""How many of an arm's most-skipped sections the views list."""


@dataclass(frozen=True)
class SectionTally(Result):
    """What the judge said of one section over an arm's runs.

    Attributes:
        ref: The section's reference (``SKILL.md#判断步骤``).
        followed: Runs that followed it.
        skipped: Runs it applied to that did not follow it.
        not_applicable: Runs it did not bear on.
    """

    ref: str
    followed: int
    skipped: int
    not_applicable: int

    @property
    def applicable(self) -> int:
        """Runs it applied to (followed + skipped)."""
        return self.followed + self.skipped

    @property
    def text(self) -> str:
        """``SKILL.md#rules: skipped 4 of 9 runs it applied to``."""
        return f"{self.ref}: skipped {self.skipped:,} of {self.applicable:,} runs it applied to"


@dataclass(frozen=True)
class SkillFollowing(Result):
    """How closely one arm's runs followed the skill they loaded, as a skill-following judge saw them.

    Attributes:
        arm: The arm's name.
        grader: The judge whose grades these are.
        skills: The skills judged (as the grades name them).
        runs: Runs judged with at least one applicable section (the share's runs).
        none_applicable: Runs judged where no section applied (no share; left out of `following`).
        following: Mean over cases of the share of applicable sections followed, with its interval.
        sections: Every section judged, most skipped first (then most applicable, then by reference).
        judge_models: The models that judged (an offline stand-in names itself so: the views show them).
    """

    arm: str
    grader: str
    skills: tuple[str, ...]
    runs: int
    none_applicable: int
    following: Estimate
    sections: tuple[SectionTally, ...]
    judge_models: tuple[str, ...] = ()

    @property
    def most_skipped(self) -> tuple[SectionTally, ...]:
        """The sections skipped at least once, most skipped first, at most `MOST_SKIPPED`."""
        return tuple(s for s in self.sections if s.skipped)[:MOST_SKIPPED]

    @property
    def text(self) -> str:
        """One line for people: ``82.0% [74.1–88.2] of applicable sections followed over 60 runs of 20 cases``."""
        e = self.following
        if e.value is None:
            return f"n/a ({e.reason})"
        span = f" [{e.interval.low:.1%}–{e.interval.high:.1%}]" if e.interval is not None else ""
        return (
            f"{e.value:.1%}{span} of applicable sections followed over {self.runs:,} runs of "
            f"{e.n_cases:,} cases ({self.judged_by})"
        )

    @property
    def judged_by(self) -> str:
        """``following, judge judge-m``: the judge's name and the models that judged."""
        return self.grader + (f", judge {', '.join(self.judge_models)}" if self.judge_models else "")


@dataclass(frozen=True)
class FollowingDifference(Result):
    """Skill-following of two arms on the same cases: candidate (b) − baseline (a).

    Attributes:
        grader: The judge.
        a: The baseline arm.
        b: The candidate arm.
        n_cases: Cases judged (with an applicable section) in both arms.
        following_a: A's mean share over those cases.
        following_b: B's.
        difference: ``following_b − following_a``; None without a shared case.
        interval: Its interval (paired t over cases); None with fewer than two cases or no spread.
        p_value: The paired t-test's two-sided p-value; None when it cannot be computed.
        method: ``paired t`` or ``none``.
        reason: Why `difference` (or the interval) is missing.
    """

    grader: str
    a: str
    b: str
    n_cases: int
    following_a: float | None
    following_b: float | None
    difference: float | None
    interval: Interval | None
    p_value: float | None
    method: str
    reason: str | None = None

    @property
    def text(self) -> str:
        """One line: ``+12.0 points [+4.1, +19.9] (90.0% vs 78.0%, 20 cases, paired t, p = 0.004)``."""
        if self.difference is None:
            return f"n/a ({self.reason})"
        span = (
            f" [{self.interval.low * 100:+.1f}, {self.interval.high * 100:+.1f}]"
            if self.interval is not None
            else ""
        )
        p = f", p = {self.p_value:.3g}" if self.p_value is not None else ""
        why = f"; {self.reason}" if self.reason else ""
        return (
            f"{self.difference * 100:+.1f} points{span} ({self.following_b:.1%} vs {self.following_a:.1%}, "
            f"{self.n_cases} cases, {self.method}{p}{why})"
        )


def _share(g: SectionGrade) -> float | None:
    applicable = len(g.followed) + len(g.skipped)
    return len(g.followed) / applicable if applicable else None


def _by_case(grades: Sequence[SectionGrade]) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for g in grades:
        share = _share(g)
        if share is not None:
            out.setdefault(g.case_idx, []).append(share)
    return out


def following_estimate(per_case: Sequence[Sequence[float]], confidence: float = 0.95) -> Estimate:
    """The mean over cases of per-case mean shares, with Student's t interval over cases (see the module
    docstring; Wilson over the cases when they do not differ)."""
    n_cases = len(per_case)
    n_values = sum(len(v) for v in per_case)
    if n_cases == 0:
        return Estimate(None, None, None, "none", 0, 0, None, "no run had an applicable section judged")
    means = np.array([float(np.mean(v)) for v in per_case])
    rounds = float(n_cases / np.sum([1.0 / len(v) for v in per_case]))
    if n_cases == 1:
        return Estimate(
            float(means[0]), None, None, "per-case means", 1, n_values, rounds, "one case: no interval"
        )
    if np.all(means == means[0]):
        interval = wilson_interval(round(float(means[0]) * n_cases), n_cases, confidence)
        return Estimate(float(means[0]), interval, 0.0, "wilson over cases", n_cases, n_values, rounds)
    result = repeated_se([list(v) for v in per_case], confidence, method="t")
    iv = Interval(max(0.0, result.interval.low), min(1.0, result.interval.high), confidence)
    return Estimate(result.mean, iv, result.se, "per-case means (t)", n_cases, n_values, rounds)


def skill_following(
    arm: str, grades: Sequence[SectionGrade], confidence: float = 0.95
) -> SkillFollowing | None:
    """One arm's skill-following from its runs' skill-following grades (one judge's), None without any."""
    if not grades:
        return None
    tallies: dict[str, list[int]] = {}
    for g in grades:
        for kind, refs in enumerate((g.followed, g.skipped, g.not_applicable)):
            for ref in refs:
                tallies.setdefault(ref, [0, 0, 0])[kind] += 1
    sections = sorted(
        (SectionTally(ref, f, s, n) for ref, (f, s, n) in tallies.items()),
        key=lambda t: (-t.skipped, -t.applicable, t.ref),
    )
    per_case = _by_case(grades)
    runs = sum(len(v) for v in per_case.values())
    return SkillFollowing(
        arm=arm,
        grader=grades[0].grader,
        skills=tuple(dict.fromkeys(g.skill for g in grades if g.skill)),
        runs=runs,
        none_applicable=len(grades) - runs,
        following=following_estimate([per_case[c] for c in sorted(per_case)], confidence),
        sections=tuple(sections),
        judge_models=tuple(dict.fromkeys(g.judge_model for g in grades if g.judge_model)),
    )


def following_difference(
    grader: str,
    a: str,
    grades_a: Sequence[SectionGrade],
    b: str,
    grades_b: Sequence[SectionGrade],
    confidence: float = 0.95,
) -> FollowingDifference:
    """The paired difference in skill-following between arms `a` and `b` over the cases both had judged."""
    case_a, case_b = _by_case(grades_a), _by_case(grades_b)
    shared = sorted(set(case_a) & set(case_b))
    if not shared:
        missing = [name for name, cases in ((a, case_a), (b, case_b)) if not cases]
        why = (
            f"{' and '.join(missing)}: no run with an applicable section judged (a run that loaded no skill is not assessed)"
            if missing
            else "no case judged in both arms"
        )
        return FollowingDifference(grader, a, b, 0, None, None, None, None, None, "none", why)
    lists_a, lists_b = [case_a[c] for c in shared], [case_b[c] for c in shared]
    mean_a = float(np.mean([np.mean(v) for v in lists_a]))
    mean_b = float(np.mean([np.mean(v) for v in lists_b]))
    if len(shared) < 2:
        return FollowingDifference(
            grader, a, b, 1, mean_a, mean_b, mean_b - mean_a, None, None, "none", "one case: no interval"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        d = paired_difference(lists_a, lists_b, confidence=confidence, method="t")
    if not math.isfinite(d.se) or d.se == 0:
        return FollowingDifference(
            grader, a, b, len(shared), mean_a, mean_b, float(d.difference), None, None, "paired t",
            "every case moved by the same amount: no spread for an interval",
        )  # fmt: skip
    return FollowingDifference(
        grader, a, b, len(shared), mean_a, mean_b, float(d.difference), d.interval,
        float(d.p_value) if math.isfinite(d.p_value) else None, "paired t",
    )  # fmt: skip


def following_grader(
    grades: Sequence[SectionGrade], order: Sequence[str], asked: str | None = None
) -> str | None:
    """The skill-following judge the figures come from: `asked` when it is one, else the first of `order`
    (the experiment's graders) that judged a run, else the first that did; None when none did."""
    found = list(dict.fromkeys(g.grader for g in grades))
    if asked is not None and asked in found:
        return asked
    return next((name for name in order if name in found), found[0] if found else None)


def with_skill_following(
    store: Store,
    exp_id: int,
    arms: list[ArmMetrics],
    names: dict[int, str],
    order: Sequence[str],
    confidence: float,
    asked: str | None = None,
) -> tuple[list[ArmMetrics], str | None]:
    """`arms` with their `ArmMetrics.skill_following` (unchanged when no run of theirs was judged), and a
    note when the experiment has more than one skill-following judge (the figures are one judge's)."""
    grades = store.grades.section_verdicts(exp_id, list(names))
    grader = following_grader(grades, order, asked)
    if grader is None:
        return arms, None
    by_arm: dict[str, list[SectionGrade]] = {}
    for g in grades:
        if g.grader == grader:
            by_arm.setdefault(names[g.arm_id], []).append(g)
    others = sorted({g.grader for g in grades} - {grader})
    note = (
        f"skill-following figures are {grader}'s; also judged by {', '.join(others)} (grader= picks one)"
        if others
        else None
    )
    out = [
        dataclasses.replace(a, skill_following=skill_following(a.arm, by_arm[a.arm], confidence))
        if by_arm.get(a.arm)
        else a
        for a in arms
    ]
    return out, note
