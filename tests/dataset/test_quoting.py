"""Quotes in CSV/TSV files: RFC 4180 quoting or part of the text, never a silent change of the text.

The real file is the UCI SMS Spam Collection (tests/realdata/sms_spam, CC BY 4.0): tab-separated, quotes
written as text. Files that need a quote problem below the 64 KiB sample are built from its own lines.
"""

from __future__ import annotations

import csv
import io

import pytest

from abbench.dataset import preview_import, read_table
from abbench.errors import ImportFailed, UsageError

SMS = {"fields": {"input": "SMS", "expected": "Label"}, "normalize_input": False}


@pytest.fixture(scope="module")
def sms_lines(realdata) -> list[str]:
    """The SMS file's lines (header first), split on line breaks only: what each case must hold."""
    text = (realdata / "sms_spam" / "SMSSpamCollection").read_text(encoding="utf-8")
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 1 + 5574 + 1
    return lines[:-1]


def _filler(lines: list[str], size: int = 70_000) -> list[str]:
    """SMS lines without a quote, more than the 64 KiB sample."""
    out: list[str] = []
    for line in lines[1:]:
        if '"' not in line:
            out.append(line)
        if sum(map(len, out)) + len(out) > size:
            return out
    raise AssertionError("not enough quote-free lines")


def test_sms_spam_collection_imports_every_line_as_written(store, realdata, sms_lines):
    path = realdata / "sms_spam" / "SMSSpamCollection"
    info = store.datasets.import_file(path, SMS, name="sms")
    assert info.n_cases == 5574
    assert info.read_options["quoting"] == "none" and info.read_options["delimiter"] == "\t"
    cases = store.datasets.load_cases(info)
    cells = [line.split("\t") for line in sms_lines[1:]]
    assert [[r.value["Label"], r.value["SMS"]] for r in read_table(path).rows()] == cells
    assert [(c.expected, c.input) for c in cases] == [(label, text.strip()) for label, text in cells]
    assert cases[616].input.startswith('"Happy valentines day" I know')  # line 618
    assert cases[5081].source_line == "line 5083" and cases[5083].input.startswith('"HI BABE')
    note = next(n for n in read_table(path).notes if "quote" in n)
    assert note.startswith('line 284: a quote closes inside its cell ("Wen u miss someone')
    assert "every line has 2 cells when quotes are read as text" in note and "--quoting csv" in note


def test_rfc_quoted_csv_with_multiline_cells_reads_as_before(write):
    rows = [
        ["id", "text", "note"],
        ["1", 'He said "hi", then left', ""],
        ["2", "line one\nline two, with a comma", "x"],
        ["3", "tab\tinside", '"quoted" start'],
    ]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    table = read_table(write("rfc.csv", buf.getvalue()))
    assert table.options["quoting"] == "csv" and not [n for n in table.notes if "quote" in n]
    assert [list(r.value.values()) for r in table.rows()] == rows[1:]
    assert [r.location for r in table.rows()] == ["line 2", "line 3", "line 5"]
    # a TSV quoting a multi-line cell whose lines hold no tab reads the same way
    tsv = write("rfc.tsv", 'id\ttext\n1\t"first line\nsecond, line"\n2\tplain\n')
    assert [r.value["text"] for r in read_table(tsv).rows()] == ["first line\nsecond, line", "plain"]
    # a quoted paragraph whose lines hold the delimiter: a cell, unless its lines read as rows (tabs,
    # semicolons and pipes only: never for commas)
    text = 'id,answer\n1,"First, a line\nthen, another"\n2,"x"\n'
    answers = read_table(write("a.csv", text))
    assert [r.value["answer"] for r in answers.rows()] == ["First, a line\nthen, another", "x"]
    letter = 'id;text\n1;"Dear Sir;\nthanks; bye"\n2;plain\n' + "3;filler\n" * 9000  # beyond the sample
    letter += '4;"Dear Madam;\nthanks; bye"\n'
    table = read_table(write("letter.csv", letter))
    assert table.options["quoting"] == "csv" and not [n for n in table.notes if "quote" in n]
    texts = [r.value["text"] for r in table.rows()]
    assert texts[0] == "Dear Sir;\nthanks; bye" and texts[-1] == "Dear Madam;\nthanks; bye"


def test_a_quote_closing_inside_a_cell_below_the_sample_is_refused(write, sms_lines):
    filler = _filler(sms_lines)
    bad = sms_lines[617]  # ham<TAB>"Happy valentines day" I know its early …
    path = write("sms.tsv", "\n".join([sms_lines[0], *filler, bad, *filler[:3]]) + "\n")
    table = read_table(path)
    assert table.options["quoting"] == "csv"  # the first 64 KiB have no quote
    with pytest.raises(ImportFailed) as refused:
        list(table.rows())
    message = str(refused.value)
    line = len(filler) + 2
    assert message.startswith(f'sms.tsv, line {line}: a quote closes inside its cell ("Happy valentines day"')
    assert "quoting='none' (CLI --quoting none)" in message and 'as two ("")' in message


