"""The response cache through the runner: a re-run, a re-grade, a resume after a stop or a second
experiment on the same arms pays for no model call it has already made; rounds stay distinct samples.

The openai adapter and an LLM judge run against the scripted OpenAI-compatible server on 127.0.0.1,
and every test counts the requests it received.
"""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.export import export_table
from abbench.metrics import experiment_metrics, judge_report
from abbench.runner import create_experiment, regrade_experiment, retry_runs, run_experiment
from abbench.testing import Reply, ScriptedOpenAIServer
from tests.runner.conftest import interrupt_cli_run

PRICE = {"input": 1.0, "output": 2.0}  # USD per million tokens
AGENT_USAGE = (100, 10)
JUDGE_USAGE = (200, 20)


def cost(usage: tuple[int, int]) -> float:
    return (usage[0] * PRICE["input"] + usage[1] * PRICE["output"]) / 1e6


class Model:
    """The scripted model: a skill read, then an answer naming the request's index (so every fresh
    call is told apart from a cached one); judges score 5. `errors` scripts replies per case first."""

    def __init__(self, errors=None, hold=None):
        self.errors = {k: list(v) for k, v in (errors or {}).items()}
        self.hold = hold  # called before answering a second turn (to stop a run mid-session)
        self.lock = threading.Lock()

    def __call__(self, request):
        if request.model == "judge-m":
            return Reply.text('{"scores": {"correctness": 5}, "comment": "fine"}', usage=JUDGE_USAGE)
        user = next(m["content"] for m in request.messages if m["role"] == "user")
        case = next((c for c in self.errors if c in user), None)
        with self.lock:
            if case is not None and self.errors[case]:
                return self.errors[case].pop(0)
        if request.body.get("tools") and not any(m["role"] == "tool" for m in request.messages):
            return Reply.tools(("read_section", {"ref": "SKILL.md#Rules"}), usage=AGENT_USAGE)
        if self.hold is not None:
            self.hold()
        answer = {
            "prediction": "fast",
            "reason": f"call {request.index}",
            "evidence_refs": ["SKILL.md#Rules"],
        }
        return Reply.text(json.dumps(answer), usage=AGENT_USAGE)


def arm(server, skill_dir=None, **kw):
    out = {
        "agent": "openai",
        "model": "scripted",
        "base_url": server.base_url,
        "temperature": 0,
        "prices": PRICE,
        "max_retries": 0,
        **kw,
    }
    if skill_dir is not None:
        out["skill"] = str(skill_dir)
    return out


def judge(server):
    return {
        "type": "llm_judge",
        "model": "judge-m",
        "base_url": server.base_url,
        "prices": PRICE,
        "rubric": {"correctness": "Is the label right?"},
        "pass_threshold": 0.5,
        "backoff_s": 0,
    }


def spec(name, dataset, arms, **kw):
    return {"name": name, "dataset": dataset.fingerprint, "arms": arms, **kw}


def reasons(store, exp):
    return {(r.case_id, r.round): r.output.reason for r in store.runs.records(exp.id)}


