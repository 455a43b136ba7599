"""The real agent CLIs (opencode from npm, llm from PyPI, installed by `make agent-clis`) driven
through their presets against the scripted OpenAI-compatible server on 127.0.0.1: a plain answer,
a tool call, a 429, a model that never answers, a CLI that exits non-zero."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import re
import threading
from pathlib import Path

import pytest

from abbench.agents import Spending, make_agent
from abbench.errors import AgentError
from abbench.testing import Reply, ScriptedOpenAIServer
from tests.agents.adapter_fixtures import case, skill, task  # noqa: F401

pytestmark = pytest.mark.slow

TOOLS = Path(__file__).resolve().parents[2] / ".tools" / "bin"
KEY_ENV = "ABBENCH_TEST_CLI_KEY"
KEY = "sk-cli-test-5f2b9c"
PRICES = {"scripted-m": {"input": 2.0, "output": 8.0}}
# the reason names the other label: the answer must still be read as "slow", not as bad output
ANSWER = {
    "prediction": "slow",
    "reason": "not fast: 到目的地电量够不够 needs route and energy data",
    "confidence": 0.85,
    "evidence_refs": ["knowledge/domains.md#Navigation", "SKILL.md#Rules"],
}


def cli_path(name: str) -> str:
    path = TOOLS / name
    if not path.exists():
        message = f"{path} is missing: run `make agent-clis` (it installs the pinned opencode and llm)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return str(path)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def agent(preset: str, server, **kw):
    kw.setdefault("timeout_s", 180)
    return make_agent(
        "command",
        preset=preset,
        program=cli_path(preset),
        model="scripted-m",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        prices=PRICES,
        **kw,
    )


def run(a, t):
    return asyncio.run(a.run(t))


def answer_request(request) -> bool:
    """True for the agent's own request (not a title or summary request opencode may add)."""
    system = " ".join(str(m.get("content")) for m in request.messages if m.get("role") == "system")
    return "title generator" not in system


def assert_key_only_in_headers(server, workspace: Path | None = None):
    for r in server.chat_requests:
        assert r.headers["authorization"] == f"Bearer {KEY}"
    if workspace is not None:
        for f in workspace.rglob("*"):
            if f.is_file() and f.suffix in (".json", ".yaml", ".toml", ".jsonc"):
                assert KEY not in f.read_text(errors="replace"), f


# -- opencode ----------------------------------------------------------------------------------------


def test_opencode_plain_answer_keeps_reason_evidence_tokens_and_session(task):  # noqa: F811
    def reply(request):
        if not answer_request(request):
            return Reply.text("Battery check")
        return Reply.text(json.dumps(ANSWER, ensure_ascii=False), usage=(2042, 64), chunk_chars=7)

    with ScriptedOpenAIServer(reply) as server:
        out = run(agent("opencode", server), task)
    assert out.prediction == "slow" and out.reason == ANSWER["reason"] and out.confidence == 0.85
    assert out.evidence_refs == ("knowledge/domains.md#Navigation", "SKILL.md#Rules")
    assert (out.usage.input_tokens, out.usage.output_tokens) == (2042, 64)
    assert out.cost == pytest.approx((2042 * 2.0 + 64 * 8.0) / 1e6)  # opencode says 0: priced by the arm
    assert re.fullmatch(r"ses_\w+", out.session_id)
    mine = [r for r in server.chat_requests if answer_request(r)]
    assert len(mine) == 1 and mine[0].body["model"] == "scripted-m" and mine[0].body["stream"] is True
    assert "到目的地电量够不够" in json.dumps(mine[0].messages, ensure_ascii=False)
    assert "GOLD" not in json.dumps(mine[0].body, ensure_ascii=False)
    assert_key_only_in_headers(server)
    report = next(e for e in out.transcript if e["type"] == "cli_report")
    assert report["preset"] == "opencode" and report["steps"] == 1


def test_opencode_tool_call_reads_a_skill_file(task):  # noqa: F811
    seen: dict[str, str] = {}

    def reply(request):
        if not answer_request(request):
            return Reply.text("Battery check")
        if not any(m.get("role") == "tool" for m in request.messages):
            folder = re.search(r"(/[^\s\"']+/skill)\b", json.dumps(request.messages, ensure_ascii=False))
            seen["skill"] = folder.group(1)
            path = folder.group(1) + "/knowledge/domains.md"
            return Reply.tools(("read", {"filePath": path}), usage=(1500, 20), chunk_chars=3)
        tool = next(m for m in request.messages if m.get("role") == "tool")
        seen["tool"] = json.dumps(tool.get("content"), ensure_ascii=False)
        return Reply.text(json.dumps(ANSWER, ensure_ascii=False), usage=(2042, 64))

    with ScriptedOpenAIServer(reply) as server:
        out = run(agent("opencode", server), task)
    assert "需要路线与能耗数据" in seen["tool"]  # opencode really read the file the skill has
    assert out.files_read == ("knowledge/domains.md",)
    calls = [e for e in out.transcript if e["type"] == "tool_call"]
    assert [(c["name"], c["status"]) for c in calls] == [("read", "completed")]
    assert calls[0]["arguments"]["filePath"].endswith("skill/knowledge/domains.md")
    assert (out.usage.input_tokens, out.usage.output_tokens) == (1500 + 2042, 20 + 64)
    assert out.prediction == "slow"


