"""Sequential stopping through the real runner: a seeded case order, an early stop, and why it stopped."""

from __future__ import annotations

import pytest

from abbench.compare import compare_arms
from abbench.errors import ExperimentError
from abbench.runner import StopReason, create_experiment, experiment_status, run_experiment
from abbench.stats import confidence_sequence, sequential_order
from abbench.types import Case

N_CASES = 300


@pytest.fixture
def stop_dataset(store):
    cases = [
        Case(f"s{i:03d}", f"query {i}", "slow" if i % 2 else "fast", domain=("nav", "car")[i % 2])
        for i in range(N_CASES)
    ]
    return store.datasets.save("stop", cases, label_set=["fast", "slow"])


def _definition(dataset, skill_dir, **stopping):
    agent = {"agent": "python", "function": "tests.runner.stop_agent:answer"}
    return {
        "name": "stops",
        "dataset": dataset.fingerprint,
        "arms": {"without": dict(agent), "with": {**agent, "skill": str(skill_dir)}},
        "concurrency": 1,
        "seed": 7,
        "stopping": {"rule": "decided", "alpha": 0.05, "margin": 0.02, "min_cases": 40, "check_every": 20,
                     **stopping},
    }  # fmt: skip


def test_a_real_run_stops_when_decided_and_records_why(store, stop_dataset, skill_dir):
    exp = create_experiment(_definition(stop_dataset, skill_dir), store=store)
    summary = run_experiment(exp.id, store=store)

    reason = summary.stop_reason
    assert isinstance(reason, StopReason)
    assert reason.decision == "better" and reason.baseline == "without" and reason.candidate == "with"
    assert reason.cases < N_CASES and reason.cases % 20 == 0 and reason.cases >= 40
    assert summary.status == "finished"
    assert summary.status_text.startswith(
        f"finished: decided after {reason.cases} of {N_CASES} cases: better"
    )

    # the runs done are exactly the first `cases` of the seeded order (concurrency 1): both arms of each
    runs = store.runs.records(exp.id)
    order = sequential_order(range(N_CASES), 7)
    first = {f"s{i:03d}" for i in order[: reason.cases].tolist()}
    done = {r.case_id for r in runs if r.state in ("pass", "fail")}
    assert done == first
    skipped = [r for r in runs if r.state == "cancelled"]
    assert len(skipped) == 2 * (N_CASES - reason.cases)
    assert all(r.error.startswith("not run: decided after") for r in skipped)
    assert not any(r.failure_type for r in runs)  # stopped by rule is not a failure

    # the decision is the anytime-valid sequence over those cases, in that order
    a = [0.0 if int(c[1:]) % 3 == 0 else 1.0 for c in (f"s{i:03d}" for i in order[: reason.cases].tolist())]
    cs = confidence_sequence(a, [1.0] * len(a), alpha=0.05)
    assert reason.low == pytest.approx(cs.interval.low) and reason.p_value == pytest.approx(cs.p_value)
    assert cs.interval.low > 0

    # stored on the experiment, and shown by every view of its status
    stored = store.experiments.get(exp.id)
    assert StopReason.from_dict(stored.stop_reason) == reason
    progress = experiment_status(exp.id, store=store)
    assert f"decided after {reason.cases} of {N_CASES} cases" in progress.status_text

    # compare reports the anytime-valid interval and p-value, and says so
    comparison = compare_arms(exp.id, store=store)
    assert comparison.interval_method == "anytime-valid"
    assert comparison.interval.low == pytest.approx(cs.interval.low)
    assert comparison.verdict.p_value == pytest.approx(cs.p_value)
    assert any("anytime-valid" in note and "stopped by its rule" in note for note in comparison.notes)


def test_running_a_stopped_experiment_again_keeps_what_it_saved(store, stop_dataset, skill_dir):
    """A second `run` decides at the same point and finds the left-out runs cancelled already: the reason
    still says they were not needed (the demo's second run said "0 of 802 runs not needed")."""
    exp = create_experiment(_definition(stop_dataset, skill_dir), store=store)
    first = run_experiment(exp.id, store=store).stop_reason
    again = run_experiment(exp.id, store=store)
    assert first is not None and again.stop_reason is not None and again.executed == 0
    assert again.stop_reason.skipped == first.skipped and sum(first.skipped.values()) == 2 * (
        N_CASES - first.cases
    )
    assert StopReason.from_dict(store.experiments.get(exp.id).stop_reason) == first


def test_an_undecided_experiment_runs_every_case(store, stop_dataset, skill_dir):
    spec = _definition(stop_dataset, skill_dir)
    spec["arms"]["with"] = dict(spec["arms"]["without"])  # A/A: the same agent on both sides
    exp = create_experiment(spec, store=store)
    summary = run_experiment(exp.id, store=store)
    assert summary.stop_reason is not None and summary.stop_reason.decision in ("equivalent", "undecided")
    if summary.stop_reason.decision == "undecided":
        assert summary.stop_reason.cases == N_CASES
        assert all(r.state in ("pass", "fail") for r in store.runs.records(exp.id))


