"""Real runs write their transcripts through the typed events, and the trajectory graders read them
back from the store's files: the builtin agent, and the openai adapter on the scripted 127.0.0.1 server."""

from __future__ import annotations

import json

import pytest

from abbench.runner import create_experiment, grade_experiment, run_experiment
from abbench.testing import Reply, ScriptedOpenAIServer
from abbench.transcript import AnswerEvent, MessageEvent, ModelEvent, ToolEvent, read_transcript, tool_calls
from abbench.types import Case
from tests.skillfiles import SKILL_V1, write_files

ANSWER = json.dumps(
    {"prediction": "fast", "reason": "车控", "confidence": 0.9, "evidence_refs": ["knowledge/车控.md#空调"]},
    ensure_ascii=False,
)
TRAJECTORY = [{"type": "max_tool_calls", "n": 1}, {"type": "read_skill", "files": ["knowledge/*"]}]


@pytest.fixture
def dataset(store):
    cases = [Case("c1", "打开空调", "fast"), Case("c2", "帮我规划去机场的路线", "slow")]
    return store.datasets.save("routing", cases, label_set=["fast", "slow"])


@pytest.fixture
def skill(tmp_path):
    return str(write_files(tmp_path / "skill", SKILL_V1))


def _raw_calls(path) -> set[str]:
    """The tool calls of a transcript file, read as plain JSON (independent of the typed reader)."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {e["id"] for e in lines if e.get("type") == "tool_call"}


def test_a_builtin_run_is_read_back_as_typed_events_and_graded_from_its_file(store, dataset, skill):
    spec = {
        "name": "typed-builtin",
        "dataset": dataset.fingerprint,
        "arms": {"b": {"agent": "builtin", "skill": skill}},
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp.id, store=store)
    grade_experiment(exp.id, graders=TRAJECTORY, store=store)  # graded from the stored runs' files
    runs = store.runs.records(exp.id)
    assert len(runs) == 2
    for run in runs:
        transcript = read_transcript(run.transcript_path, strict=True)
        assert isinstance(transcript.events[0], MessageEvent) and transcript.events[0].role == "system"
        (answer,) = transcript.of_type(AnswerEvent)
        assert answer.prediction == run.output.prediction and answer.method == "json"
        assert all(not c.made for c in transcript.of_type(ModelEvent))  # the builtin estimates its calls
        calls = {c.id for c in tool_calls(transcript)}
        assert calls == _raw_calls(run.transcript_path)
        grades = store.grades.latest(run.id)
        assert grades["max_tool_calls"].details["tool_calls"] == len(calls)
        assert grades["max_tool_calls"].passed is (len(calls) <= 1)
        read = {c.name for c in transcript.of_type(ToolEvent)}
        assert read <= {"read_section"}
    assert any(_raw_calls(r.transcript_path) for r in runs)  # the session read a section somewhere


def _openai_spec(dataset, skill, server):
    arm = {"agent": "openai", "model": "scripted", "base_url": server.base_url, "skill": skill}
    return {"name": "typed-openai", "dataset": dataset.fingerprint, "cases": {"limit": 1}, "arms": {"b": arm}}


def test_an_openai_run_on_a_local_server_is_read_back_and_graded(store, dataset, skill):
    script = [
        Reply.tools(("read_section", {"ref": "knowledge/车控.md#空调"}), usage=(100, 10)),
        Reply.tools(("list_files", {}), usage=(150, 5)),
        Reply.text(ANSWER, usage=(200, 20)),
    ]
    with ScriptedOpenAIServer(script) as server:
        exp = create_experiment(_openai_spec(dataset, skill, server), store=store)
        run_experiment(exp.id, store=store)
    grade_experiment(exp.id, graders=TRAJECTORY, store=store)
    (run,) = store.runs.records(exp.id)
    transcript = read_transcript(run.transcript_path, strict=True)
    models = transcript.of_type(ModelEvent)
    assert [(m.turn, m.usage.input_tokens, m.made) for m in models] == [
        (1, 100, True),
        (2, 150, True),
        (3, 200, True),
    ]
    assert [(t.name, t.ok) for t in transcript.of_type(ToolEvent)] == [
        ("read_section", True),
        ("list_files", True),
    ]
    assert transcript.of_type(AnswerEvent)[0].prediction == "fast"
    grades = store.grades.latest(run.id)
    assert grades["max_tool_calls"].passed is False and grades["max_tool_calls"].details["tool_calls"] == 2
    assert grades["read_skill"].passed is True


def test_a_damaged_transcript_fails_grading_naming_the_file_and_the_line(store, dataset, skill):
    with ScriptedOpenAIServer([Reply.tools(("list_files", {})), Reply.text(ANSWER)]) as server:
        exp = create_experiment(_openai_spec(dataset, skill, server), store=store)
        run_experiment(exp.id, store=store)
    (run,) = store.runs.records(exp.id)
    lines = run.transcript_path.read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4][:20]  # a line cut short, as a bad copy leaves it
    run.transcript_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    grade_experiment(exp.id, graders=[{"type": "max_tool_calls", "n": 5}], store=store)
    grade = store.grades.latest(run.id)["max_tool_calls"]
    assert grade.status == "error" and grade.passed is None
    assert f"{run.transcript_path}, line 5 is not JSON" in grade.error
