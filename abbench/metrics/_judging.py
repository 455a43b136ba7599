"""How far to trust the judges, read from the store: position and verbosity bias of pairwise judges, and
what judging cost.

The measurement is the graders' (`abbench.graders.measure_position_bias` and `measure_verbosity_bias` take typed judgement
records); this module reads the stored grades into those records, and sums what each grader spent —
grading cost belongs to the judge, apart from the arms' execution cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from abbench._result import Result
from abbench.graders import (
    VERBOSITY_MIN_DIFFERENCE,
    PairJudgement,
    PositionBias,
    SelfJudging,
    VerbosityBias,
    experiment_self_judging,
    measure_position_bias,
    measure_verbosity_bias,
)
from abbench.store import Experiment, Store, StoreLike, open_store


@dataclass(frozen=True)
class JudgeCost(Result):
    """What one grader spent on an experiment, over every grade it wrote (re-grades included).

    Grading cost is the judge's: a pairwise judge compares two arms and is charged to neither.

    Attributes:
        grader: The grader's name.
        kind: rule, judge or pairwise.
        grades: Grades written (each judge call that reached a verdict or failed).
        errors: Of those, grading failures.
        models: The judge models that answered.
        cost: The known cost spent, in the price table's currency (USD by default).
        unknown_cost: Judge replies whose model has no price (their cost is not in `cost`).
        input_tokens: Judge input tokens spent.
        output_tokens: Judge output tokens spent.
        arms: The arms whose runs it graded (for a pairwise judge: the pair).
        cached: Grades whose judge replies all came from the response cache (nothing spent).
        saved: What the cached judge replies would have cost (not in `cost`).
    """

    grader: str
    kind: str
    grades: int
    errors: int
    models: tuple[str, ...]
    cost: float
    unknown_cost: int
    input_tokens: int
    output_tokens: int
    arms: tuple[str, ...] = ()
    cached: int = 0
    saved: float = 0.0


def judge_costs(ref: int | str | Any, *, store: StoreLike = None) -> list[JudgeCost]:
    """Judge cost and tokens per grader of an experiment (rule graders cost nothing and are left out)."""
    store = open_store(store)
    exp = store.experiments.get(ref)
    arms_of = _graded_arms(store, exp)
    return [
        JudgeCost(
            **{k: v for k, v in row.items() if k not in ("cost_saved", "models")},
            models=tuple(row["models"]),
            saved=row["cost_saved"],
            arms=arms_of.get(row["grader"], ()),
        )
        for row in store.grades.judge_usage(exp.id)
        if row["kind"] != "rule" or row["models"]
    ]


def _graded_arms(store: Store, exp: Experiment) -> dict[str, tuple[str, ...]]:
    """Grader -> the arms whose runs it graded (both arms of a pair), in the experiment's arm order."""
    rows = store.analysis.graded_arm_ids(exp.id)
    order = {a.id: (a.position, a.name) for a in exp.arms}
    out: dict[str, list[tuple[int, str]]] = {}
    for grader, arm_id in rows:
        if arm_id in order:
            out.setdefault(grader, []).append(order[arm_id])
    return {g: tuple(name for _, name in sorted(v)) for g, v in out.items()}


def position_bias(
    ref: int | str | Any,
    *,
    store: StoreLike = None,
    grader: str | None = None,
    confidence: float = 0.95,
) -> list[PositionBias]:
    """The position bias of each pairwise grader of an experiment (its latest grade per pair).

    Args:
        ref: The experiment (id, name, or Experiment).
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).
        grader: Only this pairwise grader.
        confidence: Of the intervals.
    """
    return [
        measure_position_bias(grades, name, confidence=confidence)
        for name, grades in _pair_grades(ref, store, grader).items()
    ]


def verbosity_bias(
    ref: int | str | Any,
    *,
    store: StoreLike = None,
    grader: str | None = None,
    min_difference: float = VERBOSITY_MIN_DIFFERENCE,
    confidence: float = 0.95,
) -> list[VerbosityBias]:
    """Whether each pairwise grader of an experiment prefers the longer answer (its latest grade per pair).

    Args:
        ref: The experiment (id, name, or Experiment).
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).
        grader: Only this pairwise grader.
        min_difference: The relative length difference a pair needs to count (default 0.2: the shorter
            answer at most 80% of the longer).
        confidence: Of the intervals.
    """
    return [
        measure_verbosity_bias(grades, name, min_difference=min_difference, confidence=confidence)
        for name, grades in _pair_grades(ref, store, grader).items()
    ]


def _pair_grades(
    ref: int | str | Any, store: StoreLike, grader: str | None
) -> dict[str, list[PairJudgement]]:
    """Pairwise grader -> its latest pair grades, as the bias measures read them."""
    store = open_store(store)
    exp = store.experiments.get(ref)
    rows = store.grades.records(exp.id, grader=grader, kind="pairwise")  # only the pairwise grades are loaded
    out: dict[str, list[PairJudgement]] = {}
    for r in rows:
        out.setdefault(r.grader, []).append(
            PairJudgement.from_details(r.details, verdict=r.verdict, status=r.status)
        )
    return out


@dataclass(frozen=True)
class JudgeReport(Result):
    """An experiment's judges at a glance: position bias, and judge cost apart from agent cost.

    Attributes:
        experiment: The experiment's name.
        experiment_id: Its id.
        batch_id: Its grade batch.
        batches: Distinct batch ids among its grades (1 by design; 0 before any grade).
        position_bias: Per pairwise grader.
        judge_costs: Per judge grader.
        verbosity_bias: Per pairwise grader: whether it prefers the longer answer.
        agent: What the agents spent over every execution attempt (`store.runs.agent_usage`):
            ``executions``, ``attempts``, ``failed_attempts``, ``cost``, ``failed_cost``,
            ``input_tokens``, ``output_tokens``.
        self_judging: Judges whose model is an arm's model or of its family (self-preference risk).
    """

    experiment: str
    experiment_id: int
    batch_id: str | None
    batches: int
    position_bias: tuple[PositionBias, ...]
    judge_costs: tuple[JudgeCost, ...]
    agent: dict[str, Any]
    verbosity_bias: tuple[VerbosityBias, ...] = ()
    self_judging: tuple[SelfJudging, ...] = ()

    _keys = (
        "experiment experiment_id batch_id batches judge_cost agent_cost agent judge_costs position_bias "
        "verbosity_bias self_judging"
    )

    @property
    def judge_cost(self) -> float:
        """Known judge cost over every judge grader."""
        return sum(c.cost for c in self.judge_costs)

    @property
    def agent_cost(self) -> float:
        """What the agents spent, every execution attempt included (failed ones too)."""
        return float(self.agent.get("cost", 0.0))


def judge_report(ref: int | str | Any, *, store: StoreLike = None, confidence: float = 0.95) -> JudgeReport:
    """Position and verbosity bias of every pairwise grader and judge cost per grader, with agent cost beside it.

    Reading never grades or starts anything.
    """
    store = open_store(store)
    exp = store.experiments.get(ref)
    return JudgeReport(
        experiment=exp.name,
        experiment_id=exp.id,
        batch_id=exp.batch_id,
        batches=len(store.grades.batches(exp.id)),
        position_bias=tuple(position_bias(exp.id, store=store, confidence=confidence)),
        judge_costs=tuple(judge_costs(exp.id, store=store)),
        agent=store.runs.agent_usage(exp.id),
        verbosity_bias=tuple(verbosity_bias(exp.id, store=store, confidence=confidence)),
        self_judging=experiment_self_judging(exp),
    )