def test_stopping_is_validated_where_it_is_written(store, stop_dataset, skill_dir):
    spec = _definition(stop_dataset, skill_dir, check_evry=5)
    with pytest.raises(
        ExperimentError, match=r"stopping: unknown key 'check_evry' \(did you mean 'check_every'\?\)"
    ):
        create_experiment(spec, store=store)
    spec = _definition(stop_dataset, skill_dir, alpha=1.5)
    with pytest.raises(ExperimentError, match=r"stopping\.alpha"):
        create_experiment(spec, store=store)
    spec = _definition(stop_dataset, skill_dir)
    spec["arms"]["third"] = dict(spec["arms"]["without"])
    with pytest.raises(ExperimentError, match=r"stopping: decides on a pair.*decision: \{baseline"):
        create_experiment(spec, store=store)


def test_a_gate_on_a_stopped_experiment_names_the_stop_and_rests_on_the_runs_it_needed(
    store, stop_dataset, skill_dir
):
    from abbench.gate import evaluate_gate

    exp = create_experiment(_definition(stop_dataset, skill_dir), store=store)
    reason = run_experiment(exp.id, store=store).stop_reason
    assert reason is not None and sum(reason.skipped.values()) == 2 * (N_CASES - reason.cases)
    gate = evaluate_gate(exp.id, [{"metric": "diff_ci_low", "op": ">=", "value": 0}], store=store)
    assert gate.coverage.complete  # the runs the rule left out are not needed
    assert gate.stopped == reason.text
    assert f"stopped by its rule: decided after {reason.cases} of {N_CASES} cases: better" in gate.headline
    assert f"left out {N_CASES - reason.cases} runs per arm" in gate.coverage.text
    assert gate.outcome == "pass"
    assert gate.rules[0].value == pytest.approx(reason.low)  # the anytime-valid lower bound


def test_metrics_of_a_stopped_experiment_say_which_figures_are_anytime_valid(store, stop_dataset, skill_dir):
    from abbench.metrics import experiment_metrics

    exp = create_experiment(_definition(stop_dataset, skill_dir), store=store)
    reason = run_experiment(exp.id, store=store).stop_reason
    metrics = experiment_metrics(exp.id, store=store)
    (note,) = [n for n in metrics.notes if "stopped by its rule" in n]
    assert reason is not None and reason.text in note
    assert "fixed-n" in note and "anytime-valid" in note


def test_the_reports_provenance_says_where_it_stopped_and_what_it_saved(store, stop_dataset, skill_dir):
    from abbench.report import experiment_provenance

    exp = create_experiment(_definition(stop_dataset, skill_dir), store=store)
    reason = run_experiment(exp.id, store=store).stop_reason
    assert reason is not None
    prov = experiment_provenance(exp.id, store=store)
    assert prov.stopped_because == f"{reason.text}; {2 * (N_CASES - reason.cases)} runs not needed"


def test_with_concurrency_a_slow_arm_holds_the_queue_back_so_the_stop_still_saves(
    store, stop_dataset, skill_dir
):
    """With concurrency and one arm slower than the other, the runs done stay within `ahead` cases of the
    prefix the rule decided on (the runner holds back runs further ahead: `Stopping.may_start`)."""
    spec = _definition(stop_dataset, skill_dir)
    spec["concurrency"] = 8
    spec["arms"]["without"]["function"] = "tests.runner.stop_agent:answer_now"
    spec["arms"]["with"]["function"] = "tests.runner.stop_agent:answer_slowly"
    exp = create_experiment(spec, store=store)
    summary = run_experiment(exp.id, store=store)
    reason = summary.stop_reason
    assert reason is not None and reason.decision == "better" and reason.cases < N_CASES
    ran = {r.case_id for r in store.runs.records(exp.id) if r.state in ("pass", "fail")}
    assert len(ran) <= reason.cases + max(20, 8)  # the prefix plus at most `ahead` cases in flight
    assert sum(reason.skipped.values()) >= 2 * (N_CASES - reason.cases - 20)


def test_the_cli_says_where_it_decided(store, stop_dataset, skill_dir):
    from click.testing import CliRunner

    from abbench.cli import cli

    exp = create_experiment(_definition(stop_dataset, skill_dir), store=store)
    ran = CliRunner().invoke(cli, ["--store", str(store.path), "run", str(exp.id), "--quiet"])
    assert ran.exit_code == 0, ran.output
    reason = StopReason.from_dict(store.experiments.get(exp.id).stop_reason)
    assert reason is not None
    assert f"finished: decided after {reason.cases} of {N_CASES} cases: better" in ran.output
    status = CliRunner().invoke(cli, ["--store", str(store.path), "status", str(exp.id)])
    assert f"decided after {reason.cases} of {N_CASES} cases" in status.output
