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


# -- hostile files: each an error with where it is, exit 2, no traceback, nothing stored -----------


def _book(path, sheets):
    import openpyxl

    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for title, rows in sheets.items():
        ws = wb.create_sheet(title)
        for row in rows:
            ws.append(row)
    wb.save(path)


def _zip_of_text(path):
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        z.writestr("notes.txt", "not a workbook")


def _loop(path):
    other = path.with_name("loop-b")
    path.symlink_to(other)
    other.symlink_to(path)


DEEP = "[" * 100_000 + "]" * 100_000
OK_LINE = '{"query": "hello there", "label": "fast"}\n'

HOSTILE = [
    pytest.param(
        "deep.json",
        DEEP,
        ["deep.json, line 1, column 501", "nested 100,000 levels deep (it passes 500 here)"],
        id="json-100k-deep",
    ),
    pytest.param(
        "deep.jsonl",
        OK_LINE + '{"query": ' + DEEP + "}\n",
        ["line 2: column 510", "nested 100,001 levels deep"],
        id="jsonl-line-100k-deep",
    ),
    pytest.param(
        "deepfirst.jsonl",
        '{"query": ' + DEEP + "}\n",
        ["deepfirst.jsonl, line 1, column 510"],
        id="jsonl-first-line-deep",
    ),
    pytest.param(
        "nul.csv",
        b"query,label\nhello,fast\nwor\x00ld,slow\n",
        ["nul.csv, line 3, column 4", "NUL byte", "--encoding utf-16-le"],
        id="csv-nul-byte",
    ),
    pytest.param(
        "dupid.csv",
        "id,query,label\n1,a,x\n2,b,y\n1,c,x\n",
        ["line 4: case_id: case id '1' is already used at line 2"],
        id="id-column-whose-values-repeat",
    ),
    pytest.param("empty.csv", "", ["empty.csv is empty"], id="empty-file"),
    pytest.param("a-folder", lambda p: p.mkdir(), ["a-folder", "is a directory"], id="directory"),
    pytest.param(
        "bomgbk.csv",
        b"\xef\xbb\xbfquery,label\n" + "你好,快\n".encode("gbk"),
        ["bomgbk.csv starts with a utf-8-sig byte order mark", "line 2, column 1 (byte offset 15)"],
        id="utf8-bom-then-gbk",
    ),
    pytest.param(
        "u16cut.csv",
        "query,label\na,b\n".encode("utf-16") + b"\xd8",
        ["u16cut.csv is not utf-16", "--encoding"],
        id="utf16-cut-mid-character",
    ),
    pytest.param(
        "blank.csv", "\n\n \n", ["blank.csv holds no rows (blank lines only)"], id="blank-lines-only"
    ),
    pytest.param("bom.csv", b"\xef\xbb\xbf", ["bom.csv holds no rows"], id="bom-only"),
    pytest.param("none.json", "[]", ["none.json holds no rows"], id="json-empty-array"),
    pytest.param(
        "nan.jsonl",
        OK_LINE + '{"query": NaN, "label": "fast"}\n',
        ["line 2: column 11: NaN is not JSON", "write null or a number"],
        id="jsonl-nan",
    ),
    pytest.param(
        "bigint.json",
        '[{"query": "a", "id": ' + "9" * 5000 + "}]",
        ["bigint.json, line 1, column 23", "thousands of digits"],
        id="json-5000-digit-integer",
    ),
    pytest.param(
        "surrogate.jsonl",
        OK_LINE + '{"query": "half \\ud800 a pair", "label": "fast"}\n',
        ["line 2: a string holds \\ud800 alone"],
        id="jsonl-lone-surrogate",
    ),
    pytest.param(
        "surrogate.json",
        '[{"query": "ok"}, {"query": "half \\udc00 a pair"}]',
        ["item #2: a string holds \\udc00 alone"],
        id="json-lone-surrogate",
    ),
    pytest.param(
        "header.csv",
        "query,label\n",
        ["header.csv holds a header (query, label) but no rows"],
        id="header-only",
    ),
    pytest.param(
        "header.xlsx",
        lambda p: _book(p, {"s": [["query", "label"]]}),
        ["header.xlsx holds a header (query, label) but no rows"],
        id="xlsx-header-only",
    ),
    pytest.param(
        "badutf8.jsonl",
        b'{"query":"a","label":"x"}\n{"query":"b","label":"y"}\n{"query":"\xff\xfe","label":"y"}\n',
        ["badutf8.jsonl", "line 3, column 11", "--encoding"],
        id="jsonl-invalid-utf8-on-line-3",
    ),
    pytest.param(
        "trail.jsonl",
        OK_LINE + OK_LINE + "GARBAGE\n",
        ["line 3: column 1: not valid JSON"],
        id="jsonl-trailing-garbage",
    ),
    pytest.param("scalar.json", "42", ["scalar.json holds a single int"], id="json-scalar"),
    pytest.param(
        "renamed.xlsx",
        "query,label\na,b\n",
        ["renamed.xlsx: cannot open as a workbook", "it is text, probably CSV", "--format csv"],
        id="csv-renamed-xlsx",
    ),
    pytest.param(
        "other.xlsx",
        _zip_of_text,
        ["other.xlsx: cannot open as a workbook", "a zip archive, but not of a workbook"],
        id="zip-of-something-else",
    ),
    pytest.param(
        "two.xlsx",
        lambda p: _book(p, {"empty": [], "a": [["query"], ["x"]], "b": [["query"], ["y"]]}),
        ["the first sheet 'empty' is empty and 2 sheets hold data ('a', 'b')", "--sheet"],
        id="xlsx-first-sheet-empty-two-others",
    ),
    pytest.param(
        "bin.csv", bytes(range(1, 256)) * 40, ["bin.csv", "is a binary file of no kind"], id="binary-csv"
    ),
    pytest.param("loop-a", _loop, ["loop-a is a symbolic link that leads nowhere"], id="symlink-loop"),
    pytest.param(
        "big.csv",
        'query,label\n"' + "x" * (17 << 20) + '",a\n',
        ["big.csv, line", "over 16 MiB"],
        id="huge-field",
    ),
]


