"""Presets of the command adapter without their real CLIs: generic-jsonl over a real child process
that prints JSON lines, the JSON path syntax, the settings each preset takes, and the claude-code
and codex readers on lines in their documented formats."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path

import pytest

from abbench.agents import Spending, make_agent
from abbench.agents._presets import PRESETS, Setup, compile_path, get_preset, walk
from abbench.errors import AgentError, UnknownName, UsageError
from tests.agents.adapter_fixtures import case, skill, task  # noqa: F401

# A CLI that prints JSON lines: a start event, a tool event reading a skill file, two steps' usage,
# and the answer text whose reason names the other label.
FAKE_CLI = r"""
import json, os, sys
skill = os.environ["ABBENCH_SKILL_DIR"]
mode = sys.argv[1]
def say(**event): print(json.dumps(event, ensure_ascii=False), flush=True)
print("a log line that is not JSON")
say(type="start", session={"id": "run-77"}, model="cli-model-2")
say(type="tool", call={"name": "open", "path": os.path.join(skill, "knowledge/domains.md")})
say(type="tool", call={"name": "open", "path": "/etc/hostname"})
say(type="step", usage={"in": 120, "out": 7}, cost=0.25)
if mode == "fail":
    say(type="step", usage={"in": 30, "out": 0}, cost=0.5)
    say(type="error", message="upstream model went away")
    sys.exit(3)
