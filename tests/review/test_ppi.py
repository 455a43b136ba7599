"""The judge's accuracy corrected by people: PPI against ppi_py, random samples, and the refusal of others."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from abbench.cli import cli
from abbench.errors import UsageError
from abbench.review import add_review, corrected_accuracy, draw_review_sample
from abbench.runner import create_experiment, run_experiment
from abbench.stats import ppi_mean
from abbench.types import Case


def _judged(rng, n, accuracy=0.7, judge_right=0.85):
    truth = (rng.random(n) < accuracy).astype(float)
    return truth, np.where(rng.random(n) < judge_right, truth, 1 - truth)


@pytest.mark.parametrize(("lam", "confidence"), [(None, 0.95), (None, 0.9), (1.0, 0.95), (0.0, 0.8)])
def test_ppi_mean_matches_ppi_py(lam, confidence):
    rng = np.random.default_rng(42)
    truth, judge = _judged(rng, 3000)
    drawn = np.zeros(truth.size, dtype=bool)
    drawn[rng.choice(truth.size, 200, replace=False)] = True
    y, yhat, yhat_u = truth[drawn], judge[drawn], judge[~drawn]
    ours = ppi_mean(y, yhat, yhat_u, confidence=confidence, lam=lam)
    low, high = ppi_mean_ci(y, yhat, yhat_u, alpha=1 - confidence, lam=lam)
    assert ours.estimate == pytest.approx(
        float(ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)[0]), abs=1e-12
    )
    assert ours.interval.low == pytest.approx(float(low[0]), abs=1e-12)
    assert ours.interval.high == pytest.approx(float(high[0]), abs=1e-12)
    assert ours.n_labeled == 200 and ours.n_unlabeled == 2800


def test_ppi_covers_the_truth_the_judge_alone_misses():
    """A judge that says right too often: its raw figure is biased; PPI's interval covers the truth."""
    rng = np.random.default_rng(7)
    covered = raw_covered = 0
    for _ in range(300):
        truth = (rng.random(2000) < 0.6).astype(float)
        judge = np.where((truth == 0) & (rng.random(2000) < 0.3), 1.0, truth)  # lenient on wrong answers
        drawn = np.zeros(2000, dtype=bool)
        drawn[rng.choice(2000, 150, replace=False)] = True
        r = ppi_mean(truth[drawn], judge[drawn], judge[~drawn])
        covered += r.interval.contains(truth.mean())
        raw_covered += abs(judge.mean() - truth.mean()) < 0.02
    assert covered / 300 > 0.9 and raw_covered == 0


def test_ppi_says_what_it_needs():
    with pytest.raises(UsageError, match="at least 2 reviewed"):
        ppi_mean([1], [1], [0, 1, 1])
    with pytest.raises(UsageError, match="lam must lie in"):
        ppi_mean([1, 0], [1, 0], [0, 1], lam=2)


@pytest.fixture
def judged_experiment(store, tmp_path):
    cases = [Case(f"p{i:03d}", f"query {i}", "slow" if i % 2 else "fast") for i in range(300)]
    dataset = store.datasets.save("ppi", cases, label_set=["fast", "slow"])
    agent = {"agent": "python", "function": "tests.runner.stop_agent:answer"}
    exp = create_experiment(
        {"name": "judged", "dataset": dataset.fingerprint, "arms": {"only": agent}, "concurrency": 4},
        store=store,
    )
    run_experiment(exp.id, store=store)
    return exp


