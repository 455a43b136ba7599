"""Workbook bombs and crafted workbooks (issue 36, items 1 and 18): checked before the reader allocates,
sparse sheets read sparsely, the rest refused with where and why — never an abort or a traceback."""

from __future__ import annotations

import datetime as dt
import io
import os
import zipfile
from pathlib import Path

import pytest

from abbench.dataset import _workbook as workbook, preview_import
from abbench.dataset._excel import open_excel
from abbench.dataset._profile import ReadSpec
from abbench.errors import ImportFailed
from tests.conftest import run_abbench

from .crafted import NS, sheet_xml, write_book

DATA = {
    1: {"A": "id", "B": "query", "C": "label"},
    2: {"A": 1, "B": "打开空调", "C": "fast"},
    3: {"A": 2, "B": "导航回家", "C": "slow"},
}


def far_cell_book(path: Path) -> Path:
    """The issue's 1.7 KB workbook: a few rows and one value at XFD1048576."""
    return write_book(path, sheet_xml({**DATA, 1048576: {"XFD": "x"}}))


def test_one_value_at_xfd1048576_is_read_sparsely_in_a_child_process_and_named(tmp_path):
    path = far_cell_book(tmp_path / "far.xlsx")
    assert path.stat().st_size < 2500
    # before: calamine allocated 549,755,813,888 bytes and the process aborted (SIGABRT, exit 134)
    done = run_abbench("--store", tmp_path / "s", "import", path, "--skip-invalid", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    assert '"n_cases": 2' in done.stdout
    assert "Sheet1!row 1048576" in done.stdout + done.stderr


def test_a_sheet_read_sparsely_names_headerless_columns_by_their_letters(tmp_path):
    preview = preview_import(far_cell_book(tmp_path / "far.xlsx"))
    assert preview.columns == ("id", "query", "label", "XFD")
    assert [c.input for c in preview.cases] == ["打开空调", "导航回家"]
    assert {p.location for p in preview.report.problems} == {"Sheet1!row 1048576"}


def test_a_large_box_full_of_cells_is_refused_naming_the_far_cells(tmp_path, monkeypatch):
    monkeypatch.setattr(workbook, "MAX_DENSE_CELLS", 20)
    monkeypatch.setattr(workbook, "MAX_SPARSE_CELLS", 10)
    rows = {**DATA, **{r: {"A": r, "B": f"q{r}", "C": "fast"} for r in range(4, 9)}, 40: {"H": "far"}}
    path = write_book(tmp_path / "full.xlsx", sheet_xml(rows))
    with pytest.raises(ImportFailed) as caught:
        open_excel(path, ReadSpec())
    message = str(caught.value)
    assert "full.xlsx!Sheet1: the cells A40 and H40" not in message  # one cell: it is both
    assert "the cell H40 stretches it to 40 rows × 8 columns (320 cells, 25 of them filled)" in message
    assert "past the 20 cells this reader holds; delete what lies past your data" in message


def test_a_shared_string_repeated_by_many_cells_is_refused_before_it_is_copied(tmp_path, monkeypatch):
    monkeypatch.setattr(workbook, "MAX_SHEET_TEXT", 1 << 20)
    text = os.urandom(60_000).hex()  # incompressible: past the ratio check, caught by what it expands to
    cells = {r: {"A": ("raw", f'<c r="A{r}" t="s"><v>1</v></c>')} for r in range(2, 40)}
    path = write_book(tmp_path / "sst.xlsx", sheet_xml({1: {"A": "query"}, **cells}), shared=["query", text])
    with pytest.raises(ImportFailed) as caught:
        open_excel(path, ReadSpec())
    assert "sst.xlsx!Sheet1: its cells repeat shared strings to 4,56" in str(caught.value)
    assert "past the 1 MiB a sheet may hold" in str(caught.value)


def test_the_issues_shared_string_bomb_is_refused_from_the_archive(tmp_path):
    # one 10 MB shared string used by 2,000 cells, 29 KB on disk: calamine asked ~20 GB for it
    cells = {r: {"A": ("raw", f'<c r="A{r}" t="s"><v>0</v></c>')} for r in range(1, 2001)}
    path = write_book(tmp_path / "bomb.xlsx", sheet_xml(cells), shared=["x" * 10_000_000])
    assert path.stat().st_size < 60_000
    with pytest.raises(
        ImportFailed, match=r"bomb.xlsx: the part xl/sharedStrings.xml expands [\d,]+ times \(a zip bomb\?\)"
    ):
        open_excel(path, ReadSpec())


def test_a_sheet_inflating_a_thousand_times_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "inflate.xlsx"
    write_book(path, sheet_xml(DATA))
    # a 100 KB member inflating to 100 MB (the issue's 1 MB → 1 GB, at a tenth of the size)
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as zf, zf.open("xl/media/pad.xml", "w") as fh:
        block = b"<a/>" * (1 << 18)
        for _ in range(100):
            fh.write(block)
    assert path.stat().st_size < 200_000
    with pytest.raises(
        ImportFailed, match=r"the part xl/media/pad.xml expands 1,0\d\d times \(a zip bomb\?\)"
    ):
        open_excel(path, ReadSpec())


def test_a_workbook_past_the_uncompressed_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(workbook, "MAX_WORKBOOK_BYTES", 2000)
    path = write_book(tmp_path / "big.xlsx", sheet_xml({**DATA, **{r: {"B": f"q{r}"} for r in range(4, 60)}}))
    with pytest.raises(ImportFailed, match=r"takes the workbook past 0 MiB uncompressed"):
        open_excel(path, ReadSpec())


XXE = '<!DOCTYPE worksheet [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
LAUGHS = (
    '<!DOCTYPE sst [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>'
)


@pytest.mark.parametrize(
    ("make", "part"),
    [
        (
            lambda p: write_book(
                p,
                sheet_xml(
                    {**DATA, 4: {"A": 3, "B": ("raw", '<c r="B4" t="inlineStr"><is><t>&xxe;</t></is></c>')}},
                    prolog=XXE,
                ),
            ),
            "xl/worksheets/sheet1.xml",
        ),
        (
            lambda p: write_book(
                p,
                sheet_xml({1: {"A": "query"}, 2: {"A": ("raw", '<c r="A2" t="s"><v>0</v></c>')}}),
                shared_xml=f'<?xml version="1.0"?>{LAUGHS}<sst {NS}><si><t>&d;</t></si></sst>',
            ),
            "xl/sharedStrings.xml",
        ),
        (
            lambda p: write_book(p, sheet_xml(DATA), workbook_prolog=XXE.replace("worksheet", "workbook")),
            "xl/workbook.xml",
        ),
    ],
)
def test_a_workbook_declaring_entities_is_refused_naming_the_part_never_a_traceback(
    cli, tmp_path, make, part
):
    path = tmp_path / "xxe.xlsx"
    make(path)
    result = cli("import", path)
    assert result.exit_code == 2, result.output
    assert f"xxe.xlsx: the part {part} declares a DTD (<!DOCTYPE or <!ENTITY)" in result.output
    assert "Traceback" not in result.output


def test_a_damaged_sheet_is_an_error_naming_it(tmp_path):
    path = write_book(
        tmp_path / "broken.xlsx", sheet_xml(DATA).replace("</sheetData>", "<row r='9'><c r='A9'><v>1</v>")
    )
    with pytest.raises(ImportFailed) as caught:
        open_excel(path, ReadSpec()).chunks(100).__next__()
    assert "broken.xlsx" in str(caught.value) and "Traceback" not in str(caught.value)


# -- the sparse reader equals calamine --------------------------------------------------------------


def _rich_book(path: Path) -> Path:
    import openpyxl
    from openpyxl.cell.rich_text import CellRichText, TextBlock
    from openpyxl.cell.text import InlineFont

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["id", "text", "number", "flag", "when", "formula", "merged", "", "blank header"])
    ws.append([1, "打开空调", 2.5, True, dt.datetime(2024, 5, 6, 7, 8, 9, 123000), "=1/0", "m", "h", "x"])
    ws.append(
        [
            2,
            CellRichText("导航", TextBlock(InlineFont(b=True), "回家")),
            -3,
            False,
            dt.date(2024, 1, 2),
            "=A2*2",
        ]
    )
    ws.append([3, "  spaced  ", 1e20, None, dt.time(13, 45), None, None, None, None])
    ws.append([])
    ws.append([5, "after a blank row", 0.1 + 0.2, True, 45000.5, None])
    ws.merge_cells("G1:H1")
    for ref, fmt in (("E6", "[h]:mm:ss"), ("C4", "0.00E+00"), ("C6", "0.00%")):
        ws[ref].number_format = fmt
    ws["E7"], ws["E7"].number_format = 30, "yyyy-mm-dd"  # before 1900's phantom 29 February
    ws["A7"], ws["B7"] = 7, "dates"
    ws["E8"], ws["E8"].number_format = 0.999999999, "hh:mm:ss"
    ws["A8"], ws["B8"] = 8, "a time that rounds to midnight"
    wb.save(path)
    return path


