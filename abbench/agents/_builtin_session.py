"""The builtin agent's session as a transcript: the events and token counts a tool-loop agent would record."""

from __future__ import annotations

import json
import math
from typing import Any

from abbench.agents._base import Task
from abbench.agents._builtin_decision import _Decision
from abbench.agents._lexical import count_cjk
from abbench.agents._prompt import build_prompt
from abbench.transcript import AnswerEvent, MessageEvent, ModelEvent, ToolEvent
from abbench.types import Usage


def _session(
    task: Task, decision: _Decision, raw: str, model: str, reads: list[tuple[str, str]]
) -> tuple[list[dict[str, Any]], Usage]:
    """The transcript of a plausible tool-loop session, in the events the openai adapter records.

    The prompt every LLM-like adapter gets (the skill's SKILL.md injected, the history as prior turns,
    the case), one model turn reading the sections used (``read_section``, as parallel tool calls),
    and the turn that answers. Tokens are estimated as a tool loop spends them: every turn re-reads the
    conversation so far.
    """
    prompt = build_prompt(task, tools=task.skill is not None)
    transcript: list[dict[str, Any]] = [MessageEvent.of(m).to_dict() for m in prompt.messages]
    context = sum(estimate_tokens(str(m.get("content") or "")) for m in prompt.messages)
    input_tokens = output_tokens = 0
    turn = 0
    if reads:
        turn += 1
        calls: list[dict[str, Any]] = [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {
                    "name": "read_section",
                    "arguments": json.dumps({"ref": ref}, ensure_ascii=False),
                },
            }
            for n, (ref, _) in enumerate(reads, start=1)
        ]
        written = estimate_tokens(json.dumps(calls, ensure_ascii=False))
        transcript.append(_turn_event(turn, model, context, written, "tool_calls"))
        transcript.append(MessageEvent(role="assistant", content=None, tool_calls=tuple(calls)).to_dict())
        input_tokens, output_tokens = context, written
        context += written
        for call, (_, text) in zip(calls, reads, strict=True):
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            read = ToolEvent(
                turn=turn, id=call["id"], name=name, arguments=arguments, ok=True, result_chars=len(text)
            )
            transcript.append(read.to_dict())
            result = MessageEvent(name=name, role="tool", tool_call_id=call["id"], content=text)
            transcript.append(result.to_dict())
            context += estimate_tokens(text)
    turn += 1
    written = estimate_tokens(raw)
    transcript.append(_turn_event(turn, model, context, written, "stop"))
    transcript.append(MessageEvent(role="assistant", content=raw).to_dict())
    answer = AnswerEvent(method="json", prediction=decision.label, in_label_set=True, cost_known=True)
    transcript.append(answer.to_dict())
    return transcript, Usage(input_tokens + context, output_tokens + written)


def _turn_event(turn: int, model: str, input_tokens: int, output_tokens: int, finish: str) -> dict[str, Any]:
    # estimated from the text, as no model counted it: no latency, as no call was made
    usage = Usage(input_tokens, output_tokens)
    return ModelEvent(
        turn=turn, model=model, finish_reason=finish, usage=usage, usage_reported=False
    ).to_dict()


def estimate_tokens(text: str) -> int:
    """A rough token count: one per CJK character, one per four other characters."""
    if not text:
        return 0
    cjk = count_cjk(text)
    return cjk + math.ceil((len(text) - cjk) / 4)
