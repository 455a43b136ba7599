"""The events of a command agent's process, an external tool's verdict, and what abbench does not type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from abbench.transcript._chat import ToolEvent
from abbench.transcript._fields import (
    VERDICT_ROLE,
    _dicts,
    _fields_of,
    _flag,
    _int,
    _number,
    _or,
    _text,
    _texts,
    _usage,
    _usage_dict,
)
from abbench.types import Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandEvent:
    """A command agent's process as started (``command``): argv, workspace, the names of its env."""

    kind: ClassVar[str] = "command"
    argv: tuple[str, ...]
    workspace: str
    stdin: str | None
    env: tuple[str, ...]
    timeout_s: float | None
    preset: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written (``env`` holds names only: values may be keys)."""
        out: dict[str, Any] = {
            "type": self.kind,
            "argv": list(self.argv),
            "workspace": self.workspace,
            "stdin": self.stdin,
            "env": list(self.env),
            "timeout_s": self.timeout_s,
        }
        if self.preset is not None:
            out["preset"] = self.preset
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CommandEvent:
        """Read a ``command`` entry."""
        return cls(
            argv=_texts(data, "argv"),
            workspace=_text(data, "workspace") or "",
            stdin=_text(data, "stdin"),
            env=_texts(data, "env"),
            timeout_s=_number(data, "timeout_s"),
            preset=_text(data, "preset"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessEvent:
    """How a command agent's process ended (``process``)."""

    kind: ClassVar[str] = "process"
    returncode: int | None
    timed_out: bool
    duration_ms: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written: ``type``, then every field."""
        return _fields_of(self, type=self.kind)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProcessEvent:
        """Read a ``process`` entry."""
        return cls(
            returncode=_int(data, "returncode"),
            timed_out=bool(_flag(data, "timed_out")),
            duration_ms=_or(_number(data, "duration_ms"), 0.0),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputEvent:
    """What a command agent printed on one stream (``stdout`` or ``stderr``, its keys redacted)."""

    stream: Literal["stdout", "stderr"]
    text: str

    @property
    def kind(self) -> str:
        """The stream's name, which is the entry's ``type``."""
        return self.stream

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written."""
        return {"type": self.stream, "text": self.text}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OutputEvent:
        """Read a ``stdout`` or ``stderr`` entry."""
        stream: Literal["stdout", "stderr"] = "stderr" if data.get("type") == "stderr" else "stdout"
        return cls(stream=stream, text=_text(data, "text") or "")


@dataclass(frozen=True, slots=True, kw_only=True)
class CliReportEvent:
    """What a preset CLI reported about its session (``cli_report``), or why it could not be read.

    Attributes:
        preset: The preset that read it.
        unreadable: The reader's failure; when set, nothing else was read.
        session_id, model, usage, cost, steps: The session, its model, tokens, cost and model calls.
        tool_calls: The calls it reported (each also a `ToolEvent` of the transcript).
        files_read: The skill's files it read.
        error: The error the CLI reported (its own shape).
    """

    kind: ClassVar[str] = "cli_report"
    preset: str
    unreadable: str | None = None
    session_id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    cost: float | None = None
    steps: int = 0
    tool_calls: tuple[ToolEvent, ...] = ()
    files_read: tuple[str, ...] = ()
    error: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written."""
        if self.unreadable is not None:
            return {"type": self.kind, "preset": self.preset, "unreadable": self.unreadable}
        return {
            "type": self.kind,
            "preset": self.preset,
            "session_id": self.session_id,
            "model": self.model,
            "usage": _usage_dict(self.usage),
            "cost": self.cost,
            "steps": self.steps,
            "tool_calls": [c.reported() for c in self.tool_calls],
            "files_read": list(self.files_read),
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CliReportEvent:
        """Read a ``cli_report`` entry."""
        calls = _dicts(data, "tool_calls", "a list of calls") or []
        return cls(
            preset=_text(data, "preset") or "",
            unreadable=_text(data, "unreadable"),
            session_id=_text(data, "session_id"),
            model=_text(data, "model"),
            usage=_usage(data, "usage"),
            cost=_number(data, "cost"),
            steps=_int(data, "steps") or 0,
            tool_calls=tuple(ToolEvent.from_dict(c) for c in calls),
            files_read=_texts(data, "files_read"),
            error=data.get("error"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictEvent:
    """An external tool's verdict on the run, recorded with it (role ``verdict``, no ``type``)."""

    kind: ClassVar[str] = "verdict"
    grader: str
    passed: bool | None = None
    score: float | None = None
    comment: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written: ``role``, then every field."""
        return _fields_of(self, role=VERDICT_ROLE)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VerdictEvent:
        """Read a verdict entry."""
        return cls(
            grader=str(data.get("grader") or ""),
            passed=_flag(data, "passed"),
            score=_number(data, "score"),
            comment=_text(data, "comment"),
        )


@dataclass(frozen=True, slots=True)
class OtherEvent:
    """An entry abbench does not type, kept as it was: a custom agent's own entry, an external
    tool's message (``{"role", "content"}``, Claude Code's stream JSON), or a kind this version does
    not know. `known` is False, so a reader can tell it from the typed events."""

    data: Any
    known: ClassVar[bool] = False

    @property
    def kind(self) -> str | None:
        """The entry's ``type`` when it names one."""
        value = self.data.get("type") if isinstance(self.data, dict) else None
        return value if isinstance(value, str) else None

    def to_dict(self) -> Any:
        """The entry as it was (a dict, or whatever JSON value it is)."""
        return self.data


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A line of a transcript file that is not JSON, kept by `read_transcript(errors="keep")` for a
    view to show beside the rest (never written)."""

    line: int
    text: str
    problem: str
    known: ClassVar[bool] = False
    kind: ClassVar[str] = "unreadable"

    def to_dict(self) -> dict[str, Any]:
        """A record of it, for a view."""
        return {"type": self.kind, "line": self.line, "text": self.text, "problem": self.problem}