def test_rows_a_stray_quote_joins_below_the_sample_are_refused(write, sms_lines):
    filler = _filler(sms_lines)
    # lines 5083-5084 of the file, then line 100 (its only quote ends it): one legal CSV record
    joined = [sms_lines[5082], sms_lines[5083], sms_lines[99]]
    path = write("sms.tsv", "\n".join([sms_lines[0], *filler, *joined, *filler[:3]]) + "\n")
    with pytest.raises(ImportFailed) as refused:
        list(read_table(path).rows())
    message = str(refused.value)
    start = len(filler) + 2
    assert message.startswith(f'sms.tsv, line {start}: a quote opens a cell ("Keep ur problems')
    assert (
        f"runs on to line {start + 2}, and lines {start + 1}–{start + 2} read as rows of their own" in message
    )
    assert "(2 cells each: ham ⇥ Yeah, give me a call" in message
    assert f"lines {start}–{start + 2} would be one row" in message
    assert "--quoting none" in message and "--quoting csv) if the cell really runs over" in message
    # the file's own lines 5083-5085: the quote closes inside line 5085's cell
    real = write("real.tsv", "\n".join([sms_lines[0], *filler, *sms_lines[5082:5085]]) + "\n")
    with pytest.raises(
        ImportFailed, match=rf"line {start}: a quote opens a cell .* runs on to line {start + 2}"
    ):
        list(read_table(real).rows())


def test_joined_rows_in_the_sample_read_quotes_as_text(write, sms_lines):
    joined = [sms_lines[5082], sms_lines[5083], sms_lines[99]]
    table = read_table(write("sms.tsv", "\n".join([sms_lines[0], *joined, sms_lines[1]]) + "\n"))
    assert table.options["quoting"] == "none"
    assert table.notes[0].startswith('line 2: a quote opens a cell ("Keep ur problems')
    assert [r.value["SMS"] for r in table.rows()] == [line.split("\t")[1] for line in [*joined, sms_lines[1]]]


def test_quoting_given_overrides_the_detection(write, realdata):
    rfc = write("rfc.csv", 'id,text\n1,"He said ""hi"""\n')
    as_text = read_table(rfc, quoting="none")
    assert as_text.options["quoting"] == "none"
    assert next(as_text.rows()).value["text"] == '"He said ""hi"""'
    sms = read_table(realdata / "sms_spam" / "SMSSpamCollection", quoting="csv")
    assert sms.options["quoting"] == "csv" and not [n for n in sms.notes if "quote" in n]
    rows = list(sms.rows())  # given, CSV quoting is read leniently, as the csv module does
    assert rows[616].value["SMS"].startswith("Happy valentines day I know") and len(rows) == 5572
    with pytest.raises(UsageError, match=r"quoting is 'csv' .* or 'none'"):
        read_table(rfc, quoting="yes")  # type: ignore[typeddict-item]


def test_quoting_comes_from_a_profile_and_applies_to_csv_only(write, realdata):
    rfc = write("rfc.csv", 'q,label\n"He said ""hi""",a\n')
    profile = {"fields": {"input": "q"}, "read": {"quoting": "none"}}
    preview = preview_import(rfc, profile, n=1)
    assert preview.cases[0].input == '"He said ""hi"""' and preview.read_options["quoting"] == "none"
    jsonl = write("a.jsonl", '{"q": "x"}\n')
    assert preview_import(jsonl, profile, n=1).cases[0].input == "x"  # a profile's quoting: CSV only
    with pytest.raises(UsageError, match="quoting= applies to CSV files"):
        read_table(jsonl, quoting="none")


def test_an_unclosed_quote_keeps_its_own_message(write):
    path = write("q.csv", 'id,query,label\n1,hello,fast\n2,"never closed,slow\n3,x,fast\n')
    with pytest.raises(ImportFailed) as refused:
        list(read_table(path).rows())
    assert "line 3: a quote opened in this row is never closed, so lines 3–4" in str(refused.value)
    assert "--quoting none" in str(refused.value)


def test_quotes_that_fit_neither_reading_are_refused_with_both_reasons(write, sms_lines):
    rows = [*sms_lines[:300], "ham\ta\tb", *sms_lines[300:400]]  # line 284 quotes, line 301 has 3 cells
    with pytest.raises(ImportFailed) as refused:
        list(read_table(write("sms.tsv", "\n".join(rows) + "\n")).rows())
    message = str(refused.value)
    assert message.startswith('sms.tsv, line 284: a quote closes inside its cell ("Wen u miss someone')
    assert (
        "quotes as text do not fit either: with quotes as text, line 301 has 3 cells and the header 2"
        in message
    )


def test_a_long_row_below_the_sample_of_a_file_read_as_text_says_quotes_cannot_help(store, write, sms_lines):
    rows = [*sms_lines[:1500], "ham\ta\tb", *sms_lines[1500:1510]]  # line 1501, beyond the 64 KiB
    path = write("sms.tsv", "\n".join(rows) + "\n")
    with pytest.raises(ImportFailed) as refused:
        store.datasets.import_file(path, SMS)
    problems = refused.value.report.problems
    assert [(p.location, p.kind) for p in problems] == [("line 1501", "unreadable_row")]
    assert "quotes are read as text in this file, so a cell cannot hold it" in problems[0].message
