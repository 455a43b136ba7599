"""Reading a streamed chat completion: server-sent events in, one assembled reply out.

`StreamAssembler` takes the body of a ``stream: true`` response in whatever pieces the network
delivers (an event may be split anywhere, a piece may hold many events), and assembles what the
``chat.completion.chunk`` objects say: the text deltas, each tool call's id, name and arguments by
their ``index`` (arguments arrive split over many chunks), the finish reason, the model, and the
usage chunk that ``stream_options.include_usage`` asks for. SSE comments (``: keep-alive``) are
counted and skipped; ``data: [DONE]`` ends the stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import from_json

# A chunk is a few hundred bytes of JSON and a reply thousands of chunks: pydantic's Rust parser
# (pydantic is a dependency anyway) reads them several times faster than the json module, and
# interning the few strings chunks repeat (keys, ids, the model) saves most of the allocation.


def _loads(payload: bytes) -> Any:
    return from_json(payload, cache_strings="all")


class StreamError(ValueError):
    """A data event that is not a chunk (not JSON, not an object), or an error the server streamed."""

    def __init__(self, message: str, error: Any = None):
        super().__init__(message)
        self.error = error


@dataclass
class _Call:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAssembler:
    """Assembles one streamed chat completion from its raw SSE bytes.

    Attributes:
        done: ``data: [DONE]`` arrived.
        chunks: Data events read (``[DONE]`` not counted).
        comments: SSE comment lines (keep-alives) skipped.
        model: The model the chunks name (the last non-empty one).
        finish_reason: The first choice's finish reason, once it came.
        usage: The usage object of the usage chunk, when one came.
        bytes_read: Bytes fed so far.
    """

    __slots__ = (
        "_buf",
        "_calls",
        "_text",
        "bytes_read",
        "chunks",
        "comments",
        "done",
        "finish_reason",
        "model",
        "usage",
    )

    def __init__(self) -> None:
        self._buf = b""
        self._text: list[str] = []
        self._calls: dict[int, _Call] = {}
        self.done = False
        self.chunks = 0
        self.comments = 0
        self.model: str | None = None
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.bytes_read = 0

    # -- input ------------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Take the next piece of the body (any size, split anywhere).

        Raises:
            StreamError: a data event is not a JSON object, or is an error object.
        """
        self.bytes_read += len(data)
        buf = self._buf + data if self._buf else data
        if b"\r" in buf:
            if buf.endswith(b"\r"):  # a CRLF may be split between two pieces
                self._buf = buf
                return
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        events = buf.split(b"\n\n")  # events end with a blank line
        self._buf = events.pop()  # the unfinished last one waits for the next piece
        for event in events:
            if event.startswith(b"data: ") and b"\n" not in event:
                self._event(event[6:])  # the usual shape: one data line
            elif event:
                self._lines(event.split(b"\n"))

    def _lines(self, lines: list[bytes]) -> None:
        """An event of several lines: data lines are joined with newlines; comments are counted."""
        data = []
        for line in lines:
            if line.startswith(b"data:"):
                data.append(line[6:] if line[5:6] == b" " else line[5:])
            elif line.startswith(b":"):
                self.comments += 1
            # "event:", "id:" and "retry:" fields carry nothing a chat completion needs
        if data:
            self._event(b"\n".join(data))

    def close(self) -> None:
        """The body ended: an event without its closing blank line still counts."""
        rest, self._buf = self._buf, b""
        if rest.strip():
            self._lines(rest.replace(b"\r\n", b"\n").split(b"\n"))

    def _event(self, payload: bytes) -> None:
        if payload[:1] != b"{":
            payload = payload.strip()
            if payload == b"[DONE]":
                self.done = True
                return
        try:
            chunk = _loads(payload)
        except ValueError:
            raise StreamError(f"a streamed event is not JSON: {payload[:200]!r}") from None
        if type(chunk) is not dict:
            raise StreamError(f"a streamed event is not a JSON object: {payload[:200]!r}")
        self.chunks += 1
        choices = chunk.get("choices")
        if not choices:
            if "error" in chunk:
                raise StreamError("the server streamed an error", chunk["error"])
            if chunk.get("usage"):
                self.usage = chunk["usage"]
            if chunk.get("model"):
                self.model = chunk["model"]
            return
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        model = chunk.get("model")
        if model and model != self.model:
            self.model = model
        choice = choices[0]
        delta = choice.get("delta")
        if delta:
            text = delta.get("content")
            if text:
                if type(text) is not str:  # content parts, as a few servers send them
                    text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
                self._text.append(text)
            calls = delta.get("tool_calls")
            if calls:
                self._tool_deltas(calls)
        reason = choice.get("finish_reason")
        if reason:
            self.finish_reason = reason

    def _tool_deltas(self, calls: list[Any]) -> None:
        for n, part in enumerate(calls):
            index = part.get("index", n)
            call = self._calls.get(index)
            if call is None:
                call = self._calls[index] = _Call()
            if part.get("id"):
                call.id = part["id"]
            fn = part.get("function")
            if fn:
                if fn.get("name"):
                    call.name += fn["name"]
                args = fn.get("arguments")
                if args:
                    call.arguments.append(args if isinstance(args, str) else json.dumps(args))

    # -- output -----------------------------------------------------------------------------------

    @property
    def content(self) -> str | None:
        """The text so far (None when no text delta came)."""
        return "".join(self._text) if self._text else None

    @property
    def tool_calls(self) -> list[tuple[str | None, str, str]]:
        """``(id, name, arguments)`` of each tool call so far, in index order."""
        return [(c.id, c.name, "".join(c.arguments)) for _, c in sorted(self._calls.items())]

    @property
    def complete(self) -> bool:
        """The stream said it was finished: ``[DONE]``, or a finish reason before the body ended."""
        return self.done or self.finish_reason is not None

    def as_completion(self) -> dict[str, Any]:
        """What arrived, as the non-streamed ``chat.completion`` body it stands for."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        calls = self.tool_calls
        if calls:
            message["tool_calls"] = [
                {"id": cid or f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
                for i, (cid, name, args) in enumerate(calls)
            ]
        body: dict[str, Any] = {
            "object": "chat.completion",
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        if self.usage is not None:
            body["usage"] = self.usage
        return body
