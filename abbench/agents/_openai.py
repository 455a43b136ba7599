"""The ``openai`` adapter: any OpenAI-compatible chat endpoint, with a real tool loop over the skill.

The skill's SKILL.md is injected into the prompt; its other files are offered through three tools
(``list_files``, ``read_file``, ``read_section``), so the transcript shows which files and sections
the model actually read. An offered arm's model sees a catalogue instead, and a ``load_skill`` tool
(`abbench.agents._openai_offer`) before the same tools over the skill it loaded. Usage is summed over turns and priced; the final answer is read tolerantly.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

from abbench.agents._answer import Answer, answer_format, canonical_refs, parse_answer
from abbench.agents._base import Spending, Task, agent_task, check_settings, register_agent
from abbench.agents._openai_offer import OfferedTools
from abbench.agents._prompt import answer_schema, build_prompt
from abbench.agents._skill_tools import SKILL_TOOLS, SkillTools
from abbench.errors import AgentError, UsageError
from abbench.llm import ChatClient, ChatResponse, FailureType, RetryPolicy
from abbench.transcript import AnswerEvent, MessageEvent, ModelEvent, Retry, ToolEvent
from abbench.types import AgentOutput, Usage

RESPONSE_FORMATS = ("auto", "json_schema", "json_object", "none")
"""What the ``response_format`` setting accepts (``auto``: a JSON schema for the OpenAI API, none elsewhere).