def _rows(path: Path) -> tuple[tuple[str, ...], list[tuple[str, list[object]]]]:
    opened = open_excel(path, ReadSpec())
    rows = [
        (loc, list(row))
        for chunk in opened.chunks(3)
        for loc, row in zip(chunk.locations, chunk.rows, strict=True)
    ]
    return opened.columns, rows


def test_a_sheet_read_sparsely_gives_what_calamine_gives(tmp_path, monkeypatch):
    path = _rich_book(tmp_path / "rich.xlsx")
    dense = _rows(path)
    monkeypatch.setattr(workbook, "MAX_DENSE_CELLS", 0)
    assert workbook.Workbook(path).plan("Sheet") == "sparse"
    sparse = _rows(path)
    assert sparse == dense
    assert dense[0] == ("id", "text", "number", "flag", "when", "formula", "merged", "H", "blank header")


def test_date_systems_and_shared_strings_read_sparsely_as_calamine_reads_them(tmp_path, monkeypatch):
    rows = {
        1: {"A": ("raw", '<c r="A1" t="s"><v>0</v></c>'), "B": "n", "C": "error"},
        2: {
            "A": ("raw", '<c r="A2" t="s"><v>1</v></c>'),
            "B": ("raw", '<c r="B2" s="1"><v>1.5</v></c>'),
            "C": ("raw", '<c r="C2" t="e"><v>#N/A</v></c>'),
            "D": ("raw", '<c r="D2" t="d"><v>2024-01-02T03:04:05</v></c>'),
            "E": ("raw", '<c r="E2" t="str"><v>from a formula</v></c>'),
            "F": ("raw", '<c r="F2" t="b"><v>1</v></c>'),
        },
    }
    path = write_book(
        tmp_path / "d.xlsx",
        sheet_xml(rows),
        shared=["query", "打开空调"],
        numfmts={164: "d/m/yy h:mm"},
        xfs=[0, 164],
        date1904=True,
    )
    dense = _rows(path)
    monkeypatch.setattr(workbook, "MAX_DENSE_CELLS", 0)
    assert _rows(path) == dense


