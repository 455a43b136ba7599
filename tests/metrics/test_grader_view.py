"""Item 6 of issue 38: `metrics`, `compare` and `report` as one named grader saw the runs (``grader=``,
``--grader NAME``). Two graders that disagree — `label_match` and a recorded judge — grade the same runs;
each view's figures are checked against a computation written out here (statsmodels' Wilson interval,
scipy's binomial and chi-square tests), and the runs' own figures stay what they were."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from abbench.compare import compare_all, compare_arms
from abbench.errors import UsageError
from abbench.metrics import experiment_metrics
from abbench.runner import add_graders, regrade_experiment
from tests.recorded import recorded_experiment, write_dataset

N = 40
ARMS = ("a", "b")


def gold(i: int) -> str:
    return "yes" if i % 2 else "no"


def label_right(i: int, arm: str) -> bool:
    return i % 3 != 0 if arm == "a" else i % 4 != 0


def judge_says(i: int, arm: str) -> bool | None:
    """The recorded judge's verdict (None: it gave none, a grading failure of the judge alone)."""
    if arm == "a":
        return None if i % 11 == 10 else i % 5 != 0
    return None if i % 7 == 6 else i % 2 == 0


def failed_execution(i: int, arm: str) -> bool:
    return arm == "a" and i == N - 1


def outcome(i: int, arm: str, r: int) -> dict:
    if failed_execution(i, arm):
        return {"error": "sandbox ran out of memory", "failure_type": "oom"}
    answer = gold(i) if label_right(i, arm) else ("no" if gold(i) == "yes" else "yes")
    out: dict = {"prediction": answer}
    verdict = judge_says(i, arm)
    if verdict is not None:
        out["grades"] = {"judge": {"passed": verdict}}
    return out


@pytest.fixture
def two_graders(store, tmp_path):
    info = write_dataset(store, tmp_path, N)
    exp = recorded_experiment(
        store, info, "graders", outcome, n=N, graders=["label_match", {"type": "recorded", "name": "judge"}]
    )
    return store, exp


def expected(arm: str, grader: str | None) -> tuple[int, int, int]:
    """(right, assessed, grading failed) of an arm, written out: by one grader, or by the runs' verdicts
    (decided by the graders that reached one: right when none says wrong)."""
    k = n = failed = 0
    for i in range(N):
        if failed_execution(i, arm):
            continue
        verdicts = {"label_match": label_right(i, arm), "judge": judge_says(i, arm)}
        if grader is None:
            reached = [v for v in verdicts.values() if v is not None]
            passed = all(reached)
        elif verdicts[grader] is None:
            failed += 1
            continue
        else:
            passed = bool(verdicts[grader])
        n += 1
        k += passed
    return k, n, failed


@pytest.mark.parametrize("grader", [None, "label_match", "judge"])
def test_metrics_per_grader_equal_a_written_out_count(two_graders, grader):
    store, exp = two_graders
    m = experiment_metrics(exp.name, store=store, grader=grader)
    assert m.grader == grader
    for arm in ARMS:
        k, n, failed = expected(arm, grader)
        a = m.arm(arm)
        assert (a.counts.passed, a.counts.graded, a.counts.grading_failed) == (k, n, failed)
        assert a.counts.execution_failed == (1 if arm == "a" else 0)
        assert a.counts.not_graded == 0 and a.counts.unfinished == 0
        assert a.accuracy.value == pytest.approx(k / n)
        low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert (a.accuracy.interval.low, a.accuracy.interval.high) == pytest.approx((low, high))
        # strict accuracy counts the execution and grading failures as wrong
        strict_n = n + failed + a.counts.execution_failed
        assert a.strict_accuracy.value == pytest.approx(k / strict_n)
    if grader is not None:
        assert any(note.startswith(f"figures from {grader}'s grades alone") for note in m.notes)
    # the two graders disagree: the views differ from each other and from the runs' verdicts
    assert len({expected("b", g)[:2] for g in (None, "label_match", "judge")}) == 3


