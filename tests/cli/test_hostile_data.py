"""Hostile data and definitions through the CLI (issue 36, items 15, 17 and 18): each refused with exit 2,
a message that says what, where and what to do, and nothing stored."""

from __future__ import annotations

import zipfile

import pytest

from abbench.errors import MappingError, UsageError
from abbench.store import open_store
from tests.conftest import refused_file

HEADER = "id,query,label\n"


def _counts(store_dir):
    if not (store_dir / "abbench.db").exists():
        return (0, 0, 0)
    with open_store(store_dir) as s:
        return tuple(
            s.query_one(f"SELECT COUNT(*) FROM {t}")[0] for t in ("datasets", "mapping_profiles", "cases")
        )


def _refused(cli, path, *args):
    before = _counts(cli.store_dir)
    result = cli("import", path, *args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert _counts(cli.store_dir) == before
    return result.output


# -- 15: one file, two encodings -------------------------------------------------------------------


def test_a_utf8_csv_with_one_gbk_line_is_refused_naming_the_line_and_both_readings(cli, tmp_path):
    path = tmp_path / "cases.csv"
    path.write_bytes(
        (HEADER + "1,导航回家,slow\n").encode()
        + "2,打开空调,fast\n".encode("gbk")
        + "3,关闭车窗,fast\n".encode()
    )
    out = _refused(cli, path)
    assert "cases.csv mixes two encodings: line 3 is GBK/GB18030 and lines 2, 4 are UTF-8" in out
    assert "'1,瀵艰埅鍥炲" in out and "(it says '2,打开空调,fast')" in out  # what each reading makes of it
    assert "Save the file in one encoding" in out
    # named, the encoding is the analyst's choice
    assert cli("import", path, "--encoding", "gb18030").exit_code == 0


def test_a_gbk_line_past_the_first_mebibyte_is_named_too(cli, tmp_path):
    path = tmp_path / "late.csv"
    body = "".join(f"{i},导航回家第{i}次,slow\n" for i in range(50_000)).encode()
    assert len(body) > 1 << 20
    path.write_bytes(HEADER.encode() + body + "x,打开空调,fast\n".encode("gbk"))
    out = _refused(cli, path)
    assert "line 50002 is GBK/GB18030" in out and "and 49,995 more are UTF-8" in out


def test_a_whole_gbk_file_still_reads(cli, tmp_path):
    path = tmp_path / "gbk.csv"
    path.write_bytes((HEADER + "1,导航回家,slow\n2,打开空调,fast\n").encode("gbk"))
    result = cli("import", path)
    assert result.exit_code == 0, result.output


# -- 18: binary files named .csv, numbers beyond a float ---------------------------------------------


def _zip_named_csv(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (
            lambda p: _zip_named_csv(p, {"[Content_Types].xml": "<x/>", "xl/workbook.xml": "<workbook/>"}),
            "is a zip archive holding an Excel workbook (xl/workbook.xml): rename it data.xlsx, or give --format xlsx",
        ),
        (
            lambda p: _zip_named_csv(p, {"cases.csv": HEADER * 50}),
            "is a zip archive (1 files: cases.csv): unzip it",
        ),
        (
            lambda p: p.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600)),
            "is an OLE file: an old Excel .xls",
        ),
        (lambda p: p.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4), "is a gzip archive"),
        (lambda p: p.write_bytes(b"SQLite format 3\x00" + bytes(200)), "is an SQLite database"),
        (lambda p: p.write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj"), "is a PDF document"),
    ],
)
def test_a_binary_file_named_csv_says_what_it_is_never_to_name_an_encoding(cli, tmp_path, make, said):
    path = tmp_path / "data.csv"
    make(path)
    out = _refused(cli, path)
    assert said in out and "it is not a text file" in out
    assert "encoding" not in out