``json_schema`` sends the answer's schema (the labels as an enum of ``prediction``) as structured
output; a server that refuses it (llama-cpp-python: HTTP 500 with a validation error) is asked again
with ``json_object`` and the same schema, which llama-cpp-python honours. ``json_object`` sends that
form directly."""

NO_TOOLS = "this arm offers no tools (it has no skill)."
"""What a tool call in a no-skill session is answered with, so the model goes on to answer."""

_SETTINGS = (
    "api_key_env",
    "base_url",
    "extra_body",
    "headers",
    "max_retries",
    "max_tokens",
    "max_turns",
    "model",
    "prices",
    "response_format",
    "retry",
    "seed",
    "stream",
    "temperature",
    "timeout_s",
)


def _response_format(setting: str, base_url: str, label_set: tuple[str, ...] | None) -> dict[str, Any] | None:
    if setting == "auto":
        setting = "json_schema" if urlsplit(base_url).hostname == "api.openai.com" else "none"
    if setting == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": answer_schema(label_set), "strict": True},
        }
    if setting == "json_object":
        # JSON mode, with the answer's schema beside it: llama-cpp-python constrains the reply with it
        # (its labels as an enum); servers that do not know the key answer in plain JSON mode
        return {"type": "json_object", "schema": answer_schema(label_set)}
    return None


class OpenAIAgent:
    """An agent on an OpenAI-compatible chat endpoint with a tool loop over the arm's skill.

    Args:
        model: The model id (required).
        base_url: The API root, e.g. ``http://127.0.0.1:8000/v1`` (default ``$OPENAI_BASE_URL`` or OpenAI).
        api_key_env: The environment variable holding the key (see `ChatClient`); never the key itself.
        temperature: Sampling temperature; None leaves the endpoint's default.
        max_turns: Model calls per run; the last one is asked to answer without tools.
        max_tokens: Output limit per call (sent as ``max_completion_tokens`` where required).
        timeout_s: Limit for one request (capped by the run's timeout).
        prices: Price overrides (see `abbench.llm.price_table`).
        headers: Extra HTTP headers (``${VAR}`` references resolved from the environment).
        response_format: One of `RESPONSE_FORMATS`.
        max_retries: Retries of one request on 429/5xx/timeouts/dropped connections.
        retry: `RetryPolicy` fields (``base_delay_s``, ``max_delay_s``, ``max_retry_after_s`` ...).
        seed: Sent to endpoints that support it.
        extra_body: More request fields (``top_p``, vendor options ...).
        stream: Ask for streamed replies (``stream: true``, with the usage chunk) and assemble them;
            a stream cut in the middle fails the run as ``stream_interrupted`` (retryable), keeping
            the text, tool calls and any usage that arrived.

    The run's model calls go through the response cache the runner hands over (``Task.cache``; the
    arm's or experiment's ``cache:``, by default on at ``temperature: 0`` and off otherwise — see
    `abbench.llm`): the output's `cost` and `usage` stay the answer's, cached calls included, while the
    attempt records what was spent and what was saved. An answer that cannot be read is dropped from
    the cache, so a retry asks again.
    """

    name = "openai"
    offers_skills: ClassVar[bool] = True

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        temperature: float | None = None,
        max_turns: int = 8,
        max_tokens: int | None = None,
        timeout_s: float = 60.0,
        prices: Any = None,
        headers: dict[str, str] | None = None,
        response_format: str = "auto",
        max_retries: int | None = None,
        retry: dict[str, Any] | RetryPolicy | None = None,
        seed: int | None = None,
        extra_body: dict[str, Any] | None = None,
        stream: bool = False,
    ):
        if not model:
            raise UsageError("the openai agent needs a model: set `model:` on the arm (e.g. gpt-4o-mini)")
        if int(max_turns) < 1:
            raise UsageError(f"max_turns must be at least 1, not {max_turns!r}")
        if response_format not in RESPONSE_FORMATS:
            raise UsageError(
                f"response_format {response_format!r} is not one of: {', '.join(RESPONSE_FORMATS)}"
            )
        policy = retry if isinstance(retry, RetryPolicy) else _retry_policy(retry, max_retries)
        self.client = ChatClient(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            timeout_s=timeout_s,
            retry=policy,
            headers=headers,
            prices=prices,
            stream=bool(stream),
        )
        self.model = self.client.model
        self.temperature = temperature
        self.max_turns = int(max_turns)
        self.max_tokens = max_tokens
        self.timeout_s = float(timeout_s)
        self.response_format = response_format
        self.seed = seed
        self.extra_body = dict(extra_body or {})

    def __repr__(self) -> str:
        return f"OpenAIAgent({self.client!r})"

    async def run(self, task: Task) -> AgentOutput:
        """Answer `task` in a fresh session: tool calls until the model answers, then parse the answer.

        Raises:
            AgentError: the endpoint failed (see `ChatClient.chat`), the answer could not be read
                (``bad_output``, with the raw text), or the model kept calling tools past
                ``max_turns`` (``max_turns``). The error carries the transcript so far.
        """
        started = time.perf_counter()
        task = agent_task(task)  # the prompt is built from the case every agent sees: no gold answer
        tools = _tools(task)
        talk = _Conversation.start(task, tools)
        response_format = _response_format(self.response_format, self.client.base_url, task.label_set)
        reply: ChatResponse | None = None
        for turn in range(1, self.max_turns + 1):
            last = turn == self.max_turns
            if last and turn > 1:
                talk.say(
                    "You have no tool calls left. Answer now with the JSON object only."
                    if tools is not None
                    else NO_TOOLS + " Answer now with the JSON object only."
                )
            reply = await self._ask(talk, task, turn, last, response_format)
            if not reply.tool_calls:
                break
            if last:
                if reply.content and reply.content.strip():
                    break  # it answered and asked for more: take the answer
                raise self._still_calling(talk)
            if isinstance(tools, OfferedTools):
                tools.turn = turn  # a load records the turn it came in
            for call in reply.tool_calls:
                ok, result = self._run_tool(tools, call.name, call.arguments)
                talk.tool_result(turn, call.id, call.name, call.arguments, ok, result)
        assert reply is not None
        answer = self._answer(talk, task, reply)
        return talk.output(answer, reply, started, structured=response_format is not None)

    async def _ask(
        self, talk: _Conversation, task: Task, turn: int, last: bool, response_format: dict[str, Any] | None
    ) -> ChatResponse:
        """One model call of the conversation, recorded; a failure keeps what a broken stream brought."""
        try:
            reply = await self.client.chat(
                talk.messages,
                **self._call_options(talk, last, response_format),
                # one request never outlives the run that waits for it
                timeout_s=task.timeout_s,
                cache=task.cache,
            )
        except AgentError as exc:
            partial = getattr(exc, "partial", None)
            if partial is not None:  # a broken stream: what arrived (and any usage) stays on record
                talk.interrupted(turn, partial)
            raise talk.failure(exc) from exc
        talk.answered(turn, reply)
        return reply

    def _call_options(
        self, talk: _Conversation, last: bool, response_format: dict[str, Any] | None
    ) -> dict[str, Any]:
        """What a model call of the conversation sends besides its messages (`first_request` shows it)."""
        return {
            "tools": _specs(talk.tools),
            "tool_choice": "none" if (last and talk.tools is not None) else None,
            "response_format": response_format,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "extra_body": self.extra_body or None,
        }

    def first_request(self, task: Task) -> dict[str, Any]:
        """The JSON body of the first model call `run` would make for `task`, without calling anything.

        Built by the same steps as `run` (the case as agents see it, the tools, the response format),
        so what ``abbench prompt`` prints is what the endpoint would receive.
        """
        task = agent_task(task)
        talk = _Conversation.start(task, _tools(task))
        response_format = _response_format(self.response_format, self.client.base_url, task.label_set)
        return self.client.request_body(
            talk.messages, **self._call_options(talk, self.max_turns == 1, response_format)
        )

    def _still_calling(self, talk: _Conversation) -> AgentError:
        advice = (
            "raise max_turns or tell it in the skill to answer sooner"
            if talk.tools is not None
            else "this arm has no skill, so it offers no tools: the model (or a proxy that adds "
            "tools) keeps asking for some; check the endpoint, or raise max_turns"
        )
        return AgentError(
            f"the model was still calling tools after max_turns={self.max_turns}; {advice}",
            FailureType.MAX_TURNS,
            retryable=False,
            transcript=tuple(talk.transcript),
            spent=talk.spent,
        )

    def _answer(self, talk: _Conversation, task: Task, reply: ChatResponse) -> Answer:
        """The answer in the last reply; one that cannot be read is dropped from the cache.

        A reply cut at ``max_tokens`` is read strictly (one whole JSON object) or fails as
        ``truncated``; an unreadable reply at temperature 0 is not retried, since the same question
        would get the same answer.
        """
        cut = reply.finish_reason == "length"
        retry = not (self.temperature is not None and self.temperature <= 0)
        try:
            return parse_answer(reply.content, task.label_set, strict=cut, retryable=retry)
        except AgentError as exc:
            if reply.cache_key is not None and task.cache is not None:
                # a retry should ask the model again, not be handed the same unreadable answer
                task.cache.cache.forget(reply.cache_key)
            why = str(exc)
            if cut:
                why = f"the reply was cut at max_tokens={self.max_tokens} before its answer was whole — raise it: {exc}"
                exc = AgentError(why, FailureType.TRUNCATED, retryable=retry, raw_output=exc.raw_output)
            if not retry:
                why += "; not retried: at temperature 0 the model would answer the same (raise the temperature to retry)"
            talk.transcript.append(AnswerEvent(format=str(exc.failure_type), error=why[:300]).to_dict())
            raise talk.failure(exc, why) from exc

    @staticmethod
    def _run_tool(tools: SkillTools | OfferedTools | None, name: str, arguments: str) -> tuple[bool, str]:
        if tools is None:
            return False, f"error: {NO_TOOLS} Answer with the JSON object only."
        try:
            args = json.loads(arguments.strip() or "{}")
        except ValueError as exc:
            return (
                False,
                f'error: the arguments are not valid JSON ({exc}); send a JSON object such as {{"ref": "SKILL.md#Rules"}}',
            )
        if not isinstance(args, dict):
            return False, "error: the arguments must be a JSON object"
        return tools.call(name, args)


@dataclass
class _Conversation:
    """One run's conversation with the model: the messages sent, the transcript, what was spent."""

    task: Task
    tools: SkillTools | OfferedTools | None
    messages: list[dict[str, Any]]
    transcript: list[dict[str, Any]]
    spent: Spending
    session_id: str
    input_tokens: int = 0
    output_tokens: int = 0
    costs: list[float | None] = field(default_factory=list)
    usage_known: bool = True

    @classmethod
    def start(cls, task: Task, tools: SkillTools | OfferedTools | None) -> _Conversation:
        prompt = build_prompt(task, tools=tools is not None)
        messages: list[dict[str, Any]] = [dict(m) for m in prompt.messages]
        transcript: list[dict[str, Any]] = [MessageEvent.of(m).to_dict() for m in messages]
        # What the attempt uses, kept as it goes: a failure or the run's timeout after some turns keeps it.
        if isinstance(tools, OfferedTools):
            spent = tools.spent  # where its loads are recorded
        else:
            spent = task.spending if task.spending is not None else Spending()
        spent.transcript = transcript
        if tools is not None:
            spent.files_read, spent.sections_read = tools.files_read, tools.sections_read
        return cls(task, tools, messages, transcript, spent, task.session_id or uuid.uuid4().hex)

    def say(self, content: str) -> None:
        """A user message (the nudge to answer)."""
        message = {"role": "user", "content": content}
        self.messages.append(message)
        self.transcript.append(MessageEvent.of(message).to_dict())

    def answered(self, turn: int, reply: ChatResponse) -> None:
        """Record a reply: its tokens and cost, the call, and its message."""
        self.input_tokens += reply.usage.input_tokens
        self.output_tokens += reply.usage.output_tokens
        # a reply without usage makes the run's tokens unknown: a sum with an unknown term is unknown
        self.usage_known = self.usage_known and reply.usage_reported
        self.costs.append(reply.cost)
        usage = reply.usage if reply.usage_reported else None
        self.spent.add_call(usage, reply.cost, reply.model, cached=reply.cached)
        self.transcript.append(_call_event(turn, reply).to_dict())
        self.messages.append(reply.message)
        self.transcript.append(MessageEvent.of(reply.message).to_dict())

    def interrupted(self, turn: int, partial: ChatResponse) -> None:
        """Record what a broken stream brought (its usage, when it reported any)."""
        self.spent.add_call(partial.usage if partial.usage_reported else None, None, partial.model)
        call = dataclasses.replace(_call_event(turn, partial), interrupted=True, cost=None)
        self.transcript.append(call.to_dict())
        self.transcript.append(MessageEvent.of(partial.message, partial=True).to_dict())

    def tool_result(self, turn: int, call_id: str, name: str, arguments: str, ok: bool, result: str) -> None:
        """Record a tool call and send its result."""
        call = ToolEvent(
            turn=turn, id=call_id, name=name, arguments=arguments, ok=ok, result_chars=len(result)
        )
        self.transcript.append(call.to_dict())
        tool_message = {"role": "tool", "tool_call_id": call_id, "content": result}
        self.messages.append(tool_message)
        self.transcript.append(MessageEvent.of({"name": name, **tool_message}).to_dict())

    def failure(self, exc: AgentError, message: str | None = None) -> AgentError:
        """`exc` with the transcript so far and what was spent."""
        return AgentError(
            message or str(exc),
            exc.failure_type,
            retryable=exc.retryable,
            raw_output=exc.raw_output,
            transcript=tuple(self.transcript),
            retry_after=exc.retry_after,
            spent=self.spent,
        )

    def output(
        self, answer: Answer, reply: ChatResponse, started: float, *, structured: bool = False
    ) -> AgentOutput:
        """The run's output: the answer, the whole transcript, the tokens and cost of every reply."""
        known = all(c is not None for c in self.costs)
        read = AnswerEvent(
            method=answer.method,
            format=answer_format(answer.method, structured=structured),
            prediction=answer.prediction,
            in_label_set=answer.in_label_set,
            cost_known=known,
        )
        self.transcript.append(read.to_dict())
        tools = self.tools
        offered = isinstance(tools, OfferedTools)
        skill = tools.skill if isinstance(tools, OfferedTools) else self.task.skill
        return AgentOutput(
            prediction=answer.prediction,
            reason=answer.reason,
            confidence=answer.confidence,
            evidence_refs=canonical_refs(answer.evidence_refs, skill),
            raw_output=reply.content,
            transcript=tuple(self.transcript),
            files_read=tuple(tools.files_read) if tools else (),
            sections_read=tuple(tools.sections_read) if tools else (),
            usage=Usage(self.input_tokens, self.output_tokens) if self.usage_known else None,
            cost=sum(c for c in self.costs if c is not None) if known else None,
            latency_ms=(time.perf_counter() - started) * 1000,
            session_id=self.session_id,
            model=reply.model,
            **(self.spent.activation() if offered else {}),
        )


