"""import-results on real files written by Inspect AI, promptfoo and skill-creator's own scripts."""

from __future__ import annotations

import json
import shutil
import statistics

import pytest

from abbench.compare import compare_arms, compare_experiments
from abbench.errors import ImportFailed
from abbench.interop import import_results, read_results
from abbench.metrics import experiment_metrics

from ..conftest import REALDATA

INSPECT = sorted((REALDATA / "inspect").glob("*.eval"))
PROMPTFOO = REALDATA / "promptfoo" / "out.json"
SKILL_CREATOR = REALDATA / "skill-creator" / "iteration-1"


def _pass_rate(store, exp, arm):
    runs = [r for r in store.runs.records(exp.id) if r.arm == arm]
    return sum(r.state == "pass" for r in runs) / len(runs)


def test_inspect_logs_become_an_experiment_with_epochs_as_rounds(store):
    read_eval_log = pytest.importorskip("inspect_ai.log").read_eval_log
    result = import_results("inspect", INSPECT, store=store)
    logs = [read_eval_log(str(p)) for p in INSPECT]
    assert result.arms == ("mockllm-model.skill=False", "mockllm-model.skill=True")
    assert result.rounds == logs[0].eval.config.epochs == 2
    assert result.cases == len({s.id for s in logs[0].samples}) == 4
    exp = result.experiment
    assert {a.agent for a in exp.arms} == {"external"}
    for arm, lg in zip(result.arms, logs, strict=True):
        # Inspect's own accuracy of the includes() scorer, from the log's results
        accuracy = lg.results.scores[0].metrics["accuracy"].value
        assert _pass_rate(store, exp, arm) == pytest.approx(accuracy)
        assert experiment_metrics(exp.name, store=store).arm(arm).accuracy.value == pytest.approx(accuracy)
        runs = {(r.case_id, r.round): r for r in store.runs.records(exp.id) if r.arm == arm}
        for s in lg.samples:
            run = runs[(str(s.id), s.epoch - 1)]
            assert run.output.prediction == s.output.completion
            assert run.output.usage.input_tokens == s.model_usage["mockllm/model"].input_tokens
    cases = {c.case_id: c for c in store.datasets.load_cases(result.dataset)}
    assert cases["FS-0001"].input == "我老婆刚发的那个位置，导航过去" and cases["FS-0001"].expected == "slow"
    # importing the same logs again records nothing new
    again = import_results("inspect", INSPECT, store=store)
    assert (again.experiment.id, again.recording.recorded, again.recording.unchanged) == (exp.id, 0, 16)
    comparison = compare_arms(exp.name, store=store)
    # a case is right for an arm when more than half of its epochs scored C (abbench's rule for rounds)
    right = [
        {
            sid: sum(s.scores["includes"].value == "C" for s in lg.samples if s.id == sid) > 1
            for sid in {s.id for s in lg.samples}
        }
        for lg in logs
    ]
    fixed = sum(right[1][k] and not right[0][k] for k in right[0])
    regressed = sum(right[0][k] and not right[1][k] for k in right[0])
    assert (comparison.n_cases, comparison.outcomes.fixed, comparison.outcomes.regressed) == (
        4,
        fixed,
        regressed,
    )
    assert comparison.value_b.value == pytest.approx(logs[1].results.scores[0].metrics["accuracy"].value)


def test_promptfoo_output_providers_become_arms_and_repeats_rounds(store):
    data = json.loads(PROMPTFOO.read_text(encoding="utf-8"))
    rows = data["results"]["results"]
    result = import_results("promptfoo", [PROMPTFOO], store=store)
    assert result.arms == ("naive", "keyword-rule")
    assert (result.cases, result.rounds) == (5, 2)
    exp = result.experiment
    for arm in result.arms:
        mine = [r for r in rows if r["provider"]["label"] == arm]
        assert _pass_rate(store, exp, arm) == pytest.approx(sum(r["success"] for r in mine) / len(mine))
    runs = store.runs.records(exp.id)
    assert sum(r.state == "pass" for r in runs) == data["results"]["stats"]["successes"]
    assert sum(r.state == "fail" for r in runs) == data["results"]["stats"]["failures"]
    # promptfoo writes cost 0 for a provider that reports none: unknown here, never free
    assert all(r.output.cost is None for r in runs)
    tokens = {(r.case_id, r.arm): r.output.usage.input_tokens for r in runs}
    first = rows[0]
    assert (
        tokens[(first["testCase"]["description"], first["provider"]["label"])]
        == first["response"]["tokenUsage"]["prompt"]
    )


def test_skill_creator_benchmark_folder_with_skill_against_without(store, cli):
    bench = json.loads((SKILL_CREATOR / "benchmark.json").read_text(encoding="utf-8"))
    result = import_results("skill-creator", [SKILL_CREATOR], store=store)
    assert result.arms == ("without_skill", "with_skill")
    assert (result.cases, result.rounds) == (3, 2)
    exp = result.experiment
    assert (exp.spec.decision.baseline, exp.spec.decision.candidate) == ("without_skill", "with_skill")
    for arm in result.arms:
        # the score is skill-creator's pass rate: its own aggregate is the mean over runs
        scores = [r.score for r in store.runs.records(exp.id) if r.arm == arm]
        assert statistics.mean(scores) == pytest.approx(
            bench["run_summary"][arm]["pass_rate"]["mean"], abs=1e-4
        )
        runs = [r for r in bench["runs"] if r["configuration"] == arm]
        assert sum(r.state == "pass" for r in store.runs.records(exp.id) if r.arm == arm) == sum(
            r["result"]["passed"] == r["result"]["total"] for r in runs
        )
    run = next(
        r
        for r in store.runs.records(exp.id)
        if (r.case_id, r.arm, r.round) == ("incident-note", "with_skill", 0)
    )
    assert run.output.latency_ms == pytest.approx(30_000.0)  # timing.json: executor duration
    assert run.transcript_summary["tool_calls"] == 5