def test_the_limits_are_what_the_docs_say():
    text = (Path(__file__).resolve().parents[2] / "docs" / "datasets.md").read_text(encoding="utf-8")
    for figure in (
        f"{workbook.MAX_DENSE_CELLS:,}",
        f"{workbook.MAX_SPARSE_CELLS:,}",
        "512 MiB",
        "256 MiB",
        "200 times",
    ):
        assert figure in text, figure


def test_an_ordinary_workbook_is_still_read_by_calamine(tmp_path):
    path = write_book(tmp_path / "ok.xlsx", sheet_xml(DATA))
    guard = workbook.Workbook(path)
    assert guard.plan("Sheet1") == "dense"
    scan = guard.scan("Sheet1")
    assert (scan.cells, scan.first_row, scan.last_row, scan.area) == (9, 1, 3, 9)
    guard.close()
    assert io.BytesIO  # keep the import for the inflating test's clarity


def _ods(path: Path, rows: str) -> Path:
    content = (
        '<?xml version="1.0" encoding="UTF-8"?><office:document-content '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"><office:body>'
        f'<office:spreadsheet><table:table table:name="S">{rows}</table:table></office:spreadsheet>'
        "</office:body></office:document-content>"
    )
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        zf.writestr("content.xml", content)
        zf.writestr(
            "META-INF/manifest.xml",
            '<?xml version="1.0"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
            '<manifest:file-entry manifest:full-path="/" '
            'manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>'
            '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>',
        )
    return path


