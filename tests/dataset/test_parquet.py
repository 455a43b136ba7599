"""Parquet files read as the other formats are (issue 41, item 2): same cases and fingerprint as the CSV
or JSON of the same rows, nested columns reached by paths, streamed by record batches."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import subprocess
import sys

import pytest

from abbench.dataset import read_table
from abbench.errors import ImportFailed, UsageError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ASKUBUNTU = {
    "name": "askubuntu",
    "fields": {
        "input": "text",
        "expected": "intent",
        "context": "answer.text",
        "metadata": {"object": {"answered_by": "answer.author", "training": "training"}},
    },
    "label_set": ["Make Update", "Setup Printer", "Shutdown Computer", "Software Recommendation", "None"],
}


def test_parquet_imports_the_same_cases_and_fingerprint_as_the_csv_of_its_rows(store, realdata):
    csv = store.datasets.import_file(realdata / "banking77" / "test.csv", name="b77")
    pqt = store.datasets.import_file(realdata / "parquet" / "banking77_test.parquet", name="b77")
    assert pqt.n_cases == csv.n_cases == 3080  # the stored dataset is the CSV's, reused
    assert pqt.fingerprint == csv.fingerprint and pqt.reused
    a, b = store.datasets.load_cases(csv), store.datasets.load_cases(pqt)
    assert [(c.case_id, c.input, c.expected) for c in a] == [(c.case_id, c.input, c.expected) for c in b]


def test_nested_parquet_columns_are_reached_by_paths_as_in_the_json_they_came_from(store, realdata):
    pqt = store.datasets.import_file(
        realdata / "parquet" / "askubuntu.parquet", ASKUBUNTU, name="au", skip_invalid=True
    )
    js = store.datasets.import_file(
        realdata / "nlu_corpora" / "AskUbuntuCorpus.json", ASKUBUNTU, name="au", skip_invalid=True
    )
    assert js.n_cases == pqt.n_cases == 159  # 3 rows have no answer, in either file
    assert pqt.fingerprint == js.fingerprint
    case = store.datasets.load_cases(pqt)[0]
    assert case.context.startswith("<p>You can use calibre") and case.metadata["answered_by"] == "karthick87"
    assert case.source_line == "row 1" and case.source_row["entities"] == []


def test_a_parquet_file_streams_by_batches_and_previews(realdata):
    table = read_table(realdata / "parquet" / "banking77_test.parquet")
    assert table.format == "parquet" and table.tabular and table.columns == ("text", "category")
    chunks = list(table.chunks(500))
    assert [len(c.rows) for c in chunks] == [500] * 6 + [80]
    assert chunks[1].locations[0] == "row 501" and chunks[-1].locations[-1] == "row 3080"
    head = table.head(2)
    assert head[0].value == {"text": "How do I locate my card?", "category": "card_arrival"}
    counts = table.value_counts("category")
    assert counts.n_rows == 3080 and counts.counts["card_arrival"] == 40 and len(counts.counts) == 77


def test_typed_and_nested_cells_become_json_values(tmp_path):
    path = tmp_path / "typed.parquet"
    table = pa.table(
        {
            "q": ["hi", None, "yo"],
            "n": pa.array([1, None, 3], pa.int64()),
            "x": [1.5, float("nan"), None],
            "when": [dt.datetime(2024, 5, 1, 12, 30), None, dt.datetime(2024, 5, 2)],
            "price": pa.array([decimal.Decimal("2.50"), decimal.Decimal("3"), None], pa.decimal128(5, 2)),
            "raw": [b"text", b"\xff\xfe", None],
            "tags": pa.array([{"a": 1}, {}, None], pa.map_(pa.string(), pa.int64())),
            "data": [{"query": "where", "vertical": "maps"}, None, {"query": "why", "vertical": None}],
        }
    )
    pq.write_table(table, path)
    rows = [r.value for r in read_table(path).head(3)]
    assert rows[0] == {
        "q": "hi",
        "n": 1,
        "x": 1.5,
        "when": "2024-05-01T12:30:00",
        "price": 2.5,
        "raw": "text",
        "tags": {"a": 1},
        "data": {"query": "where", "vertical": "maps"},
    }
    assert rows[1] == {
        "q": "", "n": "", "x": "", "when": "", "price": 3, "raw": "base64://4=", "tags": {}, "data": None
    }  # fmt: skip
    assert rows[2]["data"] == {"query": "why", "vertical": None} and rows[2]["x"] == ""


def test_parquet_is_known_by_its_magic_bytes_whatever_its_name(realdata, tmp_path):
    path = tmp_path / "export.csv"
    path.write_bytes((realdata / "parquet" / "banking77_test.parquet").read_bytes())
    table = read_table(path)
    assert table.format == "parquet" and "export.csv is a Parquet file" in table.notes[0]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"header_row": 2}, "header_row= applies to CSV and Excel files"),
        ({"encoding": "gbk"}, "encoding= and delimiter= apply to text files"),
        ({"sheet": "x"}, "sheet= applies to Excel files"),
    ],
)
def test_text_and_sheet_options_do_not_apply_to_parquet(realdata, options, said):
    with pytest.raises(UsageError, match=said):
        read_table(realdata / "parquet" / "banking77_test.parquet", **options)


def test_a_damaged_parquet_file_is_refused_saying_so(realdata, tmp_path):
    data = (realdata / "parquet" / "banking77_test.parquet").read_bytes()
    path = tmp_path / "cut.parquet"
    path.write_bytes(data[:4] + data[len(data) // 2 :])  # the footer kept, the pages cut
    with pytest.raises(ImportFailed, match=r"cut\.parquet.*cannot read as Parquet"):
        list(read_table(path).chunks(500))


def test_a_schema_nested_past_pyarrows_depth_is_refused_with_what_to_do(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    kind, value = pa.string(), "x"
    for _ in range(150):  # a struct in a struct ... 150 deep, three rows
        kind, value = pa.struct([("a", kind)]), {"a": value}
    path = tmp_path / "deep.parquet"
    pq.write_table(
        pa.table({"input": ["open the window"] * 3, "deep": pa.array([value] * 3, type=kind)}), path
    )
    with pytest.raises(ImportFailed) as caught:
        read_table(path)
    assert "nests deeper than pyarrow reads" in str(caught.value) and "json_normalize" in str(caught.value)


def test_without_pyarrow_a_parquet_file_names_the_extra_to_install(realdata):
    code = (
        "import sys; sys.modules['pyarrow'] = None; sys.modules['pyarrow.parquet'] = None\n"
        "from abbench.dataset import read_table\n"
        "from abbench.errors import ImportFailed\n"
        "try:\n"
        f"    read_table({str(realdata / 'parquet' / 'banking77_test.parquet')!r})\n"
        "except ImportFailed as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=dict(os.environ)
    ).stdout
    assert "banking77_test.parquet is a Parquet file; reading Parquet needs pyarrow" in out
    assert "pip install 'abbench[parquet]'" in out


def test_a_parquet_compression_bomb_is_refused_from_its_footer_before_a_page_is_read(tmp_path, store):
    # 64 MiB of one letter, zstd: a file of a few kB that would expand thousands of times in memory
    path = tmp_path / "bomb.parquet"
    pq.write_table(
        pa.table({"input": ["a" * (64 << 20), "b"], "expected": ["x", "y"]}), path, compression="zstd"
    )
    assert path.stat().st_size < 100_000
    with pytest.raises(
        ImportFailed, match=r"bomb\.parquet, row group 0, column 'input': expands [\d,]+ times"
    ) as e:
        store.datasets.import_file(path)
    assert "compression bomb" in str(e.value) and "as CSV or JSON Lines" in str(e.value)
    assert store.datasets.all() == []


def test_a_parquet_file_past_the_uncompressed_bound_is_refused_naming_where(tmp_path, monkeypatch):
    from abbench.dataset import _parquet

    rows = [f"utterance {i} " + os.urandom(40).hex() for i in range(5_000)]
    path = tmp_path / "many.parquet"
    pq.write_table(pa.table({"input": rows, "expected": ["x"] * len(rows)}), path, row_group_size=1_000)
    read_table(path)  # within the bound, read
    monkeypatch.setattr(_parquet, "MAX_PARQUET_BYTES", 200_000)  # about two row groups of `input`
    with pytest.raises(
        ImportFailed, match=r"many\.parquet: at row group \d, column '\w+', its data passes 0 MiB"
    ):
        read_table(path)