def test_the_runs_own_figures_are_unchanged_without_a_grader(two_graders):
    store, exp = two_graders
    m = experiment_metrics(exp.name, store=store)
    assert m.grader is None and not any("grades alone" in n for n in m.notes)
    for arm in ARMS:
        k, n, _ = expected(arm, None)
        assert (m.arm(arm).counts.passed, m.arm(arm).counts.graded) == (k, n)


def paired(grader: str) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The cases both arms have a verdict of `grader` on, and each arm's verdicts there."""
    cases, va, vb = [], [], []
    for i in range(N):
        sides = []
        for arm in ARMS:
            if failed_execution(i, arm):
                sides.append(None)
            else:
                sides.append(label_right(i, arm) if grader == "label_match" else judge_says(i, arm))
        if None not in sides:
            cases.append(i)
            va.append(sides[0])
            vb.append(sides[1])
    return cases, np.asarray(va, dtype=bool), np.asarray(vb, dtype=bool)


@pytest.mark.parametrize("grader", ["label_match", "judge"])
def test_compare_per_grader_equals_scipy_on_the_paired_cases(two_graders, grader):
    store, exp = two_graders
    c = compare_arms(exp.name, "a", "b", store=store, grader=grader)
    cases, va, vb = paired(grader)
    assert c.grader == grader and c.n_cases == len(cases)
    assert c.value_a.value == pytest.approx(va.mean()) and c.value_b.value == pytest.approx(vb.mean())
    assert c.main.difference == pytest.approx(vb.mean() - va.mean())
    regressed, fixed = int((va & ~vb).sum()), int((~va & vb).sum())
    assert (c.mcnemar.b, c.mcnemar.c) == (regressed, fixed)
    assert c.mcnemar.p_value == pytest.approx(stats.binomtest(fixed, regressed + fixed, 0.5).pvalue)
    # one round, ≥ 10 paired cases: McNemar's score test (chi-square, no continuity correction) decides
    chi2 = (regressed - fixed) ** 2 / (regressed + fixed)
    assert c.verdict.p_value == pytest.approx(stats.chi2.sf(chi2, 1))
    assert {ch.case_id for ch in c.fixed} == {f"q{cases[j]:03d}" for j in np.flatnonzero(~va & vb)}
    assert any(n.startswith(f"figures from {grader}'s grades alone") for n in c.notes)
    # the runs' own comparison is another one
    assert compare_arms(exp.name, "a", "b", store=store).grader is None


def test_compare_all_takes_the_grader(store, tmp_path):
    info = write_dataset(store, tmp_path, N)
    exp = recorded_experiment(
        store,
        info,
        "three",
        lambda i, arm, r: outcome(i, "b" if arm == "c" else arm, r),
        n=N,
        arms=("a", "b", "c"),
        graders=["label_match", {"type": "recorded", "name": "judge"}],
    )
    m = compare_all(exp.name, store=store, grader="judge")
    cases, va, vb = paired("judge")
    assert m.grader == "judge" and m.n_cases == len(cases)
    assert m.pass_rates["a"].value == pytest.approx(va.mean())
    assert m.pass_rates["c"].value == pytest.approx(vb.mean())


def test_an_unknown_or_pairwise_grader_is_refused_with_the_graders(two_graders):
    store, exp = two_graders
    for call in (
        lambda: experiment_metrics(exp.name, store=store, grader="nope"),
        lambda: compare_arms(exp.name, "a", "b", store=store, grader="nope"),
    ):
        with pytest.raises(UsageError, match="has no grader 'nope'; its graders: label_match, judge"):
            call()
    with pytest.raises(UsageError, match="at most 200 characters"):
        experiment_metrics(exp.name, store=store, grader="x" * 201)
    pairwise = {"type": "pairwise_judge", "model": "m", "base_url": "http://127.0.0.1:9/v1", "name": "pw"}
    add_graders(exp, [pairwise], store=store)  # defined, never run: its kind is read from the definition
    with pytest.raises(UsageError, match=r"pw is a pairwise judge .* name one of label_match, judge"):
        compare_arms(exp.name, "a", "b", store=store, grader="pw")


