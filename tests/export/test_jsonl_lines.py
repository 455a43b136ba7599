"""The runs JSONL built inside SQLite is byte for byte the JSONL the Python writer makes of the same table.

`Table.jsonl_lines` (lines made by `Store.export_run_jsonl_lines`) against `write_jsonl` over the
table's rows (the reference), on the edge experiment of the CSV lines' tests (every kind of text and
float, values of unexpected types) with more oddities of what only JSONL writes: a second grader with
a name to escape, grades with JSON to re-encode and infinite costs, transcript summaries, raw rows
that are not lists of text, and every character through SQLite's ``json_quote``.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3

import pytest

from abbench.export import export_table, write_jsonl
from tests.export.test_csv_lines import ODDITIES, build_edge

JSONL_ODDITIES = (
    *ODDITIES,
    "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, passed, score, dimensions, "
    "comment, judge_cost, created_at) SELECT experiment_id, 'b2', id, 'Zé \"q\"', 'judge', 'ok', id % 2, "
    'id / 7.0, \'{"a": 1E5, "b": "\\u4e2d", "c": [1.50, null]}\', \'c,"\' || char(10), 1e-7, '
    "'2026-01-01T00:00:00+00:00' FROM runs WHERE id % 3 = 0",
    "UPDATE grades SET judge_cost = 9e999, verdict = 'tie', comment = 'nul' || char(0) WHERE id % 5 = 1",
    "UPDATE grades SET dimensions = '{}', score = 1.0, judge_model = x'01' WHERE id % 5 = 2",
    "UPDATE grades SET batch_id = 7, passed = 'yes' WHERE id % 5 = 3",
    "UPDATE runs SET transcript_summary = '{}' WHERE id % 3 = 0",
    'UPDATE runs SET transcript_summary = \'{"turns": 2.5, "t": "é"}\' WHERE id % 3 = 1',
    "UPDATE runs SET transcript_summary = '0' WHERE id % 5 = 4",
    "UPDATE cases SET source_row = '{\"a\": 1}' WHERE idx % 7 = 0",
    "UPDATE cases SET source_row = '[1, 2.5, null, \"x\", 1e400]' WHERE idx % 7 = 1",
    "UPDATE cases SET source_row = '[\"only\"]' WHERE idx % 7 = 2",
    "UPDATE cases SET source_row = NULL, source_line = NULL WHERE idx % 7 = 3",
    "UPDATE cases SET history = 'NaN', context = '[\"\\ud83d\\ude00\"]' WHERE idx % 9 = 0",
    'UPDATE cases SET metadata = \'{"x": -0.0, "y": Infinity}\' WHERE idx % 9 = 1',
    "UPDATE runs SET score = -9e999, cost_saved = 0.1 WHERE id % 83 = 0",
)


@pytest.fixture(scope="module")
def edge(tmp_path_factory):
    """The CSV lines' edge experiment with the JSONL oddities; ``(store, its id)``."""
    store, exp_id = build_edge(tmp_path_factory.mktemp("jsonl-lines"), JSONL_ODDITIES)
    yield store, exp_id
    store.close()


def _both(table, tmp_path):
    assert table.jsonl_lines is not None  # the SQL path is the one an export takes
    a, b = tmp_path / "sql.jsonl", tmp_path / "python.jsonl"
    assert write_jsonl(table, a) == write_jsonl(dataclasses.replace(table, jsonl_lines=None), b)
    return a.read_bytes(), b.read_bytes()


def test_sql_lines_are_the_python_writers_bytes(edge, tmp_path):
    store, exp_id = edge
    sql, python = _both(export_table(exp_id, "runs", store=store), tmp_path)
    assert sql.splitlines() == python.splitlines()
    assert sql == python
    assert len(sql.splitlines()) == 4000
    assert b'"Z\xc3\xa9 \\"q\\""' in sql  # the second grader made it into the grades


def test_the_fixture_experiments_give_the_same_bytes(finished, tmp_path):
    store, ids = finished
    seen = 0
    for shape, exp_id in ids.items():
        table = export_table(exp_id, "runs", store=store)
        if table.jsonl_lines is None:  # a pairwise judge keeps the record path
            continue
        seen += 1
        sql, python = _both(table, tmp_path)
        assert sql == python, shape
    assert seen >= 3


def test_json_quote_is_the_encoders_text_for_every_character():
    """``json_quote`` escapes exactly what ``json.dumps(ensure_ascii=False)`` escapes."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (s TEXT)")
    chars = [chr(i) for i in range(0x110000) if not 0xD800 <= i < 0xE000]
    conn.executemany("INSERT INTO t VALUES (?)", [(f"a{ch}b",) for ch in chars])
    differ = [
        s for s, q in conn.execute("SELECT s, json_quote(s) FROM t") if q != json.dumps(s, ensure_ascii=False)
    ]
    assert differ == []
