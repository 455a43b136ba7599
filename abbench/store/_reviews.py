"""Store methods for reviews: appended, never overwritten; the latest per (experiment, case, arm) is shown."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from abbench.errors import NotFoundError, UsageError
from abbench.store._base import current_user, dumps, inserted_id, loads, now_iso
from abbench.store._noun import Noun
from abbench.store._run_reader import _int_list
from abbench.store.bulk._outcomes import FINISHED_STATES
from abbench.types import REVIEW_VERDICTS

if TYPE_CHECKING:
    import numpy as np

_JUDGED_SQL = "(state='pass' OR (state='fail' AND failure_type IS NULL AND passed IS NOT NULL))"
"""A run with a verdict: graded right, or graded wrong (not an execution failure, not ungraded). Written
beside ``state IN FINISHED_STATES`` it lets SQLite read the runs from the partial ``runs_results`` index."""


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
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Review:
        """The review `as_dict` wrote (a server's answer)."""
        given: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls)}
        return cls(**given)


@dataclass(frozen=True)
class ReviewSample:
    """A seeded random sample of judged runs drawn for people to review (what PPI may use).

    Attributes:
        id: The sample's id.
        experiment_id: The experiment.
        arm: The arm drawn from, or None for every arm.
        seed: The seed it was drawn with.
        size: Runs drawn.
        population: Judged runs it was drawn from.
        run_ids: The runs drawn, in the order drawn.
        grader: The grader whose verdicts count as the judge's (None: the run's combined verdict).
        created_by: Who drew it.
        created_at: When (UTC, ISO-8601).
    """

    id: int
    experiment_id: int
    arm: str | None
    seed: int
    size: int
    population: int
    run_ids: tuple[int, ...]
    grader: str | None
    created_by: str | None
    created_at: str

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return asdict(self) | {"run_ids": list(self.run_ids)}


@dataclass(frozen=True)
class ReviewAssignment:
    """A case given to a reviewer for a blind second review (other reviewers' verdicts hidden from them).

    Attributes:
        id: The assignment's id.
        experiment_id: The experiment.
        case_id: The case.
        arm: The arm whose answer is to be reviewed, or None for the case as a whole.
        reviewer: Who is to review it.
        assigned_by: Who assigned it.
        created_at: When (UTC, ISO-8601).
    """

    id: int
    experiment_id: int
    case_id: str
    arm: str | None
    reviewer: str
    assigned_by: str | None
    created_at: str

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return asdict(self)


_ASSIGNMENT_COLUMNS = "id, experiment_id, case_id, NULLIF(arm, ''), reviewer, assigned_by, created_at"


_SAMPLE_COLUMNS = "id, experiment_id, arm, seed, size, population, run_ids, grader, created_by, created_at"


def _sample(row: Any) -> ReviewSample:
    return ReviewSample(
        row[0], row[1], row[2], row[3], row[4], row[5], tuple(loads(row[6]) or ()), row[7], row[8], row[9]
    )


_REVIEW_COLUMNS = "id, experiment_id, case_id, arm, run_id, verdict, note, reviewer, created_at"