def test_corrected_accuracy_from_a_random_sample_matches_ppi_py(store, judged_experiment):
    exp = judged_experiment
    with pytest.raises(UsageError, match=r"no random review sample.*not random") as refused:
        corrected_accuracy(exp.id, store=store)
    assert (
        refused.value.hint is not None
        and refused.value.hint.cli == f"abbench review {exp.id} --sample 100 --seed 1"
    )
    assert f"draw_review_sample({exp.id}, 100, seed=1)" in str(refused.value)
    # reviews chosen by disagreement do not make a random sample: still refused
    add_review(exp.id, "p000", "gold_correct", arm="only", store=store)
    with pytest.raises(UsageError, match="no random review sample"):
        corrected_accuracy(exp.id, store=store)

    sample = draw_review_sample(exp.id, 60, seed=3, store=store)
    assert sample.size == 60 and sample.population == 300 and len(set(sample.run_ids)) == 60
    assert draw_review_sample(exp.id, 60, seed=3, store=store).run_ids == sample.run_ids  # seeded
    judged = {run_id: passed for run_id, _, _, passed in store.reviews.judged_runs(exp.id)}
    case_of = {run_id: case for run_id, _, case, _ in store.reviews.judged_runs(exp.id)}
    # people disagree with the judge on every fifth sampled run; ten sampled runs stay unreviewed
    y, yhat = [], []
    for k, run_id in enumerate(sample.run_ids[:50]):
        right = judged[run_id] != (k % 5 == 0)
        add_review(exp.id, case_of[run_id], "model_correct" if right else "gold_correct", arm="only",
                   run_id=run_id, store=store)  # fmt: skip
        y.append(float(right))
        yhat.append(float(judged[run_id]))
    unlabeled = [float(p) for run_id, p in judged.items() if run_id not in set(sample.run_ids)]

    (figure,) = corrected_accuracy(exp.id, store=store)
    low, high = ppi_mean_ci(np.array(y), np.array(yhat), np.array(unlabeled), alpha=0.05)
    assert figure.ppi is not None
    assert figure.ppi.interval.low == pytest.approx(float(low[0]), abs=1e-12)
    assert figure.ppi.interval.high == pytest.approx(float(high[0]), abs=1e-12)
    assert figure.reviewed == 50 and figure.not_reviewed == 10 and figure.sampled == 60
    assert figure.judge_accuracy == pytest.approx(np.mean(list(judged.values())))
    assert figure.agreement == pytest.approx(0.8)
    assert f"random review sample #{sample.id + 1} (seed 3, 50 of 60 sampled runs reviewed)" in figure.text
    assert "10 sampled runs not reviewed yet are left out" in figure.text


def test_the_cli_draws_a_sample_and_shows_the_corrected_figure(store, judged_experiment):
    exp = judged_experiment
    run = CliRunner().invoke(
        cli, ["--store", str(store.path), "review", str(exp.id), "--sample", "5", "--seed", "9"]
    )
    assert run.exit_code == 0, run.output
    assert "random review sample #1: 5 of 300 judged runs (every arm, seed 9)" in run.output
    commands = [line.strip() for line in run.output.splitlines() if line.strip().startswith("abbench review")]
    assert len(commands) == 5 and all("--run" in c for c in commands)
    for run_id in store.reviews.get_sample(1).run_ids:
        case = next(c for r, _, c, _ in store.reviews.judged_runs(exp.id) if r == run_id)
        add_review(exp.id, case, "model_correct", arm="only", run_id=run_id, store=store)
    shown = CliRunner().invoke(cli, ["--store", str(store.path), "reviews", str(exp.id)])
    assert "corrected by people (prediction-powered inference)" in shown.output
    assert "random review sample #1 (seed 9, 5 of 5 sampled runs reviewed)" in shown.output
    data = json.loads(
        CliRunner().invoke(cli, ["--store", str(store.path), "reviews", str(exp.id), "--json"]).output
    )
    assert data["corrected_accuracy"][0]["sample_id"] == 1
    bad = CliRunner().invoke(cli, ["--store", str(store.path), "review", str(exp.id)])
    assert bad.exit_code == 2 and "--sample N --seed S" in bad.output


def test_a_gate_reads_the_corrected_accuracy_and_never_passes_without_a_random_sample(
    store, judged_experiment
):
    from abbench.gate import evaluate_gate

    exp = judged_experiment
    before = evaluate_gate(exp.id, ["corrected_accuracy >= 0.5"], store=store)
    (rule,) = before.rules
    assert rule.status == "missing" and not before.passed and "no random review sample" in rule.message
    sample = draw_review_sample(exp.id, 40, seed=5, store=store)
    case_of = {run_id: case for run_id, _, case, _ in store.reviews.judged_runs(exp.id)}
    for run_id in sample.run_ids:
        add_review(exp.id, case_of[run_id], "model_correct", arm="only", run_id=run_id, store=store)
    (figure,) = corrected_accuracy(exp.id, store=store)
    after = evaluate_gate(exp.id, ["corrected_accuracy >= 0.5"], store=store)
    (rule,) = after.rules
    assert figure.ppi is not None and rule.value == pytest.approx(figure.ppi.estimate)
    assert rule.status == ("pass" if figure.ppi.estimate >= 0.5 else "fail")


