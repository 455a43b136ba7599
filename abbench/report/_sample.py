"""The report's sample of disagreements with the gold: the first cases one arm answered wrong, read as needed."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from abbench.graders import normalise_label
from abbench.metrics import dataset_labels
from abbench.review import Disagreement, case_detail
from abbench.store import StoreLike, open_store, wrong_answers

if TYPE_CHECKING:
    from abbench.store import Experiment


def disagreement_sample(
    experiment: Experiment | int | str,
    arm: str,
    *,
    store: StoreLike = None,
    limit: int = 10,
    exclude: Collection[str] = (),
) -> list[Disagreement]:
    """The first `limit` cases, in dataset order, where `arm` gave an answer other than the gold that was
    graded wrong: what ``abbench.review.disagreements(experiment, "gold", arms=[arm], limit=limit,
    exclude=exclude)`` lists, without reading every run of the arm.

    The arm's wrong answers come from the store in case order (`abbench.store.wrong_answers`) and are
    read only until `limit` cases are found; only those cases are then loaded in full. A run graded wrong
    whose answer is the gold label (another grader failed it) is not a disagreement with the gold.

    Args:
        experiment: The experiment: id, ``#id``, name, or an `Experiment`.
        arm: The arm whose answers are compared with the gold.
        store: A `Store`, a store folder, or None for $ABBENCH_STORE / ./.abbench.
        limit: At most this many cases.
        exclude: Case ids to leave out (the report lists its regressed cases apart).

    Raises:
        NotFoundError: no such experiment or arm.
    """
    s = open_store(store)
    exp = s.experiments.get(experiment)
    label_map = dataset_labels(s, exp.dataset_id)[1]

    def label(value: Any) -> str | None:  # as label_match compares it; None: not a label
        return None if value is None or isinstance(value, (dict, list)) else normalise_label(value, label_map)

    skip, chosen = set(exclude), list[str]()
    for wrong in wrong_answers(s, exp.id, arm):
        if len(chosen) >= limit:
            break
        if wrong.case_id in skip:
            continue
        answer = label(wrong.prediction)
        if answer is not None and answer == label(wrong.expected):
            continue
        chosen.append(wrong.case_id)
        skip.add(wrong.case_id)
    out = []
    for case_id in chosen:
        detail = case_detail(exp, case_id, store=s)
        out.append(
            Disagreement(
                case=detail.case,
                kinds=("gold",),
                arms=(arm,),
                runs=tuple(r for r in detail.runs if r.arm == arm),
                reviews=detail.reviews,
            )
        )
    return out
