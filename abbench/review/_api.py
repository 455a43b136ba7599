"""Reviews: a person's verdict on a case, appended to the store, and how far the judge agrees with people."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from abbench.errors import UsageError
from abbench.metrics import Result
from abbench.stats import Kappa, cohen_kappa
from abbench.store import Experiment, Review, Store, StoreLike, open_store
from abbench.types import RunState

HUMAN_LABELS = {"model_correct": RunState.PASS, "gold_correct": RunState.FAIL}
"""The review verdicts that say whether the run's answer is right: the model's (pass) or the gold's (fail).

The other verdicts (``ambiguous_standard``, ``missing_capability_info``, ``unsure``) diagnose a case
without saying who is right, so they do not count in judge-versus-human agreement.
"""


def add_review(
    experiment: int | str | Experiment,
    case_id: str,
    verdict: str,
    note: str | None = None,
    arm: str | None = None,
    run_id: int | None = None,
    reviewer: str | None = None,
    *,
    store: StoreLike = None,
) -> Review:
    """Record a person's verdict on a case: appended, never overwriting an earlier one.

    Args:
        experiment: The experiment (id, ``#id``, name, or Experiment).
        case_id: The case reviewed.
        verdict: One of ``gold_correct``, ``model_correct``, ``ambiguous_standard``,
            ``missing_capability_info``, ``unsure``.
        note: What the reviewer saw.
        arm: The arm whose answer was reviewed (None: the case as a whole).
        run_id: The run looked at (its arm is taken when `arm` is not given).
        reviewer: Who reviewed (default: the OS user, or $ABBENCH_USER).
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).

    Raises:
        UsageError: an unknown verdict (the message lists the valid ones), or a run of another case/arm.
        NotFoundError: no such experiment, case, arm or run.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    return store.reviews.insert(
        exp.id, case_id, verdict, note=note, arm=arm, run_id=run_id, reviewer=reviewer
    )


def undo_review(review: Review, *, store: StoreLike = None) -> Review | None:
    """Take back a verdict just given by mistake: remove `review`, the latest of its case and arm.

    Undo is for the slip a labelling tool forgives (a wrong key, a verdict on the wrong case), and only
    for the review the caller itself added: the `Review` that `add_review` returned to it. Reviews are
    otherwise appended and never rewritten, and undo keeps that promise for everyone else: it refuses
    when a later review of the same case and arm exists (someone, or this session, said more since),
    when the row no longer reads as the one added (another id, verdict, note or time), or when it is
    gone. What the history held before the slip is then exactly what it holds again, so judge
    agreement, exports and reports never see the retracted verdict.

    A considered change of mind is not an undo: add another review, which is appended and shown as the
    latest while the earlier one stays in `review_history`.

    Args:
        review: The review to take back, as `add_review` returned it.
        store: The store.

    Returns:
        The review of the same case and arm now in force (the one before), or None when there is none.

    Raises:
        UsageError: `review` is no longer the latest of its case and arm, or the stored row differs.
        NotFoundError: no such review (already undone, or never added).
    """
    store = open_store(store)
    stored = store.reviews.get(review.id)
    if stored != review:
        raise UsageError(
            f"review {review.id} of case {review.case_id!r} reads differently in the store now; "
            "only a review exactly as this session added it can be undone"
        )
    key = (review.case_id, review.arm)
    later = [
        r
        for r in store.reviews.all(review.experiment_id, latest=False, case_id=review.case_id)
        if (r.case_id, r.arm) == key and r.id > review.id
    ]
    if later:
        raise UsageError(
            f"case {review.case_id!r} ({review.arm or 'the case as a whole'}) was reviewed again after "
            f"review {review.id} (review {later[-1].id}: {later[-1].verdict}); undo takes back only the "
            "latest review: add a new review to change it"
        )
    # The same condition again inside the write: a review added meanwhile by another process wins.
    if not store.analysis.delete_latest(review.id, review.experiment_id, review.case_id, review.arm):
        raise UsageError(
            f"case {review.case_id!r} was reviewed again while review {review.id} was being undone; "
            "nothing was removed: add a new review to change it"
        )
    before = [
        r
        for r in store.reviews.all(review.experiment_id, case_id=review.case_id)
        if (r.case_id, r.arm) == key
    ]
    return before[-1] if before else None


