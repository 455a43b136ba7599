"""Exports: CSV that Excel reads safely, typed XLSX, lossless JSONL, and the CLI around them."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import stat

import pytest

from abbench.errors import NotFoundError, UsageError
from abbench.export import (
    EXPORT_FORMATS,
    Column,
    Table,
    export,
    export_table,
    neutralise_formula,
    write_csv,
    write_xlsx,
)
from abbench.runner import create_experiment, regrade_experiment, run_experiment
from abbench.store import open_store
from tests.experiments import FORMULA, HOSTILE_SCRIPT, build_all, routing_cases, save_cases


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("=1+1", "'=1+1"),
        ("+31 6 1234", "'+31 6 1234"),
        ("-2", "'-2"),
        ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
        ("\tcmd", "'\tcmd"),
        ("\rcmd", "'\rcmd"),
        ("a=b", "a=b"),
        ("打开空调", "打开空调"),
        ("", ""),
    ],
)
def test_formula_neutralisation(text, expected):
    assert neutralise_formula(text) == expected


def _read_csv(path):
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf"), "Excel needs the UTF-8 byte-order mark to read Chinese"
    return list(csv.DictReader(io.StringIO(raw[3:].decode("utf-8"), newline="")))


def test_runs_csv_is_excel_safe_utf8(finished, tmp_path):
    store, ids = finished
    result = export(ids["two-arm"], "runs", "csv", tmp_path / "runs.csv", store=store)
    rows = _read_csv(result.path)
    assert result.rows == len(rows) == 120
    assert list(rows[0])[:5] == ["run_id", "experiment", "arm", "round", "case_idx"]
    by_case = {(r["case_id"], r["arm"], r["round"]): r for r in rows}
    assert by_case[("c003", "control", "1")]["input"] == "'" + FORMULA
    assert by_case[("c001", "control", "1")]["input"].startswith(HOSTILE_SCRIPT)
    assert by_case[("c000", "control", "1")]["input"].startswith("第0号请求")
    first = by_case[("c000", "control", "1")]
    assert float(first["cost"]) > 0 and int(first["input_tokens"]) > 100
    assert first["grade.label_match"] == "true" and first["passed"] == "true"
    assert json.loads(first["metadata"]) == {"tags": ["smoke"], "source": "fixture"}
    assert "source_row" not in first and "grades" not in first  # JSONL-only columns


def test_csv_keeps_numbers_numbers_and_neutralises_text(tmp_path):
    table = Table(
        "runs",
        "t",
        (Column("n", "float"), Column("t", "text"), Column("b", "bool"), Column("j", "json")),
        lambda: iter([(-0.5, "-5", True, ["=x"]), (None, "@x", None, None)]),
    )
    path = tmp_path / "t.csv"
    write_csv(table, path)
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))
    assert rows == [["n", "t", "b", "j"], ["-0.5", "'-5", "true", '["=x"]'], ["", "'@x", "", ""]]


def test_runs_xlsx_has_types_and_a_frozen_header(finished, tmp_path):
    from openpyxl import load_workbook

    store, ids = finished
    result = export(ids["judges"], "runs", out=tmp_path / "runs.xlsx", store=store)
    assert result.format == "xlsx"
    ws = load_workbook(result.path)["runs"]
    assert ws.freeze_panes == "A2"
    header = [c.value for c in ws[1]]
    assert all(c.font.bold for c in ws[1])
    assert ws.auto_filter.ref.startswith("A1:")
    col = {name: i for i, name in enumerate(header)}
    rows = list(ws.iter_rows(min_row=2))
    assert len(rows) == 120
    cells = {(r[col["case_id"]].value, r[col["arm"]].value, r[col["round"]].value): r for r in rows}
    row = cells[("c003", "control", 1)]
    assert row[col["input"]].value == FORMULA and row[col["input"]].data_type == "s"  # text, not a formula
    row = cells[("c000", "treatment", 1)]
    assert isinstance(row[col["run_id"]].value, int)
    assert isinstance(row[col["confidence"]].value, float)
    assert row[col["passed"]].value is True and row[col["passed"]].data_type == "b"
    assert row[col["grade.fixture_judge.score"]].value == 4.0
    assert row[col["grade.fixture_pairwise"]].value in ("a", "b", "tie")
    assert isinstance(row[col["started_at (UTC)"]].value, dt.datetime)
    assert row[col["input"]].value.startswith("第0号请求")


def test_xlsx_cuts_overlong_text_and_drops_control_characters(tmp_path):
    from openpyxl import load_workbook

    table = Table("runs", "t", (Column("t", "text"),), lambda: iter([("x" * 40_000,), ("a\x00b\x07c",)]))
    write_xlsx(table, tmp_path / "t.xlsx")
    ws = load_workbook(tmp_path / "t.xlsx")["runs"]
    long, ctrl = ws["A2"].value, ws["A3"].value
    assert len(long) == 32_767 and long.endswith("JSONL export]")
    assert ctrl == "a\ufffdb\ufffdc"


def test_runs_jsonl_is_lossless(finished, tmp_path):
    store, ids = finished
    result = export(ids["judges"], "runs", "jsonl", tmp_path / "runs.jsonl", store=store)
    lines = result.path.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == result.rows == 120
    stored = {r.id: r for r in store.runs.records(ids["judges"])}
    for rec in records:
        run = stored[rec["run_id"]]
        assert rec["prediction"] == run.output.prediction
        assert rec["reason"] == run.output.reason
        assert rec["cost"] == run.output.cost  # full float precision
        assert rec["evidence_refs"] == list(run.output.evidence_refs)
        assert set(rec["grades"]) == {"label_match", "fixture_judge", "fixture_pairwise"}
    c003 = next(r for r in records if r["case_id"] == "c003")
    assert c003["input"] == FORMULA  # nothing neutralised in JSONL
    assert isinstance(c003["metadata"], dict)
    # the first arm's first round comes first, in dataset order
    assert [r["case_id"] for r in records[:30]] == [f"c{i:03d}" for i in range(30)]
    assert {r["arm"] for r in records[:30]} == {"control"} and {r["round"] for r in records[:30]} == {1}


def test_runs_jsonl_imports_back_to_the_same_fingerprint(finished, tmp_path):
    from abbench.export import RUNS_PROFILE

    store, ids = finished
    result = export(ids["two-arm"], "runs", "jsonl", tmp_path / "runs.jsonl", store=store)
    exp = store.experiments.get(ids["two-arm"])
    original = store.datasets.get(exp.dataset_id)
    fresh = open_store(tmp_path / "fresh")
    try:
        again = fresh.datasets.import_file(result.path, RUNS_PROFILE, name=original.name, skip_invalid=True)
        assert again.fingerprint == original.fingerprint
        back = [c.canonical() for c in fresh.datasets.load_cases(again.id)]
        assert back == [c.canonical() for c in store.datasets.load_cases(original.id)]
        assert again.n_cases == original.n_cases == 30
    finally:
        fresh.close()


def test_grades_export_keeps_history_and_batch(store, tmp_path):
    ds = save_cases(store, "small", routing_cases(4), tmp_path)
    exp = create_experiment(
        {"name": "regraded", "dataset": ds.fingerprint, "rounds": 1, "arms": {"a": {"agent": "fixture"}}},
        store=store,
    )
    run_experiment(exp, store=store)
    regrade_experiment(exp, store=store)
    result = export(exp, "grades", "jsonl", tmp_path / "grades.jsonl", store=store)
    records = [json.loads(x) for x in result.path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 8
    assert sum(r["latest"] for r in records) == 4
    assert len({r["batch_id"] for r in records}) == 1 and records[0]["batch_id"]
    assert {r["grader"] for r in records} == {"label_match"}
    latest = {r["run_id"]: r["grade_id"] for r in records if r["latest"]}
    assert all(latest[r["run_id"]] >= r["grade_id"] for r in records)


def test_reviews_export_keeps_history(store, tmp_path):
    from abbench.review import add_review

    ds = save_cases(store, "small", routing_cases(4), tmp_path)
    exp = create_experiment(
        {
            "name": "reviewed",
            "dataset": ds.fingerprint,
            "arms": {"a": {"agent": "fixture", "wrong": ["c001"]}},
        },
        store=store,
    )
    run_experiment(exp, store=store)
    run = next(r for r in store.runs.records(exp.id) if r.case_id == "c001")
    add_review(exp, "c001", "unsure", arm="a", run_id=run.id, reviewer="ana", store=store)
    add_review(exp, "c001", "gold_correct", "=the agent missed 车窗", arm="a", run_id=run.id, store=store)
    result = export(exp, "reviews", "csv", tmp_path / "reviews.csv", store=store)
    first, second = _read_csv(result.path)
    assert (first["verdict"], first["latest"], first["reviewer"]) == ("unsure", "false", "ana")
    assert second["verdict"] == "gold_correct" and second["latest"] == "true"
    assert second["note"] == "'=the agent missed 车窗"
    assert second["prediction"] == run.output.prediction and second["input"].startswith(HOSTILE_SCRIPT)


def test_comparison_export(finished, tmp_path):
    store, ids = finished
    result = export(
        ids["three-arm"], "comparison", "jsonl", tmp_path / "c.jsonl", store=store, arms=("none", "v2")
    )
    records = [json.loads(x) for x in result.path.read_text(encoding="utf-8").splitlines()]
    assert (
        len(records) == 30
        and {r["arm_a"] for r in records} == {"none"}
        and {r["arm_b"] for r in records} == {"v2"}
    )
    categories = [r["category"] for r in records]
    first_other = next(i for i, c in enumerate(categories) if c not in ("fixed", "regressed"))
    assert all(c not in ("fixed", "regressed") for c in categories[first_other:])  # fixed and regressed first
    fixed = {r["case_id"] for r in records if r["category"] == "fixed"}
    regressed = {r["case_id"] for r in records if r["category"] == "regressed"}
    assert regressed == {"c008", "c021"} and "c004" in fixed
    assert all(r["delta"] == r["b_value"] - r["a_value"] for r in records)
    # cancelled cases are listed as left out, with why
    rows = _read_csv(export(ids["failures"], "comparison", "csv", tmp_path / "f.csv", store=store).path)
    excluded = [r for r in rows if r["category"] == "excluded"]
    assert excluded and all(r["note"] for r in excluded)
    with pytest.raises(UsageError, match="only apply to the comparison"):
        export(ids["two-arm"], "runs", out=tmp_path / "x.csv", store=store, arms=("a", "b"))


def test_default_name_and_format_from_suffix(finished, tmp_path, monkeypatch):
    store, ids = finished
    monkeypatch.chdir(tmp_path)
    result = export(ids["single-case"], "runs", store=store)
    assert result.path == tmp_path / "single-case-runs.csv" and result.format == "csv"
    assert export(ids["single-case"], out=tmp_path / "x.jsonl", store=store).format == "jsonl"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"what": "cases"}, "choose one of runs, grades, reviews, comparison"),
        ({"format": "parquet"}, "choose one of: " + ", ".join(EXPORT_FORMATS)),
        ({"out": "x.parquet"}, "cannot tell the format"),
    ],
)
def test_bad_choices_are_named(finished, tmp_path, kwargs, message):
    store, ids = finished
    with pytest.raises(UsageError, match=message):
        export(ids["two-arm"], store=store, **{"out": tmp_path / "x.csv", **kwargs})
    assert [p.name for p in tmp_path.iterdir()] == []  # nothing half-written


def test_unknown_experiment(finished):
    store, _ = finished
    with pytest.raises(NotFoundError, match="no experiment named 'nope'"):
        export_table("nope", store=store)


def test_export_table_to_pandas(finished):
    store, ids = finished
    frame = export_table(ids["failures"], "runs", store=store).to_pandas()
    assert len(frame) == 120
    assert set(frame["state"]) == {"pass", "fail", "cancelled"}
    failed = frame[frame["failure_type"] == "agent_error"]
    assert set(failed["case_id"]) == {"c003", "c006", "c009"}
    assert failed["prediction"].isna().all()


@pytest.fixture
def cli_store(cli):
    """The `cli` fixture's store, holding the fixture experiments."""
    store = open_store(cli.store_dir)
    build_all(store, cli.store_dir.parent / "files")
    store.close()
    return cli


