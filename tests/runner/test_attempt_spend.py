"""A failed run keeps what it spent: every attempt's tokens, cost, latency, files read and transcript.

The openai adapter runs against the scripted OpenAI-compatible server on 127.0.0.1; the model spends
tokens and then fails (a tool loop out of turns, a reply that does not parse, a cancel while a call
hangs), and the run is retried. The figures expected below come from the script's own usage numbers.
"""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.metrics import experiment_metrics, judge_report
from abbench.review import case_detail
from abbench.runner import create_experiment, retry_runs, run_experiment, start_experiment
from abbench.testing import Reply, ScriptedOpenAIServer
from tests.runner.conftest import interrupt_cli_run

PRICE = {"input": 1.0, "output": 2.0}  # USD per million tokens


def cost(tokens_in: int, tokens_out: int) -> float:
    return (tokens_in * PRICE["input"] + tokens_out * PRICE["output"]) / 1e6


def answer(label: str, usage: tuple[int, int]) -> Reply:
    return Reply.text(json.dumps({"prediction": label, "evidence_refs": ["SKILL.md#Rules"]}), usage=usage)


class Script:
    """Replies by case and by how often that case's model was called; records what it handed out."""

    def __init__(self, plan):
        self.plan = plan  # case input -> list of replies, in call order
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, request):
        user = next(m["content"] for m in request.messages if m["role"] == "user")
        case = next(c for c in self.plan if f"{c}\n" in user + "\n" or c in user)
        with self.lock:
            n = self.calls.get(case, 0)
            self.calls[case] = n + 1
        reply = self.plan[case][n]
        return reply() if callable(reply) else reply


def arm(server, skill_dir):
    return {
        "agent": "openai",
        "model": "scripted",
        "base_url": server.base_url,
        "skill": str(skill_dir),
        "max_turns": 2,
        "prices": PRICE,
        "max_retries": 0,
    }


