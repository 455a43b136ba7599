"""Judge ≠ agent: a judge of an arm's own model, or of its family, is warned about in `create` (CLI and
library), the judge report, the report's judge section and the gate — judged over real HTTP (127.0.0.1)."""

from __future__ import annotations

import json
import logging

import pytest
import yaml

from abbench.gate import evaluate_gate
from abbench.graders import model_family, self_judging
from abbench.metrics import experiment_metrics, judge_report
from abbench.report import judges_section
from abbench.runner import create_experiment, run_experiment
from abbench.testing import Reply, ScriptedOpenAIServer


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-4o-mini", "OpenAI GPT"),
        ("openai/gpt-4.1", "OpenAI GPT"),
        ("o3-mini", "OpenAI GPT"),
        ("claude-3-5-haiku-latest", "Anthropic Claude"),
        ("Qwen/Qwen2.5-7B-Instruct", "Alibaba Qwen"),
        ("qwen-max", "Alibaba Qwen"),
        ("deepseek-chat", "DeepSeek"),
        ("llama3.1:8b", "Meta Llama"),
        ("glm-4-plus", "Zhipu GLM"),
        ("gemini-2.0-flash", "Google Gemini"),
        ("doubao-pro-32k", "ByteDance Doubao"),
        ("scripted", None),
        ("openchat-3.5", None),
        ("", None),
    ],
)
def test_model_families(model, family):
    assert model_family(model) == family


def test_same_model_and_same_family_are_told_apart():
    found = self_judging(
        [("judge", "gpt-4o"), ("other", "claude-3-5-sonnet"), ("rule", None)],
        {"a": "gpt-4o", "b": "gpt-4o-mini", "c": "qwen-max", "d": None},
    )
    assert [(w.judge, w.arm, w.relation) for w in found] == [
        ("judge", "a", "same model"),
        ("judge", "b", "same family"),
    ]
    assert "arm a's own model" in found[0].message and "self-preference" in found[0].message
    assert "same family (OpenAI GPT) as arm b's gpt-4o-mini" in found[1].message


def replies(request):
    system = request.messages[0]["content"]
    if "judge" in system:
        return Reply.text('{"scores": {"correctness": 5}, "comment": "ok"}')
    return Reply.text(
        json.dumps({"prediction": "fast", "reason": "r", "confidence": 0.9, "evidence_refs": []})
    )


def _spec(dataset, server, judge_model):
    arm = {
        "agent": "openai",
        "base_url": server.base_url,
        "temperature": 0,
        "prices": {"input": 1, "output": 1},
    }
    return {
        "name": "selfjudge",
        "dataset": dataset.fingerprint,
        "rounds": 1,
        "arms": {"control": {**arm, "model": "qwen-max"}, "treatment": {**arm, "model": "gpt-4o-mini"}},
        "graders": [
            "label_match",
            {
                "type": "llm_judge",
                "name": "judge",
                "model": judge_model,
                "base_url": server.base_url,
                "rubric": {"correctness": "Is it right?"},
                "advisory": True,
                "prices": {"input": 1, "output": 1},
            },
        ],
    }


def test_a_judge_of_the_agents_family_is_warned_about_everywhere(store, dataset, tmp_path, cli, caplog):
    with ScriptedOpenAIServer(replies) as server:
        path = tmp_path / "exp.yaml"
        path.write_text(yaml.safe_dump(_spec(dataset, server, "gpt-4o")), encoding="utf-8")
        out = cli("create", path, store=store.path)
        assert out.exit_code == 0, out.output
        assert (
            "warning: judge judge (gpt-4o) is of the same family (OpenAI GPT) as arm treatment's"
            in out.stderr
        )
        assert "qwen" not in out.stderr  # the other arm's model is of another family
        exp = store.experiments.get("selfjudge")
        as_json = cli("create", path, "--reuse", "--json", store=store.path)
        assert json.loads(as_json.stdout)["warnings"][0].startswith("judge judge (gpt-4o)")
        quiet = cli("create", path, "--reuse", "-q", store=store.path)
        assert quiet.stdout.strip() == str(exp.id)

        run_experiment(exp.id, store=store)
        assert any(r.body["model"] == "gpt-4o" for r in server.chat_requests)  # the judge was asked

        report = judge_report(exp.id, store=store)
        assert [(w.arm, w.relation) for w in report.self_judging] == [("treatment", "same family")]
        assert report.as_dict()["self_judging"][0]["message"].startswith("judge judge (gpt-4o)")
        assert (
            "judge ≠ agent: judge judge (gpt-4o)" in cli("judge-report", "selfjudge", store=store.path).output
        )

        metrics = experiment_metrics(exp.id, store=store)
        assert metrics.self_judging == report.self_judging
        html = "".join(str(part) for part in judges_section(metrics))
        assert "Judge ≠ agent" in html and "self-preference" in html

        gate = evaluate_gate(exp.id, arms=("control", "treatment"), store=store)
        assert any(n.startswith("judge ≠ agent: judge judge (gpt-4o)") for n in gate.notes)

    # the library logs it when it creates
    with ScriptedOpenAIServer(replies) as server, caplog.at_level(logging.WARNING, "abbench.runner"):
        create_experiment({**_spec(dataset, server, "gpt-4o-mini"), "name": "selfjudge2"}, store=store)
    assert "is arm treatment's own model" in caplog.text


def test_a_judge_of_another_family_is_not_warned_about(store, dataset, tmp_path, cli):
    with ScriptedOpenAIServer(replies) as server:
        path = tmp_path / "exp.yaml"
        path.write_text(yaml.safe_dump(_spec(dataset, server, "claude-3-5-sonnet")), encoding="utf-8")
        out = cli("create", path, store=store.path)
        assert out.exit_code == 0 and "warning" not in out.stderr
        exp = store.experiments.get("selfjudge")
        assert judge_report(exp.id, store=store).self_judging == ()
