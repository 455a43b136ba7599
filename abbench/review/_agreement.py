"""How far people agree with each other before a judge is trusted, then how far the judge agrees with them.

A case (of one arm, or as a whole) can be given to a second reviewer (`assign_review`), who reviews it
blind: `visible_reviews` hides the other reviewers' verdicts from them, and the review widget shows
only what it returns. `reviewer_agreement` then measures, on the cases two people reviewed, how far the
two agree (Cohen's kappa, first reviewer against second, with its interval; Fleiss' kappa over the
pairs of ratings), and how far the judge agrees with the people where they agree with each other on who
is right — the order MLflow's users ask for: a judge is trusted only as far as people can agree.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from abbench.metrics import Result
from abbench.review._api import HUMAN_LABELS, _judge_verdict
from abbench.stats import Kappa, cohen_kappa, fleiss_kappa
from abbench.store import Experiment, Review, ReviewAssignment, Store, StoreLike, current_user, open_store
from abbench.types import REVIEW_VERDICTS, RunState


def assign_review(
    experiment: int | str | Experiment,
    case_id: str,
    reviewer: str,
    arm: str | None = None,
    *,
    store: StoreLike = None,
) -> ReviewAssignment:
    """Give a case to `reviewer` for a blind second review (again: the assignment already made).

    The reviewer then sees no other reviewer's verdict on the case (`visible_reviews`, the review
    widget), so the two reviews are independent and their agreement means something.

    Args:
        experiment: The experiment (id, ``#id``, name, or Experiment).
        case_id: The case.
        reviewer: Who is to review it (as they record reviews: ``reviewer=``, $ABBENCH_USER, the OS user).
        arm: The arm whose answer is to be reviewed (None: the case as a whole).
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).

    Raises:
        NotFoundError: no such experiment, case or arm.
        UsageError: no reviewer named.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    return store.reviews.assign(exp.id, case_id, reviewer, arm=arm)


def review_assignments(
    experiment: int | str | Experiment, *, reviewer: str | None = None, store: StoreLike = None
) -> list[ReviewAssignment]:
    """The cases given to reviewers for a second review (only `reviewer`'s when given), oldest first."""
    store = open_store(store)
    exp = store.experiments.get(experiment)
    return store.reviews.assignments(exp.id, reviewer=reviewer)


