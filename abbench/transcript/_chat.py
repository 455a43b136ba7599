"""The events of a model session: messages, model calls, tool calls, the answer, an offered catalogue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from abbench.transcript._fields import (
    _dicts,
    _fields_of,
    _flag,
    _get,
    _given,
    _int,
    _number,
    _or,
    _text,
    _texts,
    _usage,
    _usage_dict,
)
from abbench.types import Usage

_NOTHING: Mapping[str, Any] = MappingProxyType({})
"""No extra keys (one shared, read-only empty mapping)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageEvent:
    """A chat message of the session (OpenAI's shape): the prompt, each reply, each tool result.

    Attributes:
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        content: Its text (None or ``""`` beside tool calls; a list of parts for some servers).
        name: The tool whose result a ``tool`` message carries.
        tool_call_id: The call a ``tool`` message answers.
        tool_calls: The calls an assistant message asked for, as sent (``{id, type, function}``).
        partial: What a broken stream brought before it broke.
        extra: Any other key of the message, kept as it was.
    """

    kind: ClassVar[str] = "message"
    role: str | None = None
    content: Any = None
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: tuple[Mapping[str, Any], ...] | None = None
    partial: bool = False
    extra: Mapping[str, Any] = field(default_factory=lambda: _NOTHING)

    _KEYS: ClassVar[frozenset[str]] = frozenset(
        ("type", "role", "content", "name", "tool_call_id", "tool_calls", "partial")
    )

    @classmethod
    def of(cls, message: Mapping[str, Any], *, partial: bool = False) -> MessageEvent:
        """The event for an OpenAI message dict (as sent to or received from the model)."""
        return cls.from_dict({**message, "partial": partial})

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written: ``type``, ``name``, ``role``, ``tool_call_id``, ``content``,
        ``tool_calls``, the extra keys, ``partial`` (each optional one only when set)."""
        out = {
            "type": self.kind,
            **_given(name=self.name, role=self.role, tool_call_id=self.tool_call_id),
            "content": self.content,
        }
        if self.tool_calls is not None:
            out["tool_calls"] = [dict(c) for c in self.tool_calls]
        out.update(self.extra)
        if self.partial:
            out["partial"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MessageEvent:
        """Read a ``message`` entry (raises `_Bad` naming the key that does not fit)."""
        calls = _dicts(data, "tool_calls", "a list of calls")
        return cls(
            role=_text(data, "role"),
            content=data.get("content"),
            name=_text(data, "name"),
            tool_call_id=_text(data, "tool_call_id"),
            tool_calls=None if calls is None else tuple(calls),
            partial=bool(_flag(data, "partial")),
            extra=_NOTHING
            if data.keys() <= cls._KEYS
            else {k: v for k, v in data.items() if k not in cls._KEYS},
        )

    def as_message(self) -> dict[str, Any]:
        """The OpenAI message dict (without ``type`` and ``partial``): what the model was sent."""
        out = self.to_dict()
        out.pop("type")
        out.pop("partial", None)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Retry:
    """One failed try of a model call that was tried again."""

    attempt: int
    failure_type: str | None = None
    status: int | None = None
    message: str | None = None
    wait_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written inside its call's ``retries``: every field."""
        return _fields_of(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Retry:
        """Read one entry of a call's ``retries``."""
        return cls(
            attempt=_int(data, "attempt") or 0,
            failure_type=_text(data, "failure_type"),
            status=_int(data, "status"),
            message=_text(data, "message"),
            wait_s=_or(_number(data, "wait_s"), 0.0),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelEvent:
    """One model call (``llm_call``): its model, tokens, cost, time and retries.

    A call that was made has a `latency_ms`, and then its cost (None: unknown), whether it streamed
    and its retries are written too; the builtin agent's estimate of a call has neither.

    Attributes:
        turn: The turn of the tool loop, from 1.
        model: The model that answered.
        finish_reason: Why the reply ended (``stop``, ``tool_calls``, ``length``...).
        usage: Its tokens (estimated when `usage_reported` is False).
        usage_reported: Whether the endpoint reported the tokens.
        cost: What it cost (None: unknown, never 0).
        latency_ms: How long it took (None: no call was made).
        streamed: Whether it was streamed; `chunks` how many chunks came.
        cached: Answered from the response cache.
        retries: The tries that failed before it.
        interrupted: The stream broke before the reply was whole.
    """

    kind: ClassVar[str] = "llm_call"
    turn: int | None = None
    model: str | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    usage_reported: bool = False
    cost: float | None = None
    latency_ms: float | None = None
    streamed: bool = False
    chunks: int = 0
    cached: bool = False
    retries: tuple[Retry, ...] = ()
    interrupted: bool = False

    @property
    def made(self) -> bool:
        """A model was called (False for the builtin agent's estimate)."""
        return self.latency_ms is not None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written."""
        out: dict[str, Any] = {
            "type": self.kind,
            "turn": self.turn,
            "model": self.model,
            "finish_reason": self.finish_reason,
            "usage": _usage_dict(self.usage),
            "usage_reported": self.usage_reported,
        }
        if self.made:
            out["cost"] = self.cost
            out["latency_ms"] = self.latency_ms
            out["streamed"] = self.streamed
            out["chunks"] = self.chunks
            if self.cached:
                out["cached"] = True
            out["retries"] = [r.to_dict() for r in self.retries]
        if self.interrupted:
            out["interrupted"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelEvent:
        """Read an ``llm_call`` entry."""
        retries = _dicts(data, "retries", "a list of retries") or []
        return cls(
            turn=_int(data, "turn"),
            model=_text(data, "model"),
            finish_reason=_text(data, "finish_reason"),
            usage=_usage(data, "usage"),
            usage_reported=bool(_flag(data, "usage_reported")),
            cost=_number(data, "cost"),
            latency_ms=_number(data, "latency_ms"),
            streamed=bool(_flag(data, "streamed")),
            chunks=_int(data, "chunks") or 0,
            cached=bool(_flag(data, "cached")),
            retries=tuple(Retry.from_dict(r) for r in retries),
            interrupted=bool(_flag(data, "interrupted")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolEvent:
    """One tool call (``tool_call``): its name, arguments and how it went.

    A call abbench ran itself says whether it succeeded (`ok`) and how long its result was; a call a
    CLI reported says the CLI's word for it (`status`, written even when the CLI gave none).

    Attributes:
        name: The tool.
        arguments: Its arguments (a JSON text as the model sent them, or the CLI's object).
        turn: The turn that asked for it; `id` the call's id.
        ok: Whether it succeeded; `result_chars` the length of its result.
        status: A CLI's status for it (``completed``, ``error``...).
        skill: The skill a ``load_skill`` call loaded.
    """

    kind: ClassVar[str] = "tool_call"
    name: str | None
    arguments: Any = None
    turn: int | None = None
    id: str | None = None
    ok: bool | None = None
    result_chars: int | None = None
    status: str | None = None
    skill: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written."""
        out = {
            "type": self.kind,
            **_given(turn=self.turn, id=self.id),
            "name": self.name,
            "arguments": self.arguments,
            **_given(ok=self.ok, result_chars=self.result_chars),
        }
        if self.ok is None:
            out["status"] = self.status
        if self.skill is not None:
            out["skill"] = self.skill
        return out

    def reported(self) -> dict[str, Any]:
        """The call as a CLI report lists it: ``{name, arguments, status}``."""
        return {"name": self.name, "arguments": self.arguments, "status": self.status}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolEvent:
        """Read a ``tool_call`` entry (or a CLI report's call)."""
        return cls(
            name=_text(data, "name"),
            arguments=data.get("arguments"),
            turn=_int(data, "turn"),
            id=_text(data, "id"),
            ok=_flag(data, "ok"),
            result_chars=_int(data, "result_chars"),
            status=_text(data, "status"),
            skill=_text(data, "skill"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerEvent:
    """How the session's answer was read (``answer``), or why none could be.

    Attributes:
        method: How it was read (``json``, ``key_value``, ``regex``...); None when it could not be.
        format: The answer format (``strict``, ``structured``, ``fallback``), or the failure that left
            none (``bad_output``, ``truncated``).
        prediction: The answer read (written whenever `method` is).
        in_label_set: Whether it is one of the dataset's labels.
        cost_known: Whether every call's cost was known.
        error: Why no answer could be read.
    """

    kind: ClassVar[str] = "answer"
    method: str | None = None
    format: str | None = None
    prediction: Any = None
    in_label_set: bool | None = None
    cost_known: bool | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written."""
        out = {"type": self.kind, **_given(method=self.method, format=self.format)}
        if self.method is not None:
            out["prediction"] = self.prediction
        return out | _given(in_label_set=self.in_label_set, cost_known=self.cost_known, error=self.error)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnswerEvent:
        """Read an ``answer`` entry."""
        return cls(
            method=_text(data, "method"),
            format=_text(data, "format"),
            prediction=data.get("prediction"),
            in_label_set=_flag(data, "in_label_set"),
            cost_known=_flag(data, "cost_known"),
            error=_text(data, "error"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogueEvent:
    """The skills an offered arm showed (``catalogue``), each one's share of the case's words."""

    kind: ClassVar[str] = "catalogue"
    skills: tuple[str, ...]
    coverage: Mapping[str, float]
    threshold: float
    content: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written."""
        return {
            "type": self.kind,
            "skills": list(self.skills),
            "coverage": dict(self.coverage),
            "threshold": self.threshold,
            "content": self.content,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CatalogueEvent:
        """Read a ``catalogue`` entry."""
        return cls(
            skills=_texts(data, "skills"),
            coverage=_get(data, "coverage", dict, "a map of skill to share") or {},
            threshold=_or(_number(data, "threshold"), 0.0),
            content=_text(data, "content") or "",
        )
