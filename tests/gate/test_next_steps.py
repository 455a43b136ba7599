"""An incomplete gate says what would complete it in the words of the view that shows it: the library the
Python calls, the CLI the commands, the server the HTTP requests, the report the calls of its notebook."""

from __future__ import annotations

import httpx
import pytest

from abbench.errors import UsageError
from abbench.gate import evaluate_gate
from abbench.report import decision_section, run_overview, runs_section
from abbench.store import open_store
from tests.results import cases_of, make_experiment
from tests.server.live import LiveServer

# One run of each kind the gate tells a person to finish: cancelled, pending, failed to execute, to grade.
_LEFT = ["cancelled", "pending", "exec_fail", "grade_fail"]


@pytest.fixture(scope="module")
def incomplete(tmp_path_factory):
    """``(store folder, experiment id, key)``: an experiment owned by ``tester`` with runs of every kind left."""
    folder = tmp_path_factory.mktemp("incomplete") / "store"
    with open_store(folder) as store:
        arms = {"a": [[True]] * 8, "b": [[True]] * 4 + [[left] for left in _LEFT]}
        exp = make_experiment(store, "left-over", cases_of(8), arms)
        key = store.keys.create("tester", scopes="read")[1]
    return folder, exp.id, key


def test_the_library_words_what_to_do_as_python_calls(incomplete):
    folder, exp_id, _ = incomplete
    g = evaluate_gate(exp_id, store=folder)
    assert g.outcome == "incomplete"
    assert [s.python for s in g.next_steps] == [
        f"abbench.retry_runs({exp_id}, cancelled=True)",
        f"abbench.run_experiment({exp_id})",
        f"abbench.retry_runs({exp_id}, failed=True)",
        f"abbench.regrade_experiment({exp_id}, failed=True)",
    ]
    assert "finish the runs (" + ", ".join(s.python for s in g.next_steps) + ")" in g.reason
    assert "abbench retry" not in g.reason and "abbench run " not in g.reason
    said = g.as_dict()
    assert said["reason"] == g.reason and said["next_steps"] == [s.to_dict() for s in g.next_steps]


def test_the_cli_prints_the_commands(incomplete, cli):
    folder, exp_id, _ = incomplete
    ran = cli("gate", exp_id, store=folder)
    assert ran.exit_code == 1 and "GATE INCOMPLETE" in ran.output
    assert (
        f"finish the runs (abbench retry {exp_id} --cancelled, abbench run {exp_id}, "
        f"abbench retry {exp_id} --failed, abbench regrade {exp_id} --failed)"
    ) in ran.output
    assert "abbench.retry_runs" not in ran.output
    as_json = cli("gate", exp_id, "--json", store=folder)
    assert f"abbench retry {exp_id} --cancelled" in as_json.output


def test_the_server_gives_the_requests(incomplete, tmp_path):
    folder, exp_id, key = incomplete
    server = LiveServer(folder, log=tmp_path / "server.log").start()
    try:
        answer = httpx.post(
            f"{server.url}/api/experiments/{exp_id}/gate",
            json={},
            headers={"Authorization": f"Bearer {key}"},
            timeout=300,
        )
    finally:
        server.stop()
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["outcome"] == "incomplete"
    base = f"POST /api/experiments/{exp_id}"
    assert (
        f"finish the runs ({base}/retry?cancelled=true, {base}/start, {base}/retry?failed=true, "
        f"{base}/regrade?failed=true)"
    ) in body["reason"]
    assert "abbench" not in body["reason"]
    assert body["next_steps"][0] == {
        "python": f"abbench.retry_runs({exp_id}, cancelled=True)",
        "cli": f"abbench retry {exp_id} --cancelled",
        "http": f"{base}/retry?cancelled=true",
    }


def test_the_report_names_the_calls_of_its_notebook_and_no_command(incomplete):
    folder, exp_id, _ = incomplete
    g = evaluate_gate(exp_id, store=folder)
    banner = "".join(str(p) for p in decision_section(g))
    assert f"<code>abbench.retry_runs({exp_id}, cancelled=True)</code>" in banner
    runs = "".join(str(p) for p in runs_section(run_overview(exp_id, store=folder)))
    assert f"1 execution failed (re-run them: abbench.retry_runs({exp_id}, failed=True))" in runs
    assert f"1 grading failed (re-grade them: abbench.regrade_experiment({exp_id}, failed=True))" in runs
    assert f"1 were cancelled (run them again: abbench.retry_runs({exp_id}, cancelled=True))" in runs
    for command in ("abbench retry", "abbench regrade", "abbench run"):
        assert command not in banner and command not in runs


def test_a_missing_gate_file_names_the_call_in_a_notebook_and_the_command_in_the_cli(store, cli):
    exp = make_experiment(
        store, "gated", cases_of(4), {"a": [[True]] * 4, "b": [[True]] * 4}, gate="nope.yaml"
    )
    with pytest.raises(UsageError) as err:
        evaluate_gate(exp, store=store)
    assert (err.value.kind, err.value.name) == ("gate file", "nope.yaml")
    assert str(err.value).endswith(f"give the rules (abbench.evaluate_gate({exp.id}, 'FILE'))")
    assert "--rules" not in str(err.value)
    assert err.value.worded("cli").endswith(f"give the rules (abbench gate {exp.id} --rules FILE)")