def reviews(
    experiment: int | str | Experiment,
    *,
    store: StoreLike = None,
    latest: bool = True,
    case_id: str | None = None,
    arm: str | None = None,
) -> list[Review]:
    """The reviews of an experiment, oldest first: the latest per (case, arm) unless `latest` is False.

    Args:
        experiment: The experiment.
        store: The store.
        latest: Only the latest verdict per (case, arm) — what a view shows; False: the history.
        case_id: Only this case.
        arm: Only this arm.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    return store.reviews.all(exp.id, latest=latest, case_id=case_id, arm=arm)


def review_history(
    experiment: int | str | Experiment, case_id: str, arm: str | None = None, *, store: StoreLike = None
) -> list[Review]:
    """Every review of one case (of one arm when given), oldest first."""
    return reviews(experiment, store=store, latest=False, case_id=case_id, arm=arm)


@dataclass(frozen=True)
class JudgeAgreement(Result):
    """How far the graders' verdicts agree with reviewers' on the reviewed runs.

    Attributes:
        n: Reviews counted (each a pair: the grader's verdict, the person's).
        kappa: Cohen's kappa between grader and person (None when it is undefined, see `reason`).
        agreement: Share of the pairs where both say the same.
        judge_pass: Pairs where the grader said pass.
        human_pass: Pairs where the person said the model was right.
        excluded: Reviews left out, by reason.
        grader: The grader compared (None: the run's combined verdict).
        reason: Why `kappa` is None.
    """

    n: int
    kappa: Kappa | None
    agreement: float | None
    judge_pass: int
    human_pass: int
    excluded: dict[str, int]
    grader: str | None
    reason: str | None = None


def judge_agreement(
    experiment: int | str | Experiment,
    *,
    store: StoreLike = None,
    arms: list[str] | None = None,
    grader: str | None = None,
) -> JudgeAgreement:
    """Cohen's kappa between the graders' pass/fail and reviewers' verdicts on the same runs.

    A review saying ``model_correct`` means the run should pass, ``gold_correct`` that it should fail
    (see `HUMAN_LABELS`). The grader's side is the reviewed run's verdict; a review naming no run takes
    its arm's runs of the case by majority (an even split is left out). Reviews of the case as a whole
    count only when the experiment has one arm.

    Args:
        experiment: The experiment.
        store: The store.
        arms: Only reviews of these arms.
        grader: Compare this grader's latest verdicts instead of the run's combined verdict.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    latest = store.reviews.all(exp.id)
    excluded: Counter[str] = Counter()
    judge: list[str] = []
    human: list[str] = []
    single_arm = exp.arms[0].name if len(exp.arms) == 1 else None
    for review in latest:
        label = HUMAN_LABELS.get(review.verdict)
        if label is None:
            excluded[f"verdict {review.verdict} says nothing of right or wrong"] += 1
            continue
        arm = review.arm or single_arm
        if arm is None:
            excluded["reviews the case as a whole in an experiment with several arms"] += 1
            continue
        if arms is not None and arm not in arms:
            continue
        verdict = _judge_verdict(store, exp, review, arm, grader)
        if verdict is None:
            excluded["no graded verdict for the reviewed runs (or an even split over rounds)"] += 1
            continue
        judge.append(RunState.PASS if verdict else RunState.FAIL)
        human.append(label)
    n = len(judge)
    if n == 0:
        return JudgeAgreement(0, None, None, 0, 0, dict(excluded), grader, "no review says who is right yet")
    kappa = cohen_kappa(judge, human, labels=[RunState.FAIL, RunState.PASS])
    reason = None
    value: Kappa | None = kappa
    if math.isnan(kappa.kappa):
        value, reason = (
            None,
            "grader and reviewers each gave one and the same verdict to every run: kappa is undefined",
        )
    agree = sum(a == b for a, b in zip(judge, human, strict=True)) / n
    return JudgeAgreement(
        n,
        value,
        agree,
        judge.count(RunState.PASS),
        human.count(RunState.PASS),
        dict(excluded),
        grader,
        reason,
    )


def _judge_verdict(
    store: Store, exp: Experiment, review: Review, arm: str, grader: str | None
) -> bool | None:
    if review.run_id is not None:
        run_ids = [review.run_id]
    else:
        run_ids = store.analysis.case_run_ids(exp.id, review.case_id, arm)
    verdicts = []
    for run_id in run_ids:
        verdict = (
            store.analysis.run_verdict(run_id)
            if grader is None
            else store.analysis.latest_ok_verdict(run_id, grader)
        )
        if verdict is not None:
            verdicts.append(verdict)
    if not verdicts:
        return None
    passes = sum(verdicts)
    if passes * 2 == len(verdicts):
        return None
    return passes * 2 > len(verdicts)