say(type="step", usage={"in": 80, "out": 13}, cost=0.5)
answer = {"prediction": "slow", "reason": "not fast: needs data", "evidence_refs": ["SKILL.md#Rules"]}
say(type="final", text=json.dumps(answer))
"""

PATHS = {
    "text": "[type=final].text",
    "input_tokens": "[type=step].usage.in",
    "output_tokens": "[type=step].usage.out",
    "cost": "[type=step].cost",
    "session_id": "[type=start].session.id",
    "model": "[type=start].model",
    "tool_calls": "[type=tool].call",
    "files_read": "[type=tool].call.path",
    "error": "[type=error].message",
}


def generic(tmp_path, mode="ok", **kw):
    script = tmp_path / "fake_cli.py"
    script.write_text(FAKE_CLI, encoding="utf-8")
    return make_agent(
        "command", preset="generic-jsonl", argv=[sys.executable, str(script), mode], paths=PATHS, **kw
    )


def test_generic_jsonl_reads_text_tokens_cost_tools_files_session_and_model(task, tmp_path):  # noqa: F811
    out = asyncio.run(generic(tmp_path).run(task))
    assert out.prediction == "slow" and out.reason == "not fast: needs data"
    assert out.evidence_refs == ("SKILL.md#Rules",)
    assert (out.usage.input_tokens, out.usage.output_tokens) == (200, 20)
    assert out.cost == pytest.approx(0.75)
    assert out.session_id == "run-77" and out.model == "cli-model-2"
    assert out.files_read == ("knowledge/domains.md",)  # /etc/hostname is not a skill file
    calls = [e for e in out.transcript if e["type"] == "tool_call"]
    assert [c["name"] for c in calls] == ["open", "open"]
    assert out.raw_output == json.dumps(
        {"prediction": "slow", "reason": "not fast: needs data", "evidence_refs": ["SKILL.md#Rules"]}
    )


def test_generic_jsonl_failure_keeps_what_it_spent(task, tmp_path):  # noqa: F811
    spending = Spending()
    with pytest.raises(AgentError) as info:
        asyncio.run(generic(tmp_path, "fail").run(dataclasses.replace(task, spending=spending)))
    err = info.value
    assert err.spent is spending and "upstream model went away" in str(err) and "exit code 3" in str(err)
    assert (spending.input_tokens, spending.output_tokens) == (150, 7)
    assert spending.cost == pytest.approx(0.75) and spending.files_read == ["knowledge/domains.md"]
    assert err.retryable  # the CLI said nothing that makes it permanent


def test_generic_jsonl_with_a_pattern_reads_the_text_by_it(task, tmp_path):  # noqa: F811
    agent = generic(tmp_path, pattern=r'"prediction": "(?P<prediction>\w+)"')
    out = asyncio.run(agent.run(task))
    assert out.prediction == "slow" and out.usage.input_tokens == 200


def test_an_unknown_preset_is_refused_with_the_presets_and_the_closest():
    with pytest.raises(UnknownName) as err:
        make_agent("command", preset="opencod")
    assert (err.value.kind, err.value.name) == ("preset", "opencod")
    assert err.value.choices == tuple(PRESETS)
    assert "(did you mean 'opencode'?)" in str(err.value)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"preset": "generic-jsonl", "argv": ["x", "{prompt}"]}, "needs `paths:` with at least `text:`"),
        ({"preset": "generic-jsonl", "argv": ["x"], "paths": {"txt": "a"}}, "needs `paths:` with at least"),
        (
            {"preset": "generic-jsonl", "argv": ["x"], "paths": {"text": "a", "tokens": "b"}},
            "unknown path key",
        ),
        ({"preset": "generic-jsonl", "argv": ["x"], "paths": {"text": "a..b"}}, "malformed part ''"),
        ({"preset": "generic-jsonl", "paths": {"text": "a"}}, "needs `argv:`"),
        ({"preset": "llm", "paths": {"text": "a"}}, "`paths:` does not apply to preset llm"),
        ({"argv": ["x"], "base_url": "http://127.0.0.1:1/v1"}, "only apply with `preset:`"),
        ({"preset": "llm", "api_key_env": "sk-abc 123"}, "must name an environment variable"),
        ({"preset": "opencode", "base_url": "127.0.0.1:8000"}, "is not an http(s) URL"),
    ],
)
def test_preset_settings_that_cannot_work_are_refused(settings, message):
    with pytest.raises(UsageError) as err:
        make_agent("command", **settings)
    assert message in str(err.value)


def test_a_missing_key_variable_is_a_permanent_auth_failure(task, monkeypatch):  # noqa: F811
    monkeypatch.delenv("ABBENCH_NO_SUCH_KEY", raising=False)
    agent = make_agent(
        "command", preset="llm", program=sys.executable, model="m", api_key_env="ABBENCH_NO_SUCH_KEY"
    )
    with pytest.raises(AgentError) as info:
        asyncio.run(agent.run(task))
    assert info.value.failure_type == "auth" and not info.value.retryable
    assert "ABBENCH_NO_SUCH_KEY is not set" in str(info.value)


def test_json_paths_walk_lists_filters_and_indexes():
    line = {"type": "a.b", "items": [{"k": "x", "v": 1}, {"k": "y", "v": 2}, {"k": "x", "v": 3}]}
    assert list(walk(line, compile_path("[type=a.b].items.*[k=x].v"))) == [1, 3]
    assert list(walk(line, compile_path("items.-1.v"))) == [3]
    assert list(walk(line, compile_path("[type=other].items.*.v"))) == []
    assert list(walk(line, compile_path("items.9.v"))) == []


def test_each_preset_builds_a_one_shot_argv_with_the_prompt_last():
    for name, preset in PRESETS.items():
        if name == "generic-jsonl":
            continue
        argv = preset.argv(preset.program, ["--extra"])
        assert argv[0] == preset.program and argv[-1] == "{prompt}" and "--extra" in argv
        assert "{model}" in argv


# -- claude-code and codex: lines in their documented formats ------------------------------------------
# Claude Code's stream-json (`claude -p --output-format stream-json --verbose`): a system init line,
# assistant messages whose content has tool_use blocks, and a closing result object with result,
# session_id, total_cost_usd and usage. Codex's `codex exec --json`: thread.started with thread_id,
# item.completed items (agent_message text, command_execution), turn.completed usage.

CLAUDE_LINES = [
    {
        "type": "system",
        "subtype": "init",
        "session_id": "5c1f",
        "model": "claude-sonnet-4-5",
        "tools": ["Read"],
    },
    {
        "type": "assistant",
        "session_id": "5c1f",
        "message": {
            "content": [
                {"type": "text", "text": "Reading the skill."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Read",
                    "input": {"file_path": "SKILL_DIR/SKILL.md"},
                },
            ],
            "usage": {"input_tokens": 900, "output_tokens": 30},
        },
    },
    {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "..."}]},
    },
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 2,
        "result": '{"prediction": "fast", "reason": "a one-shot command, not slow"}',
        "session_id": "5c1f",
        "total_cost_usd": 0.0123,
        "usage": {
            "input_tokens": 1200,
            "cache_read_input_tokens": 300,
            "cache_creation_input_tokens": 100,
            "output_tokens": 80,
        },
    },
]

CODEX_LINES = [
    {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "thinking"}},
    {
        "type": "item.completed",
        "item": {
            "id": "item_1",
            "type": "command_execution",
            "command": "cat skill/SKILL.md",
            "status": "completed",
        },
    },
    {
        "type": "item.completed",
        "item": {"id": "item_2", "type": "agent_message", "text": '{"prediction": "slow"}'},
    },
    {
        "type": "turn.completed",
        "usage": {"input_tokens": 2400, "cached_input_tokens": 1000, "output_tokens": 55},
    },
]


def _lines(objects, skill_dir: Path) -> str:
    return "\n".join(json.dumps(o).replace("SKILL_DIR", str(skill_dir)) for o in objects) + "\n"


def test_claude_code_reader_on_its_documented_stream_json(tmp_path):
    setup = Setup(workspace=tmp_path, model="claude-sonnet-4-5", skill_dir=tmp_path / "skill")
    reading = get_preset("claude-code").read(_lines(CLAUDE_LINES, setup.skill_dir), "", setup)
    assert reading.text == '{"prediction": "fast", "reason": "a one-shot command, not slow"}'
    assert (reading.usage.input_tokens, reading.usage.output_tokens) == (1200 + 300 + 100, 80)
    assert reading.cost == pytest.approx(0.0123) and reading.session_id == "5c1f"
    assert reading.model == "claude-sonnet-4-5" and reading.steps == 2
    assert [c["name"] for c in reading.tool_calls] == ["Read"]
    assert reading.files_read == [f"{setup.skill_dir}/SKILL.md"] and reading.error is None


def test_codex_reader_on_its_documented_exec_json(tmp_path):
    setup = Setup(workspace=tmp_path, model="gpt-5-codex")
    reading = get_preset("codex").read(_lines(CODEX_LINES, tmp_path), "", setup)
    assert reading.text == '{"prediction": "slow"}'
    assert (reading.usage.input_tokens, reading.usage.output_tokens) == (2400, 55)
    assert reading.session_id == "0199a213-81c0-7800-8aa1-bbab2a035a53" and reading.steps == 1
    assert reading.tool_calls == [
        {"name": "command_execution", "input": "cat skill/SKILL.md", "status": "completed"}
    ]
    failed = [*CODEX_LINES[:2], {"type": "turn.failed", "error": {"message": "stream error: 429"}}]
    assert get_preset("codex").read(_lines(failed, tmp_path), "", setup).error == {
        "message": "stream error: 429"
    }


def test_codex_config_points_at_the_endpoint_and_names_the_key_variable(tmp_path):
    setup = Setup(workspace=tmp_path, model="m-1", base_url="http://127.0.0.1:9/v1", api_key_env="MY_KEY")
    env = get_preset("codex").prepare(setup)
    text = (tmp_path / ".codex" / "config.toml").read_text()
    assert 'base_url = "http://127.0.0.1:9/v1"' in text and 'env_key = "MY_KEY"' in text
    assert env["CODEX_HOME"] == str(tmp_path / ".codex") and env["HOME"].startswith(str(tmp_path))


# -- real output recorded from the CLIs (tests/realdata/agent_clis/README.md) --------------------------

RECORDED = Path(__file__).resolve().parents[1] / "realdata" / "agent_clis"


def test_the_opencode_reader_on_its_recorded_tool_call_run():
    ws = Path("/tmp/a14cli/t1/ws2")  # where it was recorded: the paths in the events point there
    setup = Setup(workspace=ws, model="scripted", base_url="http://127.0.0.1:1/v1", skill_dir=ws / "skill")
    text = (RECORDED / "opencode-1.18.33-tool-call.jsonl").read_text(encoding="utf-8")
    reading = get_preset("opencode").read(text, "", setup)
    assert json.loads(reading.text)["prediction"] == "fast"
    assert (reading.usage.input_tokens, reading.usage.output_tokens) == (1500 + 2042, 20 + 64)
    assert reading.cost is None  # opencode priced the unknown model at 0: unknown, not free
    assert reading.steps == 2 and reading.session_id.startswith("ses_")
    assert [(c["name"], c["status"]) for c in reading.tool_calls] == [("read", "completed")]
    assert reading.files_read == [str(ws / "skill" / "SKILL.md")] and reading.error is None


def test_the_opencode_reader_on_its_recorded_429():
    setup = Setup(workspace=Path("/tmp/x"), model="scripted")
    reading = get_preset("opencode").read((RECORDED / "opencode-1.18.33-429.jsonl").read_text(), "", setup)
    assert reading.text is None and reading.usage is None
    assert reading.error["status"] == 429 and reading.error["retry_after"] == 1.0
    assert (
        reading.error["message"] == "Rate limit reached for requests" and reading.error["retryable"] is True
    )


def test_the_llm_reader_on_its_recorded_json_and_usage(tmp_path):
    setup = Setup(workspace=tmp_path, model="scripted")
    stdout = (RECORDED / "llm-0.36-json.json").read_text(encoding="utf-8")
    stderr = (RECORDED / "llm-0.36-json.stderr").read_text(encoding="utf-8")
    reading = get_preset("llm").read(stdout, stderr, setup)
    assert json.loads(reading.text) == {"prediction": "fast", "reason": "not slow", "confidence": 0.7}
    assert (reading.usage.input_tokens, reading.usage.output_tokens) == (321, 17)
    assert reading.session_id == "01m8rhxmkpcchebdad1k6a1gw9" and reading.model == "scripted"
    # without the JSON (a run that failed part way) the --usage line on stderr still counts
    assert get_preset("llm").read("partial", stderr, setup).usage.input_tokens == 321
