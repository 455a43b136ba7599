"""`abbench metrics` on many classes (banking77's 77 intents): averages first, the extremes, and `--classes`.

One line listing every class's F1 per arm was unreadable at 77 or 151 intents (a trial on CLINC150 as
JSONL printed a 4,000-character line per arm). The figures printed are checked against scikit-learn.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from sklearn.metrics import f1_score, precision_recall_fscore_support

from abbench.cli import cli
from abbench.graders import normalise_label
from abbench.runner import create_experiment, run_experiment
from tests.lookup_agent import agent_store, graded_labels, sometimes_wrong

AGENT = sometimes_wrong("text", "category", 35)


@pytest.fixture(scope="module")
def many(realdata, tmp_path_factory):
    csv_path = realdata / "banking77" / "test.csv"
    root, store, route = agent_store(tmp_path_factory, "many", csv_path, AGENT)
    categories = json.loads((realdata / "banking77" / "categories.json").read_text())
    store.datasets.import_file(
        csv_path, {"fields": {"input": "text", "expected": "category"}, "label_set": categories}, name="b77"
    )
    spec = {
        "name": "many",
        "dataset": "b77",
        "graders": ["label_match"],
        "cases": {"sample": 400, "seed": 3},
        "arms": {"agent": {"agent": "python", "function": route}},
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp, store=store)
    gold, pred = graded_labels(store.runs.table(exp.id))
    store.close()
    yield root / "store", gold, pred


def _metrics(store, *extra):
    out = CliRunner().invoke(cli, ["--store", str(store), "metrics", "many", *extra])
    assert out.exit_code == 0, out.output
    return out.output


def test_many_classes_print_the_averages_and_the_extremes_not_one_line_each(many):
    store, gold, pred = many
    text = _metrics(store)
    line = next(x for x in text.splitlines() if x.strip().startswith("F1"))
    n_classes = len(set(gold) | set(pred))
    assert n_classes > 12
    assert f"over {n_classes} classes" in line
    macro, weighted, micro = (float(v) for v in re.findall(r"(?:macro|weighted|micro) ([0-9.]+)", line))
    assert macro == pytest.approx(f1_score(gold, pred, average="macro"), abs=5e-4)
    assert weighted == pytest.approx(f1_score(gold, pred, average="weighted"), abs=5e-4)
    assert micro == pytest.approx(f1_score(gold, pred, average="micro"), abs=5e-4)
    assert "lowest:" in text and "highest:" in text and "--classes" in text
    assert max(len(x) for x in text.splitlines()) < 400


def test_classes_flag_prints_every_class_as_scikit_learn_counts_it(many):
    store, gold, pred = many
    text = _metrics(store, "--classes")
    labels = sorted(set(gold))
    p, r, f, s = precision_recall_fscore_support(gold, pred, labels=labels, zero_division=0)
    rows = {}
    for x in text.splitlines():
        m = re.match(r"\s+(\S+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9,]+)$", x)
        if m:
            rows[normalise_label(m.group(1))] = tuple(float(v.replace(",", "")) for v in m.groups()[1:])
    for i, label in enumerate(labels):
        got = rows[label[:31]]  # normalised, as label_match compares (the set says Refund_not_showing_up)
        assert got == pytest.approx((p[i], r[i], f[i], s[i]), abs=0.0051), label