def test_compare_and_gate_work_on_imported_experiments(tmp_path, cli):
    out = cli("import-results", "skill-creator", SKILL_CREATOR)
    assert out.exit_code == 0, out.output
    assert "3 cases × 2 rounds × 2 arms (without_skill, with_skill)" in out.output
    compared = cli("compare", "skill-creator-internal-comms", "--json")
    assert compared.exit_code == 0, compared.output
    verdict = json.loads(compared.output)
    assert verdict["a"]["arm"] == "without_skill" and verdict["b"]["arm"] == "with_skill"
    gated = cli("gate", "skill-creator-internal-comms")
    # three cases cannot assess capability: the gate never passes what it could not assess
    assert gated.exit_code == 1 and "GATE BLOCK" in gated.output and "not assessed" in gated.output


def test_runs_of_two_tools_on_one_dataset_compare_across_experiments(store):
    made = import_results("promptfoo", [PROMPTFOO], store=store)
    pytest.importorskip("inspect_ai")
    matched = import_results("inspect", INSPECT, store=store, dataset=made.dataset.fingerprint)
    assert not matched.created_dataset and matched.dataset.fingerprint == made.dataset.fingerprint
    comparison = compare_experiments(
        made.experiment.name,
        matched.experiment.name,
        arm_a="keyword-rule",
        arm_b="mockllm-model.skill=True",
        store=store,
    )
    assert comparison.n_cases == 4  # the four cases both ran


def test_runs_on_cases_the_dataset_lacks_are_refused(store):
    pytest.importorskip("inspect_ai")
    from ..conftest import DEMO

    demo = store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
    with pytest.raises(ImportFailed) as caught:
        import_results("inspect", INSPECT, store=store, dataset=demo.fingerprint)
    text = str(caught.value)
    assert "have a case id of it with another input: FS-0003" in text
    assert "leave the dataset out and a new one is made (dataset=, CLI --dataset)" in text


def test_files_that_are_not_the_format_say_so(tmp_path, cli):
    pytest.importorskip("inspect_ai")
    wrong = tmp_path / "notes.json"
    wrong.write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(ImportFailed, match="not an Inspect AI eval log"):
        read_results("inspect", [wrong])
    with pytest.raises(ImportFailed, match=r"not promptfoo eval output .*promptfoo eval -o out.json"):
        read_results("promptfoo", [wrong])
    empty = tmp_path / "workspace"
    empty.mkdir()
    with pytest.raises(ImportFailed, match="no skill-creator runs here"):
        read_results("skill-creator", [empty])
    out = cli("import-results", "promptfoo", wrong)
    assert out.exit_code == 2 and "not promptfoo eval output" in out.output


def test_a_run_without_grading_is_an_execution_failure_not_a_pass(store, tmp_path):
    folder = tmp_path / "iteration-1"
    shutil.copytree(SKILL_CREATOR, folder)
    (folder / "eval-weekly-update" / "with_skill" / "run-2" / "grading.json").unlink()
    result = import_results("skill-creator", [folder], store=store)
    run = next(
        r
        for r in store.runs.records(result.experiment.id)
        if (r.case_id, r.arm, r.round) == ("weekly-update", "with_skill", 1)
    )
    assert run.state == "fail" and run.failure_type == "not_graded" and run.execution_failed


def test_without_inspect_ai_the_message_says_how_to_install_it(monkeypatch):
    import sys

    from abbench.errors import UsageError

    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if inspect-ai were not installed
    with pytest.raises(UsageError, match=r"pip install 'abbench\[inspect\]'"):
        read_results("inspect", INSPECT)


def test_a_promptfoo_row_whose_provider_failed_is_an_execution_failure(store, tmp_path):
    data = json.loads(PROMPTFOO.read_text(encoding="utf-8"))
    row = data["results"]["results"][0]
    row.update(failureReason=2, error="API error: 503 Service Unavailable", success=False)
    row["response"] = {"error": "503"}
    path = tmp_path / "out.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = import_results("promptfoo", [path], store=store)
    runs = [r for r in store.runs.records(result.experiment.id) if r.state == "fail" and r.execution_failed]
    assert len(runs) == 1 and runs[0].error == "API error: 503 Service Unavailable"
    assert runs[0].arm == row["provider"]["label"] and runs[0].case_id == row["testCase"]["description"]


def test_other_logs_under_a_taken_name_are_refused_with_what_differs(store):
    import_results("promptfoo", [PROMPTFOO], store=store, experiment="routing")
    with pytest.raises(ImportFailed) as caught:
        import_results("skill-creator", [SKILL_CREATOR], store=store, experiment="routing")
    text = str(caught.value)
    assert "experiment 'routing' already exists with another dataset; arms naive, keyword-rule" in text
    assert "(these logs: without_skill, with_skill)" in text and "--experiment NAME" in text
