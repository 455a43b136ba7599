"""The export path as it was before rows streamed from the store: the reference the streaming tests compare to.

`runs_table` loaded every run and every latest grade up front; `write_xlsx` wrote openpyxl write-only
cells. Both are kept here verbatim (but for names) so a test can check that the streaming tables and the
streamed XLSX writer give the same bytes (CSV, JSONL) and the same cell values and types (XLSX).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from abbench.errors import UsageError
from abbench.export._tables import Column, Table, _grades_per_run, _run_columns, _run_row
from abbench.export._writers import _json_text, _parse_datetime, _xlsx_text
from abbench.export._xlsx import XLSX_MAX_ROWS
from abbench.store import Experiment, Grade, Store


def reference_runs_table(store, exp) -> Table:
    """The runs table, every run and grade loaded first and sorted in Python."""
    cases = dict(enumerate(store.datasets.load_cases(exp.dataset_id)))
    latest = store.grades.records(exp.id, latest=True)
    graders = _reference_grader_columns(exp, latest)
    per_run = _grades_per_run(latest)

    def rows() -> Iterator[tuple[Any, ...]]:
        arm_pos = {a.name: a.position for a in exp.arms}
        records = sorted(
            store.runs.records(exp.id), key=lambda r: (arm_pos.get(r.arm, 0), r.round, r.case_idx, r.id)
        )
        for r in records:
            yield _run_row(exp, r, cases.get(r.case_idx), per_run.get(r.id, {}), graders)

    return Table("runs", exp.name, tuple(_run_columns(graders)), rows)


def _reference_grader_columns(exp: Experiment, latest: list[Grade]) -> list[tuple[str, list[Column]]]:
    """One column per grader (its pass/fail, else its score, else its pairwise verdict); judges that
    both pass and score get a second ``.score`` column."""
    order: list[str] = []
    for spec in exp.spec.graders:
        name = spec if isinstance(spec, str) else (spec.get("name") or spec.get("type"))
        if isinstance(name, str) and ":" not in name and name not in order:
            order.append(name)
    for g in latest:
        if g.grader not in order:
            order.append(g.grader)
    out = []
    for name in order:
        mine = [g for g in latest if g.grader == name and g.status == "ok"]
        kind = next((g.kind for g in latest if g.grader == name), "rule")
        col = f"grade.{name}"
        if kind == "pairwise":
            cols = [Column(col, "text", f"Pairwise verdict of {name}: a, b or tie (in arm order).")]
        elif any(g.passed is not None for g in mine) or not mine:
            cols = [Column(col, "bool", f"Whether {name} graded the run right (latest grade).")]
            if kind == "judge":
                cols.append(Column(col + ".score", "float", f"The score {name} gave (latest grade)."))
        else:
            cols = [Column(col, "float", f"The score {name} gave (latest grade).")]
        out.append((name, cols))
    return out


def reference_write_xlsx(table: Table, out: Path) -> int:
    """Write `table` as an Excel workbook: typed cells (numbers, booleans, dates), a bold frozen header
    and a filter on it, one sheet named after the table (write-only mode, so memory stays flat).

    Text is stored as text, never as a formula, so a cell such as ``=HYPERLINK(...)`` shows as written.
    Text longer than Excel's 32,767 characters per cell is cut with a note (JSONL keeps it whole).

    Returns the number of data rows.

    Raises:
        UsageError: more rows than a sheet holds.
    """
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter

    columns = [c for c in table.columns if not c.jsonl_only]
    index = [i for i, c in enumerate(table.columns) if not c.jsonl_only]
    wb = Workbook(write_only=True)
    ws = wb.create_sheet(table.what[:31])
    ws.freeze_panes = "A2"
    for n, c in enumerate(columns, start=1):
        width = 40 if c.name in ("input", "reason", "raw_output", "note", "comment", "error") else 14
        ws.column_dimensions[get_column_letter(n)].width = max(width, min(len(c.name) + 2, 40))
    bold = Font(bold=True)
    header = []
    for c in columns:
        cell = WriteOnlyCell(ws, value=c.name + (" (UTC)" if c.kind == "datetime" else ""))
        cell.font = bold
        cell.data_type = "s"
        header.append(cell)
    ws.append(header)
    wrap = Alignment(wrap_text=False, vertical="top")
    n = 0
    for row in table.rows():
        n += 1
        if n >= XLSX_MAX_ROWS:
            raise UsageError(
                f"the {table.what} of {table.experiment} have more rows than an Excel sheet holds "
                f"({XLSX_MAX_ROWS - 1:,}); export them as csv or jsonl instead"
            )
        cells = []
        for c, i in zip(columns, index, strict=True):
            cells.append(_xlsx_cell(ws, WriteOnlyCell, c, row[i], wrap))
        ws.append(cells)
    if columns:
        ws.auto_filter.ref = f"A1:{get_column_letter(len(columns))}{n + 1}"
    wb.save(out)
    return n


def _xlsx_cell(ws: Any, cell_type: Any, column: Column, value: Any, alignment: Any) -> Any:
    if value is None:
        return None
    if column.kind == "json" or isinstance(value, (list, dict, tuple)):
        value = _json_text(value)
    elif column.kind == "datetime":
        value = _parse_datetime(value)
        if isinstance(value, datetime):
            cell = cell_type(ws, value=value)
            cell.number_format = "yyyy-mm-dd hh:mm:ss"
            return cell
    elif isinstance(value, bool) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value
    cell = cell_type(ws, value=_xlsx_text(str(value)))
    cell.data_type = "s"  # openpyxl would store text beginning with '=' as a formula
    cell.alignment = alignment
    return cell


def reference_grades_table(store: Store, exp: Experiment) -> Table:
    """Every grade of the experiment, old ones included, with its batch and whether it is the latest."""
    runs = {r.id: r for r in store.runs.records(exp.id)}
    columns = (
        Column("grade_id", "int", "The grade's id (grades are appended, never overwritten)."),
        Column("batch_id", "text", "The experiment's grade batch."),
        Column(
            "latest", "bool", "Whether this is the latest grade of its grader on its run (the one shown)."
        ),
        Column("experiment", "text", "The experiment's name."),
        Column("run_id", "int", "The graded run (for pairwise graders: the first arm's run)."),
        Column("other_run_id", "int", "For pairwise graders: the second arm's run."),
        Column("arm", "text", "The graded run's arm."),
        Column("other_arm", "text", "For pairwise graders: the second run's arm."),
        Column("case_id", "text", "The case."),
        Column("round", "int", "The round, from 1 (as record_runs and every view count them)."),
        Column("grader", "text", "The grader's name."),
        Column("kind", "text", "rule, judge or pairwise."),
        Column("status", "text", "ok, or error when the grader could not reach a verdict."),
        Column("passed", "bool", "The verdict."),
        Column("score", "float", "The score."),
        Column("verdict", "text", "Pairwise: a, b or tie (in arm order)."),
        Column("dimensions", "json", "Scores per rubric dimension."),
        Column("comment", "text", "The grader's explanation."),
        Column("error", "text", "Why grading failed."),
        Column("retryable", "bool", "Whether grading again may help."),
        Column("judge_model", "text", "The judge's model."),
        Column(
            "judge_cost",
            "float",
            "What this judge call cost: the judge's, not an arm's (a pairwise grade compares arm and other_arm).",
        ),
        Column("input_tokens", "int", "Judge prompt tokens."),
        Column("output_tokens", "int", "Judge completion tokens."),
        Column("created_at", "datetime", "When the grade was written (UTC)."),
        Column("raw_output", "text", "The judge's raw text."),
        Column("details", "json", "Seed, slot order, both-order verdicts and the like."),
    )

    def rows() -> Iterator[tuple[Any, ...]]:
        every = store.grades.records(exp.id, latest=False)
        latest_ids = {g.id for g in store.grades.records(exp.id, latest=True)}
        for g in every:
            run = runs.get(g.run_id)
            other = runs.get(g.other_run_id) if g.other_run_id is not None else None
            yield (
                g.id,
                g.batch_id,
                g.id in latest_ids,
                exp.name,
                g.run_id,
                g.other_run_id,
                run.arm if run else None,
                other.arm if other else None,
                run.case_id if run else None,
                run.round + 1 if run else None,
                g.grader,
                g.kind,
                g.status,
                g.passed,
                g.score,
                g.verdict,
                g.dimensions,
                g.comment,
                g.error,
                g.retryable,
                g.judge_model,
                g.judge_cost,
                g.input_tokens,
                g.output_tokens,
                g.created_at,
                g.raw_output,
                g.details,
            )

    return Table("grades", exp.name, columns, rows)