def test_runs_a_grader_has_not_graded_are_counted_not_assessed(two_graders):
    store, exp = two_graders
    add_graders(exp, [{"type": "exact", "name": "later"}], store=store)  # recorded, graded nothing yet
    m = experiment_metrics(exp.name, store=store, grader="later")
    a = m.arm("a")
    assert (a.counts.not_graded, a.counts.graded, a.counts.unfinished) == (N - 1, 0, 0)
    assert a.accuracy.value is None
    regrade_experiment(exp.name, store=store, graders=["later"], cases=[f"q{i:03d}" for i in range(10)])
    b = experiment_metrics(exp.name, store=store, grader="later").arm("b")
    k = sum(label_right(i, "b") for i in range(10))
    assert (b.counts.passed, b.counts.graded, b.counts.not_graded) == (k, 10, N - 10)
    assert b.accuracy.value == pytest.approx(k / 10)


def test_the_gate_never_takes_one_graders_figures_for_its_own(two_graders):
    from abbench.gate import Measured, evaluate_gate

    store, exp = two_graders
    own = evaluate_gate(exp.name, store=store)
    judged = Measured(
        metrics=experiment_metrics(exp.name, store=store, grader="judge"),
        comparison=compare_arms(exp.name, "a", "b", store=store, grader="judge"),
    )
    given = evaluate_gate(exp.name, store=store, measured=judged)
    assert judged.comparison.verdict.text != own.verdict  # the two graders' comparisons differ
    assert (given.verdict, given.outcome, given.coverage.text) == (
        own.verdict,
        own.outcome,
        own.coverage.text,
    )


def cli_out(store, *args: str) -> tuple[int, str]:
    from abbench.cli import cli

    r = CliRunner().invoke(cli, ["--store", str(store.path), *args])
    return r.exit_code, r.output


def test_the_commands_name_the_grader(two_graders):
    store, exp = two_graders
    code, out = cli_out(store, "metrics", exp.name, "--grader", "judge")
    k, n, failed = expected("b", "judge")
    assert code == 0 and "grader: judge alone" in out.splitlines()[1]
    assert f"{k} pass judge, which accuracy counts" in out  # not "pass every grader"
    assert f"{N}: {k} right, {n - k} wrong, 0 execution failed, {failed} grading failed" in out
    code, out = cli_out(store, "metrics", exp.name, "--grader", "judge", "--json")
    assert code == 0 and json.loads(out)["grader"] == "judge"
    code, out = cli_out(store, "compare", exp.name, "--grader", "label_match", "--json")
    assert code == 0 and json.loads(out)["grader"] == "label_match"
    code, out = cli_out(store, "compare", exp.name, "--grader", "label_match")
    assert code == 0 and "grader: label_match alone" in out.splitlines()[1]
    code, out = cli_out(store, "metrics", exp.name)
    assert code == 0 and "grader:" not in out
    for command in ("metrics", "compare", "report"):
        code, out = cli_out(store, command, exp.name, "--grader", "nope")
        assert code == 2 and "its graders: label_match, judge" in out, (command, out)


@pytest.mark.slow
def test_a_report_by_one_grader_says_so_and_keeps_the_gates_decision(two_graders, tmp_path, monkeypatch):
    from abbench.report import render_report

    store, exp = two_graders
    monkeypatch.chdir(tmp_path)  # the default page path is ./reports/
    own = render_report(exp.name, store=store, out=tmp_path / "own.html")
    by = render_report(exp.name, store=store, grader="judge")
    assert by.grader == "judge" and own.grader is None
    assert by.html_path == tmp_path / "reports" / "graders-by-judge.html" and "judge alone" in by.title
    page = by.html_path.read_text(encoding="utf-8")
    assert "Figures as judge alone graded the runs" in page
    assert "Figures as" not in own.html_path.read_text(encoding="utf-8")
    # the decision is the gate's on the runs' own verdicts; the headline is the judge's comparison
    assert (by.decision, by.coverage) == (own.decision, own.coverage)
    assert by.headline == compare_arms(exp.name, "a", "b", store=store, grader="judge").verdict.text
    nb = json.loads(by.notebook_path.read_text(encoding="utf-8"))
    injected = next(c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", []))
    assert 'grader = "judge"' in "".join(injected["source"])
