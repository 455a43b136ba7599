"""Random review samples and the judge's accuracy corrected by people (prediction-powered inference).

A person reviews the runs of a seeded random sample (`draw_review_sample`); `corrected_accuracy` then
reports the judge-scored accuracy beside its prediction-powered correction (`abbench.stats.ppi_mean`,
Angelopoulos et al. 2023; Boyeau et al. 2024) and the judge–people agreement on the sample. Reviews of
disagreements are chosen *because* the judge looks wrong there: they are not a random sample, and the
correction refuses to use them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from abbench import _actions as do
from abbench.errors import UsageError
from abbench.metrics import Result
from abbench.review._api import HUMAN_LABELS
from abbench.review._cases import Disagreement, _latest_reviews, _Loader
from abbench.stats import Interval, PredictionPowered, ppi_mean, wilson_interval
from abbench.store import Experiment, ReviewSample, Store, StoreLike, open_store
from abbench.types import RunState


def draw_review_sample(
    experiment: int | str | Experiment,
    size: int,
    *,
    seed: int,
    arm: str | None = None,
    store: StoreLike = None,
) -> ReviewSample:
    """Draw and record a seeded simple random sample of `size` judged runs for people to review.

    Args:
        experiment: The experiment.
        size: Runs to draw (at most the judged runs there are).
        seed: The seed (the same seed over the same judged runs draws the same sample).
        arm: Only runs of this arm (default: every arm).
        store: The store.

    Raises:
        UsageError: `size` below 1, or no judged run to draw from.
        NotFoundError: no such experiment or arm.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    if arm is not None:
        exp.arm(arm)  # an unknown arm is refused with the arm names
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise UsageError(f"--sample takes a number of runs ≥ 1; got {size!r}")
    by_arm = store.reviews.judged_verdicts(exp.id)
    wanted = [exp.arm(arm).id] if arm is not None else list(by_arm)
    # By run id, as `judged_runs` lists them: the same seed draws the same runs.
    ids = np.sort(np.concatenate([by_arm[a][0] for a in wanted if a in by_arm] or [np.empty(0, np.int64)]))
    if not ids.size:
        raise UsageError(
            f"experiment {exp.name!r} has no judged run{f' of arm {arm}' if arm else ''} to sample"
        )
    drawn = np.random.default_rng(int(seed)).choice(ids, size=min(size, ids.size), replace=False)
    return store.reviews.insert_sample(
        exp.id, arm=arm, seed=int(seed), population=int(ids.size), run_ids=drawn.tolist()
    )


@dataclass(frozen=True)
class CorrectedAccuracy(Result):
    """One arm's judge-scored accuracy, corrected by a random sample that people reviewed.

    Attributes:
        arm: The arm.
        sample_id: The review sample used.
        seed: Its seed.
        sampled: Runs of this arm in the sample.
        reviewed: Of those, runs whose latest review says right or wrong (`HUMAN_LABELS`).
        not_reviewed: Sampled runs without such a review yet (left out; the figure says so).
        judged: Judged runs of the arm (the population).
        judge_accuracy: The raw judge figure: judged right over judged runs.
        judge_interval: Its Wilson interval (it trusts the judge entirely).
        agreement: Share of the reviewed runs where judge and people agree.
        ppi: The prediction-powered estimate and its interval (None with fewer than 2 reviewed runs).
        text: The line every view shows.
    """

    arm: str
    sample_id: int
    seed: int
    sampled: int
    reviewed: int
    not_reviewed: int
    judged: int
    judge_accuracy: float
    judge_interval: Interval
    agreement: float | None
    ppi: PredictionPowered | None
    text: str


