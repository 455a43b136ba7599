"""The runs sheet built inside SQLite is byte for byte the sheet the Python writer makes of the same table.

`Table.xlsx_rows` (rows made by `abbench.store.bulk.sheet_rows`) against `write_xlsx` over the table's
rows (the compiled Python cells, the reference), on the edge experiment of the CSV test with more
values only a sheet treats apart: markup characters, characters XML cannot hold, Excel's own escapes,
text past Excel's cell limit, tabs and line feeds, dates that are and are not dates, integers beyond
a double's exact range, integral and signed-zero floats; and with runs of one round missing, so that
its slices number their rows by a window.
"""

from __future__ import annotations

import dataclasses
import zipfile

import pytest

from abbench.export import export_table, write_xlsx
from abbench.export._xlsx_rows import UNSAFE, sheet_cells
from abbench.store import bulk
from abbench.store.bulk import _sheet
from abbench.types import OUTCOME_WORDS
from tests.export.conftest import fast_path_tables
from tests.export.test_csv_lines import ODDITIES, build_edge

SHEET_ODDITIES = (
    "UPDATE runs SET reason = 'a & b < c > d' WHERE id % 29 = 4",
    "UPDATE runs SET reason = 'cr' || char(13) || 'bell' || char(7) || 'vt' || char(11) WHERE id % 29 = 5",
    "UPDATE runs SET prediction = 'tab' || char(9) || 'line' || char(10) || 'feed \"q\" \\ b' WHERE id % 29 = 6",
    "UPDATE runs SET session_id = 'x_x0041_y', model = 'not _x escape' WHERE id % 29 = 7",
    "UPDATE runs SET started_by = 'ffe' || char(65534) || ' fff' || char(65535) WHERE id % 29 = 8",
    "UPDATE runs SET raw_output = replace(hex(zeroblob(20000)), '00', 'ab') WHERE id % 29 = 9",
    "UPDATE runs SET raw_output = replace(hex(zeroblob(16383)), '00', 'é') || 'x' WHERE id % 29 = 10",
    "UPDATE runs SET raw_output = replace(hex(zeroblob(16384)), '00', '<') WHERE id % 29 = 11",
    "UPDATE runs SET started_at = '2026-02-29T10:00:00+00:00', executed_at = '1900-02-28T12:00:00' "
    "WHERE id % 31 = 1",
    "UPDATE runs SET executed_at = '2026-03-01 10:11:12.123456+05:00', finished_at = 20260301 WHERE id % 31 = 2",
    "UPDATE runs SET attempts = 9007199254740993, cached_calls = -9007199254740992 WHERE id % 43 = 1",
    "UPDATE runs SET attempts = 9007199254740992, cached_calls = 10000000000000000 WHERE id % 43 = 2",
    "UPDATE runs SET cost = 12345.0, cost_saved = -3.0 WHERE id % 47 = 1",
    "UPDATE runs SET cost = -0.0, cost_saved = 9007199254740992.0, latency_ms = 4503599627370497.0 "
    "WHERE id % 47 = 2",
    "UPDATE runs SET cost = 9007199254740994.0, cost_saved = 1e16, latency_ms = 0.5 WHERE id % 47 = 3",
    "UPDATE cases SET case_id = case_id || ' & <co>', domain = '' WHERE idx % 73 = 0",
    "DELETE FROM runs WHERE id % 211 = 0 AND round = 1",
)


@pytest.fixture(scope="module")
def edge(tmp_path_factory):
    """The CSV test's edge experiment with `SHEET_ODDITIES` written into it; ``(store, its id)``."""
    store, exp_id = build_edge(tmp_path_factory.mktemp("xlsx-rows"), ODDITIES + SHEET_ODDITIES)
    yield store, exp_id
    store.close()


def _parts(path):
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _both(table, tmp_path):
    assert table.xlsx_rows is not None  # the SQL path is the one an export takes
    a, b = tmp_path / "sql.xlsx", tmp_path / "python.xlsx"
    assert write_xlsx(table, a) == write_xlsx(dataclasses.replace(table, xlsx_rows=None), b)
    return a, b


