"""Store methods that hand an export its lines built inside SQLite: one text per run instead of ~40 values.

Reading 600,000 runs as tuples of ~40 Python objects costs more than a CSV export may spend.
`export_run_csv_lines` asks SQLite for each CSV line whole, joined by one ``printf`` (a copy per
``||`` would cost more than the cells), with the cells SQLite can write exactly as they are: text
without a formula prefix, a comma, a quote, a line break or a NUL; integers; verdicts as
``true``/``false``. Every other cell — floats (SQLite's own float text is neither Python's repr nor
fast), text that needs quoting or a ``'``, values of an unexpected type — goes through the `CsvCell`
function the export passes, which is the Python writer's own rule, so a line is the one the Python
writer would write.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from abbench.store._analysis import latest_grade_joins
from abbench.store._base import StoreBase

CsvCell = Callable[[int, Any], str]
"""``(cell position, value) -> the cell as the CSV writer writes it``: the general path of a cell."""

_CELL = "abbench_csv_cell"
_FORMULA = "'[=+@' || char(9) || char(13) || '-]*'"
_NEEDS_QUOTES = "'*[,\"' || char(10) || char(13) || char(65534) || ']*'"


def _cell(n: int, v: str, kind: str) -> str:
    """SQL: cell `n` of a CSV line from value `v` of a column of `kind`, for ``printf('%s')`` (which
    writes NULL as nothing): the common value of the kind as it is or written in SQL, anything else
    through the export's own cell function."""
    slow = f"{_CELL}({n},{v})"
    if kind == "bool":
        return f"(CASE {v} WHEN 1 THEN 'true' WHEN 0 THEN 'false' ELSE (CASE WHEN {v} IS NOT NULL THEN {slow} END) END)"
    if kind == "int":
        return f"(CASE WHEN typeof({v}) IN ('integer','null') THEN {v} ELSE {slow} END)"
    if kind == "float":  # SQLite's own float text is neither repr's nor fast: Python writes it
        return f"(CASE WHEN {v} IS NOT NULL THEN {slow} END)"
    return (
        f"(CASE WHEN {v} IS NULL OR (typeof({v})='text' AND NOT {v} GLOB {_NEEDS_QUOTES} "
        f"AND NOT {v} GLOB {_FORMULA} AND NOT instr({v},char(0))) THEN {v} ELSE {slow} END)"
    )


def _printf(args: list[str]) -> str:
    """SQL: the args joined by commas in one ``printf`` per 100 (SQLite's limit is 127 arguments): one
    string built once, not a copy per ``||``."""
    parts = [args[i : i + 100] for i in range(0, len(args), 100)]
    return " || ',' || ".join(f"printf('{','.join(['%s'] * len(p))}', {', '.join(p)})" for p in parts)


_EXECUTED = "r.executed_at IS NOT NULL"


def _if_executed(v: str) -> str:
    return f"(CASE WHEN {_EXECUTED} THEN {v} END)"


def _falsy(v: str) -> str:
    return f"({v} IS NULL OR {v} = 0 OR {v} = '')"


def _csv_values(
    outcome_words: Mapping[str, str], graders: Sequence[tuple[str, int]]
) -> list[tuple[str, str]]:
    """(SQL value, kind) of each cell of a runs CSV line after the experiment and arm cells, in the
    order of the runs table's columns: the values `abbench.export`'s runs table computes in Python."""
    words = " ".join(f"WHEN '{k}' THEN '{w}'" for k, w in outcome_words.items())
    outcome = (
        "(CASE WHEN r.state = 'fail' THEN (CASE WHEN r.failure_type IS NOT NULL THEN 'execution failed' "
        f"WHEN r.passed IS NULL THEN 'grading failed' ELSE 'wrong' END) ELSE (CASE r.state {words} "
        "ELSE r.state END) END)"
    )
    grade_cells: list[tuple[str, str]] = []
    for i, (kind, n) in enumerate(graders):
        ok = f"g{i}.status = 'ok'"
        if kind == "float":
            grade_cells.append((f"(CASE WHEN {ok} THEN g{i}.score END)", "float"))
        else:
            both = [
                (f"(CASE WHEN {ok} THEN g{i}.passed END)", "bool"),
                (f"(CASE WHEN {ok} THEN g{i}.score END)", "float"),
            ]
            grade_cells += both[:n]
    tokens = "(r.input_tokens IS NULL AND r.output_tokens IS NULL)"
    t_in = f"(CASE WHEN {_falsy('r.input_tokens')} THEN 0 ELSE r.input_tokens END)"
    t_out = f"(CASE WHEN {_falsy('r.output_tokens')} THEN 0 ELSE r.output_tokens END)"
    usage = [
        f"(CASE WHEN {_EXECUTED} AND NOT {tokens} THEN {t} END)" for t in (t_in, t_out, f"{t_in} + {t_out}")
    ]
    listed = [
        _if_executed(f"(CASE WHEN r.{c} IS NULL OR r.{c} = '' THEN '[]' ELSE r.{c} END)")
        for c in ("evidence_refs", "files_read", "sections_read")
    ]
    latency = _if_executed(f"(CASE WHEN {_falsy('r.latency_ms')} THEN 0.0 ELSE r.latency_ms END)")
    return [
        ("r.round", "int"),
        ("r.case_idx", "int"),
        *[(f"c.{c}", "text") for c in ("case_id", "input", "expected", "domain", "request_id")],
        *[(f"c.{c}", "json") for c in ("history", "context", "metadata")],
        ("r.state", "text"),
        (outcome, "text"),
        ("r.failure_type", "text"),
        ("r.error", "text"),
        ("r.passed", "bool"),
        ("r.score", "float"),
        *grade_cells,
        *[
            (_if_executed(f"r.{c}"), k)
            for c, k in (("prediction", "text"), ("reason", "text"), ("confidence", "float"))
        ],
        *[(v, "json") for v in listed],
        (_if_executed("r.model"), "text"),
        *[(v, "int") for v in usage],
        (_if_executed("r.cost"), "float"),
        ("r.cached_calls", "int"),
        ("r.cost_saved", "float"),
        (latency, "float"),
        ("r.attempts", "int"),
        (_if_executed("r.session_id"), "text"),
        *[(f"r.{c}", "text") for c in ("started_by", "started_at", "executed_at", "finished_at")],
        (_if_executed("r.raw_output"), "text"),
    ]


