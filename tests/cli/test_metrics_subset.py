"""`abbench metrics` on a sample of a dataset with long labels and no label set (IBM's VIRA).

A trial on VIRA (60 of 3,140 cases, 222 canonical questions as labels, the real `llm` CLI) printed
"F1 … over 51 classes" while the macro averaged over 72 (the 21 predictions that were labels of the
dataset but the gold of none of the 60 cases count as classes with F1 0, as scikit-learn's
``labels=None`` counts them), and called those predictions "outside the labels". The figures are
checked against scikit-learn.
"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from sklearn.metrics import f1_score

from abbench.cli import cli
from abbench.runner import create_experiment, run_experiment
from abbench.store._run_columns import FAILED, PASSED
from tests.lookup_agent import agent_store, graded_labels, sometimes_wrong

AGENT = sometimes_wrong("sentence", "label", 40)


@pytest.fixture(scope="module")
def vira(realdata, tmp_path_factory):
    csv_path = realdata / "vira" / "validation.csv"
    root, store, route = agent_store(tmp_path_factory, "vira", csv_path, AGENT)
    store.datasets.import_file(csv_path, {"fields": {"input": "sentence", "expected": "label"}}, name="vira")
    spec = {
        "name": "vira-sample",
        "dataset": "vira",
        "graders": ["label_match"],
        "rounds": 2,
        "cases": {"sample": 60, "seed": 3},
        "arms": {"agent": {"agent": "python", "function": route}},
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp, store=store)
    t = store.runs.table(exp.id)
    assert set(t.outcome) <= {PASSED, FAILED}, "every run is graded"
    gold, pred = graded_labels(t)
    store.close()
    yield root / "store", gold, pred


def test_the_class_count_is_the_one_the_macro_averages_over(vira):
    store, gold, pred = vira
    out = CliRunner().invoke(cli, ["--store", str(store), "metrics", "vira-sample"])
    assert out.exit_code == 0, out.output
    line = next(x for x in out.output.splitlines() if x.strip().startswith("F1"))
    golds, others = set(gold), set(pred) - set(gold)
    assert len(golds) > 12 and others, (len(golds), others)
    total = len(golds | set(pred))
    assert f"over {total} classes ({len(golds)} labels, {len(others)} other predictions)" in line, line
    macro, weighted, micro = (float(v) for v in re.findall(r"(?:macro|weighted|micro) ([0-9.]+)", line))
    assert macro == pytest.approx(f1_score(gold, pred, average="macro"), abs=5e-4)
    assert weighted == pytest.approx(f1_score(gold, pred, average="weighted"), abs=5e-4)
    assert micro == pytest.approx(f1_score(gold, pred, average="micro"), abs=5e-4)
    listed = next(x for x in out.output.splitlines() if x.strip().startswith("other predictions"))
    assert "the gold of no run counted" in listed and "outside the labels" not in out.output