def test_a_text_file_starting_with_letters_a_binary_kind_starts_with_is_still_text(cli, tmp_path):
    path = tmp_path / "par.csv"
    path.write_text("PAR1,query,label\n1,x,fast\n", encoding="utf-8")
    assert cli("import", path).exit_code == 0


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        (
            "inf.jsonl",
            '{"id": "a", "query": "x", "label": 1e999}\n',
            "inf.jsonl, line 1, column 36: 1e999 is beyond",
        ),
        (
            "inf.json",
            '[{"id": "a", "query": "x", "label": -1E+400}]',
            "inf.json, line 1, column 37: -1E+400 is beyond",
        ),
    ],
)
def test_a_number_beyond_a_float_is_refused_not_stored_as_infinity(cli, tmp_path, name, text, said):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    out = _refused(cli, path)
    assert said in out and "it would be stored as infinity" in out and "write it as a text (quoted)" in out


def test_large_finite_numbers_and_exponents_in_text_still_read(cli, tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text('{"id": "a", "query": "1e999 in text", "label": 1.7e308}\n', encoding="utf-8")
    assert cli("import", path).exit_code == 0


# -- 17: labels that collide after normalisation ---------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "said"),
    [
        (
            {"label_map": {"快": "fast", " 快 ": "slow"}},
            "label_map: the keys '快' and ' 快 ' are the same after normalisation",
        ),
        ({"label_map": {"fast": "fast", "ｆａｓｔ": "slow"}}, "map to 'fast' and 'slow'"),
        (
            {"label_set": ["fast", "FAST", " fast", "slow"]},
            "label_set lists 'fast' and 'FAST', the same after",
        ),
        ({"label_set": ["fast", "slow", "fast"]}, "label_set lists 'fast' twice"),
    ],
)
def test_labels_equal_after_normalisation_are_refused_naming_both(cli, tmp_path, profile, said):
    from abbench.dataset import MappingProfile

    spec = {"fields": {"case_id": "id", "input": "query", "expected": "label"}, **profile}
    with pytest.raises(MappingError) as caught:
        MappingProfile.from_dict(spec)
    assert said in str(caught.value)
    data = tmp_path / "cases.csv"
    data.write_text(HEADER + "1,打开空调,快\n", encoding="utf-8")
    mapping = tmp_path / "m.yaml"
    mapping.write_text(MappingProfile.model_construct(**spec).to_json(), encoding="utf-8")
    assert said in _refused(cli, data, "--mapping", mapping)


def test_keys_that_collide_on_the_same_label_are_fine():
    from abbench.dataset import MappingProfile

    profile = MappingProfile.from_dict(
        {"fields": {"input": "q"}, "label_map": {"快": "fast", " 快 ": "FAST"}}
    )
    assert len(profile.label_map) == 2


# -- 18: gates and names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("rules: [{metric: accuracy, op: '>=', value: .nan}]", "value: nan is not a finite number"),
        ("- {metric: accuracy, op: '<=', value: .inf}", "value: inf is not a finite number"),
        ("- accuracy >= nan", "value: nan is not a finite number"),
        ("rules: []", "the gate has no rule, so it would pass anything"),
        ("baseline: a\ncandidate: b\nrules: []", "the gate has no rule"),
    ],
)
def test_a_gate_that_cannot_decide_is_refused_when_read(tmp_path, text, said):
    from abbench.gate import load_gate

    assert said in refused_file(load_gate, tmp_path / "gate.yaml", text + "\n", UsageError)


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("ok\nexperiment  forged  finished", "holds a line break (\\n) at character 3"),
        ("bell\x07", "holds the control character U+0007 at character 5"),
        ("esc\x1b[2J", "the control character U+001B"),
        ("sep\u2028x", "U+2028"),
        ("trailing\n", None),  # a YAML block scalar's final newline is stripped with the spaces
    ],
)
def test_an_experiment_name_with_a_control_character_is_refused(cli, tmp_path, name, said):
    import json

    definition = tmp_path / "x.yaml"
    definition.write_text(
        json.dumps({"name": name, "dataset": "nothing", "arms": {"a": {"agent": "builtin"}}}),
        encoding="utf-8",
    )
    result = cli("create", definition)
    assert result.exit_code == 2, result.output
    if said is None:
        assert "holds" not in result.output  # refused for the missing dataset, not the name
    else:
        assert said in result.output and "a name is one line of text" in result.output


