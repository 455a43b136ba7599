"""The runs CSV built inside SQLite is byte for byte the CSV the Python writer makes of the same table.

`Table.csv_lines` (lines made by `abbench.store.bulk.csv_lines`) against `write_csv` over the table's
rows (the Python writer, the reference), on an experiment of 1,000 cases whose stored values cover
what a cell can hold: Chinese and emoji, commas, quotes, line breaks, formula-like text, empty text,
nulls, huge, tiny, negative and zero floats, infinities, big integers, booleans, and values of an
unexpected type written straight into the store (text in number columns, a blob, a NUL character,
the mark that stands for NUL inside SQLite).
"""

from __future__ import annotations

import csv
import dataclasses
import io

import pytest

from abbench.agents import register_agent
from abbench.export import export, export_table, write_csv
from abbench.export._lines import csv_field
from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from abbench.store.bulk._csv import _Shape
from abbench.types import AgentOutput, Case, Usage
from tests.experiments import save_cases
from tests.export.conftest import fast_path_tables, refuses_not_utf8

TEXTS = (
    "plain",
    "含中文，全角逗号",
    "a,b",
    'say "hi"',
    "line\nbreak",
    "cr\rhere",
    "crlf\r\nhere",
    "=1+1",
    '=HYPERLINK("http://evil.example","click")',
    "+x",
    "-y",
    "@z",
    "\tTab",
    " lead space",
    "",
    "emoji 😀",
    "_x0041_",
    "-0.5",
    "'quoted'",
)
FLOATS = (0.9, 1.0, 0.1 + 0.2, 1e16, 1e15, 123456789.123, 1e-5, 1e-4, 5e-324, 1.7976931348623157e308,
          -2.5, 0.0, -0.0, 1e22, 0.005588000021816697, 2.0**53, 1 / 3)  # fmt: skip


class EdgeAgent:
    """Answers with hostile text and every kind of float, chosen by the case's position."""

    name = "edge"

    def __init__(self, model=None, **params):
        self.model = model or "edge-1"

    async def run(self, task):
        i = int(task.case.case_id[1:]) + task.round
        text = TEXTS[i % len(TEXTS)]
        return AgentOutput(
            prediction=text if i % 4 else task.case.expected,
            reason=TEXTS[(i + 3) % len(TEXTS)] or None,
            confidence=FLOATS[i % len(FLOATS)],
            evidence_refs=(f"SKILL.md#{TEXTS[i % len(TEXTS)]}",) if i % 3 else (),
            usage=Usage(10**12 + i, i % 5),
            cost=FLOATS[(i + 1) % len(FLOATS)],
            latency_ms=FLOATS[(i + 2) % len(FLOATS)],
            session_id=f"s,{i}" if i % 6 == 0 else f"s{i}",
            model=TEXTS[i % len(TEXTS)] or self.model,
        )


register_agent("edge")(EdgeAgent)