def visible_reviews(
    experiment: int | str | Experiment,
    case_id: str,
    reviewer: str | None = None,
    *,
    store: StoreLike = None,
) -> list[Review]:
    """The reviews of a case `reviewer` may see: only their own when the case is assigned to them for a
    blind second review, else every reviewer's latest (per case and arm).

    Args:
        experiment: The experiment.
        case_id: The case.
        reviewer: Who is looking (default: the current user, as `add_review` records it).
        store: The store.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    who = reviewer or current_user()
    if store.reviews.assignments(exp.id, reviewer=who, case_id=str(case_id)):
        return [
            r for r in store.reviews.all(exp.id, case_id=str(case_id), by_reviewer=True) if r.reviewer == who
        ]
    return store.reviews.all(exp.id, case_id=str(case_id))


@dataclass(frozen=True)
class ReviewerAgreement(Result):
    """People against people, then the judge against people, on the cases two people reviewed.

    Attributes:
        items: (case, arm) keys reviewed by two reviewers or more (each reviewer's latest verdict).
        reviewers: Everyone who reviewed them.
        agreement: Share of those where the first two reviewers gave the same verdict.
        cohen: Cohen's kappa, each item's first reviewer against its second, over the five verdicts
            (`abbench.types.REVIEW_VERDICTS`), with its interval.
        fleiss: Fleiss' kappa over the same pairs of ratings (raters need not be the same people).
        right_wrong_items: Items where both reviewers said who is right (``model_correct`` or
            ``gold_correct``).
        right_wrong: Cohen's kappa on those, on right against wrong.
        judge_items: Items where both reviewers agree on who is right and the judge gave a verdict.
        judge: Cohen's kappa between the judge's pass/fail and the reviewers' shared verdict there.
        judge_agreement: Share of those where the judge says what the reviewers say.
        grader: The grader compared (None: the runs' combined verdict).
        excluded: Items left out of the judge's side, by reason.
        reason: Why a figure is None.
    """

    items: int
    reviewers: tuple[str, ...]
    agreement: float | None
    cohen: Kappa | None
    fleiss: float | None
    right_wrong_items: int
    right_wrong: Kappa | None
    judge_items: int
    judge: Kappa | None
    judge_agreement: float | None
    grader: str | None
    excluded: dict[str, int]
    reason: str | None = None

    _extra_keys = "text"

    @property
    def text(self) -> str:
        """People's agreement, then the judge's against it, in one line."""
        if not self.items:
            return (
                f"no case is reviewed by two people yet ({self.reason or 'assign cases for a second review'})"
            )
        people = f"two reviewers agree on {self.agreement:.0%} of {self.items} cases"
        if self.cohen is not None:
            people += f", kappa {_kappa_text(self.cohen)}"
        if self.judge is not None:
            judge = (
                f"the judge agrees with their shared verdict on {self.judge_agreement:.0%} of "
                f"{self.judge_items}, kappa {_kappa_text(self.judge)}"
            )
        else:
            judge = "the judge's agreement with them is not measured yet"
        return f"{people}; {judge}"


def _kappa_text(k: Kappa) -> str:
    return f"{k.kappa:.2f} [{k.interval.low:.2f}, {k.interval.high:.2f}]"


def _defined(k: Kappa) -> Kappa | None:
    return None if math.isnan(k.kappa) else k


def _doubly_reviewed(
    store: Store, exp: Experiment, arms: list[str] | None
) -> list[tuple[tuple[str, str | None], Review, Review]]:
    """Each (case, arm) reviewed by two people or more, with its first two reviewers' latest reviews (in the
    order they first reviewed it)."""
    by_item: dict[tuple[str, str | None], list[Review]] = {}
    for r in store.reviews.all(exp.id, by_reviewer=True):
        if arms is not None and r.arm not in arms:
            continue
        by_item.setdefault((r.case_id, r.arm), []).append(r)
    first_seen: dict[tuple[str, str | None, str | None], int] = {}
    for r in store.reviews.all(exp.id, latest=False):
        first_seen.setdefault((r.case_id, r.arm, r.reviewer), r.id)
    pairs = []
    for key, reviews in by_item.items():
        if len(reviews) >= 2:
            ordered = sorted(reviews, key=lambda r: first_seen[(r.case_id, r.arm, r.reviewer)])
            pairs.append((key, ordered[0], ordered[1]))
    return pairs


def reviewer_agreement(
    experiment: int | str | Experiment,
    *,
    arms: list[str] | None = None,
    grader: str | None = None,
    confidence: float = 0.95,
    store: StoreLike = None,
) -> ReviewerAgreement:
    """Inter-reviewer agreement on the doubly-reviewed cases, then the judge's agreement with the reviewers.

    Each reviewer's latest verdict per (case, arm) counts; an item reviewed by two people or more is
    rated by its first two reviewers (in the order they first reviewed it). The judge's side is the
    reviewed runs' verdict (as `judge_agreement` takes it), compared where the two reviewers agree on
    who is right.

    Args:
        experiment: The experiment.
        arms: Only reviews of these arms (reviews of the case as a whole count in a one-arm experiment).
        grader: Compare this grader's verdicts instead of the runs' combined verdict.
        confidence: Coverage of the kappa intervals.
        store: The store.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    pairs = _doubly_reviewed(store, exp, arms)
    reviewers = tuple(sorted({r.reviewer or "" for _, x, y in pairs for r in (x, y)}))
    if not pairs:
        none_yet = "no case is reviewed by two people yet"
        return ReviewerAgreement(0, (), None, None, None, 0, None, 0, None, None, grader, {}, none_yet)
    first, second = [x.verdict for _, x, _ in pairs], [y.verdict for _, _, y in pairs]
    agreement = sum(a == b for a, b in zip(first, second, strict=True)) / len(pairs)
    cohen = _defined(cohen_kappa(first, second, labels=list(REVIEW_VERDICTS), confidence=confidence))
    fleiss_value = fleiss_kappa(list(zip(first, second, strict=True)), labels=REVIEW_VERDICTS)
    fleiss = None if math.isnan(fleiss_value) else fleiss_value
    said = [(key, x, y) for key, x, y in pairs if x.verdict in HUMAN_LABELS and y.verdict in HUMAN_LABELS]
    right_wrong = None
    if said:
        labels = [RunState.FAIL, RunState.PASS]
        right_wrong = _defined(
            cohen_kappa(
                [HUMAN_LABELS[x.verdict] for _, x, _ in said],
                [HUMAN_LABELS[y.verdict] for _, _, y in said],
                labels=labels,
                confidence=confidence,
            )
        )
    excluded: Counter[str] = Counter()
    judged, people = [], []
    single_arm = exp.arms[0].name if len(exp.arms) == 1 else None
    for (_case, arm), x, y in said:
        if x.verdict != y.verdict:
            excluded["the two reviewers disagree on who is right"] += 1
            continue
        arm_name = arm or single_arm
        if arm_name is None:
            excluded["reviews the case as a whole in an experiment with several arms"] += 1
            continue
        verdict = _judge_verdict(store, exp, x, arm_name, grader)
        if verdict is None:
            excluded["no graded verdict for the reviewed runs (or an even split over rounds)"] += 1
            continue
        judged.append(RunState.PASS if verdict else RunState.FAIL)
        people.append(HUMAN_LABELS[x.verdict])
    judge, judge_agreement, reason = None, None, None
    if judged:
        judge = _defined(
            cohen_kappa(judged, people, labels=[RunState.FAIL, RunState.PASS], confidence=confidence)
        )
        judge_agreement = sum(a == b for a, b in zip(judged, people, strict=True)) / len(judged)
        if judge is None:
            reason = "judge and reviewers each gave one and the same verdict throughout: kappa is undefined"
    else:
        reason = "no case where both reviewers agree on who is right has a judge's verdict"
    return ReviewerAgreement(
        len(pairs), reviewers, agreement, cohen, fleiss, len(said), right_wrong, len(judged), judge,
        judge_agreement, grader, dict(excluded), reason,
    )  # fmt: skip
