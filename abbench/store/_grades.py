"""Grades: appended, never overwritten; the latest per (run, other run, grader) is the one shown.

The rule "latest" is defined once, as the ``latest_grades`` view (schema migration 7): a grade is
current when no grade of the same grader on the same run (and the same second run, for a pairwise
grader) was written after it. Every reader below that shows current grades reads that view.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from abbench.store._base import loads
from abbench.store._noun import Noun


@dataclass(frozen=True, slots=True)
class Grade:
    """One stored grade: a row of the ``grades`` table, with JSON and booleans decoded.

    Attributes:
        id: The grade's id (grades are appended: a higher id is a later grade).
        experiment_id: The experiment graded.
        batch_id: The experiment's grade batch.
        run_id: The run graded (the first run of a pair, for a pairwise grader).
        other_run_id: The second run of a pair; None for a pointwise grader.
        grader: The grader's name.
        kind: ``rule``, ``judge`` or ``pairwise``.
        status: ``ok``, or ``error`` when the grader could not reach a verdict.
        passed: The verdict; None when the grader gives a score only (or failed).
        score: The score, when the grader gives one.
        verdict: A pairwise verdict: ``a``, ``b`` or ``tie``.
        dimensions: A judge's score per dimension.
        comment: The grader's explanation.
        raw_output: A judge's raw reply.
        error: Why grading failed (status ``error``).
        retryable: Whether a failed grade may succeed when tried again.
        judge_model: The model a judge called.
        judge_cost: What the judge calls cost (None when unknown).
        input_tokens: Judge prompt tokens.
        output_tokens: Judge completion tokens.
        details: Seed, slot order, both-order verdicts and the like.
        created_at: When it was written (ISO-8601, UTC).
        run_attempt: The run's execution the grade judged (its ``attempts`` then).
        other_run_attempt: The same for the second run of a pair.
        cached: Whether every judge reply came from the response cache.
        cost_saved: What the cached replies would have cost.
    """

    id: int
    experiment_id: int
    batch_id: str
    run_id: int
    other_run_id: int | None
    grader: str
    kind: str
    status: str
    passed: bool | None
    score: float | None
    verdict: str | None
    dimensions: dict[str, Any] | None
    comment: str | None
    raw_output: str | None
    error: str | None
    retryable: bool | None
    judge_model: str | None
    judge_cost: float | None
    input_tokens: int | None
    output_tokens: int | None
    details: dict[str, Any] | None
    created_at: str
    run_attempt: int | None
    other_run_attempt: int | None
    cached: bool
    cost_saved: float | None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Grade:
        """The grade of a row selected as `GRADE_COLUMNS` (SQLite integers become booleans, JSON is read)."""
        g = dict(zip(GRADE_COLUMNS, row, strict=True))
        g["passed"] = _bool(g["passed"])
        g["retryable"] = _bool(g["retryable"])
        g["cached"] = bool(g["cached"])
        g["dimensions"] = loads(g["dimensions"])
        g["details"] = loads(g["details"])
        return cls(**g)

    def as_dict(self) -> dict[str, Any]:
        """The grade as a plain dict, fields in column order (for JSON)."""
        return asdict(self)


GRADE_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Grade))
"""The columns of the ``grades`` table, in the order of `Grade`'s fields (``id`` first)."""

_SELECT = ", ".join(GRADE_COLUMNS)


def _bool(value: int | None) -> bool | None:
    return None if value is None else bool(value)