def test_failed_attempts_keep_their_spend_through_retries(store, dataset, skill_dir):
    script = Script(
        {
            # out of turns: a tool call, then another when it had to answer (not retryable) ...
            "query 0": [
                Reply.tools(("read_section", {"ref": "SKILL.md#Rules"}), usage=(100, 10)),
                Reply.tools(("read_section", {"ref": "SKILL.md#Rules"}), usage=(120, 12)),
                # ... and after `retry --failed`, an answer
                answer("slow", (50, 5)),
            ],
            # a reply that does not parse (retried at once), then an answer
            "query 1": [Reply.text("no idea at all, sorry", usage=(80, 8)), answer("fast", (60, 6))],
            "query 2": [answer("fast", (40, 4))],
        }
    )
    with ScriptedOpenAIServer(script) as server:
        spec = {
            "name": "spend",
            "dataset": dataset.fingerprint,
            "rounds": 1,
            "retries": 1,
            "cases": {"ids": ["c000", "c001", "c002"]},
            "arms": {"gpt": arm(server, skill_dir)},
        }
        exp = create_experiment(spec, store=store)
        run_experiment(exp.id, store=store)

        runs = {r.case_id: r for r in store.runs.records(exp.id)}
        assert runs["c000"].execution_failed and runs["c000"].failure_type == "max_turns"
        assert runs["c001"].state == "pass" and runs["c002"].state == "pass"
        attempts = store.attempts.of_run([r.id for r in runs.values()])
        first = attempts[runs["c000"].id]
        assert [(a.attempt, a.outcome, a.failure_type) for a in first] == [(1, "failed", "max_turns")]
        a = first[0]
        assert (a.usage.input_tokens, a.usage.output_tokens) == (220, 22)
        assert a.cost == pytest.approx(cost(220, 22)) and a.model_calls == 2 and a.model == "scripted"
        assert a.sections_read == ("SKILL.md#Rules",) and a.latency_ms > 0
        assert a.tool_calls == 2  # asked for; the second was never run: it was out of turns
        assert a.transcript_path.exists()
        events = [json.loads(line) for line in a.transcript_path.read_text(encoding="utf-8").splitlines()]
        assert sum(e.get("type") == "llm_call" for e in events) == 2
        # the unparseable reply and the retry that answered: two attempts, both kept
        second = attempts[runs["c001"].id]
        assert [(x.attempt, x.outcome, x.failure_type) for x in second] == [
            (1, "failed", "bad_output"),
            (2, "executed", None),
        ]
        assert second[0].cost == pytest.approx(cost(80, 8)) and second[1].cost == pytest.approx(cost(60, 6))
        assert second[0].transcript_path != second[1].transcript_path

        usage = experiment_metrics(exp, store=store).arm("gpt").usage
        spent = cost(220, 22) + cost(80, 8) + cost(60, 6) + cost(40, 4)
        assert usage.spent == pytest.approx(spent)
        assert usage.spent_on_failures == pytest.approx(cost(220, 22) + cost(80, 8))
        assert (usage.attempts, usage.failed_attempts) == (4, 2)
        assert usage.spent_tokens == 220 + 22 + 80 + 8 + 60 + 6 + 40 + 4
        # stored executions only, as before: cost per correct answer does not change meaning
        assert usage.total_cost == pytest.approx(cost(60, 6) + cost(40, 4))
        assert usage.cost_per_correct == pytest.approx(usage.total_cost / 2)
        from abbench.report._sections._arms import usage_section

        table = "".join(str(p) for p in usage_section(experiment_metrics(exp, store=store)))
        assert "spent, every attempt" in table and "2 attempts whose execution failed" in table

        # the case detail shows the failed attempt with what it spent and its tool call
        detail = case_detail(exp, "c000", store=store)
        (view,) = detail.runs
        (shown,) = view.attempts
        assert (
            shown.outcome == "failed" and shown.tokens == 242 and shown.cost == pytest.approx(cost(220, 22))
        )
        assert [c.name for c in shown.tool_calls] == ["read_section"]
        out = CliRunner().invoke(cli, ["--store", str(store.path), "case", str(exp.id), "c000"])
        assert out.exit_code == 0, out.output
        assert "attempt 1 failed (max_turns): 2 model calls, 1 tool calls, tokens 242" in out.output
        assert "read_section" in out.output
        from abbench.widgets._case import CaseDetailView

        view = CaseDetailView(store)
        view.show([(store.experiments.get(exp.id), None)], "c000")
        assert "attempt 1 failed (max_turns): 2 model calls, 1 tool calls, tokens 242" in view.runs_html.value

        # a re-run answers; what the first attempt spent stays counted
        retry_runs(exp.id, store=store, failed=True)
        again = store.attempts.of_run([runs["c000"].id])[runs["c000"].id]
        assert [(x.attempt, x.outcome) for x in again] == [(1, "failed"), (2, "executed")]
        usage = experiment_metrics(exp, store=store).arm("gpt").usage
        assert usage.spent == pytest.approx(spent + cost(50, 5))
        assert usage.total_cost == pytest.approx(cost(50, 5) + cost(60, 6) + cost(40, 4))
        agent = judge_report(exp.id, store=store).agent
        assert agent["cost"] == pytest.approx(spent + cost(50, 5)) and agent["failed_attempts"] == 2
        assert agent["input_tokens"] == 220 + 80 + 60 + 40 + 50
    assert script.calls == {"query 0": 3, "query 1": 2, "query 2": 1}


def _second_call_held(usage: tuple[int, int]) -> tuple[Script, threading.Event, threading.Event]:
    """A script for case c000: a model call that reads SKILL.md#Rules (`usage`), then a second call held
    until `release` is set (`arrived` is set when it comes). Returns the script, `arrived` and `release`."""
    arrived, release = threading.Event(), threading.Event()

    def hang():
        arrived.set()
        release.wait(120)
        return answer("fast", (1, 1))

    return (
        Script({"query 0": [Reply.tools(("read_section", {"ref": "SKILL.md#Rules"}), usage=usage), hang]}),
        arrived,
        release,
    )


def _first_case(server, name: str, dataset, skill_dir, **more) -> dict:
    """Experiment `name`: one round of case c000 by the openai arm ``gpt`` (three turns at most) of `server`."""
    arms = {"gpt": {**arm(server, skill_dir), "max_turns": 3}}
    return {
        "name": name,
        "dataset": dataset.fingerprint,
        "rounds": 1,
        "cases": {"ids": ["c000"]},
        "arms": arms,
        **more,
    }


