"""The streamed XLSX writer: every cell, read back with openpyxl, holds the CSV export's value with its type.

openpyxl is the independent reader here. It does not undo Excel's own ``_xHHHH_`` escapes (Excel does),
so `_excel_text` undoes the one the writer adds (a literal ``_x0041_`` is written ``_x005F_x0041_``).
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import re
import zipfile

import pytest

from abbench.errors import UsageError
from abbench.export import Column, Table, export_table, write_csv, write_xlsx
from abbench.export._tables import JsonText
from abbench.export._xlsx import TRUNCATED, XLSX_MAX_CELL, column_letter


def _excel_text(text: str) -> str:
    return re.sub(r"_x005F(_x[0-9a-fA-F]{4}_)", r"\1", text)


def _read_xlsx(path):
    from openpyxl import load_workbook

    ws = load_workbook(path).worksheets[0]
    return ws, [list(row) for row in ws.iter_rows()]


def _read_csv(path):
    with path.open(encoding="utf-8-sig", newline="") as f:
        return list(csv.reader(f))


def _agrees(column: Column, text: str, cell) -> bool:
    """Whether an XLSX cell holds what the CSV cell says, typed by the column's kind."""
    value = cell.value
    if text == "":
        return value is None
    if column.kind == "int":
        return cell.data_type == "n" and value == int(text)
    if column.kind == "float":
        return cell.data_type == "n" and math.isclose(value, float(text), rel_tol=1e-15)
    if column.kind == "bool":
        return cell.data_type == "b" and value is (text == "true")
    if column.kind == "datetime" and cell.is_date:
        moment = dt.datetime.fromisoformat(text).replace(tzinfo=None)
        return abs(value - moment) < dt.timedelta(milliseconds=1)
    # text: stored as text (never a formula); the CSV adds ' before formula-like text
    shown = text[1:] if text[:1] == "'" and text[1:2] in ("=", "+", "-", "@", "\t", "\r") else text
    if len(shown) > XLSX_MAX_CELL:
        shown = shown[: XLSX_MAX_CELL - len(TRUNCATED)] + TRUNCATED
    shown = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f]", "\ufffd", shown)
    return cell.data_type == "s" and _excel_text(value) == shown


def _check_against_csv(table: Table, tmp_path) -> int:
    write_csv(table, tmp_path / "t.csv")
    rows = write_xlsx(table, tmp_path / "t.xlsx")
    columns = [c for c in table.columns if not c.jsonl_only]
    texts = _read_csv(tmp_path / "t.csv")
    ws, cells = _read_xlsx(tmp_path / "t.xlsx")
    assert len(cells) == len(texts) == rows + 1
    assert [c.value for c in cells[0]] == [
        c.name + (" (UTC)" if c.kind == "datetime" else "") for c in columns
    ]
    assert all(c.font.bold for c in cells[0])
    assert ws.freeze_panes == "A2"
    assert ws.auto_filter.ref == f"A1:{column_letter(len(columns) - 1)}{rows + 1}"
    for n, (line, row) in enumerate(zip(texts[1:], cells[1:], strict=True), start=2):
        bad = [
            (c.name, t, cell.value)
            for c, t, cell in zip(columns, line, row, strict=True)
            if not _agrees(c, t, cell)
        ]
        assert not bad, (n, bad[:3])
    return rows


def test_edge_values_read_back_as_the_csv_says(tmp_path):
    columns = (
        Column("text"),
        Column("n", "int"),
        Column("x", "float"),
        Column("ok", "bool"),
        Column("at", "datetime"),
        Column("data", "json"),
        Column("raw", "json", jsonl_only=True),
    )
    texts = [
        "=HYPERLINK(\"http://x\")", "+1", "-2", "@cmd", "\tlead tab", "a & b < c > d", "  spaced  ",
        "line\nbreak", "cr\rin the middle", "bell\x07char", "_x0041_ literal", "中文 用例", "x" * 40_000, "",
    ]  # fmt: skip
    numbers = [0, -7, 2**40, None]
    floats = [-0.5, 0.1 + 0.2, 1e-05, 1e300, float("inf"), float("nan"), None]
    dates = ["2026-12-01T23:09:33+00:00", "2026-01-01T00:00:00.250000+00:00", "not a date", None]
    data = [["a", 1], {"k": "中"}, JsonText('{"stored":true}'), JsonText("-1"), None]

    def rows():
        for i in range(60):
            yield (
                texts[i % len(texts)],
                numbers[i % len(numbers)],
                floats[i % len(floats)],
                (True, False, None)[i % 3],
                dates[i % len(dates)],
                data[i % len(data)],
                {"never": "written"},
            )

    assert _check_against_csv(Table("runs", "t", columns, rows), tmp_path) == 60


@pytest.mark.parametrize("what", ["runs", "grades", "comparison"])
def test_fixture_exports_read_back_as_the_csv_says(finished, tmp_path, what):
    store, ids = finished
    for shape, exp_id in ids.items():
        if what == "comparison" and len(store.experiments.get(exp_id).arms) != 2:
            continue
        folder = tmp_path / shape
        folder.mkdir()
        assert _check_against_csv(export_table(exp_id, what, store=store), folder) > 0, shape


def test_the_workbook_is_a_valid_package_and_the_same_bytes_twice(tmp_path):
    table = Table("runs", "t", (Column("a"), Column("b", "float")), lambda: iter([("x", 1.5), ("<y>", None)]))
    write_xlsx(table, tmp_path / "1.xlsx")
    write_xlsx(table, tmp_path / "2.xlsx")
    assert (tmp_path / "1.xlsx").read_bytes() == (tmp_path / "2.xlsx").read_bytes()
    with zipfile.ZipFile(tmp_path / "1.xlsx") as zf:
        assert zf.testzip() is None
        assert {"[Content_Types].xml", "xl/workbook.xml", "xl/styles.xml", "xl/worksheets/sheet1.xml"} <= set(
            zf.namelist()
        )
        assert "_xlnm._FilterDatabase" in zf.read("xl/workbook.xml").decode()


def test_more_rows_than_a_sheet_holds_is_refused(tmp_path, monkeypatch):
    import abbench.export._xlsx as xlsx

    monkeypatch.setattr(xlsx, "XLSX_MAX_ROWS", 10)
    table = Table("runs", "big", (Column("n", "int"),), lambda: iter([(i,) for i in range(20)]))
    with pytest.raises(UsageError, match="more rows than an Excel sheet holds"):
        write_xlsx(table, tmp_path / "big.xlsx")


@pytest.mark.parametrize("kind", ["text", "json"])
def test_a_text_cell_is_the_general_cells_xml(kind):
    """The compiled cell's short way (text kept as it is) and `_string_cell` write the same XML."""
    from abbench.export._xlsx import _Dates, _row_writer, _string_cell

    texts = ["plain", "a&b", "<x>", "1 > 0", "cr\rhere", "crlf\r\n", "&amp;", "中文 😀", "_x0041_", "\t\n",
             "x" * XLSX_MAX_CELL, "x" * (XLSX_MAX_CELL + 1), "<" * (XLSX_MAX_CELL + 5)]  # fmt: skip
    write = _row_writer([Column("t", kind)], [0], _Dates())
    for text in texts:
        value = JsonText(text) if kind == "json" else text
        assert write((value,), 7) == f'<row r="7">{_string_cell("A7", text)}</row>', text[:20]