def _tools(task: Task) -> SkillTools | OfferedTools | None:
    """The tools of `task`'s session: a catalogue to load from (offered), the skill's files, or none."""
    if task.offered:
        return OfferedTools(task.offered, task.spending if task.spending is not None else Spending())
    if task.skill is not None:
        return SkillTools(task.skill)
    return None


def _specs(tools: SkillTools | OfferedTools | None) -> list[dict[str, Any]] | None:
    """The tool definitions sent with each call: none without a skill, ``load_skill`` first when offered."""
    if tools is None:
        return None
    if isinstance(tools, OfferedTools):
        return tools.specs(SKILL_TOOLS)
    return list(SKILL_TOOLS)


def _call_event(turn: int, reply: ChatResponse) -> ModelEvent:
    return ModelEvent(
        turn=turn,
        model=reply.model,
        finish_reason=reply.finish_reason,
        usage=reply.usage,
        usage_reported=reply.usage_reported,
        cost=reply.cost,
        latency_ms=round(reply.latency_ms, 1),
        streamed=reply.streamed,
        chunks=reply.chunks,
        cached=reply.cached,
        retries=tuple(
            Retry(
                attempt=r.attempt,
                failure_type=r.failure_type,
                status=r.status,
                message=r.message,
                wait_s=round(r.wait_s, 3),
            )
            for r in reply.retries
        ),
    )


def _retry_policy(retry: dict[str, Any] | None, max_retries: int | None) -> RetryPolicy:
    fields = dict(retry or {})
    if max_retries is not None:
        fields["max_retries"] = max_retries
    valid = set(RetryPolicy.__dataclass_fields__)
    unknown = sorted(set(fields) - valid)
    if unknown:
        raise UsageError(f"unknown retry setting(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}")
    return RetryPolicy(**fields)


@register_agent("openai")
def openai_agent(**settings: Any) -> OpenAIAgent:
    """Build the ``openai`` adapter from an arm's settings (see `OpenAIAgent` for each one).

    Raises:
        UsageError: a setting is unknown (the message lists the valid ones) or invalid.
    """
    check_settings("openai", settings, _SETTINGS)
    return OpenAIAgent(**settings)
