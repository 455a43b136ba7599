"""Per-class figures on a case subset of banking77's 77 intents, run by the real runner, against scikit-learn.

Labels of the set that no measured run has (as gold or prediction) must not be scored: scikit-learn's
``labels=None``. Before this was fixed the subset below had a macro F1 of 0.066 (77 labels averaged)
where scikit-learn gives 0.511.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, f1_score, precision_recall_fscore_support

from abbench.gate import evaluate_gate
from abbench.graders import normalise_label
from abbench.metrics import OTHER_LABEL, experiment_metrics
from abbench.runner import create_experiment, run_experiment
from abbench.store._run_columns import EXECUTION_FAILED
from tests.lookup_agent import agent_store, graded_labels

SUBSET = [
    "card_arrival",
    "exchange_rate",
    "age_limit",
    "terminate_account",
    "top_up_failed",
    "cash_withdrawal_charge",
]

# An agent that looks the text up in the real file, then errs by a hash of (text, round, arm): a label of
# the set outside the subset, a prediction outside the set, or an execution failure.
AGENT = """
import csv, hashlib
from abbench.errors import AgentError
GOLD = {}
with open(CSV, encoding="utf-8", newline="") as f:
    for row in csv.DictReader(f):
        GOLD.setdefault(row["text"], row["category"])
ELSEWHERE = ["card_linking", "pin_blocked", "lost_or_stolen_card"]

def route(task):
    text = task.case.input
    h = int(hashlib.sha1(f"{text}|{task.round}|{task.arm}".encode()).hexdigest(), 16) % 100
    wrong = 30 if task.arm == "rough" else 15
    if h < 5:
        raise AgentError("scripted failure", "agent_error", retryable=False)
    if h < 12:
        return "I am not sure"
    if h < wrong:
        return ELSEWHERE[h % 3]
    return GOLD[text]
"""


@pytest.fixture(scope="module")
def banking_subset(realdata, tmp_path_factory):
    csv_path = realdata / "banking77" / "test.csv"
    root, store, route = agent_store(tmp_path_factory, "banking", csv_path, AGENT)
    categories = json.loads((realdata / "banking77" / "categories.json").read_text())
    profile = {"fields": {"input": "text", "expected": "category"}, "label_set": categories}
    store.datasets.import_file(csv_path, profile, name="banking77")
    spec = {
        "name": "banking-subset",
        "dataset": "banking77",
        "rounds": 2,
        "retries": 0,
        "graders": ["label_match"],
        "cases": {"labels": SUBSET},
        "arms": {
            "rough": {"agent": "python", "function": route},
            "fine": {"agent": "python", "function": route},
        },
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp, store=store)
    yield store, exp, categories, root
    store.close()


def _graded(store, exp, arm):
    t = store.runs.table(exp.id, arms=[arm])
    return (t, *graded_labels(t))


def test_per_class_figures_on_a_banking77_subset_equal_scikit_learn_labels_none(banking_subset):
    store, exp, categories, _ = banking_subset
    m = experiment_metrics(exp, store=store)
    for arm in ("rough", "fine"):
        t, gold, pred = _graded(store, exp, arm)
        # the data hold what the figures must handle: two rounds, failures, predictions outside the set
        assert set(t.round) == {0, 1} and (t.outcome == EXECUTION_FAILED).sum() > 0
        assert "i am not sure" in pred and {"card_linking", "pin_blocked"} <= set(pred)
        report = m.arm(arm).classes
        assert report.n == len(gold)
        for average, mine in (
            ("macro", report.macro),
            ("micro", report.micro),
            ("weighted", report.weighted),
        ):
            ref = precision_recall_fscore_support(gold, pred, average=average, zero_division=0)
            assert (mine.precision, mine.recall, mine.f1) == pytest.approx(ref[:3]), average
        assert report.macro.f1 == pytest.approx(f1_score(gold, pred, average="macro", zero_division=0))
        labels = sorted(set(gold) | set(pred))
        p, r, f, s = precision_recall_fscore_support(gold, pred, labels=labels, zero_division=0)
        in_set = {normalise_label(c) for c in categories}
        assert set(report.labels) == set(labels) & in_set
        assert report.outside == ("I am not sure",)
        for i, label in enumerate(labels):
            if label in in_set:
                got = report.per_class[label]
                assert (got.precision, got.recall, got.f1, got.support) == pytest.approx(
                    (p[i], r[i], f[i], s[i])
                )
        assert report.absent == len(categories) - len(report.labels) > 60
        assert f"{report.absent} of the {len(categories)} labels" in report.absent_note
        # confusion matrix: rows and columns the present labels, the outside predictions pooled
        order = list(report.labels)
        ref = confusion_matrix(gold, pred, labels=[*order, "i am not sure"])
        assert report.confusion.columns == (*order, OTHER_LABEL)
        assert np.array(report.confusion.counts).tolist() == ref[: len(order)].tolist()


def test_macro_f1_gate_metric_and_json_follow(banking_subset):
    store, exp, _, root = banking_subset
    _, gold, pred = _graded(store, exp, "fine")
    expected = f1_score(gold, pred, average="macro", zero_division=0)
    result = evaluate_gate(exp, ["macro_f1 >= 0 (warn)"], store=store, arms=("rough", "fine"))
    assert result.rules[0].value == pytest.approx(expected)

    from click.testing import CliRunner

    from abbench.cli import cli

    out = CliRunner().invoke(cli, ["--store", str(root / "store"), "metrics", "banking-subset", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    fine = next(a for a in data["arms"] if a["arm"] == "fine")
    assert fine["classes"]["macro"]["f1"] == pytest.approx(expected)
    assert fine["classes"]["absent"] == 77 - len(fine["classes"]["labels"])


def test_views_say_how_many_labels_were_left_out(banking_subset):
    store, exp, _, root = banking_subset
    from click.testing import CliRunner

    from abbench.cli import cli
    from abbench.report._sections._confusion import confusion_section

    m = experiment_metrics(exp, store=store)
    line = f"{m.arm('fine').classes.absent} of the 77 labels are neither gold nor predicted"
    out = CliRunner().invoke(cli, ["--store", str(root / "store"), "metrics", "banking-subset"])
    assert out.exit_code == 0 and line in out.output, out.output
    html = "".join(str(p) for p in confusion_section(m))
    assert line in html


def test_a_gate_on_a_label_absent_from_the_runs_says_so(banking_subset):
    store, exp, categories, _ = banking_subset
    report = experiment_metrics(exp, store=store).arm("fine").classes
    absent = "visa_or_mastercard"
    assert absent in categories and absent in report.absent_labels and absent not in report.per_class
    assert len(report.absent_labels) == report.absent
    result = evaluate_gate(exp, [f"f1[{absent}] >= 0 (warn)"], store=store, arms=("rough", "fine"))
    assert result.rules[0].value is None
    assert result.rules[0].status == "missing"
    assert "neither gold nor predicted in these runs" in result.rules[0].message
