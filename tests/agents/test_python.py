"""The python adapter: module and file references, sync and async callables, return shapes, errors."""

from __future__ import annotations

import asyncio
import dataclasses
import textwrap

import pytest

from abbench.agents import PythonAgent, load_callable, make_agent
from abbench.errors import AgentError, UsageError
from abbench.types import AgentOutput, Usage
from tests.agents.adapter_fixtures import case, skill, task  # noqa: F401

AGENTS = """
import asyncio, threading
from abbench.types import AgentOutput

TOGETHER = threading.Barrier(8, timeout=120)
LOOP_RAN = threading.Event()

VERSION = "1.0"

def as_string(task):
    return " SLOW "

async def as_dict(task):
    await asyncio.sleep(0)
    return {"prediction": "fast", "reason": task.params.get("why", "-"), "confidence": 0.5,
            "evidence_refs": ["SKILL.md#Rules"], "usage": {"input_tokens": 3, "output_tokens": 2}}

def as_output(task):
    return AgentOutput(prediction="fast", session_id="own", model="mine", latency_ms=12.0)

def together(task):
    TOGETHER.wait()  # passes only once all eight calls are inside at once: each has a thread of its own
    return "fast" if LOOP_RAN.wait(120) else "the loop was blocked"

def broken(task):
    raise ConnectionError("upstream went away")

def buggy(task):
    return task.no_such_field

def nothing(task):
    return None

def extra_keys(task):
    return {"prediction": "fast", "label": "x"}

def empty(task):
    return "  "

class Router:
    @staticmethod
    def route(task):
        return "fast" if "空调" in task.case.input else "slow"
"""


@pytest.fixture
def module_file(tmp_path):
    path = tmp_path / "my_agents.py"
    path.write_text(textwrap.dedent(AGENTS), encoding="utf-8")
    return path


def run(agent, t):
    return asyncio.run(agent.run(t))


def test_a_sync_function_from_a_file_returning_a_string(module_file, task):  # noqa: F811
    agent = make_agent("python", function=f"{module_file}:as_string")
    out = run(agent, task)
    assert out.prediction == "slow"  # normalised to the label set
    assert out.session_id == "sess-1" and out.latency_ms > 0 and out.raw_output == " SLOW "


def test_an_async_function_by_module_returning_a_dict(module_file, task, monkeypatch):  # noqa: F811
    monkeypatch.syspath_prepend(str(module_file.parent))
    agent = make_agent("python", function="my_agents:as_dict", model="m1", why="rules")
    out = run(agent, dataclasses.replace(task, params={"why": "rules"}))
    assert (out.prediction, out.reason, out.confidence) == ("fast", "rules", 0.5)
    assert out.evidence_refs == ("SKILL.md#Rules",) and out.usage == Usage(3, 2)
    assert out.model == "m1"


def test_an_agent_output_is_kept_as_returned(module_file, task):  # noqa: F811
    out = run(make_agent("python", function=f"{module_file}:as_output"), task)
    assert (out.session_id, out.model, out.latency_ms) == ("own", "mine", 12.0)


def test_relative_paths_and_dotted_attributes(module_file, task):  # noqa: F811
    agent = make_agent("python", function="my_agents.py:Router.route", base_dir=str(module_file.parent))
    assert run(agent, task).prediction == "slow"


def test_a_callable_can_be_given_directly(task):  # noqa: F811
    async def inline(t):
        return AgentOutput(prediction="fast")

    agent = PythonAgent(inline)
    assert run(agent, task).prediction == "fast" and "inline" in agent.ref


def test_sync_functions_run_in_threads_and_do_not_block_the_loop(module_file, task):  # noqa: F811
    agent = make_agent("python", function=f"{module_file}:together")
    loop_ran = agent.function.__globals__["LOOP_RAN"]

    async def many():
        calls = asyncio.gather(*(agent.run(task) for _ in range(8)))
        await asyncio.sleep(0)  # the loop runs on while the eight calls wait in their threads
        loop_ran.set()
        return await calls

    outs = asyncio.run(many())
    assert [o.prediction for o in outs] == ["fast"] * 8


@pytest.mark.parametrize(
    ("function", "failure_type", "retryable", "match"),
    [
        ("broken", "agent_error", True, "raised ConnectionError: upstream went away \\(case c1\\)"),
        ("buggy", "agent_error", False, "raised AttributeError"),
        ("nothing", "bad_output", False, "returned None \\(case c1\\); return an AgentOutput"),
        ("extra_keys", "bad_output", False, "unknown key\\(s\\) label"),
        ("empty", "bad_output", False, "empty string"),
    ],
)
def test_failures_are_agent_errors(module_file, task, function, failure_type, retryable, match):  # noqa: F811
    agent = make_agent("python", function=f"{module_file}:{function}")
    with pytest.raises(AgentError, match=match) as info:
        run(agent, task)
    assert (info.value.failure_type, info.value.retryable) == (failure_type, retryable)


@pytest.mark.parametrize(
    ("ref", "match"),
    [
        ("no_colon_here", "must look like module:function or path/to/file.py:function"),
        ("module:", "must look like"),
        (
            "no_such_module_xyz:run",
            "no module named 'no_such_module_xyz'.*PYTHONPATH.*path/to/no_such_module_xyz.py:run",
        ),
        (
            "{file}:missing",
            "has no 'missing'.*the callables it defines: Router, as_dict, as_output, as_string",
        ),
        ("{file}:VERSION", "names a str, not a function"),
        ("{dir}/nope.py:run", "no file .*nope.py"),
        ("{dir}/syntax.py:run", "failed to import: SyntaxError"),
    ],
)
def test_bad_references_say_what_to_fix(module_file, ref, match):
    (module_file.parent / "syntax.py").write_text("def run(:\n", encoding="utf-8")
    ref = ref.format(file=module_file, dir=module_file.parent)
    with pytest.raises(UsageError, match=match):
        load_callable(ref)


def test_a_function_setting_is_required():
    with pytest.raises(UsageError, match="needs `function:`"):
        make_agent("python")