def test_an_arm_and_a_dataset_name_with_a_line_break_are_refused(cli, tmp_path):
    import json

    definition = tmp_path / "x.yaml"
    definition.write_text(
        json.dumps({"name": "x", "dataset": "nothing", "arms": {"a\nb": {"agent": "builtin"}}}),
        encoding="utf-8",
    )
    result = cli("create", definition)
    assert result.exit_code == 2 and "arm name 'a\\nb' holds a line break" in result.output
    data = tmp_path / "cases.csv"
    data.write_text(HEADER + "1,打开空调,fast\n", encoding="utf-8")
    out = _refused(cli, data, "--name", "cases\n2024-01-01  forged")
    assert "the dataset name 'cases\\n2024-01-01  forged' holds a line break (\\n) at character 6" in out


# -- issue 41, item 2: formats abbench does not read are refused at once, with a one-line conversion -----

_XML = '<?xml version="1.0" encoding="UTF-8"?>\n<sentences>\n  <sentence id="1"><text>Good food</text></sentence>\n</sentences>\n'


@pytest.mark.parametrize(
    ("name", "data", "said"),
    [
        (
            "reviews.xml",
            _XML.encode(),
            "reviews.xml is an XML document, which abbench does not read (it reads CSV/TSV, Excel, JSON Lines, "
            'JSON and Parquet); convert it to CSV: python -c "import pandas as pd; '
            "pd.read_xml('reviews.xml').to_csv('reviews.csv', index=False)\"",
        ),
        # named .csv, with a BOM: the conversion must not write over the file it reads
        (
            "reviews.csv",
            _XML.encode("utf-8-sig"),
            "pd.read_xml('reviews.csv').to_csv('reviews-converted.csv'",
        ),
        ("plain.xml", b"<sentences>\n<sentence id='1'>Good</sentence>\n</sentences>\n", "is an XML document"),
        ("page.csv", b"<!DOCTYPE html>\n<html><body><table></table></body></html>", "is an HTML page"),
        (
            "data.csv.gz",
            b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4,
            "is a gzip archive: unpack it (gzip -dc 'data.csv.gz' > 'data.csv')",
        ),
        (
            "cases.db",
            b"SQLite format 3\x00" + bytes(200),
            "sqlite3 -header -csv 'cases.db' 'SELECT * FROM <table>' > 'cases.csv'",
        ),
        (
            "cases.csv",
            b"SQLite format 3\x00" + bytes(200),
            "sqlite3 -header -csv 'cases.csv' 'SELECT * FROM <table>' > 'cases-converted.csv'",
        ),
        ("noise.csv", bytes(range(256)) * 12, "noise.csv is a binary file of no kind abbench knows"),
    ],
)
def test_a_format_abbench_does_not_read_is_refused_with_a_conversion_never_as_text(
    cli, tmp_path, name, data, said
):
    path = tmp_path / name
    path.write_bytes(data)
    for args in ((), ("--suggest",), ("--preview", "3")):
        out = _refused(cli, path, *args)
        assert said in out and "encoding" not in out.replace('encoding="UTF-8"', "")


def test_a_csv_whose_first_cell_is_a_tag_is_still_a_csv(cli, tmp_path):
    path = tmp_path / "tags.csv"
    path.write_text("<input>,label\n<b>bold</b> text,x\nplain,y\n", encoding="utf-8")
    assert cli("import", path).exit_code == 0


def test_an_xml_file_named_csv_gets_a_conversion_that_keeps_it(cli, realdata, tmp_path):
    # the shared strings of a real workbook (Botfuel's, written by LibreOffice), saved under a .csv name
    import zipfile

    with zipfile.ZipFile(realdata / "xlsx" / "botfuel_tripplanner_intents.xlsx") as zf:
        xml = zf.read("xl/sharedStrings.xml")
    path = tmp_path / "intents.csv"
    path.write_bytes(xml)
    out = _refused(cli, path, "--suggest")
    assert "intents.csv is an XML document" in out
    assert "pd.read_xml('intents.csv').to_csv('intents-converted.csv', index=False)" in out