class LinesMixin(StoreBase):
    """Export lines built inside SQLite (see the module docstring)."""

    def export_run_csv_lines(
        self,
        exp_id: int,
        dataset_id: int,
        graders: Sequence[tuple[str, str, int]],
        *,
        head: Callable[[str], str],
        cell: CsvCell,
        outcome_words: Mapping[str, str],
        chunk: int = 20000,
    ) -> Iterator[list[str]]:
        """An experiment's runs as CSV lines (no line ends), in the order and with the cells of
        `export_run_rows`' rows as the runs CSV export writes them, `chunk` lines at a time.

        Args:
            exp_id: The experiment.
            dataset_id: Its dataset.
            graders: ``(name, kind, cells)`` of each non-pairwise grader: ``float`` for a score alone,
                else a verdict and, with 2 cells, its score.
            head: The run id, experiment and arm cells' text from a run's arm name (the same on every
                line of an arm but for the run id, which SQL adds).
            cell: The general path of a cell (see `CsvCell`); position 0 is the round.
            outcome_words: The word of each outcome key or open state (`abbench.types.OUTCOME_WORDS`).
            chunk: Cases per list (a list holds up to this many lines: one per run of the cases).
        """
        values = _csv_values(outcome_words, [(k, n) for _, k, n in graders])
        body = _printf(["r.id", "?", *(_cell(n, v, k) for n, (v, k) in enumerate(values))])
        grade_joins = latest_grade_joins(len(graders))
        sql = (
            f"SELECT {body} FROM runs r "
            "LEFT JOIN cases c ON c.dataset_id = ? AND c.idx = r.case_idx"
            f"{grade_joins} WHERE r.experiment_id = ? AND r.arm_id = ? AND r.round = ?"
        )
        plan = self.conn.execute(
            "SELECT a.id, a.name, (SELECT group_concat(DISTINCT round) FROM runs WHERE experiment_id = ?), "
            "(SELECT max(case_idx) FROM runs WHERE experiment_id = ?) "
            "FROM arms a WHERE a.experiment_id = ? ORDER BY a.position",
            (exp_id, exp_id, exp_id),
        ).fetchall()
        names = [name for name, _, _ in graders]
        slices = [
            (head(arm), dataset_id, *names, exp_id, arm_id, rnd, start, start + chunk)
            for arm_id, arm, rounds, last in plan
            for rnd in sorted(int(x) for x in (rounds or "").split(",") if x)
            for start in range(0, int(last or 0) + 1, chunk)
        ]
        sql += " AND r.case_idx >= ? AND r.case_idx < ? ORDER BY r.case_idx"

        def read(params: tuple[Any, ...]) -> list[str]:
            conn = self.conn  # this thread's own connection
            conn.create_function(_CELL, 2, cell, deterministic=True)
            cursor = conn.cursor()
            cursor.row_factory = None
            return [row[0] for row in cursor.execute(sql, params).fetchall()]

        yield from _in_order(read, slices, self.close_thread_connection)


def _in_order(
    read: Callable[[tuple[Any, ...]], list[str]], slices: list[tuple[Any, ...]], done: Callable[[], None]
) -> Iterator[list[str]]:
    """`read` of each slice, in order, read by two threads a few slices ahead: SQLite builds lines
    without holding the GIL, so two readers keep both cores of a small machine busy. Each thread
    closes its connection (`done`) when it has no slice left or the caller stopped reading."""
    stop = threading.Event()
    results: list[queue.Queue[tuple[list[str] | None, BaseException | None]]] = [
        queue.Queue(2),
        queue.Queue(2),
    ]

    def work(k: int) -> None:
        try:
            for params in slices[k::2]:
                try:
                    item: tuple[list[str] | None, BaseException | None] = (read(params), None)
                except BaseException as exc:  # handed to the reader, which raises it
                    item = (None, exc)
                while not stop.is_set():
                    try:
                        results[k].put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set() or item[1] is not None:
                    return
        finally:
            done()

    threads = [
        threading.Thread(target=work, args=(k,), name=f"abbench-export-{k}", daemon=True) for k in (0, 1)
    ]
    for t in threads:
        t.start()
    try:
        for i in range(len(slices)):
            lines, error = results[i % 2].get()
            if error is not None:
                raise error
            if lines:
                yield lines
    finally:
        stop.set()
        for t in threads:
            t.join()
