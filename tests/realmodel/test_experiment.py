"""An experiment on the real model: format adherence per arm and paired, the gate's words for it, and no
retry of an unreadable answer at temperature 0 — counted at the server."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.compare import compare_arms
from abbench.gate import evaluate_gate
from abbench.metrics import experiment_metrics
from abbench.runner import run_experiment
from tests.realmodel.conftest import MODEL, routing_experiment, served_since

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("realmodel")]

QUERIES = [
    ("Turn on the air conditioning.", "fast"),
    ("Plan a route to the airport that avoids tolls.", "slow"),
    ("Close the window.", "fast"),
    ("Will my battery last until I reach Berlin?", "slow"),
]


def arm(server, **kw):
    return {
        "agent": "openai",
        "model": MODEL,
        "base_url": server.base_url,
        "temperature": 0,
        "max_tokens": 32,
        "timeout_s": 300,
        "retry": {"base_delay_s": 0.01, "max_delay_s": 0.02},
        "prices": {MODEL: {"input": 1.0, "output": 2.0}},
        **kw,
    }


def readings_from_transcripts(store, exp_id):
    """Each run's reading, from its last attempt's transcript (independent of the store's query)."""
    runs = store.runs.records(exp_id)
    attempts = store.attempts.of_run([r.id for r in runs])
    out: dict[str, dict[str, int]] = {}
    for r in runs:
        last = attempts[r.id][-1]
        events = [json.loads(line) for line in last.transcript_path.read_text(encoding="utf-8").splitlines()]
        answer = [e for e in events if e.get("type") == "answer"][-1]
        word = {"bad_output": "unreadable"}.get(answer["format"], answer["format"])
        counts = out.setdefault(r.arm, {})
        counts[word] = counts.get(word, 0) + 1
    return out


@pytest.fixture(scope="module")
def experiment(local_model, tmp_path_factory):
    from abbench.store import open_store

    store = open_store(tmp_path_factory.mktemp("realmodel") / "store")
    arms = {
        "plain": arm(local_model),
        # the answer's schema as structured output: llama-cpp-python refuses json_schema (500), and
        # takes json_object with the schema, whose enum keeps the prediction among the labels
        # (a model name of its own: a refusal is remembered per endpoint and model for the process)
        "structured": arm(
            local_model,
            model="smollm2-structured-exp",
            prices={"smollm2-structured-exp": {"input": 1.0, "output": 2.0}},
            response_format="json_schema",
            max_tokens=96,
        ),
    }
    mark = local_model.requests
    exp = routing_experiment(store, QUERIES, "formats", arms, retries=2, concurrency=1)
    run_experiment(exp.id, store=store)
    yield store, exp, served_since(local_model, mark)
    store.close()


def test_format_adherence_per_arm_equals_the_transcripts(experiment):
    store, exp, _ = experiment
    m = experiment_metrics(exp.id, store=store)
    expected = readings_from_transcripts(store, exp.id)
    for name in ("plain", "structured"):
        f = m.arm(name).format_adherence
        assert f is not None and f.runs == len(QUERIES)
        assert {k: v for k, v in f.counts.items() if v} == expected[name]
        kept = f.counts["strict"] + f.counts["structured"]
        assert f.adherence.value == pytest.approx(kept / f.runs)
        assert f.adherence.interval.low <= f.adherence.value <= f.adherence.interval.high
    # the grammar of the structured arm keeps the format whenever its reply was not cut
    s = m.arm("structured").format_adherence
    assert s.counts["structured"] + s.counts["truncated"] == len(QUERIES)


def test_unreadable_answers_at_temperature_0_are_not_asked_again(experiment):
    store, exp, served = experiment
    runs = store.runs.records(exp.id)
    # one request per run, and one json_schema refusal before the structured arm's first answer
    assert len(served) == len(runs) + 1
    assert [s.status for s in served].count(500) == 1
    assert all(r.attempts == 1 for r in runs)


def test_compare_gate_and_cli_speak_of_format_adherence(experiment):
    store, exp, _ = experiment
    m = experiment_metrics(exp.id, store=store)
    c = compare_arms(exp.id, "plain", "structured", store=store)
    f = c.format_adherence
    assert f is not None and f.n_cases == len(QUERIES) and f.method == "newcombe"
    a, b = (
        m.arm("plain").format_adherence.adherence.value,
        m.arm("structured").format_adherence.adherence.value,
    )
    assert f.difference == pytest.approx(b - a)
    gate = evaluate_gate(
        exp.id,
        [
            {"metric": "format_adherence", "op": ">=", "value": 0.0},
            {"metric": "format_adherence_diff", "op": ">=", "value": -1},
        ],
        store=store,
        arms=("plain", "structured"),
    )
    values = {r.rule.metric: r.value for r in gate.rules}
    assert values["format_adherence"] == pytest.approx(b)
    assert values["format_adherence_diff"] == pytest.approx(b - a)
    out = CliRunner().invoke(
        cli, ["--store", str(store.path), "metrics", str(exp.id)], catch_exceptions=False
    )
    assert out.exit_code == 0 and out.output.count("format adherence") == 2


def test_what_a_skill_costs_in_prompt_tokens_is_shown(local_model, tmp_path):
    from abbench.store import open_store
    from tests.agents.adapter_fixtures import SKILL_FILES, write_skill

    write_skill(tmp_path / "skill", SKILL_FILES)
    with open_store(tmp_path / "store") as store:
        arms = {
            "none": arm(local_model, max_tokens=4),
            "skill": arm(local_model, max_tokens=4, skill=str(tmp_path / "skill")),
        }
        mark = local_model.requests
        exp = routing_experiment(store, QUERIES[:1], "skill-cost", arms, retries=0, concurrency=1)
        run_experiment(exp.id, store=store)
        served = served_since(local_model, mark)
        m = experiment_metrics(exp.id, store=store)
        runs = store.runs.records(exp.id)
    # the server's own prompt counts, per arm, in the order the runs were asked (concurrency 1)
    assert len(served) == len(runs)
    arms = [r.arm for r in sorted(runs, key=lambda r: r.started_at)]
    prompt = {
        a: [s.prompt_tokens for s, x in zip(served, arms, strict=True) if x == a] for a in ("none", "skill")
    }
    diff = prompt["skill"][0] - prompt["none"][0]
    (note,) = [n for n in m.notes if n.startswith("skill: its injected skill costs")]
    assert f"{diff:+,.0f} prompt tokens per run" in note
    out = CliRunner().invoke(
        cli, ["--store", str(tmp_path / "store"), "metrics", "skill-cost"], catch_exceptions=False
    )
    assert "skill costs" in out.output and "prompt tokens per run" in out.output
