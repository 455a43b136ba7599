"""The python adapter: module and file references, sync and async callables, return shapes, errors."""

from __future__ import annotations

import asyncio
import dataclasses
import textwrap

import pytest

from abbench.agents import PythonAgent, load_callable, make_agent
from abbench.agents._command import case_payload
from abbench.errors import AgentError, ExperimentError, UsageError
from abbench.report import experiment_provenance, provenance_section
from abbench.runner import create_experiment, run_experiment
from abbench.types import AgentOutput, Case, Usage
from tests.agents.adapter_fixtures import case, skill, task  # noqa: F401

AGENTS = """
import asyncio, threading
from abbench.types import AgentOutput

TOGETHER = threading.Barrier(8, timeout=600)
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


def test_an_inline_agent_calls_a_plain_function_in_the_calling_thread(task):  # noqa: F811
    """As a Dask worker sets it: the task thread is the call's own, so no hop to a pool thread."""
    import threading

    def where(t):
        return str(threading.get_ident())

    async def both() -> tuple[object, object, int]:
        pooled = await PythonAgent(where).run(task)
        agent = PythonAgent(where)
        agent.inline = True
        return pooled.prediction, (await agent.run(task)).prediction, threading.get_ident()

    pooled, inline, loop_thread = asyncio.run(both())
    assert inline == str(loop_thread) and pooled != str(loop_thread)


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


# -- what the callable sees: the case every agent sees, unless the arm is a test double -------------


def test_the_callable_gets_the_case_the_command_agent_sees_without_the_gold(task):  # noqa: F811
    seen = []
    run(PythonAgent(lambda t: seen.append(t.case) or "fast"), task)
    seen_case = seen[0]
    assert (seen_case.expected, seen_case.source_row, seen_case.metadata) == (None, None, None)
    assert "GOLD" not in repr(seen_case)
    # field for field what case.json holds for a command agent
    payload = case_payload(task)
    assert {f: getattr(seen_case, f) for f in ("case_id", "input", "history", "context", "domain")} == {
        f: payload[f] for f in ("case_id", "input", "history", "context", "domain")
    }


def test_a_test_double_that_says_sees_gold_gets_the_whole_case(task):  # noqa: F811
    agent = make_agent("python", function=lambda t: t.case.expected, sees_gold=True)
    assert run(agent, task).prediction == "GOLD-slow"
    with pytest.raises(UsageError, match="sees_gold must be true or false, not 'yes'"):
        make_agent("python", function=lambda t: "x", sees_gold="yes")


GOLD_READER = "def answer(task):\n    return task.case.expected or 'no gold'\n"


def _gold_experiment(store, tmp_path, **arm):
    (tmp_path / "gold.py").write_text(GOLD_READER, encoding="utf-8")
    cases = [Case(f"c{i}", f"query {i}", "fast" if i else "slow") for i in range(3)]
    dataset = store.datasets.save("gold", cases, label_set=["fast", "slow"])
    spec = {
        "name": "gold",
        "dataset": dataset.fingerprint,
        "arms": {
            "honest": {"agent": "python", "function": f"{tmp_path / 'gold.py'}:answer"},
            "double": {"agent": "python", "function": f"{tmp_path / 'gold.py'}:answer", **arm},
        },
    }
    return create_experiment(spec, store=store)


def test_only_an_arm_that_declares_sees_gold_reads_the_gold_and_the_report_says_so(store, tmp_path):
    exp = _gold_experiment(store, tmp_path, sees_gold=True)
    run_experiment(exp.id, store=store)
    predictions = {(r.arm, r.case_id): r.output.prediction for r in store.runs.records(exp.id)}
    assert {p for (arm, _), p in predictions.items() if arm == "honest"} == {"no gold"}
    assert [predictions["double", c] for c in ("c0", "c1", "c2")] == ["slow", "fast", "fast"]
    prov = experiment_provenance(exp.id, store=store)
    assert [a.sees_gold for a in prov.arms] == [False, True]
    html = "".join(str(part) for part in provenance_section(prov))
    assert "arm double sees the gold answer: a test double" in html
    assert "arm honest sees" not in html


@pytest.mark.parametrize(
    ("arm", "message"),
    [
        ({"sees_gold": "yes"}, "sees_gold must be true or false, not 'yes'"),
        ({"agent": "builtin", "sees_gold": True}, "sees_gold is for python test doubles only"),
    ],
)
def test_sees_gold_is_checked_when_the_experiment_is_created(store, tmp_path, arm, message):
    if arm.get("agent") == "builtin":
        arm = {**arm, "function": None}
    with pytest.raises(ExperimentError, match=message):
        _gold_experiment(store, tmp_path, **{k: v for k, v in arm.items() if v is not None})
    assert store.query_one("SELECT COUNT(*) FROM experiments")[0] == 0


