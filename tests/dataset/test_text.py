"""Encodings, input whitespace normalisation, and label keys."""

from __future__ import annotations

import pytest

from abbench.dataset import detect_encoding, label_key, normalize_text, read_table
from abbench.dataset._text import normalize_texts
from abbench.errors import ImportFailed, UsageError

CSV = "问题,标签\n到目的地电量够不够,慢\n打开空调,快\n"


@pytest.mark.parametrize(
    ("encoding", "codec", "how"),
    [
        ("utf-8", "utf-8", "detected"),
        ("utf-8-sig", "utf-8-sig", "bom"),
        ("gb18030", "gb18030", "detected"),
        ("gbk", "gb18030", "detected"),  # GB18030 reads GBK
        ("utf-16", "utf-16", "bom"),
    ],
)
def test_encodings_are_detected_and_read(write, encoding, codec, how):
    path = write(f"cases-{encoding}.csv", CSV, encoding)
    enc = detect_encoding(path)
    assert (enc.codec, enc.how) == (codec, how)
    table = read_table(path)
    assert table.columns == ("问题", "标签")  # no BOM left in the first column name
    assert [r.value for r in table.rows()] == [
        {"问题": "到目的地电量够不够", "标签": "慢"},
        {"问题": "打开空调", "标签": "快"},
    ]


def test_named_encoding_is_used_and_checked(write):
    path = write("gbk.csv", CSV, "gbk")
    assert read_table(path, encoding="gbk").options["encoding"] == "gbk"
    with pytest.raises(ImportFailed, match=r"does not decode as utf-8 at line 1, column 1"):
        read_table(path, encoding="utf-8")


def test_utf8_named_for_a_file_with_bom_drops_the_bom(write):
    path = write("bom.csv", CSV, "utf-8-sig")
    assert read_table(path, encoding="utf-8").columns == ("问题", "标签")


def test_unknown_encoding_lists_examples(write):
    path = write("a.csv", CSV)
    with pytest.raises(UsageError, match=r"unknown encoding 'klingon'.*gb18030"):
        read_table(path, encoding="klingon")


def test_undecodable_file_says_where_and_what_to_do(write):
    # Valid UTF-8 up to line 3, then bytes that are neither UTF-8 nor GB18030.
    path = write("bad.csv", b"q,label\nok,fast\nbad \xff\xff\xff,slow\n")
    with pytest.raises(ImportFailed) as err:
        read_table(path)
    message = str(err.value)
    assert "line 3" in message and "ff ff" in message and "encoding=" in message


@pytest.mark.parametrize(
    ("name", "tail"),
    [("late.csv", "a" * 31 + "\n"), ("late.jsonl", '{"q": "' + "a" * 22 + '"}\n'), ("late.json", None)],
)
def test_a_bad_byte_past_the_first_mib_is_found_while_reading(write, name, tail):
    # The first MiB is plain ASCII (read as UTF-8); the line after 1.28 MB of it holds GBK bytes.
    if tail is None:
        head = '[{"q": "' + "a" * (1 << 20) + '"},\n'
        bad = '{"q": "' + "打开空调" + '"}]\n'
        path = write(name, head.encode() + bad.encode("gbk"))
        line = 2
    else:
        path = write(name, (tail * 40_000).encode() + "打开空调\n".encode("gbk"))
        line = 40_001
    with pytest.raises(ImportFailed) as err:
        list(read_table(path).rows())
    message = str(err.value)
    assert f"line {line}" in message and "read as utf-8" in message and "gb18030" in message


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("What are the available planes to Madrid\xa0?", "What are the available planes to Madrid ?"),
        ("  导航去\u3000公司  ", "导航去 公司"),
        ("a\t\tb", "a b"),
        ("a  b", "a b"),
        ("line one \r\n line two", "line one\nline two"),
        ("zero\u200bwidth\ufeff", "zerowidth"),
        ("全角？保留，", "全角？保留，"),  # full-width punctuation is not rewritten
        ("e\u0301", "\u00e9"),  # NFC
        ("plain", "plain"),
    ],
)
def test_normalize_text(raw, clean):
    assert normalize_text(raw) == clean


def test_normalize_texts_matches_one_by_one():
    values = ["plain", "导航去公司", "Madrid\xa0?", " lead", "trail ", "a  b", "e\u0301", "x\ny"]
    for i in range(len(values)):
        column = values[: i + 1]
        assert normalize_texts(column) == [normalize_text(v) for v in column]


@pytest.mark.parametrize(
    ("a", "b"), [("Fast ", "fast"), ("FAST", "fast"), ("ｆａｓｔ", "fast"), ("a  b", "a b"), ("快", "快")]
)
def test_label_key_equates_variants(a, b):
    assert label_key(a) == label_key(b)
