"""Write the golden transcripts beside this file: one per adapter and outcome, as abbench wrote them
before transcripts were typed (they were made at commit 04d0d57 and must never be made again from a
later abbench; tests/transcript/test_events.py reads them back byte for byte).

Needs the pinned agent CLIs (`make agent-clis`). Run from the repository: `python tests/data/transcripts/make_golden.py`.
"""

import asyncio
import dataclasses
import json
import os
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from abbench.agents import make_agent  # noqa: E402
from abbench.errors import AgentError  # noqa: E402
from abbench.runner._writer import _write_transcript  # noqa: E402
from abbench.testing import Reply, ScriptedOpenAIServer  # noqa: E402
from tests.agents.adapter_fixtures import (  # noqa: E402
    FINAL,
    SKILL_FILES,
    routing_case,
    routing_task,
    tool_loop_script,
    write_skill,
)

OUT = Path(os.environ.get("GOLDEN_OUT", Path(__file__).parent))
tmp = Path(tempfile.mkdtemp())
skill = write_skill(tmp / "skill", SKILL_FILES)
task = routing_task(routing_case(), skill)
PRICES = {
    "scripted": {"input": 2.0, "output": 8.0},
    "m": {"input": 2.0, "output": 8.0},
    "scripted-m": {"input": 2.0, "output": 8.0},
}


def save(name, transcript):
    _write_transcript(OUT / f"{name}.jsonl", transcript)
    print(name, len(transcript))


def run(agent, t):
    try:
        return asyncio.run(agent.run(t)).transcript
    except AgentError as exc:
        return exc.transcript


def oa(server, **kw):
    kw.setdefault("retry", {"base_delay_s": 0.01, "max_delay_s": 0.05})
    return make_agent(
        "openai", model=kw.pop("model", "scripted"), base_url=server.base_url, prices=PRICES, **kw
    )


# builtin: injected, no skill, offered
save("builtin-injected", run(make_agent("builtin"), task))
save("builtin-no-skill", run(make_agent("builtin"), dataclasses.replace(task, skill=None)))
other = write_skill(
    tmp / "other",
    {"SKILL.md": "---\nname: weather\ndescription: Weather forecasts and rain.\n---\n# Weather\n"},
)
save(
    "builtin-offered",
    run(
        make_agent("builtin"),
        dataclasses.replace(task, skill=None, skills=(skill, other), skill_mode="offered"),
    ),
)
# openai: a tool loop with a retry and a nudge, a bad answer, a broken stream, a streamed loop
with ScriptedOpenAIServer(tool_loop_script()) as s:
    save("openai-tool-loop", run(oa(s), task))
with ScriptedOpenAIServer([Reply.text("I am not sure what you mean.")]) as s:
    save("openai-bad-output", run(oa(s), task))
with ScriptedOpenAIServer(
    [
        Reply.tools(("read_section", {"ref": "SKILL.md#Rules"}), usage=(100, 10)),
        Reply.cut(Reply.text('{"prediction": "slow", "reason": "long"}', chunk_chars=3), after_chunks=6),
    ]
) as s:
    save("openai-stream-cut", run(oa(s, model="m", stream=True), task))
with ScriptedOpenAIServer([Reply.text(FINAL)]) as s:  # no usage reported
    save("openai-no-skill", run(oa(s), dataclasses.replace(task, skill=None)))
# command: a generic JSON printer, and the real CLIs through their presets
script_py = tmp / "agent.py"
script_py.write_text(
    'import json,sys\nprint("thinking", file=sys.stderr)\nprint(json.dumps({"prediction": "slow", "reason": "r", "usage": {"input_tokens": 3, "output_tokens": 2}}))\n'
)
save("command-generic", run(make_agent("command", argv=[sys.executable, str(script_py)], stdin="case"), task))
os.environ["ABBENCH_TEST_CLI_KEY"] = "sk-cli-test-5f2b9c"
TOOLS = REPO / ".tools" / "bin"
ANSWER = json.dumps(
    {
        "prediction": "slow",
        "reason": "needs route data",
        "confidence": 0.85,
        "evidence_refs": ["knowledge/domains.md#Navigation"],
    },
    ensure_ascii=False,
)


def cli(preset, server):
    return make_agent(
        "command",
        preset=preset,
        program=str(TOOLS / preset),
        model="scripted-m",
        base_url=server.base_url,
        api_key_env="ABBENCH_TEST_CLI_KEY",
        prices=PRICES,
        timeout_s=180,
    )


def answer_request(request):
    system = " ".join(str(m.get("content")) for m in request.messages if m.get("role") == "system")
    return "title generator" not in system


def reply(request):
    if not answer_request(request):
        return Reply.text("Battery check")
    if not any(m.get("role") == "tool" for m in request.messages):
        folder = re.search(r"(/[^\s\"']+/skill)\b", json.dumps(request.messages, ensure_ascii=False))
        return Reply.tools(
            ("read", {"filePath": folder.group(1) + "/knowledge/domains.md"}), usage=(1500, 20), chunk_chars=3
        )
    return Reply.text(ANSWER, usage=(2042, 64))


with ScriptedOpenAIServer(reply) as s:
    save("opencode-tool-call", run(cli("opencode", s), task))
with ScriptedOpenAIServer([Reply.text(ANSWER, usage=(120, 30))]) as s:
    save("llm-plain", run(cli("llm", s), task))
