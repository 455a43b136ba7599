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
from tests.export.test_csv_lines import ODDITIES, build_edge

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