def _store_counts(store_dir):
    store = open_store(store_dir)
    try:
        counts = {
            table: store.query_one(f"SELECT COUNT(*) FROM {table}")[0]
            for table in ("datasets", "cases", "mapping_profiles")
        }
    finally:
        store.close()
    counts["uploads"] = sorted(p.name for p in (store_dir / "uploads").iterdir())
    return counts


@pytest.mark.parametrize(("name", "content", "fragments"), HOSTILE)
def test_a_hostile_file_is_an_error_with_its_location_and_stores_nothing(
    cli, tmp_path, name, content, fragments
):
    from abbench.dataset import convert_file
    from abbench.errors import AbbenchError

    good = _write(tmp_path, "good.csv", "query,label\nhello there,fast\nhow are you,slow\n")
    assert cli("import", good).exit_code == 0
    before = _store_counts(cli.store_dir)
    path = _write(tmp_path, name, content)
    result = cli("import", path)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)
    assert _store_counts(cli.store_dir) == before  # nothing new: no dataset, case, profile or upload
    with pytest.raises(AbbenchError):  # the library says the same, as its own error
        convert_file(path)


def test_a_deep_json_file_in_a_child_process_exits_2_without_a_traceback(tmp_path):
    from tests.conftest import run_abbench

    path = _write(tmp_path, "deep.json", DEEP)
    done = run_abbench("--store", tmp_path / "store", "import", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "deep.json, line 1, column 501" in done.stderr


def test_the_only_sheet_holding_data_is_taken_when_the_first_is_empty_and_that_is_said(cli, tmp_path):
    path = _write(
        tmp_path,
        "book.xlsx",
        lambda p: _book(p, {"cover": [], "data": [["query", "label"], ["hi", "fast"], ["yo", "slow"]]}),
    )
    result = cli("import", path)
    assert result.exit_code == 0, result.output
    assert "the first sheet 'cover' is empty; read sheet 'data', the only one holding data" in result.output
    store = open_store(cli.store_dir)
    assert store.query_one("SELECT COUNT(*) FROM cases")[0] == 2


def test_tolerated_oddities_import(cli, tmp_path):
    """Duplicate column names, a UTF-16 file with a BOM, ragged short rows, a long line: read, with notes."""
    dup = _write(tmp_path, "dup.csv", "query,query,label\nhello there,b,fast\nhow are you,e,slow\n")
    result = cli("import", dup)
    assert result.exit_code == 0 and "two columns are called 'query'" in result.output
    u16 = _write(tmp_path, "u16.csv", "query,label\nhello there,fast\n".encode("utf-16"))
    assert cli("import", u16).exit_code == 0
    emoji = _write(tmp_path, "emoji.jsonl", '{"query": "smile \\ud83d\\ude00 please", "label": "x"}\n')
    assert cli("import", emoji).exit_code == 0  # a whole surrogate pair is one character
    short = _write(
        tmp_path, "short.csv", "query,label,note\nhello there,fast\n" + "x" * 200_000 + ",slow,n\n"
    )
    assert cli("import", short).exit_code == 0
