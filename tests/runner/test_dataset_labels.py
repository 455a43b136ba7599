"""`labels: dataset`: an arm chooses among the dataset's labels without writing 151 of them out.

A trial on CLINC150 as JSONL (151 intents, no label set declared) had the builtin no-skill arm refused
with only "list them in `labels: [...]`"; writing 151 labels by hand is what nobody should have to do.
"""

from __future__ import annotations

import pytest

from abbench.errors import ExperimentError
from abbench.runner import create_experiment, run_experiment
from abbench.types import Case
from tests.runner.conftest import make_cases


def test_labels_dataset_is_written_out_as_the_datasets_distinct_gold_labels(store):
    ds = store.datasets.save("undeclared", make_cases(12))  # gold fast/slow, no label set
    exp = create_experiment(
        {
            "name": "dl",
            "dataset": ds.fingerprint,
            "arms": {"base": {"agent": "builtin", "labels": "dataset"}},
        },
        store=store,
    )
    assert exp.spec.arms["base"].params["labels"] == [
        "fast",
        "slow",
    ]  # the stored definition holds the list
    summary = run_experiment(exp.id, store=store)
    assert summary.executed == 12
    assert {r.output.prediction for r in store.runs.records(exp.id)} <= {"fast", "slow"}


def test_labels_dataset_uses_the_declared_label_set_when_there_is_one(store):
    ds = store.datasets.save("declared", make_cases(6), label_set=["fast", "slow", "medium"])
    exp = create_experiment(
        {
            "name": "dl",
            "dataset": ds.fingerprint,
            "arms": {"base": {"agent": "builtin", "labels": "dataset"}},
        },
        store=store,
    )
    assert exp.spec.arms["base"].params["labels"] == ["fast", "slow", "medium"]


def test_labels_dataset_is_refused_on_free_text_answers_and_the_refusal_proposes_it_on_labels(store):
    answers = [
        Case(f"c{i}", f"question {i}", f"a long free-text answer number {i} about things") for i in range(8)
    ]
    ds = store.datasets.save("answers", answers)
    with pytest.raises(ExperimentError, match="free-text answers, not labels"):
        create_experiment(
            {
                "name": "x",
                "dataset": ds.fingerprint,
                "arms": {"b": {"agent": "builtin", "labels": "dataset"}},
            },
            store=store,
        )
    many = [Case(f"c{i}", f"query {i}", f"intent_{i % 60}") for i in range(600)]
    ds = store.datasets.save("many", many)
    with pytest.raises(ExperimentError, match="give the arm `labels: dataset`"):
        create_experiment(
            {"name": "y", "dataset": ds.fingerprint, "arms": {"b": {"agent": "builtin"}}}, store=store
        )