# Values of unexpected types and the rare ones the runner never writes, straight into the store.
ODDITIES = (
    "UPDATE runs SET confidence = NULL WHERE id % 7 = 0",
    "UPDATE runs SET score = 'n/a, really' WHERE id % 11 = 0",
    "UPDATE runs SET input_tokens = 2.5 WHERE id % 13 = 0",
    "UPDATE runs SET cached_calls = '=x,y' WHERE id % 17 = 0",
    "UPDATE runs SET cached_calls = 3, cost_saved = 1e-7 WHERE id % 17 = 1",
    "UPDATE runs SET passed = 2 WHERE id % 19 = 0",
    "UPDATE runs SET passed = 'no' WHERE id % 19 = 1",
    "UPDATE runs SET latency_ms = 0 WHERE id % 23 = 0",
    "UPDATE runs SET latency_ms = 9e999, cost = -9e999 WHERE id % 23 = 1",
    "UPDATE runs SET latency_ms = NULL WHERE id % 23 = 2",
    "UPDATE runs SET raw_output = 'nul' || char(0) || 'here' WHERE id % 29 = 0",
    "UPDATE runs SET raw_output = 'a \"b\", c' || char(10) WHERE id % 29 = 1",
    "UPDATE runs SET reason = 'mark ' || char(65534) || '0 ' || char(65534) || '1' WHERE id % 29 = 2",
    "UPDATE runs SET reason = 'both ' || char(0) || char(65534) || ',' WHERE id % 29 = 3",
    "UPDATE runs SET prediction = 'place ' || char(65534) || '2 of a float' WHERE id % 29 = 4",
    "UPDATE runs SET score = 7, confidence = x'41' WHERE id % 29 = 5",
    "UPDATE runs SET model = x'00ff' WHERE id % 31 = 0",
    "UPDATE runs SET executed_at = NULL WHERE id % 37 = 0",
    "UPDATE runs SET evidence_refs = '' WHERE id % 41 = 0",
    "UPDATE runs SET evidence_refs = NULL, files_read = '[\"a,b\"]' WHERE id % 41 = 1",
    "UPDATE runs SET attempts = 1.5 WHERE id % 43 = 0",
    "UPDATE runs SET failure_type = '+bad', error = '@err' WHERE id % 47 = 0",
    "UPDATE runs SET state = 'fail', passed = NULL WHERE id % 53 = 0",
    "UPDATE runs SET state = 'fail', passed = 0, failure_type = NULL WHERE id % 53 = 1",
    "UPDATE runs SET state = 'pass', passed = NULL, failure_type = NULL WHERE id % 53 = 2",  # scored
    "UPDATE runs SET input_tokens = NULL, output_tokens = NULL WHERE id % 59 = 0",
    "UPDATE runs SET input_tokens = 0, output_tokens = NULL WHERE id % 59 = 1",
    "UPDATE runs SET started_at = '-2026', finished_at = '' WHERE id % 61 = 0",
    "UPDATE grades SET status = 'error' WHERE id % 67 = 0",
    "UPDATE grades SET passed = 0.0 WHERE id % 67 = 1",
    "UPDATE grades SET passed = NULL, score = 0.25 WHERE id % 67 = 2",
    "UPDATE cases SET metadata = '-5' WHERE idx % 71 = 0",
    "UPDATE cases SET history = '[\"=x\", \"y\"]', context = '{}' WHERE idx % 71 = 1",
    "UPDATE cases SET request_id = 12 WHERE idx % 71 = 2",
    "UPDATE cases SET domain = NULL, expected = '' WHERE idx % 71 = 3",
)


def not_utf8(store, column: str) -> int:
    """Write bytes that are not UTF-8 into `column` of an executed run (only another tool could); its id."""
    with store.conn:
        run = store.conn.execute(
            "SELECT min(id) FROM runs WHERE id > 7 AND executed_at IS NOT NULL"
        ).fetchone()[0]
        store.conn.execute(f"UPDATE runs SET {column} = CAST(x'61ff62' AS TEXT) WHERE id = ?", (run,))
    return run


def build_edge(folder, oddities=ODDITIES):
    """A store with a finished 1,000-case, 2-arm, 2-round experiment of edge values, `oddities` then
    written into it; ``(store, its id)``."""
    store = open_store(folder / "store")
    cases = [
        Case(
            case_id=f"c{i:04d}",
            input=TEXTS[i % len(TEXTS)] or "empty",
            expected="fast" if i % 3 else "slow",
            domain=TEXTS[(i + 5) % len(TEXTS)] or None,
            request_id=TEXTS[(i + 7) % len(TEXTS)] or None,
            metadata={"n": FLOATS[i % len(FLOATS)], "t": TEXTS[i % len(TEXTS)]} if i % 2 else {},
        )
        for i in range(1000)
    ]
    ds = save_cases(store, "edge", cases, folder)
    spec = {
        "name": 'edge, "quoted" =名',
        "dataset": ds.fingerprint,
        "rounds": 2,
        "graders": ["label_match"],
        "concurrency": 8,
        "retries": 0,
        "arms": {"=A,1": {"agent": "edge"}, "b": {"agent": "edge", "model": "m"}},
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp, store=store)
    with store.transaction() as conn:
        for sql in oddities:
            conn.execute(sql)
    return store, exp.id


@pytest.fixture(scope="module")
def edge(tmp_path_factory):
    """A store with a finished 1,000-case, 2-arm, 2-round experiment of edge values; its id."""
    store, exp_id = build_edge(tmp_path_factory.mktemp("csv-lines"))
    yield store, exp_id
    store.close()


