"""`abbench prompt` / `preview_prompt`: the request an agent or a judge would send, equal to what a real
call sends to a scripted OpenAI-compatible server on 127.0.0.1 (built by the same code, sent nowhere)."""

from __future__ import annotations

import json

import pytest

from abbench.errors import NotFoundError, UsageError
from abbench.runner import create_experiment, preview_prompt, run_experiment
from abbench.testing import Reply, ScriptedOpenAIServer


def replies(request):
    """Agents answer the label of their case; the pointwise judge scores 4, the pairwise one picks slot 2."""
    system = request.messages[0]["content"]
    if "comparing two answers" in system:
        return Reply.text('{"winner": "2", "comment": "second"}')
    if "judge" in system:
        return Reply.text('{"scores": {"correctness": 4}, "comment": "fine"}')
    user = request.messages[-1]["content"]
    label = "slow" if "query 0" in user or "query 3" in user else "fast"
    return Reply.text(
        json.dumps({"prediction": label, "reason": "r", "confidence": 0.8, "evidence_refs": []})
    )


def _spec(dataset, skill_dir, server):
    arm = {"agent": "openai", "model": "agent-m", "base_url": server.base_url, "temperature": 0}
    return {
        "name": "preview",
        "dataset": dataset.fingerprint,
        "rounds": 1,
        "seed": 5,
        "arms": {
            "control": {**arm, "max_tokens": 300},
            "treatment": {**arm, "skill": str(skill_dir), "seed": 3},
        },
        "graders": [
            "label_match",
            {
                "type": "llm_judge",
                "model": "judge-m",
                "base_url": server.base_url,
                "rubric": {"correctness": "Is the label right?"},
                "include": ["reference", "reason"],
                "backoff_s": 0,
            },
            {"type": "pairwise_judge", "model": "judge-m", "base_url": server.base_url, "both_orders": True},
        ],
    }


def test_the_printed_prompt_is_what_the_server_receives(store, dataset, skill_dir, cli):
    with ScriptedOpenAIServer(replies) as server:
        exp = create_experiment(_spec(dataset, skill_dir, server), store=store)
        # before anything runs: the agents' prompts, and no request reached the server
        agent = preview_prompt(exp.id, "c001", arm="treatment", store=store)
        control = preview_prompt(exp.id, "c001", arm="control", store=store)
        assert server.chat_requests == []
        assert agent.kind == "agent" and agent.model == "agent-m" and agent.base_url == server.base_url
        assert {t["function"]["name"] for t in agent.tools} == {"list_files", "read_file", "read_section"}
        assert "# Rules" in agent.messages[0]["content"] and "query 1" in agent.messages[-1]["content"]
        assert control.tools == [] and control.requests[0]["max_tokens"] == 300
        assert "expected" not in json.dumps(agent.requests[0])  # never the gold

        run_experiment(exp.id, store=store)
        sent = [r.body for r in server.chat_requests]
        assert agent.requests[0] in sent and control.requests[0] in sent

        judge = preview_prompt(exp.id, "c001", arm="treatment", judge="llm_judge", store=store)
        assert judge.kind == "judge" and judge.model == "judge-m" and len(judge.requests) == 1
        assert "<reference_answer>\nfast" in judge.messages[-1]["content"]
        assert judge.requests[0] in sent

        pair = preview_prompt(exp.id, "c001", judge="pairwise_judge", store=store)
        assert pair.kind == "pairwise" and len(pair.requests) == 2 and pair.arm == "control"
        assert "response 1 is" in (pair.note or "")
        assert all(body in sent for body in pair.requests)
        before = len(server.chat_requests)

        # the CLI prints the same requests, and still sends nothing
        out = cli("prompt", "preview", "c001", "--arm", "treatment", "--json", store=store.path)
        assert out.exit_code == 0, out.output
        assert json.loads(out.output)["requests"] == [agent.requests[0]]
        text = cli("prompt", "preview", "c001", "--judge", "llm_judge", store=store.path)
        assert text.exit_code == 0, text.output
        assert "judge llm_judge (judge), model judge-m" in text.output and "--- system ---" in text.output
        assert len(server.chat_requests) == before


def test_what_cannot_be_shown_says_why(store, dataset, skill_dir):
    with ScriptedOpenAIServer(replies) as server:
        exp = create_experiment(_spec(dataset, skill_dir, server), store=store)
        with pytest.raises(NotFoundError, match="no answer to case 'c001' in round 1 yet"):
            preview_prompt(exp.id, "c001", judge="llm_judge", store=store)
        with pytest.raises(UsageError, match="is a rule"):
            preview_prompt(exp.id, "c001", judge="label_match", store=store)
        with pytest.raises(NotFoundError, match="no grader 'nope'"):
            preview_prompt(exp.id, "c001", judge="nope", store=store)
        with pytest.raises(UsageError, match="round must be between 1 and 1"):
            preview_prompt(exp.id, "c001", round=2, store=store)
        assert server.chat_requests == []


def test_an_agent_that_calls_no_model_is_refused(store, definition):
    exp = create_experiment(definition(), store=store)
    with pytest.raises(UsageError, match="sends no chat request"):
        preview_prompt(exp.id, "c001", store=store)
