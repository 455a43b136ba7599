"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for tests and offline demos.

`ScriptedOpenAIServer` speaks just enough of the chat-completions protocol for agents and judges to
be exercised over real HTTP: every request takes the next scripted `Reply` (or asks a callable for
one), and the server records what it received so tests can assert on it.

    with ScriptedOpenAIServer([Reply.tools(("read_section", {"ref": "SKILL.md#Rules"})),
                               '{"prediction": "fast"}']) as server:
        agent = make_agent("openai", model="scripted", base_url=server.base_url)
        ...
        assert server.requests[0].body["tools"]

It uses only the standard library and runs in a background thread, so synchronous and asynchronous
tests use it alike.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reply:
    """One scripted answer of the server. Build it with the class methods; a plain string is `Reply.text`.

    Attributes:
        content: The assistant message text (None for a pure tool-call message).
        tool_calls: ``(name, arguments)`` pairs or ``{"name", "arguments", "id"}`` dicts; arguments may
            be a dict (sent as JSON) or a string (sent verbatim, so malformed arguments can be scripted).
        status: HTTP status code.
        headers: Extra response headers (``Retry-After`` ...).
        delay_s: Seconds to wait before answering (to provoke client timeouts).
        body: Sent verbatim instead of a completion (a dict is sent as JSON) — for errors and malformed replies.
        usage: ``(prompt_tokens, completion_tokens)``; None estimates them from the text (about 4
            characters a token), so tests get non-zero, deterministic counts.
        include_usage: False leaves the ``usage`` object out, as some servers do.
        model: The model the reply claims to come from (default: the one requested).
        finish_reason: Default ``"tool_calls"`` when there are tool calls, else ``"stop"``.
        disconnect: Close the connection without answering (a connection error for the client).
        chunk_chars: When the request asks to stream: characters of text, and of each tool call's
            arguments, per SSE chunk (so a tool call arrives split over many chunks).
        keepalive: When streaming, send an SSE comment (``: keep-alive``) before every chunk.
        cut_after: When streaming, drop the connection after this many data chunks, before the
            finish, the usage and ``[DONE]`` (a stream cut in the middle).
        chunk_delay_s: When streaming, seconds between chunks.
    """

    content: str | None = None
    tool_calls: tuple[Any, ...] = ()
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    body: Any = None
    usage: tuple[int, int] | None = None
    include_usage: bool = True
    model: str | None = None
    finish_reason: str | None = None
    disconnect: bool = False
    chunk_chars: int = 8
    keepalive: bool = False
    cut_after: int | None = None
    chunk_delay_s: float = 0.0

    @classmethod
    def text(
        cls, content: str, *, usage: tuple[int, int] | None = None, delay_s: float = 0.0, **kw: Any
    ) -> Reply:
        """An assistant message with `content` (``""`` scripts an empty reply)."""
        return cls(content=content, usage=usage, delay_s=delay_s, **kw)

    @classmethod
    def tools(cls, *calls: Any, content: str | None = None, **kw: Any) -> Reply:
        """An assistant message asking for tool calls: ``Reply.tools(("read_file", {"path": "a.md"}))``."""
        return cls(content=content, tool_calls=tuple(calls), **kw)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "scripted error",
        *,
        retry_after: float | str | None = None,
        code: str | None = None,
        type: str | None = None,
        delay_s: float = 0.0,
    ) -> Reply:
        """An OpenAI-style error body with `status`; `retry_after` becomes the ``Retry-After`` header."""
        headers = {} if retry_after is None else {"Retry-After": _retry_after_value(retry_after)}
        body = {"error": {"message": message, "type": type or _error_type(status), "code": code}}
        return cls(status=status, headers=headers, body=body, delay_s=delay_s)

    @classmethod
    def raw(cls, body: str | bytes, *, status: int = 200, content_type: str = "application/json") -> Reply:
        """A body sent exactly as given (malformed JSON, HTML from a proxy, ...)."""
        return cls(status=status, body=body, headers={"Content-Type": content_type})

    @classmethod
    def slow(cls, reply: Reply | str, delay_s: float) -> Reply:
        """`reply`, sent after `delay_s` seconds."""
        base = reply if isinstance(reply, Reply) else cls.text(reply)
        return cls(**{**base.__dict__, "delay_s": delay_s})

    @classmethod
    def cut(cls, reply: Reply | str, after_chunks: int) -> Reply:
        """`reply` streamed, with the connection dropped after `after_chunks` data chunks."""
        base = reply if isinstance(reply, Reply) else cls.text(reply)
        return cls(**{**base.__dict__, "cut_after": after_chunks})

    @classmethod
    def hang_up(cls) -> Reply:
        """Close the connection without an answer."""
        return cls(disconnect=True)


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received.

    Attributes:
        index: 0-based position among the chat-completion requests.
        method: ``GET`` or ``POST``.
        path: The request path (``/v1/chat/completions``).
        headers: Request headers, names lower-cased.
        body: The JSON body, or None when it was not JSON.
        raw: The body bytes.
        client_port: The client's TCP port (the same port on two requests means a reused connection).
        received_at: ``time.monotonic()`` when the request arrived.
    """

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    client_port: int
    received_at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages sent (empty when there were none)."""
        return list((self.body or {}).get("messages") or []) if isinstance(self.body, dict) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools offered (empty when there were none)."""
        return list((self.body or {}).get("tools") or []) if isinstance(self.body, dict) else []

    @property
    def model(self) -> str | None:
        """The model requested."""
        return self.body.get("model") if isinstance(self.body, dict) else None


ReplySource = (
    Sequence["Reply | str | dict[str, Any]"] | Callable[[RecordedRequest], "Reply | str | dict[str, Any]"]
)


class ScriptedOpenAIServer:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 (a free port), answering from a script.

    Args:
        replies: A list used in order, one item per chat-completion request, or a callable that gets
            the `RecordedRequest` and returns the reply. An item is a `Reply`, a string (the assistant
            text) or a dict (a complete response body, sent as JSON with status 200). When the list
            runs out the server answers 500 with a message saying so. A callable may be called from
            several handler threads at once.
        models: What ``GET /v1/models`` lists.
        default_model: The model reported when a request names none.

    Use it as a context manager (or call `start` and `close`). ``/v1/chat/completions`` and
    ``/chat/completions`` are both served, so base URLs with or without ``/v1`` work.
    """

    def __init__(
        self,
        replies: ReplySource = (),
        *,
        models: Iterable[str] = ("scripted",),
        default_model: str = "scripted",
    ):
        self._replies = replies if callable(replies) else list(replies)
        self.models = tuple(models)
        self.default_model = default_model
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._served = 0
        self._port: int | None = None

    # -- life cycle -------------------------------------------------------------------------------

    def start(self) -> ScriptedOpenAIServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        handler = type("_Handler", (_Handler,), {"server_ref": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        log.debug("scripted OpenAI server on %s", self.base_url)
        return self

    def close(self) -> None:
        """Stop serving, wake delayed replies, and drop open connections."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            # keep-alive handler threads otherwise sit on idle sockets until the client goes away
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- addresses --------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port the server listens (or listened) on."""
        if self._port is None:
            raise RuntimeError(
                "the scripted server was never started; use it as a context manager or call start()"
            )
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: what an OpenAI client takes as its base URL."""
        return f"{self.url}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The chat-completion requests received, in order."""
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    # -- used by the handler ----------------------------------------------------------------------

    def _next_reply(self, request: RecordedRequest) -> Reply:
        if callable(self._replies):
            return _as_reply(self._replies(request))
        with self._lock:
            n = self._served
            self._served += 1
        if n >= len(self._replies):
            return Reply.error(
                500,
                f"scripted server: no reply left for request #{n + 1} (the script has {len(self._replies)})",
                type="script_exhausted",
            )
        return _as_reply(self._replies[n])


def _as_reply(item: Reply | str | dict[str, Any]) -> Reply:
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return Reply.text(item)
    if isinstance(item, dict):
        return Reply(body=item)
    raise TypeError(f"a scripted reply must be a Reply, a str or a dict, not {type(item).__name__}")


def _retry_after_value(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else str(value)


def _error_type(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    if status in (401, 403):
        return "authentication_error"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def _estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4) if text else 0


def _completion(reply: Reply, request: RecordedRequest, default_model: str) -> dict[str, Any]:
    body = request.body if isinstance(request.body, dict) else {}
    calls: list[dict[str, Any]] = []
    for i, call in enumerate(reply.tool_calls):
        if isinstance(call, dict):
            name, args, call_id = call["name"], call.get("arguments", {}), call.get("id")
        else:
            name, args = call
            call_id = None
        calls.append(
            {
                "id": call_id or f"call_{request.index}_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
                },
            }
        )
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if calls:
        message["tool_calls"] = calls
    out: dict[str, Any] = {
        "id": f"chatcmpl-scripted-{request.index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model or body.get("model") or default_model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
    }
    if reply.include_usage:
        if reply.usage is not None:
            prompt, completion = reply.usage
        else:
            sent = "".join(str(m.get("content") or "") for m in request.messages)
            said = (reply.content or "") + "".join(c["function"]["arguments"] for c in calls)
            prompt, completion = _estimate_tokens(sent), _estimate_tokens(said)
        out["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    return out


def stream_chunks(
    completion: Mapping[str, Any], chunk_chars: int = 8, include_usage: bool = False
) -> list[dict[str, Any]]:
    """A chat completion as the ``chat.completion.chunk`` objects a streaming server sends: the role,
    the text in pieces of `chunk_chars`, each tool call's name then its arguments in pieces (by
    ``index``, the id only on its first delta), the finish reason, and — when `include_usage` — a
    last chunk with no choices and the usage."""
    step = max(1, int(chunk_chars))
    head = {k: completion[k] for k in ("id", "created", "model") if k in completion}
    head["object"] = "chat.completion.chunk"
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    out += [chunk({"content": text[i : i + step]}) for i in range(0, len(text), step)]
    for n, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        first = {
            "index": n,
            "id": call.get("id"),
            "type": "function",
            "function": {"name": fn.get("name"), "arguments": ""},
        }
        out.append(chunk({"tool_calls": [first]}))
        args = fn.get("arguments") or ""
        out += [
            chunk({"tool_calls": [{"index": n, "function": {"arguments": args[i : i + step]}}]})
            for i in range(0, len(args), step)
        ]
    out.append(chunk({}, choice.get("finish_reason") or "stop"))
    if include_usage and completion.get("usage"):
        out.append({**head, "choices": [], "usage": completion["usage"]})
    return out


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # socketserver's default of 5 drops connections when many clients start at once


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so clients can show that they pool connections
    server_ref: ScriptedOpenAIServer
    timeout = 30
    # headers and body leave in one write: two small writes on a kept-alive connection meet the
    # client's delayed ACK (Nagle), which costs ~40 ms a request
    wbufsize = 1 << 16
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        with self.server_ref._lock:
            self.server_ref._connections.add(self.connection)

    def finish(self) -> None:
        with self.server_ref._lock:
            self.server_ref._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("scripted server: " + format, *args)

    def _record(self, method: str) -> RecordedRequest:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        srv = self.server_ref
        with srv._lock:
            is_chat = self.path.rstrip("/").endswith("/chat/completions")
            index = sum(1 for r in srv.requests if r.path.rstrip("/").endswith("/chat/completions"))
            rec = RecordedRequest(
                index=index if is_chat else -1,
                method=method,
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw=raw,
                client_port=self.client_address[1],
                received_at=time.monotonic(),
            )
            srv.requests.append(rec)
        return rec

    def _send(self, status: int, body: Any, headers: Mapping[str, str] = {}) -> None:
        if isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode("utf-8")
        else:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            sent = {k.lower() for k in headers}
            if "content-type" not in sent:
                self.send_header("Content-Type", "application/json")
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            # the client gave up (timeout) before the scripted delay ended
            self.close_connection = True

    def do_GET(self) -> None:
        self._record("GET")
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            data = [
                {"id": m, "object": "model", "owned_by": "abbench-scripted"} for m in self.server_ref.models
            ]
            self._send(200, {"object": "list", "data": data})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        request = self._record("POST")
        if request.index < 0:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            reply = self.server_ref._next_reply(request)
        except Exception as exc:  # a broken reply callable must show up in the test, not hang it
            log.exception("scripted reply callable failed")
            self._send(500, {"error": {"message": f"reply callable failed: {exc!r}", "type": "script_error"}})
            return
        if reply.delay_s and self.server_ref._stopping.wait(reply.delay_s):
            self.close_connection = True
            return
        if reply.disconnect:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        body = (
            reply.body
            if reply.body is not None
            else _completion(reply, request, self.server_ref.default_model)
        )
        wants = request.body if isinstance(request.body, dict) else {}
        if wants.get("stream") and reply.body is None and reply.status == 200:
            usage = bool((wants.get("stream_options") or {}).get("include_usage"))
            self._stream(reply, stream_chunks(body, reply.chunk_chars, usage))
            return
        self._send(reply.status, body, reply.headers)

    def _stream(self, reply: Reply, chunks: list[dict[str, Any]]) -> None:
        """Send `chunks` as server-sent events (chunked transfer), then ``[DONE]`` — or cut it."""

        def write(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            for n, item in enumerate(chunks):
                if reply.cut_after is not None and n >= reply.cut_after:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.chunk_delay_s and self.server_ref._stopping.wait(reply.chunk_delay_s):
                    self.close_connection = True
                    return
                event = b": keep-alive\n\n" if reply.keepalive else b""
                write(event + b"data: " + json.dumps(item, ensure_ascii=False).encode("utf-8") + b"\n\n")
            write(b"data: [DONE]\n\n")
            write(b"")  # the last chunk of the chunked body
        except OSError:
            self.close_connection = True