def test_a_run_cancelled_while_a_model_call_hangs_keeps_the_calls_it_made(store, dataset, skill_dir):
    script, _, release = _second_call_held(usage=(100, 10))  # held until the test has cancelled the run
    with ScriptedOpenAIServer(script) as server:
        exp = create_experiment(_first_case(server, "cancelled", dataset, skill_dir, retries=0), store=store)
        handle = start_experiment(exp.id, store=store)
        try:
            for _ in range(12000):  # wait for the state: the second model call has arrived
                if len(server.chat_requests) >= 2 or handle.done():
                    break
                threading.Event().wait(0.01)
            assert len(server.chat_requests) == 2
            handle.cancel()
            handle.wait(120)
        finally:
            release.set()
    (run,) = store.runs.records(exp.id)
    assert run.state == "cancelled"
    (a,) = store.attempts.of_run([run.id])[run.id]
    assert a.outcome == "cancelled" and (a.usage.input_tokens, a.usage.output_tokens) == (100, 10)
    assert a.cost == pytest.approx(cost(100, 10)) and a.sections_read == ("SKILL.md#Rules",)
    usage = experiment_metrics(exp, store=store).arm("gpt").usage
    assert usage.spent == pytest.approx(cost(100, 10)) and usage.failed_attempts == 1
    assert usage.executed == 0  # nothing answered: the spend is all in the cancelled attempt


def test_ctrl_c_while_a_model_call_hangs_keeps_the_interrupted_attempts_spend(
    tmp_path, dataset, store, skill_dir
):
    """A person stops `abbench run` (SIGINT) mid-call: the attempt is stored as interrupted with its spend."""
    script, arrived, release = _second_call_held(usage=(70, 7))  # held until the child has been stopped
    with ScriptedOpenAIServer(script) as server:
        exp = create_experiment(_first_case(server, "interrupted", dataset, skill_dir), store=store)
        code, err = interrupt_cli_run(store, exp.id, arrived, release)
    assert code == 130, err
    (run,) = store.runs.records(exp.id)
    assert run.failure_type == "interrupted"
    (a,) = store.attempts.of_run([run.id])[run.id]
    assert (a.outcome, a.failure_type) == ("failed", "interrupted")
    assert (a.usage.input_tokens, a.usage.output_tokens) == (70, 7) and a.cost == pytest.approx(cost(70, 7))
    assert a.sections_read == ("SKILL.md#Rules",) and a.transcript_path.exists()


@pytest.mark.slow
def test_a_run_that_times_out_while_a_model_call_hangs_keeps_the_calls_it_made(store, dataset, skill_dir):
    # The per-run timeout (the runner's watchdog) ends the attempt as a `timeout` failure; what the first
    # call spent stays on the failed attempt. The hanging call is held until the test releases it, so
    # the timeout is the only way out; 10 s leaves the first (local) call ample time on a loaded machine.
    script, _, release = _second_call_held(usage=(100, 10))
    with ScriptedOpenAIServer(script) as server:
        spec = _first_case(server, "timed-out", dataset, skill_dir, retries=0, timeout_s=10)
        exp = create_experiment(spec, store=store)
        try:
            run_experiment(exp.id, store=store)
        finally:
            release.set()
        assert len(server.chat_requests) == 2
    (run,) = store.runs.records(exp.id)
    assert run.failure_type == "timeout"
    (a,) = store.attempts.of_run([run.id])[run.id]
    assert a.outcome == "failed" and a.failure_type == "timeout"
    assert (a.usage.input_tokens, a.usage.output_tokens) == (100, 10) and a.cost == pytest.approx(
        cost(100, 10)
    )
    usage = experiment_metrics(exp, store=store).arm("gpt").usage
    assert usage.spent == pytest.approx(cost(100, 10)) and usage.failed_attempts == 1


def killed_mid_call(task):
    """Fails after a model call whose usage never came (a stream without usage, a kill mid-call)."""
    from abbench.agents import Spending
    from abbench.errors import AgentError

    spent = task.spending if task.spending is not None else Spending()
    spent.add_call(None, None, "m")
    raise AgentError("the call never answered", "interrupted", retryable=False, spent=spent)


def test_attempts_of_unknown_cost_are_said_not_silently_left_out(store, dataset):
    spec = {
        "name": "unknown-spend",
        "dataset": dataset.fingerprint,
        "rounds": 1,
        "retries": 0,
        "cases": {"ids": ["c000", "c001"]},
        "arms": {"a": {"agent": "python", "function": "tests.runner.test_attempt_spend:killed_mid_call"}},
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp.id, store=store)
    usage = experiment_metrics(exp, store=store).arm("a").usage
    assert usage.unknown_cost_attempts == 2 and usage.spent is None
    out = CliRunner().invoke(cli, ["--store", str(store.path), "metrics", str(exp.id)])
    assert "2 attempts of unknown cost not counted" in out.output
