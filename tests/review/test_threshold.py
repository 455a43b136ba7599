"""The low-confidence threshold: a default that means something for the label count, on real two-label data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.errors import UsageError
from abbench.review import (
    case_detail,
    case_page,
    default_threshold,
    disagreement_page,
    disagreements,
    low_confidence_threshold,
)
from abbench.types import Case
from tests.results import make_experiment


@pytest.mark.parametrize(
    ("labels", "expected"),
    [(2, 0.75), (3, 2 / 3), (4, 0.625), (10, 0.55), (77, (1 + 1 / 77) / 2), (1, 0.5), (None, 0.5)],
)
def test_the_default_is_halfway_between_chance_and_certainty(labels, expected):
    assert default_threshold(labels) == pytest.approx(expected)


def _trigger_experiment(store, realdata, *, declared: bool):
    """The skill-trigger eval (real queries, gold trigger / no_trigger) run in two arms by 3 rounds, each
    answer with a seeded top-label confidence in [0.5, 1): what a two-label classifier reports."""
    rows = json.loads((realdata / "skill_triggers" / "internal-comms.trigger_eval.json").read_text("utf-8"))
    cases = [
        Case(f"t{i:02d}", row["query"], "trigger" if row["should_trigger"] else "no_trigger")
        for i, row in enumerate(rows)
    ]
    rng = np.random.default_rng(7)
    arms = {
        arm: [
            [
                {"passed": bool(ok), "confidence": round(float(conf), 3)}
                for ok, conf in zip(rng.random(3) < 0.8, rng.uniform(0.5, 1.0, 3), strict=True)
            ]
            for _ in cases
        ]
        for arm in ("control", "treatment")
    }
    exp = make_experiment(
        store, "triggers", cases, arms, label_set=("trigger", "no_trigger") if declared else None
    )
    frame = pd.DataFrame(
        [
            {"case_id": c.case_id, "arm": arm, "confidence": spec["confidence"], "passed": spec["passed"]}
            for arm, per_case in arms.items()
            for c, runs in zip(cases, per_case, strict=True)
            for spec in runs
        ]
    )
    return exp, frame


@pytest.mark.parametrize("declared", [True, False], ids=["label-set", "labels-from-gold"])
def test_low_confidence_is_not_empty_on_a_two_label_task(store, realdata, declared):
    exp, frame = _trigger_experiment(store, realdata, declared=declared)
    assert frame.confidence.min() >= 0.5  # nothing is below the old fixed 0.5 on two labels

    found = low_confidence_threshold(exp.id, store=store)
    assert (found.threshold, found.labels, found.chosen) == (0.75, 2, False)
    assert "1/2" in found.text and "0.75" in found.text

    # Independent: pandas over the runs as written, a case is listed when any answer is below 0.75.
    expected = sorted(frame.loc[frame.confidence < 0.75, "case_id"].unique())
    listed = [d.case_id for d in disagreements(exp.id, "low_confidence", store=store)]
    assert listed == expected and len(expected) > 5
    wrong_and_unsure = frame[(frame.confidence < 0.75) & ~frame.passed]
    assert len(wrong_and_unsure) > 0  # the wrong answers a reviewer wants to see are among them
    page = disagreement_page(exp.id, "low_confidence", store=store, limit=1000)
    assert list(page.case_ids) == expected and page.counts["low_confidence"] == len(expected)
    assert ("low_confidence" in case_detail(exp.id, expected[0], store=store).kinds) is True

    # A chosen threshold is used as given and said so.
    chosen = sorted(frame.loc[frame.confidence < 0.6, "case_id"].unique())
    assert [d.case_id for d in disagreements(exp.id, "low_confidence", store=store, threshold=0.6)] == chosen
    assert low_confidence_threshold(exp.id, 0.6, store=store).text == "below 0.6 (chosen)"


def test_the_all_cases_view_lists_low_confidence_with_the_same_default(store, realdata):
    exp, frame = _trigger_experiment(store, realdata, declared=True)
    expected = sorted(frame.loc[frame.confidence < 0.75, "case_id"].unique())
    page = case_page(exp.id, store=store, kind="low_confidence", limit=1000)
    assert sorted(r.case_id for r in page.rows) == expected and page.total == len(expected)


def test_answers_that_are_not_labels_keep_the_old_default(store):
    cases = [
        Case(f"q{i}", f"what is {i} squared", f"the answer is {i * i} because {i} times {i}")
        for i in range(8)
    ]
    exp = make_experiment(
        store, "free", cases, {"a": [[{"passed": True, "confidence": 0.55}]] * 8}, label_set=None,
        expected_kind="answer",
    )  # fmt: skip
    found = low_confidence_threshold(exp.id, store=store)
    assert (found.threshold, found.labels) == (0.5, None)
    assert disagreements(exp.id, "low_confidence", store=store) == []


def test_a_threshold_outside_0_to_1_is_refused(store, realdata):
    exp, _ = _trigger_experiment(store, realdata, declared=True)
    with pytest.raises(UsageError, match="between 0 and 1"):
        low_confidence_threshold(exp.id, 1.5, store=store)


def test_the_cli_uses_the_same_default_and_says_it(store, realdata):
    _exp, frame = _trigger_experiment(store, realdata, declared=False)
    expected = sorted(frame.loc[frame.confidence < 0.75, "case_id"].unique())
    result = CliRunner().invoke(
        cli, ["--store", str(store.path), "disagreements", "triggers", "--kind", "low_confidence", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert [d["case"]["case_id"] for d in json.loads(result.output)] == expected
    human = CliRunner().invoke(cli, ["--store", str(store.path), "disagreements", "triggers"])
    assert (
        "low confidence: below 0.75: halfway between chance (1/2) and certainty for 2 labels" in human.output
    )
    bad = CliRunner().invoke(
        cli, ["--store", str(store.path), "disagreements", "triggers", "--threshold", "2"]
    )
    assert bad.exit_code != 0 and "0<=x<=1" in bad.output
