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
        "_data",
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
        self._data: list[bytes] = []
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
        lines = buf.split(b"\n")
        self._buf = lines.pop()  # the unfinished last line waits for the next piece
        pending = self._data
        for line in lines:
            if line.startswith(b"data:"):
                pending.append(line[5:])
            elif not line or line == b"\r":
                if pending:
                    self._event(pending)
                    pending = self._data = []
            elif line.startswith(b":"):
                self.comments += 1
            # "event:", "id:" and "retry:" fields carry nothing a chat completion needs

    def close(self) -> None:
        """The body ended: an event without its closing blank line still counts."""
        if self._buf.startswith(b"data:"):
            self._data.append(self._buf[5:])
        self._buf = b""
        if self._data:
            self._event(self._data)
            self._data = []

    def _event(self, parts: list[bytes]) -> None:
        payload = parts[0] if len(parts) == 1 else b"\n".join(p[1:] if p[:1] == b" " else p for p in parts)
        payload = payload.strip()
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(payload)
        except ValueError:
            raise StreamError(f"a streamed event is not JSON: {payload[:200]!r}") from None
        if not isinstance(chunk, dict):
            raise StreamError(f"a streamed event is not a JSON object: {payload[:200]!r}")
        self.chunks += 1
        if "error" in chunk and not chunk.get("choices"):
            raise StreamError("the server streamed an error", chunk["error"])
        model = chunk.get("model")
        if model:
            self.model = model
        usage = chunk.get("usage")
        if usage:
            self.usage = usage
        choices = chunk.get("choices")
        if not choices:
            return
        choice = choices[0]
        delta = choice.get("delta")
        if delta:
            text = delta.get("content")
            if text:
                if not isinstance(text, str):  # content parts, as a few servers send them
                    text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
                self._text.append(text)
            calls = delta.get("tool_calls")
            if calls:
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
        reason = choice.get("finish_reason")
        if reason:
            self.finish_reason = reason

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