class GradeRecords(Noun):
    """Reading grades (part of ``store.grades``; the runner's writer appends them)."""

    def latest(self, run_id: int) -> dict[str, Grade]:
        """The latest grade of each grader on one run: ``{grader: grade}``."""
        rows = self._store.conn.execute(
            f"SELECT {_SELECT} FROM latest_grades WHERE run_id=? ORDER BY grader, id", (run_id,)
        ).fetchall()
        return {g.grader: g for g in map(Grade.from_row, rows)}

    def history(self, run_id: int, grader: str | None = None) -> list[Grade]:
        """Every grade of a run (of one grader when given), oldest first — older grades stay readable."""
        sql = f"SELECT {_SELECT} FROM grades WHERE run_id=?"
        params: list[Any] = [run_id]
        if grader:
            sql += " AND grader=?"
            params.append(grader)
        return [Grade.from_row(r) for r in self._store.conn.execute(sql + " ORDER BY id", params)]

    def records(
        self, exp_id: int, *, grader: str | None = None, latest: bool = True, kind: str | None = None
    ) -> list[Grade]:
        """Grades of an experiment, oldest first: the latest per (run, other run, grader) by default, else
        all; only `grader`'s, or only those of graders of `kind` (``rule``, ``judge``, ``pairwise``)."""
        table = "latest_grades" if latest else "grades"
        sql = f"SELECT {_SELECT} FROM {table} WHERE experiment_id=?"
        params: list[Any] = [exp_id]
        if grader:
            sql += " AND grader=?"
            params.append(grader)
        if kind:
            sql += " AND kind=?"
            params.append(kind)
        return [Grade.from_row(r) for r in self._store.conn.execute(sql + " ORDER BY id", params)]

    def iter_records(self, exp_id: int, *, chunk: int = 2000) -> Iterator[list[Grade]]:
        """Every grade of an experiment (old ones included), oldest first, in chunks of `chunk`."""
        cursor = self._store.conn.execute(
            f"SELECT {_SELECT} FROM grades WHERE experiment_id=? ORDER BY id", (exp_id,)
        )
        while rows := cursor.fetchmany(chunk):
            yield [Grade.from_row(r) for r in rows]

    def latest_ids(self, exp_id: int) -> set[int]:
        """The ids of an experiment's latest grades (one per run, other run and grader)."""
        rows = self._store.conn.execute("SELECT id FROM latest_grades WHERE experiment_id=?", (exp_id,))
        return {r[0] for r in rows}

    def latest_of_runs(
        self, exp_id: int, run_ids: Sequence[int], *, pairwise: Sequence[str] = ()
    ) -> list[Grade]:
        """The latest grades of an experiment on `run_ids`, by id; with `pairwise` grader names, also their
        grades whose second run is one of them.

        The first lookup goes through the (run, grader) index, so it costs the same whatever the
        experiment's size; the second searches those graders' grades (no index serves a second run).
        """
        if not run_ids:
            return []
        marks = ",".join("?" * len(run_ids))
        # `+experiment_id`: keep SQLite on the run index rather than scanning the experiment's grades
        sql = f"SELECT {_SELECT} FROM latest_grades WHERE +experiment_id=? AND run_id IN ({marks})"
        grades = [Grade.from_row(r) for r in self._store.conn.execute(sql, (exp_id, *run_ids))]
        if pairwise:
            sql = (
                f"SELECT {_SELECT} FROM latest_grades WHERE experiment_id=? AND grader IN "
                f"({','.join('?' * len(pairwise))}) AND other_run_id IN ({marks}) AND run_id NOT IN ({marks})"
            )
            params = (exp_id, *pairwise, *run_ids, *run_ids)
            grades += [Grade.from_row(r) for r in self._store.conn.execute(sql, params)]
        return sorted(grades, key=lambda g: g.id)

    def latest_fields_of_runs(
        self, exp_id: int, run_ids: Sequence[int], columns: Sequence[str]
    ) -> list[tuple[Any, ...]]:
        """``(run_id, other_run_id, grader, *fields)`` of the grades `latest_grades_of_runs` gives (without
        pairwise names), by id, as stored: the rows an export makes plain dicts of, without a `Grade`
        each. `columns` are names of `GRADE_COLUMNS`."""
        if not run_ids:
            return []
        unknown = set(columns) - set(GRADE_COLUMNS)
        if unknown:
            raise ValueError(f"not grade columns: {sorted(unknown)}")
        marks = ",".join("?" * len(run_ids))
        cursor = self._store.conn.cursor()
        cursor.row_factory = None  # plain tuples
        return cursor.execute(
            f"SELECT run_id, other_run_id, grader, {', '.join(columns)} FROM latest_grades "
            f"WHERE +experiment_id=? AND run_id IN ({marks}) ORDER BY id",
            (exp_id, *run_ids),
        ).fetchall()

    def summary(self, exp_id: int) -> list[tuple[str, str, int, int]]:
        """Each grader of an experiment's latest grades, in the order of its first one: ``(grader, kind
        of that first grade, whether any is successful, whether any successful one has a pass/fail
        verdict)``, the two flags 1 or 0.

        Every question is a seek along the (experiment, grader) index that stops at the first grade
        answering it (every export asks them: a pass over 600,000 latest grades took 0.45 s); only a
        grader none of whose latest grades answers one is read whole for it.
        """
        conn = self._store.conn
        names: list[str] = []
        (name,) = conn.execute("SELECT min(grader) FROM grades WHERE experiment_id=?", (exp_id,)).fetchone()
        while name is not None:
            names.append(name)
            (name,) = conn.execute(
                "SELECT min(grader) FROM grades WHERE experiment_id=? AND grader > ?", (exp_id, name)
            ).fetchone()
        found = []
        for name in names:
            first = conn.execute(
                "SELECT id, kind FROM latest_grades WHERE experiment_id=? AND grader=? ORDER BY id LIMIT 1",
                (exp_id, name),
            ).fetchone()
            if first is None:
                continue
            ok, verdict = (
                conn.execute(
                    f"SELECT EXISTS (SELECT 1 FROM latest_grades WHERE experiment_id=? AND grader=? AND {cond})",
                    (exp_id, name),
                ).fetchone()[0]
                for cond in ("status = 'ok'", "status = 'ok' AND passed IS NOT NULL")
            )
            found.append((first[0], name, first[1], ok, verdict))
        return [(name, kind, ok, verdict) for _, name, kind, ok, verdict in sorted(found)]

    def pairwise_verdicts(self, exp_id: int) -> list[tuple[str, str | None, int, int]]:
        """The latest successful pairwise verdicts of an experiment: ``(grader, verdict, arm id, other arm id)``.

        The arms are those of the grade's first and second run (the grade's ``a`` is its first run).
        """
        rows = self._store.conn.execute(
            "SELECT g.grader, g.verdict, ra.arm_id, rb.arm_id FROM latest_grades g "
            "JOIN runs ra ON ra.id = g.run_id JOIN runs rb ON rb.id = g.other_run_id "
            "WHERE g.experiment_id=? AND g.kind='pairwise' AND g.status='ok'",
            (exp_id,),
        ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def has_verdicts(self, exp_id: int, grader: str | None = None) -> bool:
        """Whether any grader of the experiment (`grader`, when given) returned a pass/fail verdict (not
        only a score)."""
        row = self._store.conn.execute(
            "SELECT 1 FROM grades WHERE experiment_id=? AND status='ok' AND passed IS NOT NULL "
            "AND other_run_id IS NULL" + (" AND grader=?" if grader is not None else "") + " LIMIT 1",
            (exp_id,) if grader is None else (exp_id, grader),
        ).fetchone()
        return row is not None

    def table(self, exp_id: int, *, kinds: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The latest grade of each (run, grader) with its run's arm, case and round.

        Args:
            exp_id: The experiment's id.
            kinds: Only graders of these kinds (``rule``, ``judge``, ``pairwise``).
        """
        where = "g.experiment_id=?"
        params: list[Any] = [exp_id]
        if kinds:
            where += " AND g.kind IN ({})".format(",".join("?" * len(kinds)))
            params.extend(kinds)
        rows = self._store.conn.execute(
            "SELECT g.run_id, g.other_run_id, g.grader, g.kind, g.status, g.passed, g.score, g.verdict, "
            "g.dimensions, g.judge_cost, g.details, r.arm_id, r.case_idx, r.round "
            f"FROM latest_grades g JOIN runs r ON r.id = g.run_id WHERE {where} ORDER BY g.id",
            params,
        ).fetchall()
        return [
            {
                "run_id": r[0],
                "other_run_id": r[1],
                "grader": r[2],
                "kind": r[3],
                "status": r[4],
                "passed": _bool(r[5]),
                "score": r[6],
                "verdict": r[7],
                "dimensions": json.loads(r[8]) if r[8] else None,
                "judge_cost": r[9],
                "details": json.loads(r[10]) if r[10] else None,
                "arm_id": r[11],
                "case_idx": r[12],
                "round": r[13],
            }
            for r in rows
        ]

    def batches(self, exp_id: int) -> list[str]:
        """The distinct batch ids of an experiment's grades (one, by design)."""
        rows = self._store.conn.execute(
            "SELECT DISTINCT batch_id FROM grades WHERE experiment_id=?", (exp_id,)
        )
        return [r[0] for r in rows]

    def judge_usage(self, exp_id: int) -> list[dict[str, Any]]:
        """What each grader of an experiment spent, over every grade it wrote (re-grades included).

        One row per (grader, kind): ``grades``, ``errors``, ``models`` (the judge models seen),
        ``cost`` (the sum of known costs), ``unknown_cost`` (judge calls without a price), and
        ``input_tokens`` / ``output_tokens`` (spent), ``cached`` (grades whose judge replies all came
        from the response cache) and ``cost_saved`` (what those would have cost).
        """
        rows = self._store.conn.execute(
            "SELECT grader, kind, COUNT(*), SUM(status='error'), GROUP_CONCAT(DISTINCT judge_model), "
            "COALESCE(SUM(judge_cost), 0), SUM(judge_model IS NOT NULL AND judge_cost IS NULL), "
            "COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), TOTAL(cached), "
            "TOTAL(cost_saved) "
            "FROM grades WHERE experiment_id=? GROUP BY grader, kind ORDER BY MIN(id)",
            (exp_id,),
        ).fetchall()
        return [
            {
                "grader": r[0],
                "kind": r[1],
                "grades": r[2],
                "errors": r[3] or 0,
                "models": sorted((r[4] or "").split(",")) if r[4] else [],
                "cost": float(r[5]),
                "unknown_cost": r[6] or 0,
                "input_tokens": int(r[7]),
                "output_tokens": int(r[8]),
                "cached": int(r[9]),
                "cost_saved": float(r[10]),
            }
            for r in rows
        ]