def test_the_reports_review_section_says_the_corrected_figure(store, judged_experiment):
    from abbench import report
    from abbench.review import reviews

    exp = judged_experiment
    sample = draw_review_sample(exp.id, 20, seed=2, store=store)
    case_of = {run_id: case for run_id, _, case, _ in store.reviews.judged_runs(exp.id)}
    for run_id in sample.run_ids:
        add_review(exp.id, case_of[run_id], "model_correct", arm="only", run_id=run_id, store=store)
    corrected = corrected_accuracy(exp.id, store=store)
    page = " ".join(str(p) for p in report.reviews_section(reviews(exp.id, store=store), None, corrected))
    assert "only: " in page and "corrected by people (prediction-powered inference)" in page
    assert "(seed 2, 20 of 20 sampled runs reviewed)" in page, page


# Runs of the banking store put in every state a run can hold (run id mod 23 -> the columns set); the rest
# stay as graded (right or wrong). Judged: graded right, or graded wrong with a verdict and no failure type.
_STATES = {
    0: "state='fail', failure_type='timeout', passed=NULL",
    1: "state='fail', failure_type=NULL, passed=NULL",
    2: "state='cancelled', passed=NULL",
    3: "state='pending', passed=NULL",
    4: "state='running', passed=NULL",
    5: "state='executed', passed=NULL",
    6: "state='evaluating', passed=NULL",
    7: "state='fail', failure_type='error', passed=0",
}


def test_sample_and_correction_over_every_run_state_match_an_independent_reading(banking_store, tmp_path):
    """On banking77 (two arms, runs in every state): the draw is numpy's seeded choice among the judged
    runs by id, as read from the database apart, and each arm's corrected figure is ppi_py's on them."""
    import shutil
    import sqlite3

    from abbench.store import open_store

    root = shutil.copytree(banking_store, tmp_path / "store")
    with sqlite3.connect(root / "abbench.db") as db:
        for k, columns in _STATES.items():
            db.execute(f"UPDATE runs SET {columns} WHERE id % 23 = ?", (k,))
        rows = db.execute("SELECT r.id, a.name, r.case_id, r.state, r.failure_type, r.passed FROM runs r "
                          "JOIN arms a ON a.id = r.arm_id ORDER BY r.id").fetchall()  # fmt: skip
    judged = {
        r[0]: r for r in rows if r[3] == "pass" or (r[3] == "fail" and r[4] is None and r[5] is not None)
    }
    assert 0 < len(judged) < len(rows)
    with open_store(root) as store:
        exp = store.experiments.get("banking-confusion")
        every = draw_review_sample(exp.id, 80, seed=11, store=store)
        expected = np.random.default_rng(11).choice(np.array(sorted(judged)), size=80, replace=False)
        assert list(every.run_ids) == expected.tolist() and every.population == len(judged)
        noisy = sorted(i for i, r in judged.items() if r[1] == "noisy")
        one_arm = draw_review_sample(exp.id, 30, seed=5, arm="noisy", store=store)
        assert list(one_arm.run_ids) == np.random.default_rng(5).choice(noisy, 30, replace=False).tolist()

        labels: dict[int, float] = {}
        for k, run_id in enumerate(every.run_ids[:70]):  # ten left unreviewed
            _, arm, case, state, _, _ = judged[run_id]
            labels[run_id] = float((state == "pass") != (k % 4 == 0))  # people disagree on every fourth
            verdict = "model_correct" if labels[run_id] else "gold_correct"
            add_review(exp.id, case, verdict, arm=arm, run_id=run_id, store=store)
        figures = {f.arm: f for f in corrected_accuracy(exp.id, sample=every.id, confidence=0.9, store=store)}
    drawn = set(every.run_ids)
    for arm in ("plain", "noisy"):
        mine = [r for r in judged.values() if r[1] == arm]
        y = np.array([labels[r[0]] for r in mine if r[0] in labels])
        yhat = np.array([float(r[3] == "pass") for r in mine if r[0] in labels])
        rest = np.array([float(r[3] == "pass") for r in mine if r[0] not in drawn])
        figure = figures[arm]
        assert (figure.judged, figure.sampled, figure.reviewed) == (
            len(mine),
            len(drawn & {r[0] for r in mine}),
            y.size,
        )
        assert figure.ppi is not None
        assert figure.ppi.estimate == pytest.approx(
            float(ppi_mean_pointestimate(y, yhat, rest)[0]), abs=1e-12
        )
        low, high = ppi_mean_ci(y, yhat, rest, alpha=0.1)
        assert (figure.ppi.interval.low, figure.ppi.interval.high) == pytest.approx(
            (low[0], high[0]), abs=1e-12
        )