def test_sql_rows_are_the_python_writers_bytes(edge, tmp_path):
    store, exp_id = edge
    sql, python = _both(export_table(exp_id, "runs", store=store), tmp_path)
    assert _parts(sql) == _parts(python)
    assert sql.read_bytes() == python.read_bytes()  # and so is the zip around them
    sheet = _parts(sql)["xl/worksheets/sheet1.xml"]
    assert sheet.count(b"</row>") > 3900  # every run written
    for written in (
        b"a &amp; b &lt; c &gt; d",
        b"cr&#13;bell\xef\xbf\xbd",
        b"x_x005F_x0041_y",
        b"[truncated",
    ):
        assert written in sheet  # the general path had these to write


@pytest.mark.parametrize("chunk", [97, 1000])
def test_every_slicing_gives_the_same_rows(edge, tmp_path, chunk):
    """Slices of any size, with every run of their cases (rows numbered by case) or some missing (rows
    numbered by a window), give the rows of the Python writer."""
    store, exp_id = edge
    table = export_table(exp_id, "runs", store=store)
    exp = store.experiments.get(exp_id)
    columns = [c for c in table.columns if not c.jsonl_only]
    graders = [("label_match", "bool", 1)]

    def rows():
        return bulk.sheet_rows(
            store,
            exp.id,
            exp.dataset_id,
            graders,
            experiment=exp.name,
            cells=sheet_cells(columns),
            outcome_words=OUTCOME_WORDS,
            chunk=chunk,
        )

    sql, python = _both(dataclasses.replace(table, xlsx_rows=rows), tmp_path)
    assert _parts(sql) == _parts(python)


def test_the_edge_store_holds_what_the_rows_must_handle(edge):
    """The edge store's slices are of both kinds (its first round has every run, its second misses
    some), so the comparisons cover both numberings."""
    store, exp_id = edge
    dense = {s["dense"] for s in _sheet._sheet_slices(store, exp_id, 97, 2)}
    assert dense == {True, False}


def test_the_fixture_experiments_give_the_same_bytes(finished, tmp_path):
    for shape, table in fast_path_tables(finished, "xlsx_rows"):
        sql, python = _both(table, tmp_path)
        assert _parts(sql) == _parts(python), shape


def test_the_glob_names_what_the_writer_changes():
    """`UNSAFE`, in SQLite's GLOB, matches a character exactly when `_xlsx` escapes or replaces it
    (NUL aside: SQL seeks it apart), and U+FFFD, which SQLite reads U+FFFE and U+FFFF as (such text
    takes the general path, which writes it unchanged)."""
    import sqlite3

    from abbench.export._xlsx import _ESCAPED, _ILLEGAL

    conn = sqlite3.connect(":memory:")
    for k in range(1, 0x10000):
        if 0xD800 <= k <= 0xDFFF:
            continue  # not text SQLite can hold
        c = chr(k)
        (globbed,) = conn.execute("SELECT ? GLOB ?", (f"a{c}b", UNSAFE)).fetchone()
        assert bool(globbed) == bool(_ESCAPED.match(c) or _ILLEGAL.match(c) or c == "\ufffd"), hex(k)


def test_text_that_is_not_utf8_is_refused_not_written(store, tmp_path):
    # Only another tool can store such text (Python's sqlite3 writes UTF-8): bytes passed through as
    # they are would make a file Excel refuses to open, so the export stops and says where.
    from abbench.errors import StoreError
    from tests.results import cases_of, make_experiment, table_2x2

    a, b = table_2x2(3, 1, 1, 3)
    exp = make_experiment(store, "e", cases_of(len(a)), {"control": a, "treatment": b})
    table = export_table(exp.id, "runs", store=store)
    assert table.xlsx_rows is not None
    write_xlsx(table, tmp_path / "good.xlsx")
    with store.conn:
        store.conn.execute(
            "UPDATE runs SET session_id = CAST(x'61ff62' AS TEXT) WHERE id = (SELECT min(id) FROM runs)"
        )
    with pytest.raises(StoreError, match=r"sheet row 2 holds text that is not UTF-8 \(invalid start byte\)"):
        write_xlsx(export_table(exp.id, "runs", store=store), tmp_path / "bad.xlsx")
