"""Bad input through the CLI: each is refused with exit 2, a message saying what, where and what to do, no traceback, and nothing stored."""

from __future__ import annotations

import pytest

from abbench.store import open_store


def _openpyxl_book(path, rows):
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "data"
    for row in rows:
        ws.append(row)
    wb.save(path)


def _write(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif callable(content):
        content(path)
    else:
        path.write_text(content, encoding="utf-8")
    return path


JSONL = '{"id": "a", "query": "x", "label": "fast"}\n'

BAD_FILES = [
    pytest.param(
        "quote.csv",
        'id,query,label\n1,hello,fast\n2,"never closed,slow\n3,x,fast\n4,y,slow\n',
        (),
        ["quote.csv, line 3", "never closed", "lines 3–5", '("")'],
        id="csv-unterminated-quote-swallows-the-rest",
    ),
    pytest.param(
        "ok.jsonl",
        JSONL,
        ("--encoding", "utf-16"),
        ["ok.jsonl does not decode as utf-16", "BOM", "leave it out to detect it"],
        id="named-utf16-without-bom",
    ),
    pytest.param(
        "ok.jsonl",
        JSONL,
        ("--encoding", "base64"),
        ["'base64' is not a text encoding", "gb18030"],
        id="named-binary-codec",
    ),
    pytest.param(
        "ok.csv",
        "id,query\n1,x\n",
        ("--encoding", "rot13"),
        ["'rot13' is not a text encoding"],
        id="named-rot13",
    ),
    pytest.param(
        "short.xlsx",
        lambda p: _openpyxl_book(p, [["id", "query"], ["1", "x"], ["2", "y"]]),
        ("--header-row", "40"),
        ["short.xlsx!data has 3 rows", "header_row=40 is past the end", "leave header_row out"],
        id="xlsx-header-row-past-the-end",
    ),
    pytest.param(
        "ragged.csv",
        "id,query,label\n1,a,fast\n2,b,slow,extra,more\n",
        (),
        ["line 3", "5 cells but the header has 3 columns", "--skip-invalid"],
        id="csv-ragged-row",
    ),
    pytest.param(
        "broken.jsonl",
        JSONL + '{"id": "b", "query": "y"\n',
        (),
        ["line 2", "not valid JSON", "--skip-invalid"],
        id="jsonl-broken-line",
    ),
]


@pytest.mark.parametrize(("name", "content", "args", "fragments"), BAD_FILES)
def test_a_bad_file_is_refused_with_where_and_what_to_do_and_nothing_is_stored(
    cli, tmp_path, name, content, args, fragments
):
    path = _write(tmp_path, name, content)
    result = cli("import", path, *args)
    assert result.exit_code == 2, result.output
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)
    store = open_store(cli.store_dir)
    assert store.query_one("SELECT COUNT(*) FROM datasets")[0] == 0
    assert store.query_one("SELECT COUNT(*) FROM mapping_profiles")[0] == 0
    assert not any((cli.store_dir / "uploads").iterdir())


def test_a_closed_multi_line_cell_at_the_end_is_still_read(cli, tmp_path):
    path = _write(tmp_path, "ml.csv", 'id,query,label\n1,"two\nlines",fast\n2,"last, and\nclosed",slow\n')
    result = cli("import", path, "--json")
    assert result.exit_code == 0, result.output
    assert '"n_cases": 2' in result.output


def test_an_os_error_is_a_message_with_the_path_not_a_traceback(cli, tmp_path):
    path = _write(tmp_path, "p.csv", "id,query\n1,x\n")
    assert cli("import", path).exit_code == 0
    target = tmp_path / "a-file"
    target.write_text("", encoding="utf-8")
    result = cli("profiles", "p", "--export", target / "below-a-file.yaml")  # a file cannot hold a folder
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and str(target) in result.output
    assert "-vv shows where" in result.output
