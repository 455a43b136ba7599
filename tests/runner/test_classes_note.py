"""Micro F1 is label accuracy; accuracy needs every grader: the figures say why they differ."""

from __future__ import annotations

from sklearn.metrics import accuracy_score, f1_score

from abbench.metrics import experiment_metrics
from abbench.runner import create_experiment, run_experiment


def test_f1_over_labels_and_accuracy_over_every_grader_are_told_apart(store, definition):
    # a check that only "fast" is a valid answer fails the runs that rightly say "slow"
    only_fast = {"type": "regex", "pattern": "^fast$", "name": "only_fast"}
    exp = create_experiment(definition(rounds=1, graders=["label_match", only_fast]), store=store)
    run_experiment(exp.id, store=store)
    m = experiment_metrics(exp.id, store=store)
    cases = {c.case_id: c.expected for c in store.datasets.load_cases(exp.dataset)}
    for arm in m.arms:
        runs = [r for r in store.runs.records(exp.id) if r.arm == arm.arm]
        gold = [cases[r.case_id] for r in runs]
        said = [r.output.prediction for r in runs]
        assert arm.classes.micro.f1 == accuracy_score(gold, said)
        assert arm.classes.macro.f1 == f1_score(gold, said, average="macro", zero_division=0)
        right = sum(g == p for g, p in zip(gold, said, strict=True))
        if arm.counts.passed == right:
            assert arm.classes_note is None
        else:
            assert arm.classes_note == (
                f"F1 compares labels alone: {right} of {len(runs)} graded runs have the gold label; "
                f"{arm.counts.passed} pass every grader, which accuracy counts"
            )
    assert all(arm.classes_note is not None for arm in m.arms)
    plain = create_experiment(definition(name="plain", rounds=1, graders=["label_match"]), store=store)
    run_experiment(plain.id, store=store)
    assert all(arm.classes_note is None for arm in experiment_metrics(plain.id, store=store).arms)
