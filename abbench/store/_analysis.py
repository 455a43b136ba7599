"""Store methods the analysis packages read with (metrics, compare, review): named queries, no SQL outside."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from abbench.store._base import loads
from abbench.store._noun import Noun
from abbench.types import RunState

_CHUNK = 500
"""Positions per ``IN (...)`` list: well under SQLite's limit on bound parameters."""

_GRADED = (RunState.PASS, RunState.FAIL)

_CASE_COLUMNS = (
    "idx, case_id, input, expected, domain, history, context, request_id, metadata, source_row, source_line"
)
_RUN_COLUMNS = (
    "id, arm_id, case_idx, round, state, failure_type, error, prediction, reason, confidence, passed, score, "
    "evidence_refs, files_read, sections_read, transcript_summary, transcript_path, cost, latency_ms, "
    "input_tokens, output_tokens"
)
"""The columns of store.analysis.case_rows` and store.analysis.run_rows`, in their order."""

EXPORT_RUN_COLUMNS = (
    "r.id, r.round, r.case_idx, c.case_id, c.input, c.expected, c.domain, c.request_id, c.history, "
    "c.context, c.metadata, r.state, r.failure_type, r.error, r.passed, r.score, r.prediction, r.reason, "
    "r.confidence, r.evidence_refs, r.files_read, r.sections_read, r.model, r.input_tokens, "
    "r.output_tokens, r.cost, r.cached_calls, r.cost_saved, r.latency_ms, r.attempts, r.session_id, "
    "r.started_by, r.started_at, r.executed_at, r.finished_at, r.raw_output, c.source_line, c.source_row, "
    "r.transcript_summary, r.skills_offered, r.skills_loaded, r.first_load_turn"
)
"""The columns of store.analysis.export_rows`, after the arm's name that leads each row."""


@dataclass(frozen=True)
class RunsProvenance:
    """What an experiment's runs say about where its results come from, aggregated in SQL.

    Attributes:
        n_cases: Distinct cases with a run.
        first_started: The earliest start of an execution (ISO-8601 UTC), or None.
        last_finished: The latest end of a run (its grading, else its execution), or None.
        run_by: Who started runs, sorted.
        models_seen: Arm name -> the models its executions reported, sorted.
        graders: (grader, kind) of each grader with a latest grade, in the order of its first grade.
        judge_models: The judge models of the latest grades, sorted.
    """

    n_cases: int
    first_started: str | None
    last_finished: str | None
    run_by: tuple[str, ...]
    models_seen: dict[str, tuple[str, ...]]
    graders: tuple[tuple[str, str], ...]
    judge_models: tuple[str, ...]


def _marks(n: int) -> str:
    return ",".join("?" * n)