def test_cli_export(cli_store, tmp_path):
    out = tmp_path / "runs.xlsx"
    result = cli_store("export", "two-arm", "--what", "runs", "--out", out)
    assert result.exit_code == 0, result.output
    assert f"wrote 120 runs to {out} (xlsx" in result.output
    result = cli_store("export", "two-arm", "--what", "grades", "--format", "jsonl", "--out", "-")
    assert result.exit_code == 0
    assert len(result.output.splitlines()) == 120
    result = cli_store("export", "single-case", "--format", "csv", "--out", "-")
    assert result.output.startswith("\ufeffrun_id,")
    result = cli_store("export", "single-case", "--json", "--out", tmp_path / "s.csv")
    assert json.loads(result.output)["rows"] == 2
    result = cli_store("export", "three-arm", "--what", "comparison", "--arms", "none", "v1", "--out", "-")
    rows = list(csv.DictReader(io.StringIO(result.output.lstrip("\ufeff"))))
    assert len(rows) == 30 and {r["arm_b"] for r in rows} == {"v1"}
    # Three arms and no pair named: the comparison export does not guess which two (exit 2).
    result = cli_store("export", "three-arm", "--what", "comparison", "--out", tmp_path / "c.csv")
    assert result.exit_code == 2 and "has 3 arms (none, v1, v2)" in result.output
    assert not (tmp_path / "c.csv").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("export", "nope"), "no experiment named 'nope'"),
        (("export", "two-arm", "--format", "xlsx", "--out", "-"), "cannot go to stdout"),
        (("export", "two-arm", "--what", "cases"), "Invalid value for '--what'"),
    ],
)
def test_cli_export_errors(cli_store, args, message):
    result = cli_store(*args)
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "jsonl"])
def test_an_export_gets_the_mode_of_any_new_file_not_a_private_one(finished, tmp_path, fmt):
    store, ids = finished
    old = os.umask(0o022)
    try:
        path = export(ids["two-arm"], "runs", fmt, tmp_path / f"runs.{fmt}", store=store).path
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # others can read what was made to be shared