# -- latency: the callable's own work, not its wait for the scheduler ----------------------------

TIMED = """
import threading, time

entered, loop_blocked, finished = threading.Event(), threading.Event(), threading.Event()

def timed(task):
    # the function's own duration, as it measures it: until the other arm holds the event loop
    started = time.perf_counter()
    entered.set()
    assert loop_blocked.wait(60)
    own_ms = (time.perf_counter() - started) * 1000
    finished.set()
    return {"prediction": "fast", "reason": repr(own_ms)}

async def busy(task):
    # a busy arm on the same loop: it holds the loop from before `timed` returns until well after
    import asyncio
    while not entered.is_set():
        await asyncio.sleep(0.001)
    loop_blocked.set()
    assert finished.wait(60)
    started = time.perf_counter()
    time.sleep(0.3)
    return {"prediction": "slow", "reason": repr((time.perf_counter() - started) * 1000)}
"""


def test_the_latency_of_a_sync_function_is_its_own_work_not_its_wait_for_a_busy_loop(store, tmp_path):
    (tmp_path / "timed.py").write_text(TIMED, encoding="utf-8")
    dataset = store.datasets.save("one", [Case("c0", "query", "fast")], label_set=["fast", "slow"])
    exp = create_experiment(
        {
            "name": "latency",
            "dataset": dataset.fingerprint,
            "concurrency": 2,
            "retries": 0,
            "arms": {
                "timed": {"agent": "python", "function": f"{tmp_path / 'timed.py'}:timed"},
                "busy": {"agent": "python", "function": f"{tmp_path / 'timed.py'}:busy"},
            },
        },
        store=store,
    )
    run_experiment(exp.id, store=store)
    runs = {r.arm: r for r in store.runs.records(exp.id)}
    assert {r.state for r in runs.values()} == {"pass", "fail"}, [r.error for r in runs.values()]
    own_ms = float(runs["timed"].output.reason)
    blocked_ms = float(runs["busy"].output.reason)
    latency = runs["timed"].output.latency_ms
    # the adapter times around the function, so never less than what it measured itself; before the
    # fix it also counted the time the busy arm held the loop after the function had returned
    assert own_ms <= latency < own_ms + blocked_ms / 2, (latency, own_ms, blocked_ms)


def test_a_stored_traceback_opens_with_the_agents_own_error(store, tmp_path):
    (tmp_path / "fails.py").write_text(
        # async: it raises on the runner's loop, where the chained error used to come from
        "async def answer(task):\n    raise ValueError('the upstream service refused case ' + task.case.case_id)\n",
        encoding="utf-8",
    )
    dataset = store.datasets.save("tb", [Case("c0", "query", "fast")], label_set=["fast", "slow"])
    exp = create_experiment(
        {
            "name": "tb",
            "dataset": dataset.fingerprint,
            "retries": 0,
            "arms": {"a": {"agent": "python", "function": f"{tmp_path / 'fails.py'}:answer"}},
        },
        store=store,
    )
    run_experiment(exp.id, store=store)  # from plain code, not inside a running loop
    (tb,) = [r[0] for r in store.query("SELECT traceback FROM runs WHERE experiment_id=?", (exp.id,))]
    assert "no running event loop" not in tb and "During handling" not in tb
    first = next(line for line in tb.splitlines() if not line.startswith((" ", "Traceback")))
    assert first == "ValueError: the upstream service refused case c0"


def test_a_bare_module_beside_the_definition_is_found_from_the_cli(tmp_path):
    """``function: agent_mod:answer`` with agent_mod.py beside the definition works from the console
    script, whose sys.path does not hold the current folder (a new user's first try failed here)."""
    import subprocess
    import sys

    from tests.conftest import REPO, subprocess_env

    (tmp_path / "cases.csv").write_text("id,text,label\n1,turn off the computer,shutdown\n", encoding="utf-8")
    (tmp_path / "agent_mod_beside.py").write_text(
        "def answer(task):\n    return {'prediction': 'shutdown', 'reason': task.case.input}\n",
        encoding="utf-8",
    )
    (tmp_path / "exp.yaml").write_text(
        "name: beside\ndataset: {file: cases.csv, name: beside}\narms:\n"
        "  py: {agent: python, function: 'agent_mod_beside:answer'}\n",
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = subprocess_env()
    env["PYTHONPATH"] = str(REPO)  # the checkout only: not the definition's folder
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "abbench",
            "--store",
            str(tmp_path / "st"),
            "run",
            str(tmp_path / "exp.yaml"),
            "-q",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "executed 1" in done.stdout
