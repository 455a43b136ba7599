"""Workbooks written part by part, as a hostile or unusual producer writes them (no library smooths them)."""

from __future__ import annotations

import zipfile
from pathlib import Path

CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    '<Override PartName="/xl/sharedStrings.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
    '<Override PartName="/xl/styles.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
    "</Types>"
)
ROOT_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    'officeDocument" Target="xl/workbook.xml"/></Relationships>'
)
WORKBOOK = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
    '{pr}<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
)
WORKBOOK_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    'worksheet" Target="worksheets/sheet1.xml"/>'
    '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    'sharedStrings" Target="sharedStrings.xml"/>'
    '<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    'styles" Target="styles.xml"/></Relationships>'
)
STYLES = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">{numfmts}'
    '<fonts count="1"><font/></fonts><fills count="1"><fill/></fills><borders count="1"><border/></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0"/></cellStyleXfs><cellXfs>{xfs}</cellXfs></styleSheet>'
)
NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'


def cell(ref: str, value: object) -> str:
    """One cell's XML: a str inline, a number, or raw XML given as ``("raw", xml)``."""
    if isinstance(value, tuple):
        return value[1]
    if isinstance(value, str):
        return f'<c r="{ref}" t="inlineStr"><is><t>{value}</t></is></c>'
    return f'<c r="{ref}"><v>{value}</v></c>'


def sheet_xml(rows: dict[int, dict[str, object]], *, extra: str = "", prolog: str = "") -> str:
    """A worksheet: ``{row: {column letters: value}}``."""
    body = "".join(
        f'<row r="{r}">' + "".join(cell(f"{col}{r}", v) for col, v in cells.items()) + "</row>"
        for r, cells in sorted(rows.items())
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>{prolog}<worksheet {NS}><sheetData>{body}</sheetData>{extra}</worksheet>'


def write_book(
    path: Path,
    sheet: str,
    *,
    shared: list[str] | None = None,
    shared_xml: str | None = None,
    numfmts: dict[int, str] | None = None,
    xfs: list[int] = (0,),  # type: ignore[assignment]
    date1904: bool = False,
    workbook_prolog: str = "",
    compress: int = zipfile.ZIP_DEFLATED,
) -> Path:
    """Write an .xlsx of one sheet (its XML as given) with shared strings, number formats and styles."""
    fmts = ""
    if numfmts:
        fmts = (
            f'<numFmts count="{len(numfmts)}">'
            + "".join(f'<numFmt numFmtId="{i}" formatCode="{code}"/>' for i, code in numfmts.items())
            + "</numFmts>"
        )
    sst = shared_xml
    if sst is None:
        items = "".join(f"<si><t>{s}</t></si>" for s in shared or [])
        sst = f'<?xml version="1.0" encoding="UTF-8"?><sst {NS} count="{len(shared or [])}">{items}</sst>'
    pr = '<workbookPr date1904="1"/>' if date1904 else ""
    with zipfile.ZipFile(path, "w", compress) as zf:
        zf.writestr("[Content_Types].xml", CONTENT_TYPES)
        zf.writestr("_rels/.rels", ROOT_RELS)
        zf.writestr(
            "xl/workbook.xml",
            WORKBOOK.format(pr=pr).replace(
                '<?xml version="1.0" encoding="UTF-8"?>',
                '<?xml version="1.0" encoding="UTF-8"?>' + workbook_prolog,
            ),
        )
        zf.writestr("xl/_rels/workbook.xml.rels", WORKBOOK_RELS)
        zf.writestr("xl/worksheets/sheet1.xml", sheet)
        zf.writestr("xl/sharedStrings.xml", sst)
        zf.writestr(
            "xl/styles.xml", STYLES.format(numfmts=fmts, xfs="".join(f'<xf numFmtId="{x}"/>' for x in xfs))
        )
    return path