UNREPORTING_AGENT = """
from abbench.types import AgentOutput, Usage

def silent(task):
    return "fast"  # reports neither tokens nor cost: both unknown

def counted(task):
    return AgentOutput(prediction="fast", usage=Usage(120, 7), cost=0.25)
"""


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "jsonl"])
def test_unknown_cost_and_tokens_export_as_empty_never_zero(store, tmp_path, fmt):
    """An agent that reports no cost or tokens: the store holds NULL, and so must every export."""
    (tmp_path / "agent.py").write_text(UNREPORTING_AGENT, encoding="utf-8")
    ds = save_cases(store, "small", routing_cases(3), tmp_path)
    arms = {
        name: {"agent": "python", "function": f"{tmp_path / 'agent.py'}:{name}"}
        for name in ("silent", "counted")
    }
    exp = create_experiment(
        {"name": "unknown-spend", "dataset": ds.fingerprint, "rounds": 1, "arms": arms}, store=store
    )
    run_experiment(exp, store=store)
    stored = store.query(
        "SELECT a.name, r.cost, r.input_tokens, r.output_tokens, r.latency_ms FROM runs r "
        "JOIN arms a ON a.id=r.arm_id WHERE r.experiment_id=?",
        (exp.id,),
    )
    assert {(n, c, i, o) for n, c, i, o, _ in stored} == {
        ("silent", None, None, None),
        ("counted", 0.25, 120, 7),
    }
    result = export(exp, "runs", fmt, tmp_path / f"runs.{fmt}", store=store)
    if fmt == "jsonl":
        records = [json.loads(x) for x in result.path.read_text(encoding="utf-8").splitlines()]
    elif fmt == "csv":
        records = list(csv.DictReader(io.StringIO(result.path.read_text(encoding="utf-8-sig"))))
    else:
        from openpyxl import load_workbook

        ws = load_workbook(result.path)["runs"]
        header = [c.value for c in ws[1]]
        records = [dict(zip(header, row, strict=True)) for row in ws.iter_rows(min_row=2, values_only=True)]
    empty = "" if fmt == "csv" else None
    spend = ("cost", "input_tokens", "output_tokens", "total_tokens")
    for rec in records:
        if rec["arm"] == "silent":
            assert [rec[k] for k in spend] == [empty] * 4, rec
            assert rec["latency_ms"] not in (None, "")  # measured by the runner: known
        else:
            assert [float(rec[k]) for k in spend] == [0.25, 120, 7, 127]