def cli_out(store, *args):
    result = CliRunner().invoke(cli, ["--store", str(store.path), *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
def test_a_rerun_a_regrade_and_a_second_experiment_pay_for_nothing(store, dataset, skill_dir):
    cases = {"ids": ["c000", "c001", "c002"]}
    with ScriptedOpenAIServer(Model()) as server:
        exp = create_experiment(
            spec(
                "first",
                dataset,
                {"gpt": arm(server, skill_dir)},
                cases=cases,
                graders=["label_match", judge(server)],
            ),
            store=store,
        )
        run_experiment(exp.id, store=store)
        assert len(server.chat_requests) == 3 * 2 + 3  # a skill read and an answer per run, a judge each
        first = reasons(store, exp)
        assert not any(r.cached for r in store.runs.records(exp.id))

        regrade_experiment(exp.id, store=store)
        assert len(server.chat_requests) == 9  # the judges' replies came from the cache

        summary = retry_runs(exp.id, store=store, cases=["c000", "c001", "c002"])
        assert summary.executed == 3 and len(server.chat_requests) == 9
        runs = store.runs.records(exp.id)
        assert reasons(store, exp) == first and all(r.cached and r.cached_calls == 2 for r in runs)
        assert all(r.output.cost == pytest.approx(2 * cost(AGENT_USAGE)) for r in runs)  # the answer's cost
        assert all(r.cost_saved == pytest.approx(2 * cost(AGENT_USAGE)) for r in runs)
        attempts = store.attempts.of_run([r.id for r in runs])
        for run in runs:
            paid, served = attempts[run.id]
            assert (paid.cached_calls, paid.cost) == (None, pytest.approx(2 * cost(AGENT_USAGE)))
            assert (served.cached_calls, served.cost, served.usage) == (2, 0.0, None)  # nothing spent
            assert served.cost_saved == pytest.approx(2 * cost(AGENT_USAGE))

        exported = export_table(exp.id, "runs", store=store).to_pandas()
        assert list(exported["cached_calls"]) == [2, 2, 2]
        assert exported["cost_saved"].tolist() == pytest.approx([2 * cost(AGENT_USAGE)] * 3)

        usage = experiment_metrics(exp, store=store).arm("gpt").usage
        assert usage.spent == pytest.approx(3 * 2 * cost(AGENT_USAGE))  # the first pass only
        assert usage.saved == pytest.approx(3 * 2 * cost(AGENT_USAGE)) and usage.cached_attempts == 3
        assert usage.total_cost == pytest.approx(3 * 2 * cost(AGENT_USAGE))  # the stored answers' cost
        (judging,) = judge_report(exp.id, store=store).judge_costs
        assert judging.cost == pytest.approx(3 * cost(JUDGE_USAGE))
        assert (judging.cached, judging.saved) == (6, pytest.approx(6 * cost(JUDGE_USAGE)))

        # another experiment on the same arms and cases asks nothing either
        again = create_experiment(
            spec("second", dataset, {"gpt": arm(server, skill_dir)}, cases=cases, graders=[judge(server)]),
            store=store,
        )
        run_experiment(again.id, store=store)
        assert len(server.chat_requests) == 9 and reasons(store, again) == first

    stats = json.loads(cli_out(store, "cache", "stats", "--json"))
    assert (stats["entries"], stats["hits"]) == (9, 3 + 9 + 9)
    assert stats["cost_saved"] == pytest.approx(12 * cost(AGENT_USAGE) + 9 * cost(JUDGE_USAGE))
    assert [(m["model"], m["entries"]) for m in stats["by_model"]] == [("scripted", 6), ("judge-m", 3)]
    assert "saved" in cli_out(store, "metrics", str(exp.id)) and "by the response cache" in cli_out(
        store, "metrics", str(exp.id)
    )
    assert "2 from the cache (saved" in cli_out(store, "case", str(exp.id), "c000")
    assert "dropped 0 cached replies (older than 7d)" in cli_out(
        store, "cache", "clear", "--older-than", "7d"
    )
    assert "dropped 9 cached replies" in cli_out(store, "cache", "clear")
    assert store.cache.stats().entries == 0


@pytest.mark.slow
def test_rounds_are_distinct_calls_and_each_is_reused(store, dataset):
    with ScriptedOpenAIServer(Model()) as server:
        exp = create_experiment(
            spec("rounds", dataset, {"gpt": arm(server)}, cases={"ids": ["c000"]}, rounds=3), store=store
        )
        run_experiment(exp.id, store=store)
        assert len(server.chat_requests) == 3
        first = reasons(store, exp)
        assert len(set(first.values())) == 3  # three samples, not one served thrice

        more = create_experiment(
            spec("more rounds", dataset, {"gpt": arm(server)}, cases={"ids": ["c000"]}, rounds=4), store=store
        )
        run_experiment(more.id, store=store)
        assert len(server.chat_requests) == 4  # only round 4 is new
        assert {k: v for k, v in reasons(store, more).items() if k[1] < 3} == first
    assert store.cache.stats().entries == 4


@pytest.mark.slow
def test_refresh_read_only_and_off_as_the_experiment_and_the_arm_say(store, dataset):
    one = {"ids": ["c000"]}
    with ScriptedOpenAIServer(Model()) as server:

        def run(name, rounds=1, exp_cache=None, **arm_kw):
            extra = {"cache": exp_cache} if exp_cache else {}
            e = create_experiment(
                spec(name, dataset, {"gpt": arm(server, **arm_kw)}, cases=one, rounds=rounds, **extra),
                store=store,
            )
            run_experiment(e.id, store=store)
            return reasons(store, e)

        kept = run("on")
        assert len(server.chat_requests) == 1

        refreshed = run("refresh", exp_cache="refresh")
        assert len(server.chat_requests) == 2 and refreshed != kept
        assert run("on again") == refreshed and len(server.chat_requests) == 2  # it was overwritten
        hits = store.cache.stats().hits

        # read-only: round 1 is answered from the cache, round 2 is asked and not kept
        read_only = run("read-only", rounds=2, cache="read-only")
        assert len(server.chat_requests) == 3 and read_only[("c000", 0)] == refreshed[("c000", 0)]
        assert store.cache.stats().entries == 1 and store.cache.stats().hits == hits + 1

        # off: asked again, nothing read or written; the arm's word beats the experiment's
        run("off", exp_cache="on", cache="off")
        assert len(server.chat_requests) == 4
        assert (store.cache.stats().entries, store.cache.stats().hits) == (1, hits + 1)

        # a sampled arm (temperature 0.7) is not cached unless it says so
        run("sampled", temperature=0.7)
        run("sampled again", temperature=0.7)
        assert len(server.chat_requests) == 6 and store.cache.stats().entries == 1


@pytest.mark.slow
def test_an_error_is_never_cached_and_a_429_only_once_it_succeeds(store, dataset):
    model = Model(
        errors={
            "query 0": [Reply.error(400, "this model does not exist")],
            "query 1": [Reply.error(429, "slow down", retry_after=0)],
        }
    )
    with ScriptedOpenAIServer(model) as server:
        exp = create_experiment(
            spec(
                "errors",
                dataset,
                {"gpt": arm(server, max_retries=1)},
                cases={"ids": ["c000", "c001"]},
                retries=0,
            ),
            store=store,
        )
        run_experiment(exp.id, store=store)
        runs = {r.case_id: r for r in store.runs.records(exp.id)}
        assert runs["c000"].failure_type == "bad_request" and runs["c001"].state == "pass"
        assert len(server.chat_requests) == 3  # the 400; the 429 and its retry
        (entry,) = store.query("SELECT response FROM response_cache")
        # the success, not the 429: the last request for query 1 (the two cases run in either order)
        success = max(r.index for r in server.chat_requests if "query 1" in json.dumps(r.messages))
        assert "slow down" not in entry[0] and f"call {success}" in entry[0]

        retry_runs(exp.id, store=store, failed=True)
        assert len(server.chat_requests) == 4  # the 400 was not kept: asked again
        assert not any(r.execution_failed for r in store.runs.records(exp.id))
        retry_runs(exp.id, store=store, cases=["c000", "c001"])
        assert len(server.chat_requests) == 4


@pytest.mark.slow
def test_a_run_stopped_mid_session_resumes_from_the_cache_and_the_key_is_never_stored(
    store, dataset, skill_dir
):
    """`abbench run` is stopped (SIGINT) while the second model call of a run hangs; running the
    experiment again pays only for that call, and the API key is nowhere in the database."""
    key = "sk-abbench-test-0123456789-secret"
    arrived, release = threading.Event(), threading.Event()

    def hold():
        if not release.is_set():
            arrived.set()
            release.wait(120)  # held until the child process has been stopped

    model = Model(hold=hold)
    with ScriptedOpenAIServer(model) as server:
        exp = create_experiment(
            spec(
                "stopped",
                dataset,
                {"gpt": arm(server, skill_dir, api_key_env="ABBENCH_TEST_KEY", stream=True)},
                cases={"ids": ["c000"]},
            ),
            store=store,
        )
        code, err = interrupt_cli_run(store, exp.id, arrived, release, ABBENCH_TEST_KEY=key)
        assert code == 130, err
        assert len(server.chat_requests) == 2
        assert server.chat_requests[0].headers["authorization"] == f"Bearer {key}"

        import os

        os.environ["ABBENCH_TEST_KEY"] = key
        try:
            run_experiment(exp.id, store=store)
        finally:
            del os.environ["ABBENCH_TEST_KEY"]
        assert len(server.chat_requests) == 3  # the skill read came from the cache
        (run,) = store.runs.records(exp.id)
        assert run.executed_at and not run.execution_failed and run.cached_calls == 1
        interrupted, resumed = store.attempts.of_run([run.id])[run.id]
        assert interrupted.failure_type == "interrupted" and interrupted.cost == pytest.approx(
            cost(AGENT_USAGE)
        )
        assert resumed.cost == pytest.approx(cost(AGENT_USAGE)) and resumed.cost_saved == pytest.approx(
            cost(AGENT_USAGE)
        )
        (kept,) = store.query("SELECT count(*) FROM response_cache WHERE streamed = 1")
        assert kept[0] == 2  # streamed replies, kept as their assembled completions
    store.close()
    for path in store.path.glob("abbench.db*"):
        assert key.encode() not in path.read_bytes(), path
        assert b"Bearer" not in path.read_bytes(), path


@pytest.mark.slow
def test_a_budget_counts_what_was_paid_not_what_the_cache_saved(store, dataset):
    cases = {"ids": ["c000", "c001", "c002", "c003"]}
    with ScriptedOpenAIServer(Model()) as server:
        first = create_experiment(spec("paid", dataset, {"gpt": arm(server)}, cases=cases), store=store)
        run_experiment(first.id, store=store)
        assert len(server.chat_requests) == 4
        # The same calls again under a budget below one fresh call: every one is served from the cache,
        # nothing is spent, so nothing stops it.
        again = create_experiment(
            spec(
                "cached",
                dataset,
                {"gpt": arm(server)},
                cases=cases,
                budget={"max_cost": cost(AGENT_USAGE) / 2},
            ),
            store=store,
        )
        summary = run_experiment(again.id, store=store)
        assert len(server.chat_requests) == 4
        assert summary.status == "finished" and summary.executed == 4
        usage = experiment_metrics(again, store=store).arm("gpt").usage
        assert usage.spent == 0 and usage.saved == pytest.approx(4 * cost(AGENT_USAGE))
