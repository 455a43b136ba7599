"""Store methods for runs: creating them, selecting work, reconciling after a crash, resetting for re-runs."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypedDict, Unpack

from abbench.errors import NotFoundError
from abbench.store._base import loads
from abbench.store._noun import Noun
from abbench.store._run_record import (
    _COUNTS_SQL,
    _RECORD_COLUMNS,
    _RESET,
    INTERRUPTED,
    Reconciled,
    RunRecord,
    WorkItem,
    _names,
)
from abbench.types import AgentOutput, AttemptOutcome, RunState, Usage, run_outcome

_WORK_STATES = (
    f"(state IN ('{RunState.PENDING}', '{RunState.EXECUTED}') "
    f"OR (state = '{RunState.FAIL}' AND failure_type = '{INTERRUPTED}'))"
)
"""The runs a runner pass works on: pending, executed (waiting for grading), interrupted executions."""

_WORK_SQL = (
    "SELECT 1 FROM runs INDEXED BY runs_experiment_state WHERE experiment_id = :e AND "
    f"state IN ('{RunState.PENDING}', '{RunState.EXECUTED}', '{RunState.FAIL}') AND {_WORK_STATES}"
)
_COUNT_WORK_SQL = f"SELECT COUNT(*) FROM ({_WORK_SQL})"

_WORK_PAGE_SQL = (
    "SELECT id, arm_id, case_idx, case_id, round, state, attempts, grade_attempts "
    "FROM runs INDEXED BY runs_experiment_case "
    f"WHERE experiment_id = :e AND case_idx >= :lo AND case_idx < :hi AND round = :r AND {_WORK_STATES} "
    "ORDER BY case_idx, arm_id"
)
"""One page of store.runs.work_pages`: a range of cases of one round, on the (experiment, case, round)
index (the state index would walk every pending run of the experiment for each page)."""

_BOUNDS_SQL = (
    "SELECT lo, (SELECT MAX(case_idx) FROM runs WHERE experiment_id = :e), MIN(round), MAX(round) "
    "FROM (SELECT MIN(case_idx) AS lo FROM runs WHERE experiment_id = :e) "
    "LEFT JOIN runs ON experiment_id = :e AND case_idx = lo"
)
"""The cases and rounds store.runs.work_pages` pages through, in seeks of the (experiment, case, round)
index: one statement taking the four bounds at once walked its 600,000 entries (120 ms before the first
agent call). The rounds are those of the first case: runs are made for every case in every round
(store.runs.create`), so they are every case's."""

_KIND_SQL = {
    "failed": f"r.state='{RunState.FAIL}'",
    "execution_failed": f"(r.state='{RunState.FAIL}' AND r.failure_type IS NOT NULL)",
    "grading_failed": f"(r.state='{RunState.FAIL}' AND r.failure_type IS NULL AND r.passed IS NULL)",
    "cancelled": f"r.state='{RunState.CANCELLED}'",
    "disagreements": f"(r.state='{RunState.FAIL}' AND r.passed=0)",
}
"""What each kind filter of `RunFilter` matches (disagreements: graded wrong)."""


class RunFilter(TypedDict, total=False):
    """What `RunRecords.select` narrows an experiment's runs to: any of the kinds asked for (`_KIND_SQL`),
    of these cases and arms. A filter left out (or false, or empty) narrows nothing."""

    failed: bool
    execution_failed: bool
    grading_failed: bool
    cancelled: bool
    disagreements: bool
    cases: Sequence[str] | None
    arms: Sequence[str] | None


def _ids_in_state(conn: sqlite3.Connection, exp_id: int, state: str) -> list[int]:
    """The ids of the experiment's runs in `state`."""
    return [
        r[0] for r in conn.execute("SELECT id FROM runs WHERE experiment_id=? AND state=?", (exp_id, state))
    ]


class RunRecords(Noun):
    """Reading and writing runs (part of ``store.runs``)."""

    def create(
        self, exp_id: int, arm_ids: Sequence[int], cases: Sequence[tuple[int, str]], rounds: int
    ) -> int:
        """One pending run per case × round × arm (inside the caller's transaction); returns how many."""
        rows = [
            (exp_id, arm_id, idx, case_id, rnd)
            for arm_id in arm_ids
            for idx, case_id in cases
            for rnd in range(rounds)
        ]
        with self._store.transaction() as conn:
            conn.executemany(
                "INSERT INTO runs (experiment_id, arm_id, case_idx, case_id, round) VALUES (?,?,?,?,?)", rows
            )
        return len(rows)

    def counts(self, exp_id: int) -> dict[str, dict[str, int]]:
        """Runs per arm and state: ``{"control": {"pass": 10, "fail": 2, ...}, ...}`` (every state present).

        One statement over three indexes, never the wide rows (a poll of a running experiment asks for
        this many times a second): finished runs from the partial index ``runs_results``, the few in
        flight from ``runs_experiment_state``, each arm's total from the unique index; pending is the rest.
        """
        names = {
            arm_id: name
            for arm_id, name in self._store.query(
                "SELECT id, name FROM arms WHERE experiment_id=? ORDER BY position", (exp_id,)
            )
        }
        counts = {name: {s.value: 0 for s in RunState} for name in names.values()}
        totals: dict[str, int] = {}
        for arm_id, state, n in self._store.query(_COUNTS_SQL, {"e": exp_id}):
            arm = counts.setdefault(names[arm_id], {s.value: 0 for s in RunState})
            if state:
                arm[state] = n
            else:
                totals[names[arm_id]] = n
        for name, total in totals.items():
            arm = counts[name]
            arm[RunState.PENDING] = total - sum(n for state, n in arm.items() if state != RunState.PENDING)
        return counts

    def errors(self, exp_id: int) -> dict[int, tuple[str, str]]:
        """Finished runs that got no verdict: ``{run id: (arm, RunOutcome.EXECUTION_FAILED |
        RunOutcome.GRADING_FAILED | RunOutcome.SCORED)}`` (scored: in ``pass`` with a score alone).

        The rest of ``fail`` is graded wrong, the rest of ``pass`` right; `run_counts` with this tells
        them apart.
        """
        return {
            run_id: (arm, run_outcome(state, ftype, None))
            for run_id, arm, state, ftype in self._store.query(
                "SELECT r.id, a.name, r.state, r.failure_type FROM runs r JOIN arms a ON a.id = r.arm_id "
                "WHERE r.experiment_id=? AND r.state IN (?, ?) AND (r.failure_type IS NOT NULL OR r.passed IS NULL)",
                (exp_id, RunState.FAIL, RunState.PASS),
            )
        }

    def wrong_by(self, exp_id: int, *, advisory: Iterable[str] = (), grouped: bool = False) -> dict[Any, Any]:
        """Which graders made the experiment's wrong runs wrong: ``{run id: (arm, (grader, ...))}``, each
        run's pointwise graders whose latest grade says it failed (but the `advisory` ones, which never
        decide). `grouped` counts instead, ``{arm: {grader: wrong runs}}``, in SQL.

        A wrong run is one in ``fail`` with a verdict (`errors` gives the rest of ``fail``).
        """
        skip = sorted(set(advisory))
        sql = (
            f"FROM runs r INDEXED BY runs_experiment_state JOIN latest_grades g ON g.run_id = r.id "
            f"JOIN arms a ON a.id = r.arm_id WHERE r.experiment_id=? AND r.state='{RunState.FAIL}' "
            "AND r.failure_type IS NULL AND r.passed = 0 AND g.other_run_id IS NULL AND g.status = 'ok' "
            f"AND g.passed = 0 AND g.grader NOT IN ({','.join('?' * len(skip))})"
        )
        if grouped:
            counts: dict[str, dict[str, int]] = {}
            for arm, grader, n in self._store.query(
                f"SELECT a.name, g.grader, COUNT(*) {sql} GROUP BY a.name, g.grader", (exp_id, *skip)
            ):
                counts.setdefault(arm, {})[grader] = n
            return counts
        runs: dict[int, tuple[str, tuple[str, ...]]] = {}
        for run_id, arm, grader in self._store.query(
            f"SELECT r.id, a.name, g.grader {sql} ORDER BY r.id, g.grader", (exp_id, *skip)
        ):
            runs[run_id] = (arm, (*runs[run_id][1], grader) if run_id in runs else (grader,))
        return runs

    def work_items(
        self, exp_id: int, states: Iterable[str], *, run_ids: Sequence[int] | None = None
    ) -> list[WorkItem]:
        """Runs of the experiment in the given states (optionally only these ids), in arm, round, case order."""
        states = list(states)
        sql = (
            "SELECT r.id, r.arm_id, r.case_idx, r.case_id, r.round, r.state, r.attempts, r.grade_attempts "
            "FROM runs r WHERE r.experiment_id=? AND r.state IN ({})".format(",".join("?" * len(states)))
        )
        params: list[Any] = [exp_id, *states]
        if run_ids is not None:
            ids = set(run_ids)
            rows = [r for r in self._store.query(sql, params) if r[0] in ids]
        else:
            rows = self._store.query(sql + " ORDER BY r.round, r.case_idx, r.arm_id", params)
        return [WorkItem(*r) for r in rows]

    def count_work(self, exp_id: int, *, at_most: int | None = None) -> int:
        """How many runs a runner pass would execute or grade: `work_pages`' items, counted on the
        state index.

        Counting reads the row of every pending run (whether it was interrupted is not in the index):
        85 ms over 600,000 of them, before a pass's first agent call. A pass asks only whether there
        are more than a few thousand, so `at_most` stops the count there (the answer is then
        ``min(count, at_most)``).
        """
        if at_most is None:
            row = self._store.query_one(_COUNT_WORK_SQL, {"e": exp_id})
        else:
            row = self._store.query_one(
                f"SELECT COUNT(*) FROM ({_WORK_SQL} LIMIT :n)", {"e": exp_id, "n": at_most}
            )
        return int(row[0]) if row is not None else 0

    def work_pages(self, exp_id: int, *, page_cases: int = 2000) -> Iterator[list[WorkItem]]:
        """The runs a runner pass executes or grades, in round, case, arm order, a page at a time.

        Those of `work_items` in the pending and executed states and `interrupted_items`, in their
        order, but read `page_cases` cases of one round per query (some pages may be empty): a pass
        over 600,000 runs holds a page of them, never the whole list. A run is read when its page is,
        so its state is the one stored then; the pages are disjoint ranges, so none is read twice.
        """
        bounds = self._store.query_one(_BOUNDS_SQL, {"e": exp_id})
        if bounds is None or bounds[0] is None:
            return
        low, high, first_round, last_round = bounds
        cur = self._store.conn.cursor()
        cur.row_factory = None  # plain tuples: a `sqlite3.Row` per run costs more than its work item
        step = max(1, int(page_cases))
        for rnd in range(first_round, last_round + 1):
            for start in range(low, high + 1, step):
                params = {"e": exp_id, "r": rnd, "lo": start, "hi": start + step}
                yield [WorkItem(*r) for r in cur.execute(_WORK_PAGE_SQL, params).fetchall()]

    def interrupted_items(self, exp_id: int) -> list[WorkItem]:
        """Execution failures left by a crash or kill; resuming the experiment runs them again."""
        rows = self._store.query(
            "SELECT id, arm_id, case_idx, case_id, round, state, attempts, grade_attempts FROM runs "
            "WHERE experiment_id=? AND state=? AND failure_type=? ORDER BY round, case_idx, arm_id",
            (exp_id, RunState.FAIL, INTERRUPTED),
        )
        return [WorkItem(*r) for r in rows]

    def reconcile(self, exp_id: int) -> Reconciled:
        """Turn a crashed process's leftovers into actionable states (docs/ARCHITECTURE.md, "Run states").

        A run with no finished execution (``running``) becomes an execution failure of type
        ``interrupted`` (retryable); a run whose execution finished but whose grading was interrupted
        (``evaluating``) goes back to ``executed``, waiting for grading — never an execution failure.
        Only call this when no live process is running the experiment.
        """
        now = time.time()
        with self._store.transaction() as conn:
            running = _ids_in_state(conn, exp_id, RunState.RUNNING)
            evaluating = _ids_in_state(conn, exp_id, RunState.EVALUATING)
            conn.executemany(
                "UPDATE runs SET state=?, failure_type=?, retryable=1, updated_at=?, error=? WHERE id=?",
                [
                    (
                        RunState.FAIL,
                        INTERRUPTED,
                        now,
                        "interrupted: the process running it stopped before its execution finished",
                        rid,
                    )
                    for rid in running
                ],
            )
            # Their attempts, stored `running` when they started, end as interrupted: what they spent
            # is unknown (never $0), and they count among the experiment's attempts.
            conn.executemany(
                "UPDATE run_attempts SET outcome=?, failure_type=?, error=? WHERE run_id=? AND outcome=?",
                [
                    (
                        AttemptOutcome.FAILED,
                        INTERRUPTED,
                        "interrupted: the process running it stopped before its execution finished",
                        rid,
                        AttemptOutcome.RUNNING,
                    )
                    for rid in running
                ],
            )
            conn.executemany(
                "UPDATE runs SET state=?, updated_at=? WHERE id=?",
                [(RunState.EXECUTED, now, r) for r in evaluating],
            )
            conn.executemany(
                "INSERT INTO run_events (run_id, at, from_state, to_state, detail) VALUES (?,?,?,?,?)",
                [(r, now, RunState.RUNNING, RunState.FAIL, "reconciled: interrupted") for r in running]
                + [
                    (r, now, RunState.EVALUATING, RunState.EXECUTED, "reconciled: waiting for grading")
                    for r in evaluating
                ],
            )
        return Reconciled(len(running), len(evaluating))

    def cancel_pending(self, exp_id: int) -> int:
        """Cancel every run of the experiment that has not started; returns how many."""
        now = time.time()
        with self._store.transaction() as conn:
            ids = _ids_in_state(conn, exp_id, RunState.PENDING)
            conn.executemany(
                "UPDATE runs SET state=?, updated_at=? WHERE id=?",
                [(RunState.CANCELLED, now, r) for r in ids],
            )
            conn.executemany(
                "INSERT INTO run_events (run_id, at, from_state, to_state, detail) VALUES (?,?,?,?,?)",
                [(r, now, RunState.PENDING, RunState.CANCELLED, "cancelled before it started") for r in ids],
            )
        return len(ids)

    def reset(self, run_ids: Sequence[int], detail: str = "re-run") -> int:
        """Send runs back to ``pending`` for re-execution (their old grades stay readable)."""
        if not run_ids:
            return 0
        now = time.time()
        sets = ", ".join(f"{c}=NULL" for c in _RESET)
        with self._store.transaction() as conn:
            states = dict(
                conn.execute(
                    "SELECT id, state FROM runs WHERE id IN ({})".format(",".join("?" * len(run_ids))),
                    list(run_ids),
                ).fetchall()
            )
            conn.executemany(
                f"UPDATE runs SET state=?, {sets}, updated_at=? WHERE id=?",
                [(RunState.PENDING, now, r) for r in states],
            )
            conn.executemany(
                "INSERT INTO run_events (run_id, at, from_state, to_state, detail) VALUES (?,?,?,?,?)",
                [(r, now, s, RunState.PENDING, detail) for r, s in states.items()],
            )
        return len(states)

    def select(self, exp_id: int, **only: Unpack[RunFilter]) -> list[int]:
        """Run ids matching every filter given (no filter: all runs of the experiment)."""
        where = ["r.experiment_id=?"]
        params: list[Any] = [exp_id]
        kinds = [sql for kind, sql in _KIND_SQL.items() if only.get(kind)]
        cases, arms = only.get("cases"), only.get("arms")
        if kinds:
            where.append("(" + " OR ".join(kinds) + ")")
        if cases:
            where.append("r.case_id IN ({})".format(",".join("?" * len(cases))))
            params.extend(cases)
        if arms:
            where.append("a.name IN ({})".format(",".join("?" * len(arms))))
            params.extend(arms)
        rows = self._store.query(
            f"SELECT r.id FROM runs r JOIN arms a ON a.id=r.arm_id WHERE {' AND '.join(where)} ORDER BY r.id",
            params,
        )
        return [r[0] for r in rows]

    def get(self, run_id: int) -> RunRecord:
        """One run with its execution.

        Raises:
            NotFoundError: no run has that id.
        """
        rows = self.records(run_ids=[run_id])
        if not rows:
            raise NotFoundError(f"no run {run_id}")
        return rows[0]

    def records(
        self,
        exp_id: int | None = None,
        *,
        run_ids: Sequence[int] | None = None,
        states: Sequence[str] | None = None,
    ) -> list[RunRecord]:
        """Runs with their executions, by experiment and/or ids and/or states, in id order."""
        where: list[str] = []
        params: list[Any] = []
        if exp_id is not None:
            where.append("r.experiment_id=?")
            params.append(exp_id)
        if run_ids is not None:
            where.append("r.id IN ({})".format(",".join("?" * len(run_ids))))
            params.extend(run_ids)
        if states:
            where.append("r.state IN ({})".format(",".join("?" * len(states))))
            params.extend(states)
        sql = f"SELECT {_RECORD_COLUMNS} FROM runs r JOIN arms a ON a.id=r.arm_id"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._record(r) for r in self._store.query(sql + " ORDER BY r.id", params)]

    def iter_records(self, exp_id: int, *, chunk: int = 2000) -> Iterator[list[RunRecord]]:
        """An experiment's runs in chunks of `chunk`, in arm, round, case, id order: what an export lists.

        One query read as it goes, so memory holds one chunk however many runs there are.
        """
        cursor = self._store.conn.execute(
            f"SELECT {_RECORD_COLUMNS} FROM runs r JOIN arms a ON a.id=r.arm_id WHERE r.experiment_id=? "
            "ORDER BY a.position, r.round, r.case_idx, r.id",
            (exp_id,),
        )
        while rows := cursor.fetchmany(chunk):
            yield [self._record(r) for r in rows]

    def slice(self, exp_id: int, offset: int, limit: int) -> list[RunRecord]:
        """Runs `offset` to `offset + limit` of an experiment, in `iter_runs`' order (arm, round, case, id).

        The order is taken over the narrow unique index and only the page's rows are read whole: a page
        of a large experiment costs its own rows, not a sort of every run with its outputs.
        """
        with self._store.reading():
            ids = [
                r[0]
                for r in self._store.query(
                    "SELECT r.id FROM runs r JOIN arms a ON a.id=r.arm_id WHERE r.experiment_id=? "
                    "ORDER BY a.position, r.round, r.case_idx, r.id LIMIT ? OFFSET ?",
                    (exp_id, limit, offset),
                )
            ]
            found = {r.id: r for r in self.records(run_ids=ids)} if ids else {}
        return [found[i] for i in ids]

    def keys(self, exp_id: int) -> dict[int, tuple[str, str, int]]:
        """Run id -> (arm, case id, round) of every run of an experiment: what names a run, and no more."""
        rows = self._store.conn.execute(
            "SELECT r.id, a.name, r.case_id, r.round FROM runs r JOIN arms a ON a.id=r.arm_id "
            "WHERE r.experiment_id=?",
            (exp_id,),
        )
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def _record(self, r: sqlite3.Row) -> RunRecord:
        executed = r[32] is not None
        output = None
        if executed:
            output = AgentOutput(
                prediction=r[13],
                reason=r[14],
                confidence=r[15],
                evidence_refs=tuple(loads(r[16]) or ()),
                raw_output=r[17],
                files_read=tuple(loads(r[18]) or ()),
                sections_read=tuple(loads(r[19]) or ()),
                # unknown is not zero: NULL tokens and cost stay None (exports, graders and views say so)
                usage=None if r[20] is None and r[21] is None else Usage(r[20] or 0, r[21] or 0),
                cost=r[22],
                latency_ms=None if r[23] is None else (r[23] or 0.0),  # unknown is not 0 ms
                session_id=r[24],
                model=r[25],
                skills_offered=_names(r[36]),
                skills_loaded=_names(r[37]),
                first_load_turn=r[38],
            )
        return RunRecord(
            id=r[0],
            experiment_id=r[1],
            arm_id=r[2],
            arm=r[3],
            case_idx=r[4],
            case_id=r[5],
            round=r[6],
            state=r[7],
            failure_type=r[8],
            error=r[9],
            retryable=None if r[10] is None else bool(r[10]),
            attempts=r[11],
            grade_attempts=r[12],
            output=output,
            transcript_path=self._store.abspath(r[26]) if r[26] else None,
            transcript_summary=loads(r[27]) or {},
            passed=None if r[28] is None else bool(r[28]),
            score=r[29],
            started_by=r[30],
            started_at=r[31],
            executed_at=r[32],
            finished_at=r[33],
            cached_calls=r[34],
            cost_saved=r[35],
            skills_offered=_names(r[36]),
            skills_loaded=_names(r[37]),
            first_load_turn=r[38],
        )

    def events(self, run_id: int) -> list[dict[str, Any]]:
        """Every state transition of a run, oldest first."""
        return [
            {"at": r[0], "from": r[1], "to": r[2], "detail": r[3]}
            for r in self._store.query(
                "SELECT at, from_state, to_state, detail FROM run_events WHERE run_id=? ORDER BY id",
                (run_id,),
            )
        ]

    def agent_usage(self, exp_id: int) -> dict[str, Any]:
        """What the agents of an experiment spent over every execution attempt (failed and replaced ones
        included): ``executions`` (stored executions), ``attempts``, ``failed_attempts``, ``cost``
        (known cost of every attempt), ``unknown_cost`` (attempts whose cost is unknown: not in ``cost``),
        ``failed_cost``, ``input_tokens``, ``output_tokens``. Judge cost is kept apart, in the grades."""
        (executions,) = self._store.conn.execute(
            "SELECT COUNT(*) FROM runs WHERE experiment_id=? AND executed_at IS NOT NULL", (exp_id,)
        ).fetchone()
        spend = list(self._store.attempts.spend_by_run(exp_id).values())
        return {
            "executions": int(executions),
            "attempts": sum(s.attempts for s in spend),
            "failed_attempts": sum(s.failed_attempts for s in spend),
            "cost": float(sum(s.cost or 0.0 for s in spend)),
            "unknown_cost": int(sum(s.unknown_cost for s in spend)),
            "failed_cost": float(sum(s.failed_cost or 0.0 for s in spend)),
            "input_tokens": int(sum(s.input_tokens or 0 for s in spend)),
            "output_tokens": int(sum(s.output_tokens or 0 for s in spend)),
        }