class Reviews(Noun):
    """Reading and writing reviews (part of ``store.reviews``)."""

    def insert(
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
        exists = self._store.query_one(
            "SELECT 1 FROM runs WHERE experiment_id=? AND case_id=? LIMIT 1", (exp_id, case_id)
        )
        if exists is None:
            ids = [
                r[0]
                for r in self._store.query(
                    "SELECT DISTINCT case_id FROM runs WHERE experiment_id=? AND case_id LIKE ? LIMIT 500",
                    (exp_id, case_id[:2] + "%"),
                )
            ]
            close = difflib.get_close_matches(case_id, ids, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise NotFoundError(f"experiment #{exp_id} has no case {case_id!r}{hint}")
        arm_id = None
        if arm is not None:
            row = self._store.query_one("SELECT id FROM arms WHERE experiment_id=? AND name=?", (exp_id, arm))
            if row is None:
                names = [
                    r[0]
                    for r in self._store.query(
                        "SELECT name FROM arms WHERE experiment_id=? ORDER BY position", (exp_id,)
                    )
                ]
                raise NotFoundError.no_arm(f"#{exp_id}", arm, names)
            arm_id = row[0]
        if run_id is not None:
            row = self._store.query_one(
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
        with self._store.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO reviews (experiment_id, case_id, arm, run_id, verdict, note, reviewer, created_at) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (exp_id, case_id, arm, run_id, verdict, note, reviewer or current_user(), now_iso()),
            )
            review_id = inserted_id(cur)
        return self.get(review_id)

    def assign(self, exp_id: int, case_id: str, reviewer: str, *, arm: str | None = None) -> ReviewAssignment:
        """Give a case (of `arm`, or as a whole) to `reviewer` for a blind second review; assigning it
        again to the same reviewer returns the assignment already made.

        Raises:
            UsageError: no reviewer named.
            NotFoundError: the experiment has no such case or arm.
        """
        reviewer = str(reviewer or "").strip()
        if not reviewer:
            raise UsageError("name the reviewer the case is assigned to")
        case_id = str(case_id)
        if (
            self._store.query_one(
                "SELECT 1 FROM runs WHERE experiment_id=? AND case_id=? LIMIT 1", (exp_id, case_id)
            )
            is None
        ):
            raise NotFoundError(f"experiment #{exp_id} has no case {case_id!r}")
        if (
            arm is not None
            and self._store.query_one("SELECT 1 FROM arms WHERE experiment_id=? AND name=?", (exp_id, arm))
            is None
        ):
            names = [
                r[0] for r in self._store.query("SELECT name FROM arms WHERE experiment_id=?", (exp_id,))
            ]
            raise NotFoundError.no_arm(f"#{exp_id}", arm, names)
        with self._store.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO review_assignments (experiment_id, case_id, arm, reviewer, assigned_by, "
                "created_at) VALUES (?,?,?,?,?,?)",
                (exp_id, case_id, arm or "", reviewer, current_user(), now_iso()),
            )
        (found,) = self.assignments(exp_id, reviewer=reviewer, case_id=case_id, arm=arm or "")
        return found

    def assignments(
        self, exp_id: int, *, reviewer: str | None = None, case_id: str | None = None, arm: str | None = None
    ) -> list[ReviewAssignment]:
        """The experiment's assignments, oldest first; only `reviewer`'s, `case_id`'s, or of `arm`
        (``""``: of the case as a whole) when given."""
        where: list[str] = ["experiment_id=?"]
        params: list[Any] = [exp_id]
        for column, value in (("reviewer", reviewer), ("case_id", case_id), ("arm", arm)):
            if value is not None:
                where.append(f"{column}=?")
                params.append(value)
        rows = self._store.query(
            f"SELECT {_ASSIGNMENT_COLUMNS} FROM review_assignments WHERE {' AND '.join(where)} ORDER BY id",
            params,
        )
        return [ReviewAssignment(*r) for r in rows]

    def get(self, review_id: int) -> Review:
        """One review by id.

        Raises:
            NotFoundError: no review has that id.
        """
        row = self._store.query_one(f"SELECT {_REVIEW_COLUMNS} FROM reviews WHERE id=?", (review_id,))
        if row is None:
            raise NotFoundError(f"no review {review_id}")
        return Review(*row)

    def all(
        self,
        exp_id: int,
        *,
        latest: bool = True,
        case_id: str | None = None,
        arm: str | None = None,
        by_reviewer: bool = False,
    ) -> list[Review]:
        """Reviews of an experiment, oldest first: by default only the latest per (case, arm).

        A review of the case as a whole (no arm) is its own (case, arm) key.

        Args:
            exp_id: The experiment.
            latest: Only the latest per (case, arm); False gives the whole history.
            case_id: Only this case.
            arm: Only this arm.
            by_reviewer: With `latest`, the latest per (case, arm, reviewer): each reviewer's own verdict.
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
                f"{condition} GROUP BY case_id, COALESCE(arm, '')"
                + (", COALESCE(reviewer, '')" if by_reviewer else "")
                + ") ORDER BY id"
            )
        else:
            sql = f"SELECT {_REVIEW_COLUMNS} FROM reviews WHERE {condition} ORDER BY id"
        return [Review(*r) for r in self._store.query(sql, params)]

    def judged_runs(self, exp_id: int, arm: str | None = None) -> list[tuple[int, str, str, bool]]:
        """The runs with a verdict (graded right or wrong), by id: (run id, arm, case id, passed)."""
        sql = (
            "SELECT r.id, a.name, r.case_id, r.state FROM runs r JOIN arms a ON a.id = r.arm_id "
            f"WHERE r.experiment_id=? AND {_JUDGED_SQL}"  # state, failure_type, passed: runs' columns alone
        )
        params: list[Any] = [exp_id]
        if arm is not None:
            sql += " AND a.name=?"
            params.append(arm)
        return [
            (int(r[0]), str(r[1]), str(r[2]), r[3] == "pass")
            for r in self._store.query(sql + " ORDER BY r.id", params)
        ]

    def judged_verdicts(self, exp_id: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """`judged_runs`' runs as arrays, by arm id: each arm's run ids (64-bit, ascending) and whether each
        was graded right. No case id nor arm name is read: at 600,000 runs a Python tuple a run cost
        seconds where what is drawn from and counted needs these alone. The runs are read from the
        ``runs_results`` index (it holds state, failure type and verdict: no row of the table is
        read), concatenated by SQLite one arm a row, and put in id order by numpy."""
        import numpy as np

        rows = self._store.query(
            "SELECT arm_id, group_concat(id), group_concat(char(48 + (state = 'pass')), '') FROM runs "
            f"WHERE experiment_id=? AND state IN {FINISHED_STATES} AND {_JUDGED_SQL} GROUP BY arm_id",
            (exp_id,),
        )
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for arm_id, ids, verdicts in rows:
            run_ids = _int_list(ids)
            passed = np.frombuffer(verdicts.encode("ascii"), dtype=np.uint8) == ord("1")
            order = np.argsort(run_ids, kind="stable")
            out[int(arm_id)] = run_ids[order], passed[order]
        return out

    def insert_sample(
        self,
        exp_id: int,
        *,
        arm: str | None,
        seed: int,
        population: int,
        run_ids: list[int],
        grader: str | None = None,
    ) -> ReviewSample:
        """Record a random sample of judged runs drawn for review."""
        with self._store.transaction() as conn:
            cur = conn.execute(
                f"INSERT INTO review_samples ({_SAMPLE_COLUMNS.removeprefix('id, ')}) VALUES (?,?,?,?,?,?,?,?,?)",
                (exp_id, arm, int(seed), len(run_ids), population, dumps(list(run_ids)), grader, current_user(),
                 now_iso()),
            )  # fmt: skip
            sample_id = inserted_id(cur)
        return self.get_sample(sample_id)

    def get_sample(self, sample_id: int) -> ReviewSample:
        """One review sample by id.

        Raises:
            NotFoundError: no sample has that id.
        """
        row = self._store.query_one(
            f"SELECT {_SAMPLE_COLUMNS} FROM review_samples WHERE id=?", (int(sample_id),)
        )
        if row is None:
            raise NotFoundError(f"no review sample #{sample_id}")
        return _sample(row)

    def samples(self, exp_id: int) -> list[ReviewSample]:
        """The experiment's review samples, oldest first."""
        rows = self._store.query(
            f"SELECT {_SAMPLE_COLUMNS} FROM review_samples WHERE experiment_id=? ORDER BY id", (exp_id,)
        )
        return [_sample(r) for r in rows]

    def run_positions(self, exp_id: int, run_ids: Sequence[int]) -> dict[int, tuple[int, str, str]]:
        """Run id -> (its case's dataset position, its arm's name, its case's id), for runs of this
        experiment (ids of no such run are left out). The case ids are the runs' own: the dataset's
        fields are not read (at 100,000 cases that costs a second, for a sample of a hundred runs)."""
        out: dict[int, tuple[int, str, str]] = {}
        for start in range(0, len(run_ids), 500):
            chunk = [int(i) for i in run_ids[start : start + 500]]
            rows = self._store.query(
                "SELECT r.id, r.case_idx, a.name, r.case_id FROM runs r JOIN arms a ON a.id = r.arm_id "
                f"WHERE r.experiment_id=? AND r.id IN ({','.join('?' * len(chunk))})",
                [exp_id, *chunk],
            )
            out.update({int(r[0]): (int(r[1]), str(r[2]), str(r[3])) for r in rows})
        return out
