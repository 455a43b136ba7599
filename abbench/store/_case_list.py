"""Store methods behind the All-cases view: every case of an experiment, filtered, sorted and paged in SQL.

A 100,000-case experiment has 600,000 runs (two arms, three rounds). The view shows fifty cases at a
time, so each filter (an outcome of some arm's run, the domain, the gold label, a list of case ids, a
search) is a condition of one query over the cases, the sort is its ``ORDER BY`` and the page its
``LIMIT``/``OFFSET``; only the page's runs are then read (`case_list_runs`). The outcome conditions
read the partial ``runs_results`` index, never the wide run rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from abbench._memo import Memo
from abbench.errors import UnknownName, UsageError
from abbench.store._noun import Noun
from abbench.store._pages import _FOLDS, _check_page, _contains, _folds
from abbench.store._run_columns import OUTCOME_SQL, OUTCOMES, UNFINISHED
from abbench.store.bulk._outcomes import FINISHED_STATES, OPEN_STATES

CASE_SORTS = ("order", "case_id", "domain", "gold", "wrong")
"""How the All-cases list is ordered: dataset order, case id, domain, gold, runs graded wrong (each
then by dataset order, so a sort is stable)."""


@dataclass(frozen=True)
class CaseQuery:
    """Which of an experiment's cases a list holds; every field given narrows it (all must hold).

    Attributes:
        outcome: A key of `OUTCOMES` (``fail``, ``pass``, ``execution_failed``, …): only cases with a
            run of that outcome (of `arm_id`'s runs, when given).
        arm_id: The arm whose runs `outcome` and the ``wrong`` sort look at (None: every arm's).
        domain: Only cases of this domain ("" for cases without one).
        gold: Only cases whose gold is this value ("" for cases without one).
        case_ids: Only these cases (a disagreement kind's list, worked out by the caller).
        search: Only cases whose id, input, gold or domain, or the answer of one of their runs,
            contains these words, ignoring case as `str.casefold` does.
    """

    outcome: str | None = None
    arm_id: int | None = None
    domain: str | None = None
    gold: str | None = None
    case_ids: Sequence[str] | None = None
    search: str | None = None


@dataclass(frozen=True)
class CasePositions:
    """One page of the cases a `CaseQuery` lists: their dataset positions in list order, and the total.

    Attributes:
        positions: The page's cases, by position in the dataset.
        total: Cases the query lists, over every page.
    """

    positions: tuple[int, ...]
    total: int


_COVERS: Memo[bool] = Memo(16)
"""Per experiment: whether it ran every case of its dataset (then no condition picks its cases)."""
_ANSWERS: Memo[list[str]] = Memo(4)
"""Per experiment: its runs' distinct answers (a search compares each once, not each run's)."""


def _where(exp_id: int, query: CaseQuery, *, every: bool, answers: list[str]) -> tuple[str, dict[str, Any]]:
    """The conditions on ``c`` (a row of cases) and their parameters: `every`, the experiment ran every
    case of its dataset; `answers`, the distinct answers its runs gave (for a search)."""
    params: dict[str, Any] = {"e": exp_id}
    where = ["c.dataset_id = (SELECT dataset_id FROM experiments WHERE id = :e)"]
    if not every:  # the experiment's cases: those with a run (it may run a sample of its dataset)
        where.append("c.idx IN (SELECT case_idx FROM runs WHERE experiment_id = :e)")
    arm = ""
    if query.arm_id is not None:
        arm, params["a"] = " AND arm_id = :a", query.arm_id
    if query.outcome is not None:
        if query.outcome not in OUTCOMES:
            raise UnknownName("outcome", query.outcome, OUTCOMES)
        code = OUTCOMES.index(query.outcome)
        states = OPEN_STATES if code == UNFINISHED else FINISHED_STATES
        where.append(
            f"c.idx IN (SELECT case_idx FROM runs WHERE experiment_id = :e{arm} AND state IN {states} "
            f"AND ({OUTCOME_SQL}) = {code})"
        )
    for name, value, column in (("d", query.domain, "c.domain"), ("g", query.gold, "c.expected")):
        if value is not None:
            params[name] = value
            where.append(f"coalesce({column}, '') = :{name}")
    if query.case_ids is not None:
        params["ids"] = json.dumps(list(query.case_ids), ensure_ascii=False)
        where.append("c.case_id IN (SELECT value FROM json_each(:ids))")
    words = (query.search or "").strip().casefold()
    if words:
        params["w"] = words
        fields = " OR ".join(_contains(f"c.{f}") for f in ("case_id", "input", "expected", "domain"))
        said = [a for a in answers if words in a.casefold()]
        if said:  # the runs are read only when some answer holds the words
            params["said"] = json.dumps(said, ensure_ascii=False)
            fields += (
                " OR c.idx IN (SELECT case_idx FROM runs WHERE experiment_id = :e "
                "AND prediction IN (SELECT value FROM json_each(:said)))"
            )
        where.append(f"({fields})")
    return " AND ".join(where), params


def _order(sort: str, descending: bool, arm: str) -> tuple[str, str]:
    """The join a sort needs and its ORDER BY (ties in dataset order, whichever the direction)."""
    if sort not in CASE_SORTS:
        raise UnknownName("sort", sort, CASE_SORTS)
    way = " DESC" if descending else ""
    if sort == "wrong":
        join = (
            "LEFT JOIN (SELECT case_idx, count(*) AS n FROM runs WHERE experiment_id = :e"
            f"{arm} AND state = 'fail' AND failure_type IS NULL AND passed IS NOT NULL GROUP BY case_idx) w "
            "ON w.case_idx = c.idx"
        )
        # "wrong" puts the most wrong first; descending turns that round.
        return join, f"coalesce(w.n, 0){'' if descending else ' DESC'}, c.idx"
    key = {"order": "c.idx", "case_id": "c.case_id", "domain": "coalesce(c.domain, '')", "gold": "c.expected"}
    return "", f"{key[sort]}{way}" + ("" if sort == "order" else ", c.idx")


class CaseLists(Noun):
    """The All-cases view's reads (see the module docstring)."""

    def _covers(self, exp_id: int) -> bool:
        """Whether the experiment ran every case of its dataset (kept while no run is added)."""

        def read() -> bool:
            row = self._store.query_one(
                "SELECT (SELECT count(*) FROM (SELECT DISTINCT case_idx FROM runs WHERE experiment_id = :e)) "
                "= (SELECT count(*) FROM cases WHERE dataset_id = "
                "(SELECT dataset_id FROM experiments WHERE id = :e))",
                {"e": exp_id},
            )
            return bool(row and row[0])

        return _COVERS.get((str(self._store.db_path), exp_id), self._store.results_stamp()[0], read)

    def _answers(self, exp_id: int) -> list[str]:
        """The experiment's distinct answers (kept while no run or grade is written)."""

        def read() -> list[str]:
            rows = self._store.query(
                "SELECT DISTINCT prediction FROM runs WHERE experiment_id = ? AND prediction IS NOT NULL",
                [exp_id],
            )
            return [str(r[0]) for r in rows]

        return _ANSWERS.get((str(self._store.db_path), exp_id), self._store.results_stamp(), read)

    def _prepare(
        self, exp_id: int, query: CaseQuery, sort: str, descending: bool
    ) -> tuple[str, str, dict[str, Any]]:
        answers = self._answers(exp_id) if (query.search or "").strip() else []
        where, params = _where(exp_id, query, every=self._covers(exp_id), answers=answers)
        join, order = _order(sort, descending, "" if query.arm_id is None else " AND arm_id = :a")
        if query.search:
            self._store.conn.create_function(_FOLDS, 2, _folds, deterministic=True)
        return f"FROM cases c {join} WHERE {where}", order, params

    def case_list_page(
        self,
        exp_id: int,
        query: CaseQuery = CaseQuery(),
        *,
        sort: str = "order",
        descending: bool = False,
        offset: int = 0,
        limit: int = 50,
    ) -> CasePositions:
        """One page of the experiment's cases that `query` lists, in the order `sort` gives, with the total.

        Raises:
            UsageError: an unknown outcome or sort, a negative offset or a limit below 1.
        """
        _check_page(offset, limit)
        body, order, params = self._prepare(exp_id, query, sort, descending)
        # The total rides along each row of the page: the list is worked out once, not twice.
        rows = self._store.query(
            f"SELECT c.idx, count(*) OVER () {body} ORDER BY {order} LIMIT :limit OFFSET :offset",
            {**params, "limit": limit, "offset": offset},
        )
        if rows:
            return CasePositions(tuple(int(r[0]) for r in rows), int(rows[0][1]))
        total = self._store.query_one(f"SELECT count(*) {body}", params)  # past the end: the total alone
        return CasePositions((), int(total[0]) if total else 0)

    def case_list_positions(
        self,
        exp_id: int,
        query: CaseQuery = CaseQuery(),
        *,
        sort: str = "order",
        descending: bool = False,
        chunk: int = 1000,
    ) -> Iterator[list[int]]:
        """Every case `query` lists, in list order, `chunk` positions at a time (for an export of the list)."""
        if chunk < 1:
            raise UsageError(f"chunk must be at least 1 (got {chunk})")
        body, order, params = self._prepare(exp_id, query, sort, descending)
        positions = [int(r[0]) for r in self._store.query(f"SELECT c.idx {body} ORDER BY {order}", params)]
        for start in range(0, len(positions), chunk):
            yield positions[start : start + chunk]

    def case_list_runs(
        self, exp_id: int, positions: Sequence[int]
    ) -> list[tuple[int, int, int, str, Any, Any]]:
        """The runs of these cases, for their list rows: (position, arm id, round from 0, outcome key,
        answer, confidence), by case, arm and round."""
        if not positions:
            return []
        rows = self._store.query(
            f"SELECT case_idx, arm_id, round, {OUTCOME_SQL}, prediction, confidence FROM runs "
            "WHERE experiment_id = ? AND case_idx IN (SELECT value FROM json_each(?)) "
            "ORDER BY case_idx, arm_id, round",
            [exp_id, json.dumps([int(p) for p in positions])],
        )
        return [(int(r[0]), int(r[1]), int(r[2]), OUTCOMES[int(r[3])], r[4], r[5]) for r in rows]

    def case_list_values(self, exp_id: int, column: str, most: int = 500) -> list[tuple[str, int]]:
        """The distinct domains (``column="domain"``) or golds (``"gold"``) of the experiment's cases with
        how many cases have each ("" for none), most common first, `most` at most (the filters' choices)."""
        names = {"domain": "c.domain", "gold": "c.expected"}
        if column not in names:
            raise UnknownName("column", column, tuple(names))
        where, params = _where(exp_id, CaseQuery(), every=self._covers(exp_id), answers=[])
        rows = self._store.query(
            f"SELECT coalesce({names[column]}, '') AS v, count(*) AS n FROM cases c WHERE {where} "
            "GROUP BY v ORDER BY n DESC, v LIMIT :most",
            {**params, "most": most},
        )
        return [(str(r[0]), int(r[1])) for r in rows]