def _both(table, tmp_path):
    assert table.csv_lines is not None  # the SQL path is the one an export takes
    a, b = tmp_path / "sql.csv", tmp_path / "python.csv"
    assert write_csv(table, a) == write_csv(dataclasses.replace(table, csv_lines=None), b)
    return a.read_bytes(), b.read_bytes()


def test_sql_lines_are_the_python_writers_bytes(edge, tmp_path):
    store, exp_id = edge
    sql, python = _both(export_table(exp_id, "runs", store=store), tmp_path)
    assert sql == python
    assert sql.count(b"\r\n") > 4000  # every run written (some cells hold line breaks of their own)


def test_the_fixture_experiments_give_the_same_bytes(finished, tmp_path):
    for shape, table in fast_path_tables(finished, "csv_lines"):
        sql, python = _both(table, tmp_path)
        assert sql == python, shape


@pytest.fixture
def ways(monkeypatch):
    """How the slices of the exports made meanwhile were read: ``first``, ``(lines, lines read again)``
    of each slice read with its text cells as they are; ``blocks``, how many slices were finished (those
    not in ``first`` were read by the CSV rules at once)."""
    seen = {"first": [], "blocks": 0}
    check, finish = _Shape.unchecked, _Shape.block

    def unchecked(self, rows, head, places):
        redo = check(self, rows, head, places)
        seen["first"].append((len(rows), len(redo)))
        return redo

    def block(self, rows, placed):
        seen["blocks"] += 1
        return finish(self, rows, placed)

    monkeypatch.setattr(_Shape, "unchecked", unchecked)
    monkeypatch.setattr(_Shape, "block", block)
    return seen


def test_every_way_of_reading_a_slice_gives_the_python_writers_bytes(edge, finished, tmp_path, ways):
    store, exp_id = edge
    sql, python = _both(export_table(exp_id, "runs", store=store), tmp_path)
    assert sql == python
    clean_store, ids = finished
    for exp_id in ids.values():
        table = export_table(exp_id, "runs", store=clean_store)
        if table.csv_lines is not None:
            sql, python = _both(table, tmp_path)
            assert sql == python
    first = ways["first"]
    assert any(n and redo == 0 for n, redo in first)  # every line taken as SQL first wrote it
    assert any(0 < redo < n for n, redo in first)  # some lines read again by the rules
    assert any(2 * redo > n for n, redo in first)  # most: that reader's next slice read by the rules
    assert ways["blocks"] > len(first)


def test_the_edge_store_holds_what_the_lines_must_handle(edge):
    """The oddities reached the store (so the byte comparison covers them)."""
    store, exp_id = edge
    kinds = store.conn.execute(
        "SELECT typeof(score), typeof(input_tokens), typeof(model), typeof(latency_ms) FROM runs "
        "WHERE experiment_id = ?",
        (exp_id,),
    ).fetchall()
    seen = {k for row in kinds for k in row}
    assert {"text", "real", "blob", "integer", "null"} <= seen


@pytest.mark.parametrize("text", [*TEXTS, "a\x00b", '"', ",", "\n", "x" * 5000 + '"'])
def test_csv_field_is_the_csv_modules_field(text):
    out = io.StringIO()
    csv.writer(out, dialect="excel").writerow([text, "x"])
    assert out.getvalue() == csv_field(text) + ",x\r\n"


def test_text_that_is_not_utf8_is_refused_naming_the_run(tmp_path):
    # Only another tool can store such text: the lines come from SQLite as bytes, checked before they
    # are written, and the run is named.
    from abbench.errors import StoreError

    store, exp_id = build_edge(tmp_path, ())
    try:
        run = not_utf8(store, "prediction")
        refuses_not_utf8(store, exp_id, run, write_csv, tmp_path / "bad.csv")
        with pytest.raises(StoreError, match=rf"run {run} holds text"):  # and an export leaves no file
            export(exp_id, "runs", "csv", tmp_path / "out" / "bad.csv", store=store)
        assert list((tmp_path / "out").iterdir()) == []
    finally:
        store.close()