def _ods_row(*cells: str, repeat: int = 1, cols: int = 1) -> str:
    rep = f' table:number-rows-repeated="{repeat}"' if repeat > 1 else ""
    crep = f' table:number-columns-repeated="{cols}"' if cols > 1 else ""
    body = "".join(
        f'<table:table-cell office:value-type="string"{crep}><text:p>{c}</text:p></table:table-cell>'
        for c in cells
    )
    return f"<table:table-row{rep}>{body}</table:table-row>"


def test_an_opendocument_sheet_repeating_a_value_a_billion_times_is_refused(tmp_path):
    # calamine writes each repeat out: this 1 KB file asked for 1,048,576 × 16,384 cells
    rows = _ods_row("query") + _ods_row("打开空调") + _ods_row("x", repeat=1_048_574, cols=16_384)
    path = _ods(tmp_path / "rep.ods", rows)
    assert path.stat().st_size < 2000
    with pytest.raises(
        ImportFailed, match=r"rep.ods!S: the cell XFD1048576 stretches it to 1,048,576 rows × 16,384"
    ):
        open_excel(path, ReadSpec())


def test_an_opendocument_sheet_with_empty_repeats_to_its_edge_still_reads(tmp_path):
    edge = '<table:table-cell table:number-columns-repeated="1020"/>'
    rows = (
        _ods_row("query", "label").replace("</table:table-row>", edge + "</table:table-row>")
        + _ods_row("打开空调", "fast")
        + '<table:table-row table:number-rows-repeated="1048574"><table:table-cell table:number-columns-repeated="1024"/></table:table-row>'
    )
    preview = preview_import(_ods(tmp_path / "ok.ods", rows))
    assert [c.input for c in preview.cases] == ["打开空调"]


def test_cells_without_references_are_placed_and_one_past_the_last_column_is_refused(tmp_path):
    # a producer may leave out a cell's reference: it sits after the one before it in its row
    row = '<row r="3">' + "".join(f"<c><v>{i}.5</v></c>" for i in range(16_385)) + "</row>"
    far = sheet_xml({1: {"A": "query"}, 2: {"A": "打开空调"}}).replace(
        "</sheetData>", row + '<row r="9000"><c><v>7</v></c></row></sheetData>'
    )
    path = write_book(tmp_path / "bare.xlsx", far)
    with pytest.raises(
        ImportFailed, match=r"bare.xlsx!Sheet1: the part xl/worksheets/sheet1.xml has a cell past XFD1048576"
    ):
        open_excel(path, ReadSpec())
    near = sheet_xml({1: {"A": "query", "B": "n"}, 2: {"A": "打开空调", "B": 1}}).replace(
        "</sheetData>",
        '<row r="3"><c t="inlineStr"><is><t>导航回家</t></is></c><c><v>2</v></c></row></sheetData>',
    )
    preview = preview_import(write_book(tmp_path / "near.xlsx", near))
    assert [(c.input, c.source_row["n"]) for c in preview.cases] == [("打开空调", 1), ("导航回家", 2)]
