"""Store methods that read long lists a page at a time: runs by keyset, cases by a search, query plans.

A view of a hundred thousand cases shows fifty at a time. These methods let it ask for what it
shows and a total, instead of materialising every run or case first: `run_page` (one page of runs
and how many there are), `iter_run_pages` (every run, a chunk at a time, by keyset on the run id, so
a late chunk costs what the first does), and `search_cases` (the cases whose fields or answers
contain some words, matched inside SQLite).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from abbench.errors import UsageError
from abbench.store._noun import Noun
from abbench.store._run_record import _RECORD_COLUMNS, RunRecord

_FOLDS = "abbench_folds"
# Text that is plain ASCII casefolds as SQLite's lower() lowers it, so instr() decides it inside
# SQLite; only text with another character is handed to Python's str.casefold.
_NON_ASCII = "'*[^' || char(1) || '-' || char(127) || ']*'"


def _folds(text: Any, words: str) -> bool:
    """Whether `text` contains `words` once casefolded (what a person's search means)."""
    return text is not None and words in str(text).casefold()


def _contains(column: str) -> str:
    """SQL: `column` contains the casefolded words ``:w`` (ASCII in SQLite, the rest through Python)."""
    return (
        f"({column} IS NOT NULL AND (instr(lower({column}), :w) > 0 "
        f"OR ({column} GLOB {_NON_ASCII} AND {_FOLDS}({column}, :w))))"
    )


@dataclass(frozen=True)
class RunPage:
    """One page of an experiment's runs, in run id order, and how many runs there are in all.

    Attributes:
        runs: The runs of the page.
        total: Runs matching the filter, over every page.
        offset: Runs before this page.
        limit: The page size asked for.
    """

    runs: tuple[RunRecord, ...]
    total: int
    offset: int
    limit: int


def _check_page(offset: int, limit: int) -> None:
    if offset < 0 or limit < 1:
        raise UsageError(f"a page needs offset >= 0 and limit >= 1 (got offset={offset}, limit={limit})")


def _run_filter(exp_id: int, states: Sequence[str] | None) -> tuple[str, list[Any]]:
    # "+r.experiment_id" keeps the planner off the experiment's indexes, which would sort every run of
    # the experiment by id for each page: the run id's own order (the table itself) is walked instead.
    where = "+r.experiment_id=?"
    params: list[Any] = [exp_id]
    if states:
        where += " AND r.state IN ({})".format(",".join("?" * len(states)))
        params.extend(states)
    return where, params


class RunPages(Noun):
    """Paged and streaming reads of long lists (see the module docstring)."""

    def page(
        self, exp_id: int, *, states: Sequence[str] | None = None, offset: int = 0, limit: int = 100
    ) -> RunPage:
        """One page of an experiment's runs (those in `states`, if given), in run id order, with the total.

        The pages, concatenated, are what `runs(exp_id, states=states)` returns.

        Raises:
            UsageError: a negative offset or a limit below 1.
        """
        _check_page(offset, limit)
        where, params = _run_filter(exp_id, states)
        total = self._store.query_one(f"SELECT count(*) FROM runs r WHERE {where.lstrip('+')}", params)
        rows = self._store.query(
            f"SELECT {_RECORD_COLUMNS} FROM runs r JOIN arms a ON a.id=r.arm_id WHERE {where} "
            "ORDER BY r.id LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return RunPage(
            tuple(self._store.runs._record(r) for r in rows), int(total[0]) if total else 0, offset, limit
        )

    def pages(
        self, exp_id: int, *, states: Sequence[str] | None = None, chunk: int = 2000
    ) -> Iterator[list[RunRecord]]:
        """Every run of an experiment (those in `states`, if given) in run id order, `chunk` at a time.

        Each chunk is its own query starting after the last run id read (keyset paging), so memory
        holds one chunk and no read stays open between chunks; concatenated, the chunks are what
        `runs(exp_id, states=states)` returns.
        """
        if chunk < 1:
            raise UsageError(f"chunk must be at least 1 (got {chunk})")
        where, params = _run_filter(exp_id, states)
        after = -1
        while True:
            rows = self._store.query(
                f"SELECT {_RECORD_COLUMNS} FROM runs r JOIN arms a ON a.id=r.arm_id WHERE {where} "
                "AND r.id > ? ORDER BY r.id LIMIT ?",
                [*params, after, chunk],
            )
            if not rows:
                return
            yield [self._store.runs._record(r) for r in rows]
            if len(rows) < chunk:
                return
            after = int(rows[-1][0])

    def search_cases(self, exp_id: int, words: str, *, answers: bool = True) -> set[int]:
        """Dataset positions of the experiment's cases that contain `words`, ignoring case.

        A case matches when its id, input, gold or domain contains the words, or the answer of any
        of its runs does (compared casefolded, so ``É`` finds ``é`` and ``STRASSE`` finds ``Straße``).

        Args:
            exp_id: The experiment.
            words: What to look for (empty: nothing matches).
            answers: Also look in the runs' answers (False: the case fields only, for a caller that
                holds the answers already).
        """
        folded = words.strip().casefold()
        if not folded:
            return set()
        conn = self._store.conn
        conn.create_function(_FOLDS, 2, _folds, deterministic=True)
        cases = " OR ".join(_contains(c) for c in ("case_id", "input", "expected", "domain"))
        sql = f"SELECT idx FROM cases WHERE dataset_id=(SELECT dataset_id FROM experiments WHERE id=:e) AND ({cases})"
        if answers:
            sql += f" UNION SELECT case_idx FROM runs WHERE experiment_id=:e AND {_contains('prediction')}"
        rows = conn.execute(sql, {"e": exp_id, "w": folded}).fetchall()
        return {int(r[0]) for r in rows}
