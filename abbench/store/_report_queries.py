"""Bounded queries for the report: what a page shows, read without loading every run or grade.

A report on 600,000 runs shows a table of failed runs, ten disagreements with the gold and where the
runs came from. Each is asked of SQLite directly: failures are counted by a grouped query over the
failed runs only, the wrong answers of one arm are read in case order from the ``runs_results`` index
until the page has what it shows, and the provenance's facts come from one pass over the runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from abbench.store._analysis import RunsProvenance
from abbench.types import RunState

if TYPE_CHECKING:
    from abbench.store._store import Store

_NO_VERDICT = f"r.experiment_id = ? AND r.state = '{RunState.FAIL}' AND (r.failure_type IS NOT NULL OR r.passed IS NULL)"
"""The runs that failed without a verdict: execution failures (a failure type) and grading failures."""

_FINISHED = f"('{RunState.PASS}', '{RunState.FAIL}', '{RunState.CANCELLED}')"
"""The WHERE clause of the partial ``runs_results`` index, written as its migration writes it."""


@dataclass(frozen=True)
class FailedRun:
    """One run that failed without a verdict, as the report's table of failures lists it.

    Attributes:
        case_id: Its case.
        arm: Its arm's name.
        round: Its round (0-based).
        kind: ``execution`` (it has a failure type: re-run it) or ``grading`` (re-grade it).
        failure_type: ``agent_error``, ``timeout``, ... (None for a grading failure).
        error: The error message, if any.
    """

    case_id: str
    arm: str
    round: int
    kind: str
    failure_type: str | None
    error: str | None


@dataclass(frozen=True)
class RunFailures:
    """An experiment's runs that failed without a verdict, counted in SQL.

    Attributes:
        execution: Arm -> failure type -> runs (an empty type reads ``unknown``), arms and types in the
            order of their first such run (by run id).
        grading: Arm -> runs executed whose grading reached no verdict (arms that have some).
        first: The first failed runs by run id, at most the limit asked.
        scored: Arm -> runs graded with a score and no verdict (in ``pass``; arms that have some): not
            failures, but not right either.
    """

    execution: dict[str, dict[str, int]]
    grading: dict[str, int]
    first: tuple[FailedRun, ...]
    scored: dict[str, int] = field(default_factory=dict)


def run_failures(store: Store, exp_id: int, *, limit: int = 50) -> RunFailures:
    """The runs of experiment `exp_id` that failed without a verdict: counts by arm and type, and the first
    `limit` of them. A wrong answer is a graded outcome, not a failure, and is never read."""
    execution: dict[str, dict[str, int]] = {}
    grading: dict[str, int] = {}
    for arm, failure_type, runs in store.query(
        "SELECT a.name, r.failure_type, COUNT(*) FROM runs r JOIN arms a ON a.id = r.arm_id "
        f"WHERE {_NO_VERDICT} GROUP BY r.arm_id, r.failure_type ORDER BY MIN(r.id)",
        (exp_id,),
    ):
        if failure_type is None:
            grading[arm] = grading.get(arm, 0) + runs
        else:
            kinds = execution.setdefault(arm, {})
            kinds[failure_type or "unknown"] = kinds.get(failure_type or "unknown", 0) + runs
    rows = store.query(
        "SELECT r.case_id, a.name, r.round, r.failure_type, r.error FROM runs r JOIN arms a ON a.id = r.arm_id "
        f"WHERE {_NO_VERDICT} ORDER BY r.id LIMIT ?",
        (exp_id, max(limit, 0)),
    )
    first = tuple(
        FailedRun(r[0], r[1], r[2], "grading" if r[3] is None else "execution", r[3], r[4]) for r in rows
    )
    scored: dict[str, int] = {
        str(arm): int(n)
        for arm, n in store.query(
            "SELECT a.name, COUNT(*) FROM runs r JOIN arms a ON a.id = r.arm_id WHERE r.experiment_id = ? "
            f"AND r.state = '{RunState.PASS}' AND r.passed IS NULL GROUP BY r.arm_id ORDER BY r.arm_id",
            (exp_id,),
        )
    }
    return RunFailures(execution, grading, first, scored)


@dataclass(frozen=True)
class WrongAnswer:
    """A run graded wrong, with what it answered and the case's gold (as text, as stored).

    Attributes:
        case_idx: The case's dataset position.
        case_id: The case's id.
        prediction: The run's answer.
        expected: The case's gold.
    """

    case_idx: int
    case_id: str
    prediction: Any
    expected: Any


def wrong_answers(store: Store, exp_id: int, arm: str, *, chunk: int = 200) -> Iterator[WrongAnswer]:
    """The runs of `arm` graded wrong, in case order, read `chunk` at a time as the caller goes.

    The ``runs_results`` index holds them in (arm, case) order, so a caller that stops after the first
    few reads only as far as they are, however many runs the arm has.

    Raises:
        NotFoundError: no such experiment or arm.
    """
    exp = store.experiments.get(exp_id)
    arm_id = exp.arm(arm).id
    cursor = store.conn.execute(
        "SELECT r.case_idx, r.case_id, CAST(r.prediction AS TEXT), CAST(c.expected AS TEXT) "
        "FROM runs r INDEXED BY runs_results JOIN cases c ON c.dataset_id = ? AND c.idx = r.case_idx "
        f"WHERE r.experiment_id = ? AND r.arm_id = ? AND r.state IN {_FINISHED} AND r.state = '{RunState.FAIL}' "
        "AND r.failure_type IS NULL AND r.passed IS NOT NULL ORDER BY r.case_idx",
        (exp.dataset_id, exp_id, arm_id),
    )
    try:
        while rows := cursor.fetchmany(chunk):
            for r in rows:
                yield WrongAnswer(int(r[0]), r[1], r[2], r[3])
    finally:
        cursor.close()


def runs_facts(store: Store, exp_id: int) -> RunsProvenance:
    """`store.analysis.runs_provenance` in one pass over the runs instead of three, for a page's provenance.

    The dates, the people and the models seen come from one scan (distinct values gathered as JSON
    arrays; an arm id leads each model, so a model's name never needs escaping), the cases from the
    (experiment, case) index, and each grader's first current grade from the grades' (experiment,
    grader) index, read in id order and stopped at the first.
    """
    import json

    cases = store.query_one("SELECT COUNT(DISTINCT case_idx) FROM runs WHERE experiment_id = ?", (exp_id,))
    scan = store.query_one(
        "SELECT MIN(NULLIF(started_at, '')), MAX(COALESCE(NULLIF(finished_at, ''), NULLIF(executed_at, ''))), "
        "json_group_array(DISTINCT CASE WHEN started_by != '' THEN started_by END), "
        "json_group_array(DISTINCT CASE WHEN executed_at IS NOT NULL AND model != '' "
        "THEN CAST(arm_id AS TEXT) || ':' || model END) FROM runs WHERE experiment_id = ?",
        (exp_id,),
    )
    assert cases is not None and scan is not None  # an aggregate without GROUP BY always has its row
    first, last, people, models = scan
    arms = {a.id: a.name for a in store.experiments.get(exp_id).arms}
    seen: dict[str, list[str]] = {}
    for pair in filter(None, json.loads(models)):
        arm_id, _, model = pair.partition(":")
        seen.setdefault(arms[int(arm_id)], []).append(model)
    graders = []
    for (name,) in store.query("SELECT DISTINCT grader FROM grades WHERE experiment_id = ?", (exp_id,)):
        row = store.query_one(
            "SELECT id, kind FROM latest_grades WHERE experiment_id = ? AND grader = ? ORDER BY id LIMIT 1",
            (exp_id, name),
        )
        if row is not None:
            graders.append((row[0], name, row[1]))
    judges = store.query(
        "SELECT DISTINCT judge_model FROM latest_grades WHERE experiment_id = ? AND judge_model IS NOT NULL "
        "AND judge_model != ''",
        (exp_id,),
    )
    return RunsProvenance(
        n_cases=int(cases[0]),
        first_started=first,
        last_finished=last,
        run_by=tuple(sorted(filter(None, json.loads(people)))),
        models_seen={arm: tuple(sorted(m)) for arm, m in seen.items()},
        graders=tuple((name, kind) for _, name, kind in sorted(graders)),
        judge_models=tuple(sorted(r[0] for r in judges)),
    )
