"""The Python path of a JSONL export's lines: a slice at a time, in worker processes when big.

A JSONL line is lossless: every value decoded from its stored JSON and encoded again, the full latest
grades and the raw source row beside the columns. Here the lines are made by the export's own function
(`JsonBlock`) from each slice's rows and latest grades: `export_run_json_blocks` cuts the runs into
slices (arm, round, a range of cases) and hands them to it, in two worker processes for a
big export (`abbench.store.bulk._workers`). The lines SQLite builds (`abbench.store.bulk._json_lines`) fall back
to this path, a slice or a few runs of it (`_JsonSlices.lines_of`), for what SQLite cannot judge.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from abbench.store._analysis import EXPORT_RUN_COLUMNS
from abbench.store._grades import GRADE_COLUMNS
from abbench.store.bulk._csv import _case_slices
from abbench.store.bulk._sheet import _named_joins
from abbench.store.bulk._workers import store_slices

JsonBlock = Callable[[list[tuple[Any, ...]], list[tuple[Any, ...]]], bytes]
"""``(rows, grades) -> UTF-8 JSON lines``: a slice's rows (those of `export_run_rows`) and the
``(run_id, other_run_id, grader, *fields)`` of their latest grades (`latest_grade_fields_of_runs`'s
rows, by id) made into the slice's lines, each ended by a newline. Picklable: workers are handed it."""

if TYPE_CHECKING:
    from abbench.store._store import Store


class _JsonSlices:
    """Reads a slice's runs and their latest grades and makes its lines (a `read_slices` job)."""

    bundled_sqlite = True  # (see `abbench.store.bulk._workers.sqlite_module`)

    def __init__(self, runs: str, grades: str, block: JsonBlock) -> None:
        self.runs, self.grades, self.block = runs, grades, block

    def prepare(self, conn: sqlite3.Connection) -> None:
        """Nothing to register: the lines are made in Python."""

    def read(self, conn: sqlite3.Connection, params: dict[str, Any]) -> tuple[bytes, int]:
        rows, grades = self._rows(conn, self.runs, self.grades, params)
        return self.block(rows, grades), len(rows)

    def lines_of(
        self, conn: sqlite3.Connection, params: dict[str, Any], run_ids: Sequence[int]
    ) -> dict[int, bytes]:
        """The lines of the runs `run_ids` of the slice `params`, by run id (without their line ends)."""
        if not run_ids:
            return {}
        ids = {"ids": "[" + ",".join(str(int(i)) for i in run_ids) + "]"}
        runs, grades = (
            sql.replace(
                " AND r.case_idx >= :start",
                " AND r.id IN (SELECT value FROM json_each(:ids)) AND r.case_idx >= :start",
            )
            for sql in (self.runs, self.grades)
        )
        rows, found = self._rows(conn, runs, grades, params | ids)
        lines = self.block(rows, found).split(b"\n")
        return {row[1]: line for row, line in zip(rows, lines, strict=False)}

    @staticmethod
    def _rows(
        conn: sqlite3.Connection, runs: str, grades: str, params: dict[str, Any]
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        cursor = conn.cursor()
        cursor.row_factory = None  # plain tuples
        # One snapshot for both reads, so the grades are those of the runs read (a caller's own
        # transaction is one already).
        begun = not conn.in_transaction
        if begun:
            cursor.execute("BEGIN")
        try:
            rows = cursor.execute(runs, params).fetchall()
            found = cursor.execute(grades, params).fetchall() if rows else []
        finally:
            if begun:
                cursor.execute("COMMIT")
        return rows, found


def json_blocks(
    store: Store,
    exp_id: int,
    dataset_id: int,
    graders: Sequence[str],
    grade_fields: Sequence[str],
    *,
    block: JsonBlock,
    chunk: int = 2000,
) -> Iterator[tuple[bytes, int]]:
    """An experiment's runs as JSONL, ``(lines, how many)`` a slice of up to `chunk` cases' runs at
    a time, in `export_run_rows`' order.

    Args:
        exp_id: The experiment.
        dataset_id: Its dataset.
        graders: The non-pairwise graders whose latest grade's status, passed and score end each
            row (as in `export_run_rows`).
        grade_fields: The fields of each latest grade handed to `block` (names of `GRADE_COLUMNS`).
        block: Makes a slice's lines (see `JsonBlock`).
        chunk: Cases per slice.

    Raises:
        ValueError: a field that is no grade column.
    """
    job, common = _json_fallback(store, exp_id, dataset_id, graders, grade_fields, block)
    cut, rows = _case_slices(store, exp_id, chunk)
    slices = [common | s for s in cut]
    yield from store_slices(store, job, slices, rows)


def _json_fallback(
    store: Store,
    exp_id: int,
    dataset_id: int,
    graders: Sequence[str],
    grade_fields: Sequence[str],
    block: JsonBlock,
) -> tuple[_JsonSlices, dict[str, Any]]:
    """The job making a slice's lines in Python, and the parameters every slice of it shares."""
    unknown = set(grade_fields) - set(GRADE_COLUMNS)
    if unknown:
        raise ValueError(f"not grade columns: {sorted(unknown)}")
    grade_cols = "".join(f", g{i}.status, g{i}.passed, g{i}.score" for i in range(len(graders)))
    in_slice = (
        "r.experiment_id = :exp AND r.arm_id = :arm_id AND r.round = :round "
        "AND r.case_idx >= :start AND r.case_idx < :stop"
    )
    runs = (
        f"SELECT :arm, {EXPORT_RUN_COLUMNS}{grade_cols} FROM runs r "
        "LEFT JOIN cases c ON c.dataset_id = :dataset AND c.idx = r.case_idx"
        f"{_named_joins(len(graders))} WHERE {in_slice} ORDER BY r.case_idx"
    )
    grades = (
        f"SELECT run_id, other_run_id, grader, {', '.join(grade_fields)} FROM latest_grades "
        f"WHERE +experiment_id = :exp AND run_id IN (SELECT r.id FROM runs r WHERE {in_slice}) ORDER BY id"
    )
    common = {"dataset": dataset_id, "exp": exp_id} | {f"g{i}": name for i, name in enumerate(graders)}
    return _JsonSlices(runs, grades, block), common
