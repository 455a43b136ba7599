"""Reading CSV/TSV, Excel, JSON Lines and JSON: delimiters, headers, sheets, splits, row locations."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from abbench.dataset import column_letter, read_table, sniff_delimiter
from abbench.errors import ImportFailed, UsageError


@pytest.mark.parametrize("delim", [",", "\t", ";", "|"])
def test_delimiter_is_sniffed(write, delim):
    text = delim.join(["id", "query", "label"]) + "\n"
    text += "\n".join(
        delim.join([str(i), f"q{i}, with a comma" if delim != "," else f"q{i}", "fast"]) for i in range(5)
    )
    table = read_table(write("x.txt", text + "\n"))
    assert table.options["delimiter"] == delim
    assert table.columns == ("id", "query", "label")


def test_tsv_suffix_prefers_tab_for_a_single_column(write):
    assert sniff_delimiter("query\nhello\n", ".tsv") == "\t"
    assert read_table(write("x.tsv", "a\tb\n1\t2\n")).columns == ("a", "b")


def test_explicit_delimiter_wins(write):
    table = read_table(write("x.csv", "a;b,c\n1;2,3\n"), delimiter=",")
    assert table.columns == ("a;b", "c")


def test_locations_follow_physical_lines(write):
    text = 'q,label\n"two\nlines",a\n\nplain,b\n"x",c\n'
    rows = read_table(write("x.csv", text)).rows()
    assert [(r.value["q"], r.location) for r in rows] == [
        ("two\nlines", "line 2"),
        ("plain", "line 5"),
        ("x", "line 6"),
    ]


def test_short_rows_are_padded_and_long_rows_reported(write):
    table = read_table(write("x.csv", "a,b,c\n1,2\n1,2,3,4\n1,2,3,,\n"))
    chunks = list(table.chunks())
    rows = [r for c in chunks for r in c.rows]
    bad = [b for c in chunks for b in c.bad]
    assert rows == [["1", "2", ""], ["1", "2", "3"]]
    assert bad[0][0] == "line 3" and "4 cells but the header has 3 columns" in bad[0][1]


def test_trailing_delimiters_of_excel_exports_make_no_column(write):
    table = read_table(write("x.csv", "q,label,\r\na,b,\r\nc,d,oops\r\n"))
    assert table.columns == ("q", "label")
    chunks = list(table.chunks())
    assert [r for c in chunks for r in c.rows] == [["a", "b"]]
    assert [b[0] for c in chunks for b in c.bad] == ["line 3"]


def test_blank_and_duplicate_headers_are_named(write):
    table = read_table(write("x.csv", "q,,q\n1,2,3\n"))
    assert table.columns == ("q", "B", "q.1")
    assert any("no header" in n for n in table.notes) and any("two columns" in n for n in table.notes)


@pytest.mark.parametrize(
    ("header_row", "columns", "first"), [(None, ("x", "y"), "1"), (2, ("1", "2"), "3"), (0, ("A", "B"), "x")]
)
def test_csv_header_row(write, header_row, columns, first):
    table = read_table(write("x.csv", "x,y\n1,2\n3,4\n"), header_row=header_row)
    assert table.columns == columns
    assert table.head(1)[0].value[columns[0]] == first


def test_header_row_past_the_end(write):
    with pytest.raises(UsageError, match="past the end"):
        read_table(write("x.csv", "a\n1\n"), header_row=9)


def test_empty_file_and_missing_file(write, tmp_path):
    with pytest.raises(ImportFailed, match="is empty"):
        read_table(write("x.csv", ""))
    with pytest.raises(ImportFailed, match="no such file"):
        read_table(tmp_path / "nope.csv")


def test_xlsx_sheet_by_name_and_index(write_xlsx):
    path = write_xlsx("b.xlsx", {"first": [["q"], ["a"]], "标注": [["问题", "标签"], ["打开空调", "快"]]})
    assert read_table(path).options["sheet"] == "first"
    by_name = read_table(path, sheet="标注")
    by_index = read_table(path, sheet=1)
    by_text_index = read_table(path, sheet="1")
    assert by_name.columns == by_index.columns == by_text_index.columns == ("问题", "标签")
    assert [r.location for r in by_name.rows()] == ["标注!row 2"]
    with pytest.raises(UsageError, match=r"no sheet 'nope'.*first, 标注"):
        read_table(path, sheet="nope")
    with pytest.raises(UsageError, match="out of range"):
        read_table(path, sheet=5)


def test_an_empty_first_sheet_gives_way_to_the_only_sheet_with_data_and_an_empty_chosen_one_is_named(
    write_xlsx,
):
    path = write_xlsx("e.xlsx", {"blank": [], "data": [["q"], ["a"]]})
    table = read_table(path)
    assert table.options["sheet"] == "data" and table.columns == ("q",)
    assert table.notes == ["the first sheet 'blank' is empty; read sheet 'data', the only one holding data"]
    with pytest.raises(
        ImportFailed, match=r"sheet 'blank' is empty; choose another with sheet= \(sheets: data\)"
    ):
        read_table(path, sheet="blank")
    assert read_table(path, sheet="data").columns == ("q",)


def test_a_readme_first_sheet_gives_way_to_the_table_and_every_sheet_is_named(write_xlsx):
    readme = [
        ["Aspect sentiment, restaurant reviews: one row per (sentence, aspect) pair."],
        ["Labels: see 'data'."],
    ]
    data = [["sentence", "aspect", "polarity"], ["The food was good.", "food", "positive"]]
    path = write_xlsx("three.xlsx", {"README": readme, "data": data, "labels": [["polarity"], ["positive"]]})
    table = read_table(path)
    assert table.options["sheet"] == "data" and table.columns == ("sentence", "aspect", "polarity")
    assert table.notes == [
        "the first sheet 'README' reads as notes (one column of text); read sheet 'data', the first that "
        "holds a table",
        "three.xlsx has 3 sheets (README, data, labels); read 'data': choose another with --sheet NAME (sheet=)",
    ]
    assert read_table(path, sheet="README").options["sheet"] == "README"  # asked for: read as asked
    assert read_table(path, sheet="README").notes == []
    # a one-column first sheet that is data (named and written as such) is read: only notes give way
    path = write_xlsx("b.xlsx", {"first": [["q"], ["a"]], "标注": [["问题", "标签"], ["打开空调", "快"]]})
    assert read_table(path).options["sheet"] == "first"
    assert read_table(path).notes == [
        "b.xlsx has 2 sheets (first, 标注); read 'first': choose another with --sheet NAME (sheet=)"
    ]


def test_xlsx_locations_are_excel_row_numbers_when_the_table_starts_lower(write_xlsx):
    path = write_xlsx("b.xlsx", {"s": [["id", "q"], [1, "a"], [None, None], [2, "b"]]}, start=(4, 3))
    table = read_table(path)
    assert table.columns == ("id", "q")
    assert [(r.value, r.location) for r in table.rows()] == [
        ({"id": 1, "q": "a"}, "s!row 5"),
        ({"id": 2, "q": "b"}, "s!row 7"),
    ]


def test_xlsx_title_row_is_skipped_and_header_row_can_be_chosen(write_xlsx):
    rows = [["2024 Q1 标注结果"], [], ["id", "问题", "标签"], [1, "打开空调", "快"]]
    path = write_xlsx("t.xlsx", {"s": rows})
    table = read_table(path)
    assert table.columns == ("id", "问题", "标签")
    assert table.options["header_row"] == 3
    assert any("title" in n for n in table.notes)
    assert read_table(path, header_row=1).columns[0] == "2024 Q1 标注结果"
    assert read_table(path, header_row=0).columns == ("A", "B", "C")


def test_xlsx_values_become_json(write_xlsx):
    when = dt.datetime(2024, 5, 6, 7, 8, 9)
    path = write_xlsx("v.xlsx", {"s": [["id", "score", "ok", "when", "note"], [1001, 0.5, True, when, None]]})
    row = read_table(path).head(1)[0].value
    assert row == {"id": 1001, "score": 0.5, "ok": True, "when": "2024-05-06T07:08:09", "note": ""}


def test_xlsx_column_without_header_is_kept(write_xlsx):
    path = write_xlsx("h.xlsx", {"s": [["q", None], ["a", "extra"]]})
    table = read_table(path)
    assert table.columns == ("q", "B")
    assert table.head(1)[0].value == {"q": "a", "B": "extra"}


def test_column_letters():
    assert [column_letter(i) for i in (0, 25, 26, 27, 701, 702)] == ["A", "Z", "AA", "AB", "ZZ", "AAA"]


def test_jsonl_rows_and_bad_lines(write):
    path = write("x.jsonl", '{"q": "a"}\n\n{"q": "b"\n["c", 1]\n')
    chunks = list(read_table(path).chunks())
    assert [r for c in chunks for r in c.rows] == [{"q": "a"}, ["c", 1]]
    assert [loc for c in chunks for loc in c.locations] == ["line 1", "line 4"]
    (bad,) = [b for c in chunks for b in c.bad]
    assert bad[0] == "line 3" and "column" in bad[1]


def test_jsonl_whose_first_line_is_not_json_is_refused(write):
    with pytest.raises(ImportFailed, match=r"line 1, column \d+: not JSON.*one JSON document"):
        read_table(write("x.jsonl", '[\n  {"q": "a"}\n]\n'))


def test_json_array_of_objects_and_arrays(write):
    table = read_table(write("x.json", '[{"q": "a"}, ["b", "label"]]'))
    assert [(r.value, r.location, r.split) for r in table.rows()] == [
        ({"q": "a"}, "item #1", None),
        (["b", "label"], "item #2", None),
    ]
    assert table.columns == ("q", "0", "1")


def test_json_object_of_splits(write):
    path = write("d.json", '{"name": "demo", "train": [["a", "x"]], "test": [["b", "y"], ["c", "z"]]}')
    table = read_table(path)
    assert table.splits == ("train", "test")
    assert table.split_sizes == {"train": 1, "test": 2}
    assert table.document == {"name": "demo"}
    assert [(r.location, r.split) for r in table.rows()] == [
        ("split train #1", "train"),
        ("split test #1", "test"),
        ("split test #2", "test"),
    ]
    only = read_table(path, splits=["test"])
    assert [r.value[0] for r in only.rows()] == ["b", "c"]
    with pytest.raises(UsageError, match=r"no split 'dev'; its splits: train \(1\), test \(2\)"):
        read_table(path, splits=["dev"])


def test_json_lists_nested_below_an_object_are_splits_named_by_path(write):
    # Rasa NLU's layout (the ATIS trial): the rows sit two levels down, beside empty lists.
    doc = {
        "version": 2,
        "rasa_nlu_data": {
            "common_examples": [
                {"text": "fly to denver", "intent": "flight"},
                {"text": "fare?", "intent": "airfare"},
            ],
            "regex_features": [],
            "meta": {"deep": [{"text": "x"}]},
        },
    }
    path = write("rasa.json", json.dumps(doc))
    table = read_table(path)
    assert table.splits == (
        "rasa_nlu_data.common_examples",
        "rasa_nlu_data.regex_features",
        "rasa_nlu_data.meta.deep",
    )
    assert table.document == {"version": 2}
    only = read_table(path, splits=["rasa_nlu_data.common_examples"])
    assert [(r.value["intent"], r.location) for r in only.rows()] == [
        ("flight", "split rasa_nlu_data.common_examples #1"),
        ("airfare", "split rasa_nlu_data.common_examples #2"),
    ]
    with pytest.raises(ImportFailed, match=r"without any list in it \(searched 4 levels"):
        read_table(write("deep.json", json.dumps({"a": {"b": {"c": {"d": {"e": [1]}}}}})))


def test_json_errors_have_line_and_column(write):
    with pytest.raises(ImportFailed, match=r"line 2, column \d+"):
        read_table(write("x.json", '[{"q": "a"},\n {"q": }]'))
    with pytest.raises(ImportFailed, match="without any list"):
        read_table(write("y.json", '{"q": "a"}'))


def test_json_file_holding_json_lines_is_read_as_such(write):
    table = read_table(write("x.json", '{"q": "a"}\n{"q": "b"}\n'))
    assert table.format == "jsonl"
    assert [r.value["q"] for r in table.rows()] == ["a", "b"]
    assert any("JSON Lines" in n for n in table.notes)


@pytest.mark.parametrize(
    ("name", "content", "fmt"),
    [
        ("x.data", '{"q": 1}\n{"q": 2}\n', "jsonl"),
        ("x.data", '[{"q": 1}]', "json"),
        ("x.data", "a,b\n1,2\n", "csv"),
    ],
)
def test_format_is_sniffed_for_unknown_suffixes(write, name, content, fmt):
    assert read_table(write(name, content)).format == fmt


def test_options_that_do_not_fit_the_format(write):
    path = write("x.csv", "a\n1\n")
    with pytest.raises(UsageError, match="sheet= applies to Excel"):
        read_table(path, sheet="s")
    with pytest.raises(UsageError, match="splits= applies to JSON"):
        read_table(path, splits=["x"])
    with pytest.raises(UsageError, match="unknown format"):
        read_table(path, format="feather")


def test_chunks_keep_memory_bounded(write):
    path = write("big.csv", "q\n" + "".join(f"row {i}\n" for i in range(2500)))
    sizes = [len(c.rows) for c in read_table(path).chunks(1000)]
    assert sizes == [1000, 1000, 500]


def test_to_pandas(write):
    frame = read_table(write("x.csv", "q,label\na,x\nb,y\n")).to_pandas()
    assert list(frame.columns) == ["q", "label", "_location"]
    assert frame["_location"].tolist() == ["line 2", "line 3"]


def test_excels_sep_line_names_the_delimiter_and_is_not_the_header(write):
    text = "sep=;\n问题;标签\n打开空调;快\n关闭车窗, 谢谢;慢\n"
    table = read_table(write("gbk.csv", text, encoding="gbk"))
    assert table.columns == ("问题", "标签") and table.options["delimiter"] == ";"
    assert table.options["encoding"] in ("gb18030", "gbk")
    assert [r.value["问题"] for r in table.rows()] == ["打开空调", "关闭车窗, 谢谢"]
    assert [r.location for r in table.rows()] == ["line 3", "line 4"]
    assert table.notes == ["line 1 is Excel's 'sep=;' line: the delimiter is ';'"]


def test_a_workbook_of_thousands_of_sheets_is_named_in_a_few_and_counted(tmp_path):
    import openpyxl

    book = openpyxl.Workbook(write_only=True)
    for i in range(2000):
        sheet = book.create_sheet(f"s{i}")
        sheet.append(["input", "label"])
        sheet.append([f"open the window number {i}", "fast"])
    path = tmp_path / "many.xlsx"
    book.save(path)
    (note,) = read_table(path).notes
    assert note.startswith("many.xlsx has 2,000 sheets (s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, …")
    assert "and 1,988 more); read 's0'" in note and len(note) < 200
    with pytest.raises(UsageError) as caught:
        read_table(path, sheet="nope")
    assert "… and 1,988 more" in str(caught.value) and len(str(caught.value)) < 200