class Analysis(Noun):
    """The reads behind metrics, comparisons and reviews (part of ``store.analysis``)."""

    # -- datasets and cases ---------------------------------------------------------------------------

    def dataset_label_settings(self, dataset_id: int) -> tuple[Any, Any] | None:
        """A dataset's declared label set and label value map (each None when unset); None: no dataset."""
        row = self._store.query_one("SELECT label_set, label_map FROM datasets WHERE id=?", (dataset_id,))
        if row is None:
            return None
        return (loads(row[0]) if row[0] else None, loads(row[1]) if row[1] else None)

    def runs_provenance(self, exp_id: int) -> RunsProvenance:
        """Dates, people, models and graders of an experiment's runs, without loading a run or a grade."""
        row = self._store.query_one(
            "SELECT COUNT(DISTINCT case_idx), MIN(NULLIF(started_at, '')), "
            "MAX(COALESCE(NULLIF(finished_at, ''), NULLIF(executed_at, ''))) FROM runs WHERE experiment_id=?",
            (exp_id,),
        )
        n_cases, first, last = (0, None, None) if row is None else (int(row[0]), row[1], row[2])
        people = self._store.query(
            "SELECT DISTINCT started_by FROM runs WHERE experiment_id=? AND started_by IS NOT NULL "
            "AND started_by != ''",
            (exp_id,),
        )
        models: dict[str, list[str]] = {}
        for arm, model in self._store.query(
            "SELECT DISTINCT a.name, r.model FROM runs r JOIN arms a ON a.id = r.arm_id WHERE r.experiment_id=? "
            "AND r.executed_at IS NOT NULL AND r.model IS NOT NULL AND r.model != ''",
            (exp_id,),
        ):
            models.setdefault(arm, []).append(model)
        graders = self._store.query(
            "SELECT grader, kind, MIN(id) FROM latest_grades WHERE experiment_id=? GROUP BY grader ORDER BY MIN(id)",
            (exp_id,),
        )
        judges = self._store.query(
            "SELECT DISTINCT judge_model FROM latest_grades WHERE experiment_id=? AND judge_model IS NOT NULL "
            "AND judge_model != ''",
            (exp_id,),
        )
        return RunsProvenance(
            n_cases=n_cases,
            first_started=first,
            last_finished=last,
            run_by=tuple(sorted(r[0] for r in people)),
            models_seen={arm: tuple(sorted(m)) for arm, m in models.items()},
            graders=tuple((r[0], r[1]) for r in graders),
            judge_models=tuple(sorted(r[0] for r in judges)),
        )

    def case_position(self, exp_id: int, case_id: str) -> int | None:
        """The dataset position of the case `case_id` among an experiment's runs (None: it has no run)."""
        row = self._store.query_one(
            "SELECT case_idx FROM runs WHERE experiment_id=? AND case_id=? LIMIT 1", (exp_id, case_id)
        )
        return None if row is None else int(row[0])

    def case_rows(self, dataset_id: int, positions: Sequence[int]) -> list[sqlite3.Row]:
        """The cases at `positions` of a dataset, with the columns of ``_CASE_COLUMNS``."""
        rows: list[sqlite3.Row] = []
        for start in range(0, len(positions), _CHUNK):
            chunk = list(positions[start : start + _CHUNK])
            rows += self._store.query(
                f"SELECT {_CASE_COLUMNS} FROM cases WHERE dataset_id=? AND idx IN ({_marks(len(chunk))})",
                (dataset_id, *chunk),
            )
        return rows

    # -- runs -----------------------------------------------------------------------------------------

    def run_rows(self, exp_id: int, positions: Sequence[int]) -> list[sqlite3.Row]:
        """Every run of the cases at `positions`, with the columns of ``_RUN_COLUMNS``, by case, arm, round."""
        rows: list[sqlite3.Row] = []
        for start in range(0, len(positions), _CHUNK):
            chunk = list(positions[start : start + _CHUNK])
            # INDEXED BY: for one position, without statistics, SQLite picks the (experiment, arm, case,
            # round) unique index to save a sort and reads every run of the experiment (0.1 s at 600,000)
            rows += self._store.query(
                f"SELECT {_RUN_COLUMNS} FROM runs INDEXED BY runs_experiment_case WHERE experiment_id=? "
                f"AND case_idx IN ({_marks(len(chunk))}) ORDER BY case_idx, arm_id, round",
                (exp_id, *chunk),
            )
        return rows

    def case_run_ids(self, exp_id: int, case_id: str, arm: str) -> list[int]:
        """The runs (every round) of one case in the arm called `arm`."""
        rows = self._store.query(
            "SELECT r.id FROM runs r JOIN arms a ON a.id = r.arm_id WHERE r.experiment_id=? AND r.case_id=? "
            "AND a.name=?",
            (exp_id, case_id, arm),
        )
        return [int(r[0]) for r in rows]

    def run_verdict(self, run_id: int) -> bool | None:
        """A graded run's verdict (None: not graded, or graded without a pass/fail verdict)."""
        row = self._store.query_one(
            f"SELECT passed FROM runs WHERE id=? AND state IN ({_marks(len(_GRADED))})", (run_id, *_GRADED)
        )
        return None if row is None or row[0] is None else bool(row[0])

    def graded_scores(self, exp_id: int, arm_id: int) -> list[tuple[int, float]]:
        """``(case position, score)`` of an arm's graded runs that carry a score, by case and round: runs
        graded right or wrong, and runs scored without a verdict (in pass; a grading failure is not)."""
        rows = self._store.query(
            f"SELECT case_idx, score FROM runs WHERE experiment_id=? AND arm_id=? AND state IN "
            f"({_marks(len(_GRADED))}) AND (passed IS NOT NULL OR state = '{RunState.PASS}') "
            "AND score IS NOT NULL ORDER BY case_idx, round",
            (exp_id, arm_id, *_GRADED),
        )
        return [(int(r[0]), float(r[1])) for r in rows]

    def differing_answer_cases(self, exp_a: int, arm_a: int, exp_b: int, arm_b: int) -> list[int]:
        """Case positions where some round of arm A and the same round of arm B differ in prediction,
        reason or evidence."""
        rows = self._store.query(
            "SELECT DISTINCT a.case_idx FROM runs a JOIN runs b ON b.experiment_id=? AND b.arm_id=? "
            "AND b.case_idx=a.case_idx AND b.round=a.round WHERE a.experiment_id=? AND a.arm_id=? "
            "AND (a.prediction IS NOT b.prediction OR a.reason IS NOT b.reason "
            "OR a.evidence_refs IS NOT b.evidence_refs)",
            (exp_b, arm_b, exp_a, arm_a),
        )
        return [int(r[0]) for r in rows]

    def arm_gives_text(self, exp_id: int, arm_id: int) -> bool:
        """Whether any run of an arm carries a reason or evidence references (NULL or empty reasons and
        empty reference lists aside): when neither arm of a comparison does, no reason or evidence changed."""
        row = self._store.query_one(
            "SELECT 1 FROM runs WHERE experiment_id=? AND arm_id=? AND ((reason IS NOT NULL AND reason != '') "
            "OR (evidence_refs IS NOT NULL AND evidence_refs NOT IN ('', '[]', 'null'))) LIMIT 1",
            (exp_id, arm_id),
        )
        return row is not None

    def answered_runs(
        self, exp_id: int, arm_id: int, positions: Sequence[int] | None = None
    ) -> list[tuple[Any, ...]]:
        """``(case position, round, prediction, reason, evidence_refs)`` of an arm's runs that gave an answer
        (executed, no execution failure), of every case or of the cases at `positions`, by case and round."""
        sql = (
            "SELECT case_idx, round, prediction, reason, evidence_refs FROM runs WHERE experiment_id=? "
            "AND arm_id=? AND executed_at IS NOT NULL AND NOT (state=? AND failure_type IS NOT NULL)"
        )
        params: tuple[Any, ...] = (exp_id, arm_id, RunState.FAIL)
        if positions is None:
            return [tuple(r) for r in self._store.query(sql + " ORDER BY case_idx, round", params)]
        rows: list[tuple[Any, ...]] = []
        for start in range(0, len(positions), _CHUNK):
            chunk = list(positions[start : start + _CHUNK])
            rows += [
                tuple(r)
                for r in self._store.query(
                    sql + f" AND case_idx IN ({_marks(len(chunk))}) ORDER BY case_idx, round",
                    (*params, *chunk),
                )
            ]
        return rows

    # -- grades ---------------------------------------------------------------------------------------

    def has_scores(self, exp_id: int, grader: str | None = None) -> bool:
        """Whether any pointwise grader of the experiment (`grader`, when given) returned a score."""
        row = self._store.query_one(
            "SELECT 1 FROM grades WHERE experiment_id=? AND status='ok' AND score IS NOT NULL "
            "AND other_run_id IS NULL" + (" AND grader=?" if grader is not None else "") + " LIMIT 1",
            (exp_id,) if grader is None else (exp_id, grader),
        )
        return row is not None

    def grader_kinds(self, exp_id: int) -> dict[str, str]:
        """The graders that graded the experiment and their kinds (``rule``, ``judge``, ``pairwise``)."""
        # The names walked in the grades_experiment index (experiment, grader), each found by seeking the
        # first one above the last: a few seeks, not a pass over every grade.
        names = [
            r[0]
            for r in self._store.query(
                "WITH RECURSIVE g(name) AS (SELECT min(grader) FROM grades WHERE experiment_id=:e UNION ALL "
                "SELECT (SELECT min(grader) FROM grades WHERE experiment_id=:e AND grader > g.name) FROM g "
                "WHERE g.name IS NOT NULL) SELECT name FROM g WHERE name IS NOT NULL",
                {"e": exp_id},
            )
        ]
        kinds: dict[str, str] = {}
        for name in names:
            row = self._store.query_one(
                "SELECT kind FROM grades WHERE experiment_id=? AND grader=? LIMIT 1", (exp_id, name)
            )
            if row is not None:
                kinds[name] = row[0]
        return kinds

    def judge_cost_by_arm(self, exp_id: int) -> dict[int, float | None]:
        """Arm id -> what pointwise graders spent judging its runs (every grade, re-grades included); None
        when a judge call had no price (its cost is unknown, so the sum is too — never the others' sum)."""
        rows = self._store.query(
            "SELECT r.arm_id, total(g.judge_cost), SUM(g.judge_model IS NOT NULL AND g.judge_cost IS NULL) "
            "FROM grades g JOIN runs r ON r.id = g.run_id "
            "WHERE g.experiment_id=? AND g.kind != 'pairwise' AND g.other_run_id IS NULL GROUP BY r.arm_id",
            (exp_id,),
        )
        return {int(r[0]): None if r[2] else float(r[1]) for r in rows}

    def graded_arm_ids(self, exp_id: int) -> list[tuple[str, int]]:
        """``(grader, arm id)`` for each arm whose runs a grader graded (either run of a pair)."""
        rows = self._store.query(
            "SELECT DISTINCT g.grader, r.arm_id FROM grades g JOIN runs r ON r.id = g.run_id "
            "WHERE g.experiment_id=? UNION SELECT DISTINCT g.grader, r.arm_id FROM grades g "
            "JOIN runs r ON r.id = g.other_run_id WHERE g.experiment_id=?",
            (exp_id, exp_id),
        )
        return [(str(r[0]), int(r[1])) for r in rows]

    def latest_ok_verdict(self, run_id: int, grader: str) -> bool | None:
        """The verdict of a grader's latest successful pointwise grade of a run (None: none, or no verdict)."""
        row = self._store.query_one(
            "SELECT passed FROM grades WHERE run_id=? AND grader=? AND status='ok' AND other_run_id IS NULL "
            "ORDER BY id DESC LIMIT 1",
            (run_id, grader),
        )
        return None if row is None or row[0] is None else bool(row[0])

    # -- reviews --------------------------------------------------------------------------------------

    def has_reviews(self, exp_id: int) -> bool:
        """Whether anyone reviewed a case of the experiment."""
        return (
            self._store.query_one("SELECT 1 FROM reviews WHERE experiment_id=? LIMIT 1", (exp_id,))
            is not None
        )

    def delete_latest(self, review_id: int, exp_id: int, case_id: str, arm: str | None) -> bool:
        """Delete review `review_id` unless a later review of the same (case, arm) exists; whether it went.

        The condition is checked inside the write, so a review added meanwhile by another process wins.
        """
        with self._store.transaction() as conn:
            gone = conn.execute(
                "DELETE FROM reviews WHERE id=? AND NOT EXISTS (SELECT 1 FROM reviews WHERE experiment_id=? "
                "AND case_id=? AND COALESCE(arm, '')=COALESCE(?, '') AND id>?)",
                (review_id, exp_id, case_id, arm, review_id),
            ).rowcount
        return bool(gone)

    # -- exports --------------------------------------------------------------------------------------

    def export_rows(
        self, exp_id: int, dataset_id: int, graders: Sequence[str], *, chunk: int = 5000
    ) -> Iterator[list[tuple[Any, ...]]]:
        """An experiment's runs joined with their cases and latest grades, in chunks of plain tuples, in
        arm, round, case order (what a runs export lists): the columns of `EXPORT_RUN_COLUMNS`, then
        per grader of `graders` (each a non-pairwise grader) its latest grade's status, passed, score.

        Each arm and round is one query read as it goes along the (experiment, arm, case, round) index,
        so nothing is sorted and memory holds one chunk however many runs there are. Values are as
        stored: JSON columns as their text, `passed` as 0/1.
        """
        grade_cols = "".join(f", g{i}.status, g{i}.passed, g{i}.score" for i in range(len(graders)))
        grade_joins = latest_grade_joins(len(graders))
        sql = (
            f"SELECT ?, {EXPORT_RUN_COLUMNS}{grade_cols} FROM runs r "
            "LEFT JOIN cases c ON c.dataset_id = ? AND c.idx = r.case_idx"
            f"{grade_joins} WHERE r.experiment_id = ? AND r.arm_id = ? AND r.round = ? ORDER BY r.case_idx"
        )
        for arm_id, arm, rnd in arm_rounds(self._store.conn, exp_id):
            cursor = self._store.conn.cursor()
            cursor.row_factory = None  # plain tuples: sqlite3.Row costs time on big reads
            cursor.execute(sql, (arm, dataset_id, *graders, exp_id, arm_id, rnd))
            while rows := cursor.fetchmany(chunk):
                yield rows


def arm_rounds(conn: sqlite3.Connection, exp_id: int) -> list[tuple[int, str, int]]:
    """``(arm id, arm name, round)`` of every arm in every round the experiment has runs in, in export
    order: arms by position, then rounds."""
    plan = conn.execute(
        "SELECT a.id, a.name, (SELECT group_concat(DISTINCT round) FROM runs WHERE experiment_id = ?) "
        "FROM arms a WHERE a.experiment_id = ? ORDER BY a.position",
        (exp_id, exp_id),
    ).fetchall()
    return [
        (arm_id, arm, rnd)
        for arm_id, arm, rounds in plan
        for rnd in sorted(int(x) for x in (rounds or "").split(",") if x)
    ]


def latest_grade_joins(n: int) -> str:
    """SQL joining `n` graders' latest grades of run ``r`` as ``g0`` … (each join takes the grader's name
    as its parameter, in order)."""
    return "".join(
        f" LEFT JOIN grades g{i} ON g{i}.id = (SELECT MAX(id) FROM grades WHERE run_id = r.id AND grader = ?)"
        for i in range(n)
    )
