"""Reading a transcript: one entry, an in-memory list, or a file, into typed events; and the tool calls."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from abbench.errors import TranscriptError
from abbench.transcript._chat import AnswerEvent, CatalogueEvent, MessageEvent, ModelEvent, ToolEvent
from abbench.transcript._fields import VERDICT_ROLE, _Bad, _shown
from abbench.transcript._process import (
    CliReportEvent,
    CommandEvent,
    OtherEvent,
    OutputEvent,
    ProcessEvent,
    Unreadable,
    VerdictEvent,
)

_T = TypeVar("_T")


Event = (
    MessageEvent
    | ModelEvent
    | ToolEvent
    | AnswerEvent
    | CatalogueEvent
    | CommandEvent
    | ProcessEvent
    | OutputEvent
    | CliReportEvent
    | VerdictEvent
    | OtherEvent
    | Unreadable
)
"""One entry of a transcript, typed."""

READERS: dict[str, Callable[[Mapping[str, Any]], Event]] = {
    "message": MessageEvent.from_dict,
    "llm_call": ModelEvent.from_dict,
    "tool_call": ToolEvent.from_dict,
    "answer": AnswerEvent.from_dict,
    "catalogue": CatalogueEvent.from_dict,
    "command": CommandEvent.from_dict,
    "process": ProcessEvent.from_dict,
    "stdout": OutputEvent.from_dict,
    "stderr": OutputEvent.from_dict,
    "cli_report": CliReportEvent.from_dict,
}
"""Each ``type`` abbench writes, and how its entry is read."""


def event_from_dict(data: Any, *, where: str = "a transcript entry") -> Event:
    """The typed event for one transcript entry (`OtherEvent` for one abbench does not type).

    Raises:
        TranscriptError: the entry names a kind abbench writes but does not fit it (which key, and why).
    """
    if not isinstance(data, dict):
        return OtherEvent(data)
    kind = data.get("type")
    try:
        if isinstance(kind, str) and kind in READERS:
            return READERS[kind](data)
        if kind is None and data.get("role") == VERDICT_ROLE:
            return VerdictEvent.from_dict(data)
    except _Bad as exc:
        what = f"a {kind!r} event" if kind else "a verdict"
        raise TranscriptError(
            f"{where} is {what} that does not fit: {exc}; it was not written by this abbench's agents — "
            "fix the agent or tool that wrote it",
            field=exc.key,
        ) from None
    return OtherEvent(data)


def to_events(entries: Iterable[Any], *, errors: Literal["raise", "keep"] = "raise") -> tuple[Event, ...]:
    """An in-memory transcript (an `AgentOutput.transcript`, dicts) as typed events.

    Args:
        entries: The transcript's entries (typed events pass through).
        errors: ``raise`` (default) on an entry that names a kind it does not fit; ``keep`` keeps it
            as an `OtherEvent`, as it was (what the runner's bookkeeping wants of a custom agent's entries).

    Raises:
        TranscriptError: an entry that does not fit its kind, with its place (``line`` counts entries).
    """
    events: list[Event] = []
    for n, entry in enumerate(entries, start=1):
        if _is_event(entry):
            events.append(entry)
            continue
        try:
            events.append(event_from_dict(entry, where=f"transcript entry {n}"))
        except TranscriptError as exc:
            if errors == "keep":
                events.append(OtherEvent(entry))
                continue
            exc.line = n
            raise
    return tuple(events)


def to_dicts(events: Iterable[Event]) -> tuple[Any, ...]:
    """Typed events as the JSON values written, one per line."""
    return tuple(e.to_dict() for e in events)


def _is_event(value: Any) -> bool:
    return isinstance(value, _EVENT_TYPES)


_EVENT_TYPES = (
    MessageEvent,
    ModelEvent,
    ToolEvent,
    AnswerEvent,
    CatalogueEvent,
    CommandEvent,
    ProcessEvent,
    OutputEvent,
    CliReportEvent,
    VerdictEvent,
    OtherEvent,
    Unreadable,
)


@dataclass(frozen=True, slots=True)
class Transcript:
    """A transcript file read as typed events (iterate it for the events).

    Attributes:
        path: The file.
        events: Its events, in order.
        cut_at: The number of characters it was cut at (None: read whole).
    """

    path: Path
    events: tuple[Event, ...]
    cut_at: int | None = None

    def __iter__(self) -> Iterator[Event]:
        """Its events, in order."""
        return iter(self.events)

    def __len__(self) -> int:
        """How many events it holds."""
        return len(self.events)

    def of_type(self, cls: type[_T]) -> list[_T]:
        """The events of one class, in order (``t.of_type(ToolEvent)``)."""
        return [e for e in self.events if isinstance(e, cls)]


def read_transcript(
    path: str | Path,
    *,
    strict: bool = False,
    errors: Literal["raise", "keep"] = "raise",
    max_chars: int | None = None,
) -> Transcript:
    """Read a transcript file (JSON lines, UTF-8) into typed events.

    Args:
        path: The file (a run's `transcript_path`).
        strict: Refuse entries abbench does not type (`OtherEvent`) instead of keeping them.
        errors: ``raise`` (default) on a line that is not JSON, or that names a kind it does not fit;
            ``keep`` keeps it as an `Unreadable` (what a view wants: show the rest, and say where).
        max_chars: Stop after this many characters (a view's bound); `Transcript.cut_at` says so.

    Raises:
        TranscriptError: naming the file, the line (and column) and what to do.
        OSError: the file cannot be read.
    """
    path = Path(path)
    events: list[Event] = []
    size = 0
    with path.open(encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            size += len(line)
            if max_chars is not None and size > max_chars:
                return Transcript(path, tuple(events), max_chars)
            event = _read_line(path, number, line, strict=strict, keep=errors == "keep")
            events.append(event)
    return Transcript(path, tuple(events))


def _read_line(path: Path, number: int, line: str, *, strict: bool, keep: bool) -> Event:
    where = f"{path}, line {number}"
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:
        problem = (
            f"not JSON ({exc.msg}, column {exc.colno})"
            if isinstance(exc, json.JSONDecodeError)
            else "not JSON abbench can read (nested too deep)"
            if isinstance(exc, RecursionError)
            else f"not JSON ({exc})"
        )
        if keep:
            return Unreadable(number, line.rstrip("\n"), problem)
        raise TranscriptError(
            f"{where} is {problem}: a transcript holds one JSON object a line; the file was damaged or "
            "not written by abbench — restore it, or re-run the run",
            path=str(path),
            line=number,
        ) from None
    try:
        event = event_from_dict(data, where=where)
    except TranscriptError as exc:
        if keep:
            return Unreadable(number, line.rstrip("\n"), str(exc))
        exc.path, exc.line = str(path), number
        raise
    if strict and isinstance(event, OtherEvent):
        kind = f"kind {event.kind!r}" if event.kind else f"an entry without a known `type` ({_shown(data)})"
        raise TranscriptError(
            f"{where} holds {kind}, which abbench does not write (it writes: "
            f"{', '.join(sorted((*READERS, VERDICT_ROLE)))}); read it with strict=False to keep it as is",
            path=str(path),
            line=number,
            field="type",
        )
    return event


# -- what graders and views read from the events -----------------------------------------------------------


def tool_calls(events: Iterable[Event]) -> list[ToolEvent]:
    """The tool calls a transcript records, each once, in order.

    Reads abbench's `ToolEvent`s, the calls an assistant `MessageEvent` asked for, and in entries
    abbench does not type: OpenAI-style messages (``tool_calls``), ``function_call`` entries and
    Anthropic-style ``tool_use`` content blocks (Claude Code's stream JSON nests them in ``message``).
    A call recorded in two of these forms (same id) counts once. A CLI report's list of calls is a
    summary of its `ToolEvent`s, never counted again.
    """
    calls: list[ToolEvent] = []
    seen: set[str] = set()

    def add(call_id: Any, name: Any, arguments: Any, event: ToolEvent | None = None) -> None:
        if call_id is not None:
            if str(call_id) in seen:
                return
            seen.add(str(call_id))
        ident = None if call_id is None else str(call_id)
        calls.append(event or ToolEvent(name=str(name or ""), arguments=arguments, id=ident))

    for e in events:
        if isinstance(e, ToolEvent):
            add(e.id, e.name, e.arguments, e)
        elif isinstance(e, MessageEvent):
            _foreign_calls(e.to_dict(), add)
        elif isinstance(e, OtherEvent) and isinstance(e.data, dict):
            _foreign_calls(e.data, add)
    return calls


def _message_calls(requested: Iterable[Any], add: Callable[..., None]) -> None:
    for call in requested:
        if isinstance(call, dict):
            fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
            add(call.get("id"), fn.get("name"), fn.get("arguments"))


def _foreign_calls(entry: dict[str, Any], add: Callable[..., None]) -> None:
    message: dict[str, Any] = entry["message"] if isinstance(entry.get("message"), dict) else entry
    _message_calls(message.get("tool_calls") or (), add)
    if entry.get("type") == "function_call" and "name" in entry:
        add(entry.get("id") or entry.get("call_id"), entry.get("name"), entry.get("arguments"))
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                add(block.get("id"), block.get("name"), block.get("input"))


def requested_calls(entries: Iterable[Event | Any]) -> int:
    """How many tool calls the session's messages asked for (an assistant message's ``tool_calls``,
    a CLI report's calls, an untyped entry's ``tool_calls``): the count a run's summary keeps.

    `entries` are typed events or the JSON objects written for them: the runner counts every run's
    calls as it records it, so it reads the written form without building the events (the same keys;
    tests/transcript checks both give the same count).
    """
    count = 0
    for e in entries:
        if isinstance(e, MessageEvent | CliReportEvent):
            count += len(e.tool_calls or ())
            continue
        data = e.data if isinstance(e, OtherEvent) else e
        if isinstance(data, dict):
            calls = data.get("tool_calls")
            count += len(calls) if isinstance(calls, list | tuple | dict | str) else 0
    return count


def last_answer(entries: Sequence[Event | Any]) -> AnswerEvent | None:
    """The session's last `AnswerEvent` (how its answer was read, or why not); None when it has none
    or the last one does not fit its kind. `entries` as `requested_calls` takes them."""
    for e in reversed(entries):
        if isinstance(e, AnswerEvent):
            return e
        if isinstance(e, dict) and e.get("type") == AnswerEvent.kind:
            try:
                return AnswerEvent.from_dict(e)
            except _Bad:
                return None
    return None