def corrected_accuracy(
    experiment: int | str | Experiment,
    arm: str | None = None,
    *,
    sample: int | None = None,
    confidence: float = 0.95,
    store: StoreLike = None,
) -> list[CorrectedAccuracy]:
    """The judge-scored accuracy of each arm (or of `arm`) beside its PPI correction by a random review sample.

    Args:
        experiment: The experiment.
        arm: Only this arm.
        sample: The review sample's id (default: the latest drawn for the experiment).
        confidence: Coverage of the intervals.
        store: The store.

    Raises:
        UsageError: no random review sample was drawn (reviews chosen by disagreement are not random:
            draw one with ``abbench review EXP --sample N --seed S``), or the sample is of another experiment.
        NotFoundError: no such experiment, arm or sample.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    chosen = _sample_of(store, exp, sample)
    arms = [exp.arm(arm).name] if arm is not None else [a.name for a in exp.arms]
    if chosen.arm is not None:
        arms = [a for a in arms if a == chosen.arm]
    labels = _labels(store, exp)
    judged = store.reviews.judged_verdicts(exp.id)
    nothing = (np.empty(0, np.int64), np.empty(0, bool))
    return [
        _arm_figure(store, exp, name, chosen, labels, confidence, judged.get(exp.arm(name).id, nothing))
        for name in arms
    ]


def _sample_of(store: Store, exp: Experiment, sample: int | None) -> ReviewSample:
    if sample is not None:
        chosen = store.reviews.get_sample(sample)
        if chosen.experiment_id != exp.id:
            raise UsageError(
                f"review sample #{sample} is of experiment #{chosen.experiment_id}, not {exp.ref}"
            )
        return chosen
    samples = store.reviews.samples(exp.id)
    if not samples:
        raise UsageError(
            f"experiment {exp.name!r} has no random review sample: the judge's accuracy is corrected only from "
            "runs drawn at random (reviews chosen by disagreement are not random, and would bias it); draw one "
            "with `",
            do.draw_review_sample(exp.id),
            "` and review its runs",
        )
    return samples[-1]


def _labels(store: Store, exp: Experiment) -> dict[tuple[str, str | None, int | None], bool]:
    """The latest right/wrong review per (case, arm, run): True when people say the answer is right."""
    out: dict[tuple[str, str | None, int | None], bool] = {}
    for review in store.reviews.all(exp.id, latest=False):  # oldest first: later reviews win
        label = HUMAN_LABELS.get(review.verdict)
        key = (review.case_id, review.arm, review.run_id)
        if label is None:
            out.pop(key, None)
        else:
            out[key] = label == RunState.PASS
    return out


def _arm_figure(
    store: Store,
    exp: Experiment,
    arm: str,
    sample: ReviewSample,
    labels: dict[tuple[str, str | None, int | None], bool],
    confidence: float,
    judged_runs: tuple[np.ndarray, np.ndarray],
) -> CorrectedAccuracy:
    # The arm's judged runs by id: the unreviewed ones' verdicts as arrays, the case ids of the drawn alone.
    ids, passed = judged_runs
    in_sample = np.isin(ids, np.asarray(sample.run_ids, dtype=np.int64))
    unlabeled = passed[~in_sample].astype(float)
    drawn_ids = ids[in_sample].tolist()
    where = store.reviews.run_positions(exp.id, drawn_ids)
    y, yhat, missing = [], [], 0
    one_round = exp.rounds == 1
    for run_id, verdict in zip(drawn_ids, passed[in_sample].tolist(), strict=True):
        case_id = where[run_id][2]
        label = labels.get((case_id, arm, run_id))
        if label is None and one_round:
            label = labels.get((case_id, arm, None))
        if label is None:
            missing += 1
            continue
        y.append(float(label))
        yhat.append(float(verdict))
    sampled, judged, right = len(drawn_ids), int(ids.size), int(passed.sum())
    wilson = wilson_interval(right, judged, confidence) if judged else Interval(0.0, 1.0, confidence)
    agreement = float(np.mean(np.equal(y, yhat))) if y else None
    ppi = ppi_mean(y, yhat, unlabeled, confidence=confidence) if len(y) >= 2 and len(unlabeled) >= 2 else None
    raw = right / judged if judged else float("nan")
    text = _text(arm, sample, raw, wilson, ppi, len(y), sampled, missing, agreement)
    return CorrectedAccuracy(
        arm, sample.id, sample.seed, sampled, len(y), missing, judged, raw, wilson, agreement, ppi, text
    )


def _text(
    arm: str, sample: ReviewSample, raw: float, wilson: Interval, ppi: PredictionPowered | None,
    reviewed: int, sampled: int, missing: int, agreement: float | None,
) -> str:  # fmt: skip
    head = f"{arm}: judge-scored accuracy {raw:.1%} [{wilson.low:.1%}, {wilson.high:.1%}]"
    where = f"random review sample #{sample.id} (seed {sample.seed}, {reviewed} of {sampled} sampled runs reviewed)"
    if ppi is None:
        return f"{head}; corrected by people: not yet — {where}, at least 2 needed"
    agree = f", judge–people agreement {agreement:.0%}" if agreement is not None else ""
    left = f"; {missing} sampled runs not reviewed yet are left out" if missing else ""
    iv = ppi.interval
    return (
        f"{head}; corrected by people (prediction-powered inference): {ppi.estimate:.1%} "
        f"[{iv.low:.1%}, {iv.high:.1%}] from {where}{agree}{left}"
    )


def sample_cases(
    experiment: int | str | Experiment, sample: int | None = None, *, store: StoreLike = None
) -> list[Disagreement]:
    """The cases of a random review sample (default: the latest), listed as the review views list cases.

    Each has the kind ``sample`` and, as its arms, the arms of its sampled runs; empty without a sample.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    samples = [store.reviews.get_sample(sample)] if sample is not None else store.reviews.samples(exp.id)[-1:]
    if not samples:
        return []
    arms: dict[int, set[str]] = {}
    for idx, arm, _ in store.reviews.run_positions(exp.id, samples[0].run_ids).values():
        arms.setdefault(idx, set()).add(arm)
    positions = sorted(arms)
    loader = _Loader(store, exp)
    cases, runs = loader.cases(positions), loader.runs(positions, None)
    latest = _latest_reviews(store, exp.id)
    order = {a.name: a.position for a in exp.arms}
    return [
        Disagreement(
            case=cases[idx], kinds=("sample",), arms=tuple(sorted(arms[idx], key=order.__getitem__)),
            runs=tuple(runs.get(idx, ())), reviews=tuple(latest.get(cases[idx].case_id, ())),
        )
        for idx in positions
    ]  # fmt: skip
