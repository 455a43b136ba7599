"""Store methods for grades: appended, never overwritten; the latest per (run, grader) is the one shown."""

from __future__ import annotations

from typing import Any

from abbench.store._base import loads

_GRADE_FIELDS = (
    "id, experiment_id, batch_id, run_id, other_run_id, grader, kind, status, passed, score, verdict, dimensions, "
    "comment, raw_output, error, retryable, judge_model, judge_cost, input_tokens, output_tokens, details, created_at, "
    "run_attempt, other_run_attempt, cached, cost_saved"
)


def _grade_row(r) -> dict[str, Any]:
    d = dict(zip([c.strip() for c in _GRADE_FIELDS.split(",")], r, strict=True))
    d["passed"] = None if d["passed"] is None else bool(d["passed"])
    d["retryable"] = None if d["retryable"] is None else bool(d["retryable"])
    d["cached"] = bool(d["cached"])
    d["dimensions"] = loads(d["dimensions"])
    d["details"] = loads(d["details"])
    return d


class GradesMixin:
    """Reading grades; mixed into `Store` (the runner's writer appends them)."""

    def latest_grades(self, run_id: int) -> dict[str, dict[str, Any]]:
        """The latest grade of each grader on one run: ``{grader: grade}``."""
        rows = self.query(
            f"SELECT {_GRADE_FIELDS} FROM grades WHERE run_id=? AND id IN "
            "(SELECT MAX(id) FROM grades WHERE run_id=? GROUP BY grader)",
            (run_id, run_id),
        )
        return {r[5]: _grade_row(r) for r in rows}

    def grade_history(self, run_id: int, grader: str | None = None) -> list[dict[str, Any]]:
        """Every grade of a run (of one grader when given), oldest first — older grades stay readable."""
        sql = f"SELECT {_GRADE_FIELDS} FROM grades WHERE run_id=?"
        params: list[Any] = [run_id]
        if grader:
            sql += " AND grader=?"
            params.append(grader)
        return [_grade_row(r) for r in self.query(sql + " ORDER BY id", params)]

    def grades(self, exp_id: int, *, grader: str | None = None, latest: bool = True) -> list[dict[str, Any]]:
        """Grades of an experiment: the latest per (run, other run, grader) by default, else all of them."""
        where = "experiment_id=?"
        params: list[Any] = [exp_id]
        if grader:
            where += " AND grader=?"
            params.append(grader)
        if latest:
            sql = (
                f"SELECT {_GRADE_FIELDS} FROM grades WHERE id IN (SELECT MAX(id) FROM grades WHERE {where} "
                "GROUP BY run_id, COALESCE(other_run_id, 0), grader) ORDER BY id"
            )
        else:
            sql = f"SELECT {_GRADE_FIELDS} FROM grades WHERE {where} ORDER BY id"
        return [_grade_row(r) for r in self.query(sql, params)]

    def graded_pairs(self, exp_id: int, grader: str) -> set[tuple[int, int]]:
        """(run, other run) pairs a pairwise grader has already judged successfully."""
        return {
            (r[0], r[1])
            for r in self.query(
                "SELECT run_id, other_run_id FROM grades WHERE experiment_id=? AND grader=? AND status='ok' "
                "AND other_run_id IS NOT NULL",
                (exp_id, grader),
            )
        }

    def batches(self, exp_id: int) -> list[str]:
        """The distinct batch ids of an experiment's grades (one, by design)."""
        return [
            r[0] for r in self.query("SELECT DISTINCT batch_id FROM grades WHERE experiment_id=?", (exp_id,))
        ]

    def judge_usage(self, exp_id: int) -> list[dict[str, Any]]:
        """What each grader of an experiment spent, over every grade it wrote (re-grades included).

        One row per (grader, kind): ``grades``, ``errors``, ``models`` (the judge models seen),
        ``cost`` (the sum of known costs), ``unknown_cost`` (judge calls without a price), and
        ``input_tokens`` / ``output_tokens`` (spent), ``cached`` (grades whose judge replies all came
        from the response cache) and ``cost_saved`` (what those would have cost).
        """
        rows = self.query(
            "SELECT grader, kind, COUNT(*), SUM(status='error'), GROUP_CONCAT(DISTINCT judge_model), "
            "COALESCE(SUM(judge_cost), 0), SUM(judge_model IS NOT NULL AND judge_cost IS NULL), "
            "COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), TOTAL(cached), "
            "TOTAL(cost_saved) "
            "FROM grades WHERE experiment_id=? GROUP BY grader, kind ORDER BY MIN(id)",
            (exp_id,),
        )
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
