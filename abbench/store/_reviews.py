"""Store methods for reviews: appended, never overwritten; the latest per (experiment, case, arm) is shown."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from abbench.errors import NotFoundError, UsageError
from abbench.store._base import StoreBase, current_user, inserted_id, now_iso
from abbench.types import REVIEW_VERDICTS


@dataclass(frozen=True)
class Review:
    """A person's verdict on a case (of one arm, or of the case as a whole).

    Attributes:
        id: The review's id (later reviews have larger ids).
        experiment_id: The experiment.
        case_id: The case.
        arm: The arm the verdict is about, or None for the case as a whole.
        run_id: The run looked at, when one was named.
        verdict: One of `abbench.types.REVIEW_VERDICTS`.
        note: The reviewer's note.
        reviewer: Who reviewed.
        created_at: When (UTC, ISO-8601).
    """

    id: int
    experiment_id: int
    case_id: str
    arm: str | None
    run_id: int | None
    verdict: str
    note: str | None
    reviewer: str | None
    created_at: str

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "id": self.id,
            "experiment_id": self.experiment_id,
            "case_id": self.case_id,
            "arm": self.arm,
            "run_id": self.run_id,
            "verdict": self.verdict,
            "note": self.note,
            "reviewer": self.reviewer,
            "created_at": self.created_at,
        }


_REVIEW_COLUMNS = "id, experiment_id, case_id, arm, run_id, verdict, note, reviewer, created_at"


class ReviewsMixin(StoreBase):
    """Reading and writing reviews; mixed into `Store`."""

    def insert_review(
        self,
        exp_id: int,
        case_id: str,
        verdict: str,
        *,
        note: str | None = None,
        arm: str | None = None,
        run_id: int | None = None,
        reviewer: str | None = None,
    ) -> Review:
        """Append a review after checking the verdict, the case, the arm and the run belong together.

        Raises:
            UsageError: the verdict is not one of `REVIEW_VERDICTS` (the message lists them), or the run
                is not of this case and arm.
            NotFoundError: the experiment has no such case, arm or run (the message names close ones).
        """
        verdict = str(verdict).strip()
        if verdict not in REVIEW_VERDICTS:
            close = difflib.get_close_matches(verdict, REVIEW_VERDICTS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UsageError(
                f"unknown review verdict {verdict!r}{hint}; choose one of {', '.join(REVIEW_VERDICTS)}"
            )
        case_id = str(case_id)
        exists = self.query_one(
            "SELECT 1 FROM runs WHERE experiment_id=? AND case_id=? LIMIT 1", (exp_id, case_id)
        )
        if exists is None:
            ids = [
                r[0]
                for r in self.query(
                    "SELECT DISTINCT case_id FROM runs WHERE experiment_id=? AND case_id LIKE ? LIMIT 500",
                    (exp_id, case_id[:2] + "%"),
                )
            ]
            close = difflib.get_close_matches(case_id, ids, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise NotFoundError(f"experiment #{exp_id} has no case {case_id!r}{hint}")
        arm_id = None
        if arm is not None:
            row = self.query_one("SELECT id FROM arms WHERE experiment_id=? AND name=?", (exp_id, arm))
            if row is None:
                names = [
                    r[0]
                    for r in self.query(
                        "SELECT name FROM arms WHERE experiment_id=? ORDER BY position", (exp_id,)
                    )
                ]
                raise NotFoundError(f"experiment #{exp_id} has no arm {arm!r}; its arms: {', '.join(names)}")
            arm_id = row[0]
        if run_id is not None:
            row = self.query_one(
                "SELECT r.case_id, a.name, r.arm_id FROM runs r JOIN arms a ON a.id = r.arm_id "
                "WHERE r.id=? AND r.experiment_id=?",
                (int(run_id), exp_id),
            )
            if row is None:
                raise NotFoundError(f"experiment #{exp_id} has no run {run_id}")
            if row[0] != case_id:
                raise UsageError(f"run {run_id} is of case {row[0]!r}, not {case_id!r}")
            if arm_id is not None and row[2] != arm_id:
                raise UsageError(f"run {run_id} is of arm {row[1]!r}, not {arm!r}")
            arm = row[1]
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO reviews (experiment_id, case_id, arm, run_id, verdict, note, reviewer, created_at) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (exp_id, case_id, arm, run_id, verdict, note, reviewer or current_user(), now_iso()),
            )
            review_id = inserted_id(cur)
        return self.get_review(review_id)

    def get_review(self, review_id: int) -> Review:
        """One review by id.

        Raises:
            NotFoundError: no review has that id.
        """
        row = self.query_one(f"SELECT {_REVIEW_COLUMNS} FROM reviews WHERE id=?", (review_id,))
        if row is None:
            raise NotFoundError(f"no review {review_id}")
        return Review(*row)

    def list_reviews(
        self,
        exp_id: int,
        *,
        latest: bool = True,
        case_id: str | None = None,
        arm: str | None = None,
    ) -> list[Review]:
        """Reviews of an experiment, oldest first: by default only the latest per (case, arm).

        A review of the case as a whole (no arm) is its own (case, arm) key.

        Args:
            exp_id: The experiment.
            latest: Only the latest per (case, arm); False gives the whole history.
            case_id: Only this case.
            arm: Only this arm.
        """
        where: list[str] = ["experiment_id=?"]
        params: list[Any] = [exp_id]
        if case_id is not None:
            where.append("case_id=?")
            params.append(str(case_id))
        if arm is not None:
            where.append("arm=?")
            params.append(arm)
        condition = " AND ".join(where)
        if latest:
            sql = (
                f"SELECT {_REVIEW_COLUMNS} FROM reviews WHERE id IN (SELECT MAX(id) FROM reviews WHERE "
                f"{condition} GROUP BY case_id, COALESCE(arm, '')) ORDER BY id"
            )
        else:
            sql = f"SELECT {_REVIEW_COLUMNS} FROM reviews WHERE {condition} ORDER BY id"
        return [Review(*r) for r in self.query(sql, params)]
