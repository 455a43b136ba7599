"""Streaming exports give what the exports gave when every run was loaded first.

The reference (`tests.export.reference_export`) is the export path before it streamed: every run and
grade loaded, sorted in Python, the workbook written cell by cell by openpyxl. On the fixture
experiments (rules, judges, pairwise judges, failures, Chinese and formula-like text), CSV and JSONL
bytes are identical, and the XLSX cells read back with openpyxl hold the same values and types.
"""

from __future__ import annotations

import datetime as dt
import math

import pytest

from abbench.export import export_table, write_csv, write_jsonl, write_xlsx
from tests.export.reference_export import (
    reference_grades_table,
    reference_runs_table,
    reference_write_xlsx,
)


def _tables(store, exp_id, what):
    exp = store.experiments.get(exp_id)
    ref = reference_runs_table(store, exp) if what == "runs" else reference_grades_table(store, exp)
    return export_table(exp_id, what, store=store), ref


@pytest.mark.parametrize("what", ["runs", "grades"])
def test_csv_and_jsonl_bytes_are_unchanged(finished, tmp_path, what):
    store, ids = finished
    for shape, exp_id in ids.items():
        new, ref = _tables(store, exp_id, what)
        assert new.names == ref.names, shape
        for writer, suffix in ((write_csv, "csv"), (write_jsonl, "jsonl")):
            a, b = tmp_path / f"{shape}-new.{suffix}", tmp_path / f"{shape}-ref.{suffix}"
            assert writer(new, a) == writer(ref, b)
            assert a.read_bytes() == b.read_bytes(), (shape, what, suffix)


def _cells(path):
    from openpyxl import load_workbook

    wb = load_workbook(path)
    ws = wb.worksheets[0]
    return ws, [[(c.value, c.data_type) for c in row] for row in ws.iter_rows()]


def _same(a, b):
    (va, ta), (vb, tb) = a, b
    if ta != tb:
        return False
    if isinstance(va, float) and isinstance(vb, float):
        # the writer keeps 16 significant digits (Excel shows 15), openpyxl 17
        return math.isclose(va, vb, rel_tol=1e-15)
    if isinstance(va, dt.datetime) and isinstance(vb, dt.datetime):
        return abs(va - vb) < dt.timedelta(milliseconds=1)  # both are day fractions in the file
    return va == vb and type(va) is type(vb)


@pytest.mark.parametrize("what", ["runs", "grades"])
def test_xlsx_cells_hold_the_same_values_and_types(finished, tmp_path, what):
    store, ids = finished
    for shape, exp_id in ids.items():
        new, ref = _tables(store, exp_id, what)
        a, b = tmp_path / f"{shape}-new.xlsx", tmp_path / f"{shape}-ref.xlsx"
        assert write_xlsx(new, a) == reference_write_xlsx(ref, b)
        ws_a, cells_a = _cells(a)
        ws_b, cells_b = _cells(b)
        assert len(cells_a) == len(cells_b) and len(cells_a) > 1, shape
        for n, (row_a, row_b) in enumerate(zip(cells_a, cells_b, strict=True)):
            width = max(len(row_a), len(row_b))
            row_a += [(None, "n")] * (width - len(row_a))
            row_b += [(None, "n")] * (width - len(row_b))
            bad = [(i, x, y) for i, (x, y) in enumerate(zip(row_a, row_b, strict=True)) if not _same(x, y)]
            assert not bad, (shape, what, n, bad[:3])
        # the same sheet: its name, the frozen bold header, the filter over every row
        assert ws_a.title == ws_b.title and ws_a.freeze_panes == ws_b.freeze_panes == "A2"
        assert all(c.font.bold for c in next(ws_a.iter_rows(max_row=1)))
        assert ws_a.auto_filter.ref == ws_b.auto_filter.ref


def test_xlsx_keeps_formula_like_text_as_text(tmp_path):
    from abbench.export import Column, Table

    texts = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", '=HYPERLINK("http://x")']
    table = Table(
        "runs", "t", (Column("text"), Column("n", "float")), lambda: iter([(t, -0.5) for t in texts])
    )
    write_xlsx(table, tmp_path / "f.xlsx")
    _, cells = _cells(tmp_path / "f.xlsx")
    assert [row[0] for row in cells[1:]] == [(t, "s") for t in texts]
    assert {row[1] for row in cells[1:]} == {(-0.5, "n")}