def test_opencode_429_is_rate_limited_and_keeps_the_session_transcript(task):  # noqa: F811
    spending = Spending()
    with (
        ScriptedOpenAIServer(lambda r: Reply.error(429, "Rate limit reached", retry_after=0)) as server,
        pytest.raises(AgentError) as info,
    ):
        run(agent("opencode", server), dataclasses.replace(task, spending=spending))
    err = info.value
    assert err.failure_type == "rate_limited" and err.retryable and err.spent is spending
    assert "Rate limit reached" in str(err) and "HTTP 429" in str(err)
    assert len(server.chat_requests) >= 1
    assert any(e["type"] == "cli_report" and e["error"]["status"] == 429 for e in spending.transcript)


def test_opencode_auth_failure_exits_non_zero_and_is_not_retried(task):  # noqa: F811
    with (
        ScriptedOpenAIServer(lambda r: Reply.error(401, "Incorrect API key provided")) as server,
        pytest.raises(AgentError) as info,
    ):
        run(agent("opencode", server), task)
    err = info.value
    assert err.failure_type == "auth" and not err.retryable
    assert "exit code" in str(err) and KEY not in str(err) and KEY not in json.dumps(err.transcript)


def _model_never_answers(preset: str, the_task, monkeypatch):
    """Run `preset` on a model that never answers: ``(server, the agent's error, whether a call arrived)``.

    The command's time limit is its own (`time_limit`), started when the model is called and up a
    second later: the test waits on the call, not on a guess of how long the CLI takes to start.
    """
    from abbench.agents import _process

    arrived = threading.Event()
    lock = threading.Lock()
    limits: list[tuple[asyncio.AbstractEventLoop, asyncio.Timeout]] = []

    def up_in_a_second(loop: asyncio.AbstractEventLoop, limit: asyncio.Timeout) -> None:
        limit.reschedule(loop.time() + 1)

    @contextlib.asynccontextmanager
    async def limit_from_the_call(seconds: float):
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(None) as limit:
            with lock:
                limits.append((loop, limit))
                if arrived.is_set():
                    up_in_a_second(loop, limit)
            yield limit

    def reply(request):
        with lock:
            arrived.set()
            for loop, limit in limits:
                loop.call_soon_threadsafe(up_in_a_second, loop, limit)
        return Reply.slow("never", 3600)

    monkeypatch.setattr(_process, "time_limit", limit_from_the_call)
    with ScriptedOpenAIServer(reply) as server:
        a = agent(preset, server, timeout_s=3600, keep_workspace=True, kill_grace_s=1)
        with pytest.raises(AgentError) as info:
            run(a, the_task)
    return server, info.value, arrived


def test_opencode_whose_model_never_answers_is_killed_with_its_process_group(task, monkeypatch):  # noqa: F811
    server, err, arrived = _model_never_answers("opencode", task, monkeypatch)
    assert err.failure_type == "timeout" and err.retryable
    assert arrived.is_set()  # it was waiting on the model, not still starting
    workspace = Path(next(e for e in err.transcript if e["type"] == "command")["workspace"])
    assert _processes_in(workspace) == []
    assert_key_only_in_headers(server, workspace)


# -- llm ---------------------------------------------------------------------------------------------


def test_llm_plain_answer_with_usage_conversation_and_model(task):  # noqa: F811
    body = json.dumps(ANSWER, ensure_ascii=False)
    with ScriptedOpenAIServer([Reply.text(body, usage=(1321, 17), chunk_chars=5)]) as server:
        out = run(agent("llm", server, keep_workspace=True), task)
    assert out.prediction == "slow" and out.reason == ANSWER["reason"]
    assert out.evidence_refs == ("knowledge/domains.md#Navigation", "SKILL.md#Rules")
    assert (out.usage.input_tokens, out.usage.output_tokens) == (1321, 17)  # from its --json record
    assert out.cost == pytest.approx((1321 * 2.0 + 17 * 8.0) / 1e6)
    assert re.fullmatch(r"[0-9a-z]{26}", out.session_id)  # llm's conversation id (a ULID)
    assert out.model == "scripted-m"
    assert server.requests[0].body["model"] == "scripted-m"
    stderr = next(e for e in out.transcript if e["type"] == "stderr")["text"]
    assert "Token usage: 1,321 input, 17 output" in stderr  # --usage agrees with --json
    workspace = Path(next(e for e in out.transcript if e["type"] == "command")["workspace"])
    assert_key_only_in_headers(server, workspace)


