"""Item 5 of issue 37: rounds are counted from 1 wherever a user reads them (exports, `metrics
--by-round`), as `record_runs` takes them; the lossless JSONL carries what an offered arm showed and
loaded, so activation can be recomputed from it; grounding's case count counts cases, not runs."""

from __future__ import annotations

import csv
import dataclasses
import json
from collections import defaultdict

import pytest
from click.testing import CliRunner
from openpyxl import load_workbook

from abbench.export import export, export_table, write_jsonl
from abbench.metrics import experiment_activation, experiment_metrics
from abbench.runner import create_experiment, record_runs
from tests.conftest import DEMO
from tests.recorded import write_dataset

N, ROUNDS = 12, 3
SKILL = DEMO / "skills" / "fast-slow-routing-v1"


def _outcome(i: int, arm: str, r: int) -> dict:
    o = {
        "prediction": "yes" if (i + r) % 4 else "no",
        "files_read": ["SKILL.md"] if i % 3 else [],
        "sections_read": ["SKILL.md#背景"] if i % 3 else [],
    }
    if arm == "offered":
        o["skills_offered"] = ["fast-slow-routing", "in-car-media"]
        o["skills_loaded"] = ["fast-slow-routing"] if (i + r) % 3 else []
        if (i + r) % 3:
            o["first_load_turn"] = 1 + (i % 2)
    return o


@pytest.fixture
def offered(store, tmp_path):
    info = write_dataset(store, tmp_path, N)
    exp = create_experiment(
        {
            "name": "offered",
            "dataset": info.fingerprint,
            "rounds": ROUNDS,
            "arms": {
                "injected": {"agent": "external", "skill": str(SKILL)},
                "offered": {"agent": "external", "skill": str(SKILL), "skill_mode": "offered"},
            },
            "graders": ["label_match"],
        },
        store=store,
    )
    outcomes = [
        {"case_id": f"q{i:03d}", "arm": arm, "round": r, **_outcome(i, arm, r)}
        for i in range(N)
        for arm in ("injected", "offered")
        for r in range(1, ROUNDS + 1)
    ]
    record_runs(store, exp, outcomes)
    return store, exp, outcomes


def test_every_export_counts_rounds_from_one(offered, tmp_path):
    store, exp, outcomes = offered
    sent = {(o["case_id"], o["arm"], o["round"]) for o in outcomes}
    export(exp.name, "runs", "csv", tmp_path / "runs.csv", store=store)
    with (tmp_path / "runs.csv").open(encoding="utf-8-sig") as f:
        assert {(r["case_id"], r["arm"], int(r["round"])) for r in csv.DictReader(f)} == sent
    export(exp.name, "runs", "jsonl", tmp_path / "runs.jsonl", store=store)
    lines = [json.loads(x) for x in (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {(r["case_id"], r["arm"], r["round"]) for r in lines} == sent
    export(exp.name, "runs", "xlsx", tmp_path / "runs.xlsx", store=store)
    rows = list(load_workbook(tmp_path / "runs.xlsx").worksheets[0].iter_rows(values_only=True))
    col = {name: i for i, name in enumerate(rows[0])}
    assert {(r[col["case_id"]], r[col["arm"]], r[col["round"]]) for r in rows[1:]} == sent
    export(exp.name, "grades", "jsonl", tmp_path / "grades.jsonl", store=store)
    grades = [json.loads(x) for x in (tmp_path / "grades.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {g["round"] for g in grades} == set(range(1, ROUNDS + 1))


def test_metrics_by_round_counts_from_one(offered):
    from abbench.cli import cli

    store, exp, outcomes = offered
    m = experiment_metrics(exp.name, store=store)
    assert sorted({g.group for g in m.by_round}) == [1, 2, 3]
    # round r's accuracy: that round's runs right, per arm
    for g in m.by_round:
        right = [o["prediction"] == ("yes" if int(o["case_id"][1:]) % 2 else "no")
                 for o in outcomes if o["arm"] == g.arm and o["round"] == g.group]  # fmt: skip
        assert g.accuracy.value == pytest.approx(sum(right) / len(right))
    out = (
        CliRunner()
        .invoke(cli, ["--store", str(store.path), "metrics", exp.name, "--by-round"], catch_exceptions=False)
        .output
    )
    assert "round 1 " in out and "round 3 " in out and "round 0" not in out


def test_the_jsonl_export_carries_activation_and_it_recomputes(offered, tmp_path):
    store, exp, outcomes = offered
    table = export_table(exp.name, "runs", store=store)
    fast, slow = tmp_path / "fast.jsonl", tmp_path / "slow.jsonl"
    write_jsonl(table, fast)
    write_jsonl(dataclasses.replace(table, json_lines=None), slow)
    assert fast.read_bytes() == slow.read_bytes()  # the SQL-built lines are the Python writer's bytes
    lines = [json.loads(x) for x in fast.read_text(encoding="utf-8").splitlines()]
    by_key = {(r["case_id"], r["arm"], r["round"]): r for r in lines}
    for o in outcomes:
        r = by_key[(o["case_id"], o["arm"], o["round"])]
        assert r["skills_offered"] == o.get("skills_offered")
        assert r["skills_loaded"] == o.get("skills_loaded")
        assert r["first_load_turn"] == o.get("first_load_turn")
    # the activation rate from the export alone: each case's share of rounds that loaded a skill, then
    # the mean over cases (abbench's per-case means)
    loaded: dict[str, list[bool]] = defaultdict(list)
    for r in lines:
        if r["arm"] == "offered":
            loaded[r["case_id"]].append(bool(r["skills_loaded"]))
    from_export = sum(sum(v) / len(v) for v in loaded.values()) / len(loaded)
    act = experiment_activation(exp.name, store=store).arm("offered")
    assert act.activation.value == pytest.approx(from_export)


def test_grounding_counts_cases_not_runs(offered):
    store, exp, outcomes = offered
    g = experiment_metrics(exp.name, store=store).arm("injected").grounding
    read = [o for o in outcomes if o["arm"] == "injected" and o["files_read"]]
    assert g.accuracy_when_read.n_values == len(read)
    assert g.accuracy_when_read.n_cases == len({o["case_id"] for o in read}) == 8
