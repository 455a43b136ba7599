"""Typed transcript events: each kind round-trips, the files written before the types read back byte
for byte, and a line that is not what it says gives an error naming the file and the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from abbench.errors import TranscriptError
from abbench.graders import tool_calls_in
from abbench.testing import ScriptedOpenAIServer
from abbench.transcript import (
    READERS,
    AnswerEvent,
    CatalogueEvent,
    CliReportEvent,
    CommandEvent,
    MessageEvent,
    ModelEvent,
    OtherEvent,
    OutputEvent,
    ProcessEvent,
    Retry,
    ToolEvent,
    Unreadable,
    VerdictEvent,
    event_from_dict,
    last_answer,
    read_transcript,
    requested_calls,
    to_events,
    tool_calls,
)
from abbench.types import Usage

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "transcripts"

EVENTS = [
    MessageEvent(role="system", content="你是路由助手"),
    MessageEvent(
        role="assistant", content="", tool_calls=({"id": "c1", "type": "function", "function": {}},)
    ),
    MessageEvent(name="read_file", role="tool", tool_call_id="c1", content="# 车控"),
    MessageEvent(role="assistant", content='{"prediction": "sl', partial=True),
    MessageEvent(role="assistant", content="x", extra={"reasoning_content": "因为"}),
    ModelEvent(turn=1, model="m", finish_reason="stop", usage=Usage(10, 2), usage_reported=False),
    ModelEvent(
        turn=2,
        model="m",
        finish_reason="tool_calls",
        usage=Usage(5, 1),
        usage_reported=True,
        cost=None,
        latency_ms=12.5,
        streamed=True,
        chunks=7,
        cached=True,
        retries=(Retry(attempt=1, failure_type="rate_limited", status=429, message="slow down", wait_s=0.0),),
    ),
    ModelEvent(turn=3, model="m", usage=Usage(0, 0), latency_ms=3.0, interrupted=True),
    ToolEvent(
        turn=1, id="c1", name="read_section", arguments='{"ref": "SKILL.md#规则"}', ok=True, result_chars=9
    ),
    ToolEvent(turn=1, id="call_load", name="load_skill", arguments='{"name": "a"}', ok=True, skill="a"),
    ToolEvent(name="read", arguments={"filePath": "/w/skill/a.md"}, status="completed"),
    ToolEvent(name=None, arguments=None, status=None),
    AnswerEvent(method="json", format="strict", prediction="slow", in_label_set=True, cost_known=False),
    AnswerEvent(method="regex", prediction=None),
    AnswerEvent(format="bad_output", error="no answer"),
    CatalogueEvent(skills=("a", "b"), coverage={"a": 0.5, "b": 0.0}, threshold=0.2, content="a: ..."),
    CommandEvent(argv=("opencode", "run"), workspace="/tmp/w", stdin=None, env=("HOME",), timeout_s=180),
    CommandEvent(argv=("llm",), workspace="/tmp/w", stdin="prompt", env=(), timeout_s=1.5, preset="llm"),
    ProcessEvent(returncode=None, timed_out=True, duration_ms=0.0),
    OutputEvent(stream="stdout", text="{}"),
    OutputEvent(stream="stderr", text="日志"),
    CliReportEvent(preset="opencode", unreadable="ValueError('x')"),
    CliReportEvent(
        preset="opencode",
        session_id="ses_1",
        model="m",
        usage=Usage(3, 4),
        cost=0.01,
        steps=2,
        tool_calls=(ToolEvent(name="read", arguments={"filePath": "a"}, status="completed"),),
        files_read=("a.md",),
        error={"status": 429},
    ),
    VerdictEvent(grader="inspect", passed=True, score=1.0, comment="ok"),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_each_kind_round_trips_through_its_json(event):
    data = event.to_dict()
    line = json.dumps(data, ensure_ascii=False)
    again = event_from_dict(json.loads(line))
    assert again == event and type(again) is type(event)
    assert json.dumps(again.to_dict(), ensure_ascii=False) == line  # the same bytes, keys in order
    assert data.get("type", "verdict") in (*READERS, "verdict")


def test_every_kind_abbench_writes_has_a_type():
    kinds = {e.to_dict().get("type") for e in EVENTS} - {None}
    assert kinds == set(READERS)


GOLDEN_KINDS = {
    "builtin-injected": {MessageEvent, ModelEvent, ToolEvent, AnswerEvent},
    "builtin-no-skill": {MessageEvent, ModelEvent, AnswerEvent},
    "builtin-offered": {CatalogueEvent, MessageEvent, ModelEvent, AnswerEvent},
    "openai-tool-loop": {MessageEvent, ModelEvent, ToolEvent, AnswerEvent},
    "openai-bad-output": {MessageEvent, ModelEvent, AnswerEvent},
    "openai-stream-cut": {MessageEvent, ModelEvent, ToolEvent},
    "openai-no-skill": {MessageEvent, ModelEvent, AnswerEvent},
    "command-generic": {CommandEvent, ProcessEvent, OutputEvent, AnswerEvent},
    "opencode-tool-call": {CommandEvent, ProcessEvent, OutputEvent, ToolEvent, CliReportEvent, AnswerEvent},
    "llm-plain": {CommandEvent, ProcessEvent, OutputEvent, CliReportEvent, AnswerEvent},
}


@pytest.mark.parametrize("name", sorted(GOLDEN_KINDS))
def test_transcripts_written_before_the_types_read_back_byte_for_byte(name):
    """The files in tests/data/transcripts were written by abbench 04d0d57 (make_golden.py there),
    by each adapter: the builtin agent, the openai adapter on the scripted server, the command agent
    and the real opencode and llm CLIs through their presets."""
    path = GOLDEN / f"{name}.jsonl"
    transcript = read_transcript(path, strict=True)
    assert {type(e) for e in transcript} == GOLDEN_KINDS[name]
    written = "".join(json.dumps(e.to_dict(), ensure_ascii=False) + "\n" for e in transcript)
    assert written == path.read_text(encoding="utf-8")


def test_typed_reads_say_what_the_session_did():
    loop = read_transcript(GOLDEN / "openai-tool-loop.jsonl")
    calls = loop.of_type(ModelEvent)
    assert [c.turn for c in calls] == [1, 2, 3] and all(c.made and c.usage_reported for c in calls)
    assert calls[0].retries[0].status == 429 and calls[0].retries[0].failure_type == "rate_limited"
    assert [(t.name, t.ok) for t in loop.of_type(ToolEvent)] == [
        ("list_files", True), ("read_section", True), ("read_file", False),
    ]  # fmt: skip
    (answer,) = loop.of_type(AnswerEvent)
    assert (answer.prediction, answer.format, answer.cost_known) == ("slow", "strict", True)
    cut = read_transcript(GOLDEN / "openai-stream-cut.jsonl")
    assert cut.of_type(ModelEvent)[-1].interrupted and cut.events[-1].partial
    builtin = read_transcript(GOLDEN / "builtin-injected.jsonl")
    assert not any(c.made for c in builtin.of_type(ModelEvent))  # estimated, no call was made


def test_a_cli_runs_tool_calls_count_once_not_again_from_its_report():
    transcript = read_transcript(GOLDEN / "opencode-tool-call.jsonl")
    (report,) = transcript.of_type(CliReportEvent)
    assert [c.name for c in report.tool_calls] == ["read"]
    assert [c.name for c in tool_calls(transcript)] == ["read"]
    dicts = [json.loads(line) for line in (GOLDEN / "opencode-tool-call.jsonl").read_text().splitlines()]
    assert [c["name"] for c in tool_calls_in(dicts)] == ["read"]  # the grader's count: once


def test_entries_abbench_does_not_type_are_kept_and_marked():
    entries = [
        {"role": "user", "content": "hi"},  # an external tool's message (Inspect's import)
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Read"}]}},
        "a custom agent's note",
        {"role": "verdict", "grader": "g", "passed": False, "score": None, "comment": None},
    ]
    events = to_events(entries)
    assert [type(e) for e in events] == [OtherEvent, OtherEvent, OtherEvent, VerdictEvent]
    assert events[1].kind == "assistant" and not events[1].known and events[0].kind is None
    assert [e.to_dict() for e in events] == entries
    assert [c.name for c in tool_calls(events)] == ["Read"]


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "transcripts" / "7.jsonl"
    path.parent.mkdir()
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


GOOD = json.dumps({"type": "message", "role": "user", "content": "到目的地"}, ensure_ascii=False)


def test_a_line_that_is_not_json_is_an_error_naming_the_file_and_the_line(tmp_path):
    path = write(tmp_path, GOOD, "", '{"type": "answer", "method": ')
    with pytest.raises(TranscriptError) as info:
        read_transcript(path)
    err = info.value
    assert f"{path}, line 3 is not JSON" in str(err) and "column" in str(err)
    assert (err.path, err.line) == (str(path), 3)
    kept = read_transcript(path, errors="keep")
    assert isinstance(kept.events[0], MessageEvent) and isinstance(kept.events[1], Unreadable)
    assert kept.events[1].line == 3 and kept.events[1].text == '{"type": "answer", "method": '


def test_a_known_kind_that_does_not_fit_names_its_key(tmp_path):
    path = write(tmp_path, GOOD, json.dumps({"type": "tool_call", "name": "read", "ok": "yes"}))
    with pytest.raises(
        TranscriptError, match=r"line 2 is a 'tool_call' event that does not fit: `ok` must be"
    ):
        read_transcript(path)
    with pytest.raises(TranscriptError) as info:
        to_events([{"type": "llm_call", "usage": {"input_tokens": "12"}}])
    assert info.value.line == 1 and info.value.field == "usage.input_tokens"


@pytest.mark.parametrize(
    ("entry", "key", "wanted"),
    [
        ({"type": "message", "role": "assistant", "tool_calls": "read"}, "tool_calls", "a list of calls"),
        ({"type": "message", "role": "assistant", "tool_calls": [1]}, "tool_calls", "a list of calls"),
        ({"type": "llm_call", "retries": {"attempt": 1}}, "retries", "a list of retries"),
        ({"type": "llm_call", "retries": ["rate limited"]}, "retries", "a list of retries"),
        ({"type": "cli_report", "preset": "codex", "tool_calls": [None]}, "tool_calls", "a list of calls"),
    ],
)
def test_a_list_of_objects_that_holds_something_else_names_its_key(entry, key, wanted):
    with pytest.raises(TranscriptError, match=f"`{key}` must be {wanted}, not ") as info:
        to_events([entry])
    assert info.value.field == key
    assert to_events([{**entry, key: None}])[0].kind == entry["type"]  # null: none given


def test_strict_reading_refuses_a_kind_abbench_does_not_write(tmp_path):
    path = write(tmp_path, GOOD, json.dumps({"type": "thought", "text": "hmm"}))
    assert isinstance(read_transcript(path).events[1], OtherEvent)
    with pytest.raises(TranscriptError, match=r"line 2 holds kind 'thought', which abbench does not write"):
        read_transcript(path, strict=True)


def test_a_long_transcript_is_cut_for_a_view_and_says_so(tmp_path):
    path = write(tmp_path, *[GOOD] * 10)
    cut = read_transcript(path, max_chars=len(GOOD) * 3 + 3)
    assert len(cut) == 3 and cut.cut_at == len(GOOD) * 3 + 3
    assert read_transcript(path).cut_at is None


def test_the_case_view_shows_a_damaged_line_where_it_stands_and_marks_unknown_kinds(tmp_path):
    from abbench.widgets import transcript_html

    path = write(
        tmp_path, GOOD, "not json", json.dumps({"type": "thought", "text": "嗯"}, ensure_ascii=False)
    )
    html = transcript_html(read_transcript(path, errors="keep"))
    assert "message · user" in html and "到目的地" in html
    assert "unreadable · line 2" in html and "not json" in html
    assert "thought (a kind abbench does not write)" in html
    cut = transcript_html(read_transcript(path, errors="keep", max_chars=len(GOOD) + 1))
    assert f"cut at {len(GOOD) + 1:,} characters" in cut and "not json" not in cut


def _builtin_tasks(tmp_path):
    """The tasks make_golden.py gave the builtin agent (the adapter tests' routing skill and case)."""
    import dataclasses

    from tests.agents.adapter_fixtures import SKILL_FILES, routing_case, routing_task, write_skill

    skill = write_skill(tmp_path / "skill", SKILL_FILES)
    task = routing_task(routing_case(), skill)
    other = write_skill(
        tmp_path / "other",
        {"SKILL.md": "---\nname: weather\ndescription: Weather forecasts and rain.\n---\n# Weather\n"},
    )
    return {
        "builtin-injected": task,
        "builtin-no-skill": dataclasses.replace(task, skill=None),
        "builtin-offered": dataclasses.replace(task, skill=None, skills=(skill, other), skill_mode="offered"),
    }


def test_the_agents_still_write_the_bytes_they_wrote_before_the_types(tmp_path, store):
    """The builtin agent is deterministic: its transcripts, written by the runner's store writer now,
    equal the golden files byte for byte; the openai adapter's (whose times vary) have the same kinds,
    keys and key order line by line."""
    import asyncio

    from abbench.agents import make_agent
    from abbench.runner import StoreWriter
    from tests.agents.adapter_fixtures import tool_loop_script

    writer = StoreWriter(store)
    for name, task in _builtin_tasks(tmp_path).items():
        writer.transcript(tmp_path / f"{name}.jsonl", asyncio.run(make_agent("builtin").run(task)).transcript)
    task = _builtin_tasks(tmp_path / "again")["builtin-injected"]
    with ScriptedOpenAIServer(tool_loop_script()) as server:
        agent = make_agent(
            "openai", model="scripted", base_url=server.base_url, prices={"scripted": {"input": 2.0, "output": 8.0}},
            retry={"base_delay_s": 0.01, "max_delay_s": 0.05},
        )  # fmt: skip
        writer.transcript(tmp_path / "openai-tool-loop.jsonl", asyncio.run(agent.run(task)).transcript)
    writer.close()
    for name in ("builtin-injected", "builtin-no-skill", "builtin-offered"):
        assert (tmp_path / f"{name}.jsonl").read_bytes() == (GOLDEN / f"{name}.jsonl").read_bytes(), name

    def shape(path):
        return [list(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]

    assert shape(tmp_path / "openai-tool-loop.jsonl") == shape(GOLDEN / "openai-tool-loop.jsonl")


def test_a_line_nested_too_deep_is_an_error_not_a_crash(tmp_path):
    path = write(tmp_path, GOOD, "[" * 200_000 + "]" * 200_000)
    with pytest.raises(TranscriptError, match=r"line 2 is not JSON abbench can read \(nested too deep\)"):
        read_transcript(path)
    assert isinstance(read_transcript(path, errors="keep").events[1], Unreadable)


@pytest.mark.parametrize("name", sorted(GOLDEN_KINDS))
def test_the_runners_count_of_the_written_form_equals_the_typed_one(name):
    path = GOLDEN / f"{name}.jsonl"
    written = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    typed = read_transcript(path).events
    assert requested_calls(written) == requested_calls(typed)
    answers = [e for e in typed if isinstance(e, AnswerEvent)]
    assert last_answer(written) == last_answer(typed) == (answers[-1] if answers else None)
    # the counts themselves, read by hand from the files' assistant messages and CLI reports
    expected = {"builtin-injected": 1, "openai-tool-loop": 3, "openai-stream-cut": 1, "opencode-tool-call": 1}
    assert requested_calls(written) == expected.get(name, 0)