def test_llm_429_is_rate_limited(task):  # noqa: F811
    with (
        ScriptedOpenAIServer(lambda r: Reply.error(429, "Rate limit reached", retry_after=0)) as server,
        pytest.raises(AgentError) as info,
    ):
        run(agent("llm", server), task)
    assert info.value.failure_type == "rate_limited" and info.value.retryable
    assert "Error code: 429" in str(info.value)


def test_llm_exits_non_zero_for_an_unknown_model(task):  # noqa: F811
    with ScriptedOpenAIServer([]) as server:
        a = agent("llm", server, args=["-o", "no_such_option", "1"])
        with pytest.raises(AgentError) as info:
            run(a, task)
    err = info.value
    assert err.failure_type == "agent_error" and "exit" in str(err).lower()
    assert server.chat_requests == []


def test_llm_whose_model_never_answers_is_killed(task, monkeypatch):  # noqa: F811
    _, err, arrived = _model_never_answers("llm", task, monkeypatch)
    assert err.failure_type == "timeout" and arrived.is_set()
    workspace = Path(next(e for e in err.transcript if e["type"] == "command")["workspace"])
    assert _processes_in(workspace) == []


# -- an experiment -----------------------------------------------------------------------------------


def test_a_skill_ab_experiment_runs_end_to_end_through_opencode(store):
    from abbench.runner import create_experiment, run_experiment
    from abbench.types import Case

    program = cli_path("opencode")
    demo = Path(__file__).resolve().parents[2] / "data" / "demo" / "skills"
    cases = [Case("c1", "打开空调", expected="fast"), Case("c2", "到目的地电量够不够", expected="slow")]
    dataset = store.datasets.save("cars", cases, label_set=["fast", "slow"])

    def reply(request):
        if not answer_request(request):
            return Reply.text("Routing")
        sent = json.dumps(request.messages, ensure_ascii=False)
        if not any(m.get("role") == "tool" for m in request.messages):
            folder = re.search(r"(/[^\s\"']+/skill)\b", sent).group(1)
            return Reply.tools(("read", {"filePath": folder + "/SKILL.md"}), usage=(1000, 10))
        label = "fast" if "打开空调" in sent else "slow"
        other = "slow" if label == "fast" else "fast"
        answer = {
            "prediction": label,
            "reason": f"the rules say {label}, not {other}",
            "confidence": 0.9,
            "evidence_refs": ["SKILL.md#判断步骤"],
        }
        return Reply.text(json.dumps(answer, ensure_ascii=False), usage=(2042, 64))

    with ScriptedOpenAIServer(reply) as server:
        arm = {
            "agent": "command",
            "preset": "opencode",
            "program": program,
            "model": "scripted-m",
            "base_url": server.base_url,
            "api_key_env": KEY_ENV,
            "prices": PRICES,
            "timeout_s": 300,
        }
        spec = {
            "name": "opencode-ab",
            "dataset": dataset.fingerprint,
            "rounds": 1,
            "arms": {
                "v1": {**arm, "skill": str(demo / "fast-slow-routing-v1")},
                "v2": {**arm, "skill": str(demo / "fast-slow-routing-v2")},
            },
        }
        exp = create_experiment(spec, store=store)
        run_experiment(exp.id, store=store)
    runs = store.runs.records(exp.id)
    assert len(runs) == 4 and [r.failure_type for r in runs] == [None] * 4
    for r in runs:
        gold = "fast" if r.case_id == "c1" else "slow"
        assert r.output.prediction == gold and r.state == "pass"
        assert r.output.reason.startswith(f"the rules say {gold}")
        assert r.output.evidence_refs == ("SKILL.md#判断步骤",)
        assert r.output.files_read == ("SKILL.md",)
        assert (r.output.usage.input_tokens, r.output.usage.output_tokens) == (3042, 74)
        assert r.output.cost == pytest.approx((3042 * 2.0 + 74 * 8.0) / 1e6)
        assert r.output.session_id.startswith("ses_")
        assert r.transcript_summary["tool_calls"] == 1  # opencode's read of SKILL.md, counted
        events = [json.loads(line) for line in r.transcript_path.read_text().splitlines()]
        assert any(e.get("type") == "tool_call" and e["name"] == "read" for e in events)
    dump = json.dumps(
        [list(row) for t in ("experiments", "runs") for row in store.query(f"SELECT * FROM {t}")],
        ensure_ascii=False,
        default=str,
    )
    assert KEY not in dump and KEY_ENV in dump  # the variable's name is kept, never its value


def _processes_in(workspace: Path) -> list[int]:
    """Processes whose working folder or command line is inside `workspace`."""
    found = []
    root = str(workspace.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmd = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if cwd.startswith(root) or root in cmd:
            found.append(int(entry.name))
    return found
