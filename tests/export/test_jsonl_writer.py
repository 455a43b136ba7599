"""The JSONL writer's fast path (rows encoded as they are, refused when a value is not finite) writes the
bytes of the careful rule on every row: each value checked, NaN and infinities at the top as null,
nested ones as the encoder writes them.

On the CSV lines' edge experiment (every kind of text and float, values of unexpected types) with more
of what only JSONL writes: a second grader, grades with JSON to re-encode and infinite costs, raw rows
that are not lists of text, NaN and infinities inside JSON values and at the top of a row.
"""

from __future__ import annotations

import io
import json
import math

import pytest

from abbench.export import export_table, write_jsonl
from tests.export.conftest import refuses_not_utf8
from tests.export.test_csv_lines import ODDITIES, build_edge, not_utf8

JSONL_ODDITIES = (
    *ODDITIES,
    "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, passed, score, dimensions, "
    "comment, judge_cost, created_at) SELECT experiment_id, 'b2', id, 'Zé \"q\"', 'judge', 'ok', id % 2, "
    'id / 7.0, \'{"a": 1E5, "b": NaN, "c": [1.50, null]}\', \'c,"\' || char(10), 1e-7, '
    "'2026-01-01T00:00:00+00:00' FROM runs WHERE id % 3 = 0",
    "UPDATE grades SET judge_cost = 9e999, verdict = 'tie', comment = 'nul' || char(0) WHERE id % 5 = 1",
    "UPDATE runs SET transcript_summary = '{}' WHERE id % 3 = 0",
    'UPDATE runs SET transcript_summary = \'{"turns": 2.5, "t": -Infinity}\' WHERE id % 3 = 1',
    "UPDATE cases SET source_row = '[1, 2.5, null, \"x\", 1e400]' WHERE idx % 7 = 1",
    "UPDATE cases SET history = 'NaN', context = '[Infinity]' WHERE idx % 9 = 0",
    "UPDATE runs SET score = -9e999, cost_saved = 0.1 WHERE id % 83 = 0",
    # text holding what SQLite writes for a place, or for a value it cannot judge (`abbench.store.PLACE`)
    "UPDATE runs SET reason = 'place 1e999999 here' WHERE id % 89 = 0",
    "UPDATE runs SET error = '1e999998' WHERE id % 89 = 1",
    "UPDATE cases SET input = 'input 1e999999' WHERE idx % 89 = 2",
    # a case index that is no integer (its run finds no case)
    "UPDATE runs SET case_idx = case_idx + 0.5 WHERE id % 103 = 0",
    # a verdict naming a second run
    "UPDATE grades SET other_run_id = (SELECT min(id) FROM runs) WHERE id % 97 = 0 AND grader = 'label_match'",
)


@pytest.fixture(scope="module")
def edge(tmp_path_factory):
    """The CSV lines' edge experiment with the JSONL oddities; ``(store, its id)``."""
    store, exp_id = build_edge(tmp_path_factory.mktemp("jsonl-writer"), JSONL_ODDITIES)
    yield store, exp_id
    store.close()


def _careful(table) -> str:
    """The rule written out: every value of every row checked (the writer before its fast path)."""
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
    out = []
    for row in table.rows():
        record = {
            name: None if isinstance(v, float) and not math.isfinite(v) else v
            for name, v in zip(table.names, row, strict=True)
        }
        out.append(encode(record) + "\n")
    return "".join(out)


def test_the_fast_path_writes_the_careful_rules_bytes(edge):
    store, exp_id = edge
    table = export_table(exp_id, "runs", store=store)
    out = io.StringIO()
    assert write_jsonl(table, out) == 4000
    written, expected = out.getvalue(), _careful(table)
    assert written.splitlines() == expected.splitlines()
    assert written == expected
    # both ways were taken: rows refused by the fast path (non-finite values) and rows that were not
    assert '"score":null' in written and "NaN" in written and "Infinity" in written
    assert '"Z\\u00e9' not in written and '"Zé \\"q\\""' in written


def test_a_row_of_the_wrong_width_is_refused():
    from abbench.export._tables import Column, Table

    def rows():
        yield (1, 2)

    table = Table("runs", "x", (Column("a", "int"),), rows)
    with pytest.raises(ValueError, match="zip"):
        write_jsonl(table, io.StringIO())


def test_most_lines_are_built_by_sqlite_and_the_odd_ones_by_python(edge, monkeypatch):
    # The SQL path is the one taken; the Python path makes only the rows SQLite cannot judge (values of
    # an unexpected type, text holding a place's mark, a verdict naming a second run).
    from abbench.store.bulk import _json_blocks as _json_rows

    made_by_python: list[int] = []
    lines_of = _json_rows._JsonSlices.lines_of

    def counted_lines_of(self, conn, params, ids):
        made_by_python.extend(ids)
        return lines_of(self, conn, params, ids)

    def refused(self, conn, params):  # a whole slice made in Python: none should be
        raise AssertionError(f"slice {params} made by the Python path")

    monkeypatch.setattr(_json_rows._JsonSlices, "lines_of", counted_lines_of)
    monkeypatch.setattr(_json_rows._JsonSlices, "read", refused)
    store, exp_id = edge
    table = export_table(exp_id, "runs", store=store)
    out = io.StringIO()
    assert write_jsonl(table, out) == 4000
    assert out.getvalue() == _careful(table)
    assert 100 < len(made_by_python) < 1000  # the odd rows, and only them
    lines = {json.loads(line)["run_id"]: line for line in out.getvalue().splitlines()}
    assert '"reason":"place 1e999999 here"' in "".join(lines[i] for i in made_by_python)
    assert '"input":"input 1e999999"' in out.getvalue()  # (a case's own text is Python's: no place)


def test_text_that_is_not_utf8_is_refused_naming_the_run(tmp_path):
    from abbench.errors import StoreError

    store, exp_id = build_edge(tmp_path, ())
    try:
        run = not_utf8(store, "session_id")
        refuses_not_utf8(store, exp_id, run, write_jsonl, tmp_path / "bad.jsonl")
        with store.conn:
            store.conn.execute("UPDATE runs SET session_id = 's' WHERE id = ?", (run,))
            store.conn.execute("UPDATE cases SET domain = CAST(x'ff' AS TEXT) WHERE idx = 3")
        with pytest.raises(StoreError, match=r"a case at positions 0 to 1,999 of the dataset holds text"):
            write_jsonl(export_table(exp_id, "runs", store=store), tmp_path / "bad.jsonl")
    finally:
        store.close()


def test_graders_whose_columns_share_a_name_keep_the_python_path(tmp_path):
    # A judge "j" has the columns grade.j and grade.j.score; a grader named "j.score" has grade.j.score
    # too: a row's dict keeps one value under that key, which only the Python path writes.
    store, exp_id = build_edge(
        tmp_path,
        (
            "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, passed, score, "
            "created_at) SELECT experiment_id, 'b', id, 'j', 'judge', 'ok', id % 2, 0.25, '2026' FROM runs",
            "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, passed, score, "
            "created_at) SELECT experiment_id, 'b', id, 'j.score', 'rule', 'ok', 1, 1.0, '2026' FROM runs",
        ),
    )
    try:
        table = export_table(exp_id, "runs", store=store)
        assert table.names.count("grade.j.score") == 2
        out = io.StringIO()
        assert write_jsonl(table, out) == 4000
        assert out.getvalue() == _careful(table)
    finally:
        store.close()
