"""The openai adapter's offered mode over real HTTP (the scripted 127.0.0.1 server), run by the runner:
a catalogue, ``load_skill``, the skill tools over the loaded skill, and what each run stores."""

from __future__ import annotations

import json

from abbench.runner import create_experiment, run_experiment
from abbench.testing import Reply, ScriptedOpenAIServer

ANSWER = '{"prediction": "true", "reason": "a 3P update", "confidence": 0.9, "evidence_refs": []}'


def _definition(realdata, server, arm):
    return {
        "name": "offered-openai",
        "dataset": {
            "file": str(realdata / "skill_triggers" / "internal-comms.trigger_eval.json"),
            "mapping": {"recipe": "skill-creator-triggers", "defaults": {"expected_skill": "internal-comms"}},
        },
        "cases": {"limit": 1},
        "retries": 0,
        "arms": {"x": {"agent": "openai", "model": "scripted", "base_url": server.base_url, **arm}},
    }


def test_load_skill_then_read_its_files_after_a_first_non_skill_tool_call(store, realdata):
    skills = [str(realdata / "skills" / n) for n in ("internal-comms", "brand-guidelines")]
    script = [
        Reply.tools(("web_search", {"q": "3P update format"})),  # a tool the session does not have
        Reply.tools(("read_file", {"path": "SKILL.md"})),  # a skill tool before any load
        Reply.tools(("load_skill", {"name": "internal-comms"})),
        Reply.tools(("read_file", {"path": "examples/3p-updates.md"})),
        ANSWER,
    ]
    with ScriptedOpenAIServer(script) as server:
        exp = create_experiment(
            _definition(realdata, server, {"skills": skills, "skill_mode": "offered"}), store=store
        )
        run_experiment(exp.id, store=store)
        requests = server.chat_requests
    (run,) = store.runs.records(exp.id)
    assert run.state == "pass" and not run.execution_failed
    assert run.skills_offered == ("internal-comms", "brand-guidelines")
    assert run.skills_loaded == ("internal-comms",)
    assert run.first_load_turn == 3
    assert run.output.files_read == ("SKILL.md", "examples/3p-updates.md")
    first = requests[0]
    tools = [t["function"]["name"] for t in first.tools]
    assert tools[0] == "load_skill" and {"list_files", "read_file", "read_section"} <= set(tools)
    load = first.tools[0]["function"]
    assert load["parameters"]["properties"]["name"]["enum"] == ["internal-comms", "brand-guidelines"]
    assert "status reports, leadership updates" in load["description"]
    system = first.messages[0]["content"]
    assert "internal-comms:" in system and "brand-guidelines:" in system
    # the injected mode's SKILL.md is not in the prompt: the model has to load it
    assert "## Tone" not in system and "3P updates" not in system.split("# Skills you may use")[0]
    results = [m for m in requests[-1].messages if m["role"] == "tool"]
    assert "unknown tool 'web_search'" in results[0]["content"]
    assert "no skill is loaded" in results[1]["content"]
    skill_md = (realdata / "skills" / "internal-comms" / "SKILL.md").read_text(encoding="utf-8")
    assert results[2]["content"].strip() == skill_md.strip()


def test_an_offered_run_that_loads_nothing_records_an_empty_list(store, realdata):
    skill = str(realdata / "skills" / "brand-guidelines")
    with ScriptedOpenAIServer([ANSWER]) as server:
        exp = create_experiment(
            _definition(realdata, server, {"skill": skill, "skill_mode": "offered"}), store=store
        )
        run_experiment(exp.id, store=store)
    (run,) = store.runs.records(exp.id)
    assert run.skills_offered == ("brand-guidelines",) and run.skills_loaded == ()
    assert run.first_load_turn is None and run.activated is False


def test_an_execution_error_is_an_execution_failure_not_a_non_activation(store, realdata):
    skill = str(realdata / "skills" / "internal-comms")
    script = [
        Reply.tools(("load_skill", {"name": "internal-comms"})),
        Reply.error(400, "bad request"),
    ]
    with ScriptedOpenAIServer(script) as server:
        exp = create_experiment(
            _definition(realdata, server, {"skill": skill, "skill_mode": "offered", "max_retries": 0}),
            store=store,
        )
        run_experiment(exp.id, store=store)
    (run,) = store.runs.records(exp.id)
    assert run.execution_failed and run.activated is None
    assert run.skills_offered == ("internal-comms",)
    assert run.skills_loaded == ("internal-comms",) and run.first_load_turn == 1  # recorded so far


def test_a_no_skill_arm_cannot_read_a_skill(store, realdata):
    script = [Reply.tools(("read_file", {"path": "SKILL.md"})), ANSWER]
    with ScriptedOpenAIServer(script) as server:
        exp = create_experiment(_definition(realdata, server, {}), store=store)
        run_experiment(exp.id, store=store)
        requests = server.chat_requests
    (run,) = store.runs.records(exp.id)
    assert "tools" not in requests[0].body
    (result,) = [m for m in requests[-1].messages if m["role"] == "tool"]
    assert result["content"].startswith("error: this arm offers no tools")
    assert run.output.files_read == () and run.skills_offered is None and run.skills_loaded is None
    assert json.loads(run.output.raw_output)["prediction"] == "true"
