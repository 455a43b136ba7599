"""An async client for OpenAI-compatible ``/chat/completions`` endpoints: retries, timeouts, usage, cost.

One `ChatClient` per arm (or judge) holds its settings; the HTTP connections are pooled per event
loop and shared by every client on that loop, and the pool closes when the loop shuts down (or on
`close_connections`). The API key is read from the environment variable the arm names at each
request: it is never stored on the client, logged, or put into an error message — any text from the
server that echoes it is redacted.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from abbench._text import clip, sentence
from abbench.errors import AgentError, UsageError
from abbench.llm._cache import (
    CachedReply,
    CallCache,
    asking_now,
    cache_endpoint,
    cache_key,
    default_cache_mode,
    one_asking,
)
from abbench.llm._endpoint import ENV_REF, expand_env, resolve_endpoint
from abbench.llm._failures import (
    _ADVICE,
    _REFUSED,
    _RETRIED,
    FailureType,
    _Failure,
    _refused_feature,
    _server_message,
    classify_failure,
    is_validation_error,
    parse_retry_after,
)
from abbench.llm._pool import shared_http_client
from abbench.llm._prices import PriceTable, price_table
from abbench.llm._replies import ChatResponse, RetryPolicy, RetryRecord, ToolCall
from abbench.llm._stream import StreamAssembler, StreamError
from abbench.llm._waits import not_working
from abbench.types import Usage

log = logging.getLogger(__name__)


def _content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts, as some servers return them
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content if p is not None)
    return str(content)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


class ChatClient:
    """Calls one model on one OpenAI-compatible endpoint.

    Args:
        model: The model id sent with every request.
        base_url: The API root (``…/v1``); default ``$OPENAI_BASE_URL`` or the OpenAI API.
        api_key_env: The environment variable holding the key, read at each request. Default:
            ``OPENAI_API_KEY`` when talking to the OpenAI API (or to ``$OPENAI_BASE_URL``), else no key —
            so a key is never sent to a server the arm did not say to send it to. ``""`` sends none.
        timeout_s: Limit for one attempt (connect, send, wait, read).
        retry: The retry policy (default `RetryPolicy()`).
        headers: Extra headers; values may name environment variables as ``${VAR}`` (their values
            are treated as secrets, like the key).
        prices: What `price_table` accepts: None, a table, a file, or a mapping.
        stream: Ask for ``stream: true`` replies (with ``stream_options.include_usage``, dropped for a
            server that refuses it) and assemble them; a stream cut before its end raises
            ``stream_interrupted`` with what arrived.

    Raises:
        UsageError: a setting is invalid (bad URL, negative timeout, invalid prices).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        prices: Any = None,
        stream: bool = False,
    ):
        if not model or not str(model).strip():
            raise UsageError("an OpenAI-compatible client needs a model id; set `model:` on the arm")
        if timeout_s is None or float(timeout_s) <= 0:
            raise UsageError(f"timeout_s must be a positive number of seconds, not {timeout_s!r}")
        self.model = str(model).strip()
        endpoint = resolve_endpoint(base_url, api_key_env)
        self.base_url = endpoint.base_url
        self.api_key_env = endpoint.key_env
        self.timeout_s = float(timeout_s)
        self.retry = retry or RetryPolicy()
        self.headers = dict(headers or {})
        self.prices: PriceTable = price_table(prices, model=self.model)
        self.stream = bool(stream)
        self._refused = _REFUSED.setdefault((self.base_url, self.model), set())

    def __repr__(self) -> str:
        return (
            f"ChatClient(model={self.model!r}, base_url={self.base_url!r}, api_key_env={self.api_key_env!r})"
        )

    # -- secrets ----------------------------------------------------------------------------------

    def _secrets(self) -> list[str]:
        values = []
        if self.api_key_env and os.environ.get(self.api_key_env):
            values.append(os.environ[self.api_key_env].strip())
        for value in self.headers.values():
            for name in ENV_REF.findall(str(value)):
                if os.environ.get(name):
                    values.append(os.environ[name])
        return [v for v in values if len(v) >= 4]

    def redact(self, text: str) -> str:
        """`text` with the key (and secret header values) replaced by ``***``."""
        for secret in self._secrets():
            text = text.replace(secret, "***")
        return text

    def _request_headers(self) -> dict[str, str]:
        out = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key_env:
            key = (os.environ.get(self.api_key_env) or "").strip()
            if not key:
                raise AgentError(
                    f"the environment variable {self.api_key_env} is not set, so there is no API key for "
                    f"{self.base_url}; export it, or set the arm's api_key_env to the variable that holds the key",
                    FailureType.AUTH,
                    retryable=False,
                )
            out["Authorization"] = f"Bearer {key}"
        for name, value in self.headers.items():

            def unset(var: str, header: str = name) -> AgentError:
                return AgentError(
                    f"header {header!r} refers to ${{{var}}}, which is not set; export it or change the "
                    "arm's headers",
                    FailureType.AUTH,
                    retryable=False,
                )

            out[name] = expand_env(str(value), unset)
        return out

    # -- requests ---------------------------------------------------------------------------------

    def _where(self, path: str) -> str:
        return f"{self.base_url}{path} (model {self.model!r})"

    async def _request(
        self,
        method: str,
        path: str,
        build: Callable[[], dict[str, Any] | None],
        timeout_s: float | None = None,
        stream: bool = False,
    ) -> tuple[httpx.Response, tuple[RetryRecord, ...]]:
        """Send with retries; `build` is called per attempt so refused features drop out. With
        `stream`, a successful response is returned with its body unread (the caller closes it)."""
        timeout = min(self.timeout_s, timeout_s) if timeout_s else self.timeout_s
        http = await shared_http_client()
        retries: list[RetryRecord] = []
        attempt = 0
        while True:
            attempt += 1
            payload = build()
            try:
                response = await self._send(http, method, path, payload, timeout, stream)
                if response.is_success:
                    return response, tuple(retries)
                failure = self._refusal(response, method, path, payload)
                if failure is None:
                    attempt -= 1  # a refused feature is not a failed attempt
                    continue
                raise failure
            except _Failure as failure:
                wait = self._retry_wait(failure, path, attempt, len(retries))
                retries.append(
                    RetryRecord(
                        attempt,
                        failure.failure_type,
                        failure.status,
                        failure.message,
                        wait,
                        failure.retry_after,
                    )
                )
                log.warning(
                    "%s: %s%s on attempt %d; retrying in %.2fs",
                    self._where(path),
                    failure.failure_type,
                    f" ({failure.status})" if failure.status else "",
                    attempt,
                    wait,
                )
                with not_working():  # waiting out a rate limit is not the run's work
                    await asyncio.sleep(wait)

    async def _send(
        self,
        http: httpx.AsyncClient,
        method: str,
        path: str,
        payload: dict[str, Any] | None,
        timeout: float,
        stream: bool,
    ) -> httpx.Response:
        """One attempt; a timeout or a dropped connection is a `_Failure`. A streamed response that
        failed is read and closed here, so its message can be read."""
        url = self.base_url + path
        headers = self._request_headers()
        try:
            async with asyncio.timeout(timeout):
                if not stream:
                    return await http.request(
                        method, url, json=payload, headers=headers, timeout=httpx.Timeout(timeout)
                    )
                headers["Accept"] = "text/event-stream"
                built = http.build_request(
                    method, url, json=payload, headers=headers, timeout=httpx.Timeout(timeout)
                )
                response = await http.send(built, stream=True)
                if not response.is_success:
                    await response.aread()
                    await response.aclose()
                return response
        except (TimeoutError, httpx.TimeoutException):
            raise _Failure(FailureType.TIMEOUT, True, f"no answer within timeout_s={timeout:g}s") from None
        except httpx.TransportError as exc:
            raise _Failure(
                FailureType.CONNECTION_ERROR, True, self.redact(f"{type(exc).__name__}: {exc}")
            ) from None

    def _refusal(
        self, response: httpx.Response, method: str, path: str, payload: dict[str, Any] | None
    ) -> _Failure | None:
        """The failure an unsuccessful response is, or None when it refused a feature this client
        now leaves out (the request is sent again without it)."""
        text = self.redact(response.text)
        message, code = _server_message(text)
        refusal = response.status_code in (400, 422) or (
            response.status_code >= 500 and is_validation_error(message)
        )
        if method == "POST" and refusal and payload is not None:
            feature = _refused_feature(message, payload)
            if feature and feature not in self._refused:
                log.info("%s refused %s (%s); sending again without it", self._where(path), feature, message)
                self._refused.add(feature)
                return None
        failure_type, retryable = classify_failure(response.status_code, message, code)
        return _Failure(
            failure_type,
            retryable,
            message,
            status=response.status_code,
            retry_after=parse_retry_after(response.headers),
            raw=text,
        )

    def _retry_wait(self, failure: _Failure, path: str, attempt: int, retried: int) -> float:
        """How long to wait before trying again after `failure`.

        Raises:
            AgentError: the failure is not retried, the retries are spent, or the server asked for
                a longer wait than the policy allows.
        """
        can_retry = failure.failure_type in _RETRIED and (
            failure.failure_type != FailureType.TIMEOUT or self.retry.retry_timeouts
        )
        if not can_retry or retried >= self.retry.max_retries:
            asked = (
                f"; the server asked to wait {failure.retry_after:g}s"
                if failure.retry_after is not None
                else ""
            )
            raise self._error(failure, path, attempt, extra=asked) from None
        if failure.retry_after is None:
            return self.retry.backoff_s(retried)
        if failure.retry_after > self.retry.max_retry_after_s:
            raise self._error(
                failure,
                path,
                attempt,
                extra=f"; the server asked to wait {failure.retry_after:.0f}s, more than "
                f"max_retry_after_s={self.retry.max_retry_after_s:g}",
            ) from None
        return failure.retry_after

    def _error(self, failure: _Failure, path: str, attempts: int, extra: str = "") -> AgentError:
        status = f" with HTTP {failure.status}" if failure.status else ""
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        advice = _ADVICE.get(failure.failure_type, "")
        if failure.failure_type == FailureType.AUTH:
            advice = (
                advice.replace("${env}", f"${self.api_key_env}")
                if self.api_key_env
                else "the endpoint wants a key: set the arm's api_key_env to the variable that holds it"
            )
        advice = advice[:1].upper() + advice[1:]
        # the server's message often ends its own sentence: one full stop, never ".."
        message = (
            sentence(f"{self._where(path)} failed{status}{tries}: {failure.message}{extra}") + f" {advice}"
        )
        return AgentError(
            self.redact(message),
            failure.failure_type,
            retryable=failure.retryable,
            raw_output=failure.raw,
            retry_after=failure.retry_after,
        )

    def _payload(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None,
        tool_choice: Any,
        response_format: Mapping[str, Any] | None,
        temperature: float | None,
        max_tokens: int | None,
        seed: int | None,
        extra_body: Mapping[str, Any] | None,
        stream: bool = False,
        as_asked: bool = False,
    ) -> dict[str, Any]:
        # `as_asked`: the body as the caller asked for it, before any feature the server refused was
        # dropped (what the cache keys on, the same in every process).
        refused = frozenset() if as_asked else self._refused
        body: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        if stream:
            body["stream"] = True
            if "stream_options" not in refused:
                body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = [dict(t) for t in tools]
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        if response_format is not None and "response_format" not in refused:
            if response_format.get("type") == "json_schema" and "json_schema" in refused:
                # JSON mode with the same schema: llama-cpp-python takes the schema there (and
                # constrains the reply with it); a server that ignores the key still answers in JSON
                schema = (response_format.get("json_schema") or {}).get("schema")
                body["response_format"] = {"type": "json_object", **({"schema": schema} if schema else {})}
            else:
                body["response_format"] = dict(response_format)
        if temperature is not None and "temperature" not in refused:
            body["temperature"] = temperature
        if max_tokens is not None:
            key = "max_completion_tokens" if "max_tokens" in refused else "max_tokens"
            body[key] = max_tokens
        if seed is not None and "seed" not in refused:
            body["seed"] = seed
        if extra_body:
            body.update(extra_body)
        return body

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        response_format: Mapping[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        stream: bool | None = None,
    ) -> dict[str, Any]:
        """The JSON body `chat` would send with these arguments, without sending anything.

        It is built by the same code as a real request (``abbench prompt`` shows it), as first asked:
        before any feature a server refused is dropped.
        """
        return self._payload(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            response_format=response_format,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            extra_body=extra_body,
            stream=self.stream if stream is None else bool(stream),
            as_asked=True,
        )

    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        response_format: Mapping[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout_s: float | None = None,
        stream: bool | None = None,
        cache: CallCache | None = None,
    ) -> ChatResponse:
        """Send one chat-completion request (retrying as the policy says) and return the reply.

        With `cache`, the reply may come from the response cache (``cached`` is then true and no
        request is sent), and a fresh one that parsed is kept there, as the mode says (see
        `abbench.llm.CallCache`; no mode: `default_cache_mode` of `temperature`). An error is never kept.

        A server that refuses `response_format` (``json_schema`` falls back to ``json_object``, then
        to none), ``max_tokens`` (sent as ``max_completion_tokens``), ``temperature`` or ``seed`` with
        400/422 is asked again without it, and remembered for this endpoint and model.

        Args:
            messages: The conversation, OpenAI message dicts.
            tools: Function tools (see `tool_spec`); None offers none.
            tool_choice: ``"auto"``, ``"none"``, ``"required"`` or a named tool (only sent with tools).
            response_format: E.g. ``{"type": "json_object"}`` or a ``json_schema`` format.
            temperature: Sampling temperature; None leaves the server's default.
            max_tokens: Output limit.
            seed: For servers that support reproducible sampling.
            extra_body: More request fields, sent as given.
            timeout_s: A tighter limit for each attempt of this call than the client's.
            stream: Stream this call (default: the client's `stream` setting).
            cache: The response cache, its mode and the run's round.

        Raises:
            AgentError: with `failure_type` ``rate_limited``, ``quota``, ``server_error``,
                ``timeout``, ``connection_error``, ``auth``, ``not_found``, ``bad_request`` or
                ``bad_output`` (the body was not a chat completion; `raw_output` holds it), or
                ``stream_interrupted`` (retryable; `raw_output` holds the text that arrived and
                ``partial`` the `ChatResponse` assembled from it), and `retryable` set.
        """
        started = time.perf_counter()
        streaming = self.stream if stream is None else bool(stream)

        build = functools.partial(
            self._payload,
            messages,
            tools=tools,
            tool_choice=tool_choice,
            response_format=response_format,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            extra_body=extra_body,
            stream=streaming,
        )
        mode = cache.resolved(default_cache_mode(temperature)) if cache is not None else "off"
        key = None
        if cache is not None and mode != "off":
            key = cache_key(self.base_url, self.model, build(as_asked=True), cache.round, cache.scope)
            kept = self._from_cache(cache, key, started) if mode in ("on", "read-only") else None
            while kept is None and mode == "on" and (twin := asking_now(cache, key)) is not None:
                with not_working():  # the same call is being asked: take its reply
                    await asyncio.shield(twin)
                kept = self._from_cache(cache, key, started)
            if kept is not None:
                return kept
        shared = cache is not None and key is not None and mode == "on"
        with one_asking(cache, key) if cache and key and shared else contextlib.nullcontext():
            response, retries = await self._request("POST", "/chat/completions", build, timeout_s, streaming)
            result = await self._read_reply(response, retries, started, timeout_s, streaming)
            if cache is not None and key is not None:
                result = dataclasses.replace(result, cache_key=key)
                if mode in ("on", "refresh"):
                    self._keep(cache, key, result)
        return result

    def _from_cache(self, cache: CallCache, key: str, started: float) -> ChatResponse | None:
        """The reply kept under `key`, marked as cached, or None."""
        kept = cache.cache.lookup(key)
        if kept is None:
            return None
        result = self._parse(kept.response, (), started, streamed=kept.streamed or None)
        result = dataclasses.replace(result, cached=True, cache_key=key, chunks=0)
        cache.cache.hit(kept, result.cost)
        log.debug("%s: answered from the cache", self._where("/chat/completions"))
        return result

    async def _read_reply(
        self,
        response: httpx.Response,
        retries: tuple[RetryRecord, ...],
        started: float,
        timeout_s: float | None,
        streaming: bool,
    ) -> ChatResponse:
        """The reply in a successful response: assembled from its stream, or parsed from its body."""
        if streaming and response.headers.get("content-type", "").startswith("text/event-stream"):
            result = await self._read_stream(response, retries, started, timeout_s)
        else:
            if streaming:  # a server that ignores `stream` answers with one body: read it as such
                await response.aread()
                await response.aclose()
            result = self._parse(self.redact(response.text), retries, started)
        log.debug(
            "%s: %d+%d tokens, %d tool calls, %.0f ms",
            self._where("/chat/completions"),
            result.usage.input_tokens,
            result.usage.output_tokens,
            len(result.tool_calls),
            result.latency_ms,
        )
        return result

    def _keep(self, cache: CallCache, key: str, result: ChatResponse) -> None:
        """Keep a fresh reply in the cache (its text redacted, its tokens only when reported)."""
        cache.cache.save(
            CachedReply(
                key=key,
                endpoint=cache_endpoint(self.redact(self.base_url)),
                model=self.model,
                round=cache.round,
                response=self.redact(result.raw),
                input_tokens=result.usage.input_tokens if result.usage_reported else None,
                output_tokens=result.usage.output_tokens if result.usage_reported else None,
                cost=result.cost,
                streamed=result.streamed,
            )
        )

    async def _read_stream(
        self,
        response: httpx.Response,
        retries: tuple[RetryRecord, ...],
        started: float,
        timeout_s: float | None,
    ) -> ChatResponse:
        """Assemble a streamed reply; a stream that breaks off raises ``stream_interrupted``."""
        timeout = min(self.timeout_s, timeout_s) if timeout_s else self.timeout_s
        sse = StreamAssembler()
        broke: str | None = None
        try:
            async with asyncio.timeout(timeout):
                async for piece in response.aiter_raw():
                    sse.feed(piece)
                    if sse.done:
                        break
            sse.close()
        except StreamError as exc:
            if exc.error is not None:
                message, code = _server_message(json.dumps({"error": exc.error}))
                failure_type, retryable = classify_failure(500, message, code)
                raise AgentError(
                    self.redact(f"{self._where('/chat/completions')} streamed an error: {message}"),
                    failure_type,
                    retryable=retryable,
                    raw_output=sse.content,
                ) from None
            raise self._bad_output(str(exc), sse.content or "") from None
        except (TimeoutError, httpx.TimeoutException):
            broke = f"no chunk within timeout_s={timeout:g}s"
        except httpx.TransportError as exc:
            broke = self.redact(f"{type(exc).__name__}: {exc}")
        finally:
            await response.aclose()
        if broke is None and not sse.complete:
            broke = "the body ended without a finish reason or [DONE]"
        elif broke is None and sse.finish_reason is None:
            # llama-cpp-python's interrupt_requests (on by default) ends a running stream this way when
            # another request waits: the model did not stop, the server did
            broke = (
                "the server ended it with [DONE] and no finish reason, as llama-cpp-python does when "
                "another request waits (start it with --interrupt_requests false, or lower the concurrency)"
            )
        result = self._parse(
            json.dumps(sse.as_completion(), ensure_ascii=False), retries, started, streamed=sse.chunks
        )
        if broke is not None:
            got = f"{sse.chunks} chunks, {len(result.text)} characters of text, {len(result.tool_calls)} tool calls"
            error = AgentError(
                self.redact(
                    sentence(f"{self._where('/chat/completions')}: the stream broke off after {got}: {broke}")
                    + " "
                    + _ADVICE[FailureType.STREAM_INTERRUPTED][:1].upper()
                    + _ADVICE[FailureType.STREAM_INTERRUPTED][1:]
                    + "."
                ),
                FailureType.STREAM_INTERRUPTED,
                retryable=True,
                raw_output=result.content,
            )
            error.partial = result  # type: ignore[attr-defined]
            raise error
        return result

    def _bad_output(self, what: str, raw: str) -> AgentError:
        snippet = clip(" ".join(raw.split()), 200) or "(empty body)"
        return AgentError(
            f"{self._where('/chat/completions')} answered 200 but {what}: {snippet!r}. "
            f"{_ADVICE[FailureType.BAD_OUTPUT].capitalize()}",
            FailureType.BAD_OUTPUT,
            retryable=True,
            raw_output=raw,
        )

    def _parse(
        self, raw: str, retries: tuple[RetryRecord, ...], started: float, streamed: int | None = None
    ) -> ChatResponse:
        try:
            data = json.loads(raw)
        except ValueError:
            raise self._bad_output("the body is not JSON", raw) from None
        if not isinstance(data, dict):
            raise self._bad_output("the body is not a JSON object", raw)
        choices = data.get("choices")
        if not choices and data.get("error"):
            message, code = _server_message(raw)
            failure_type, retryable = classify_failure(500, message, code)
            raise AgentError(
                self.redact(f"{self._where('/chat/completions')} answered 200 with an error: {message}"),
                failure_type,
                retryable=retryable,
                raw_output=raw,
            )
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._bad_output("it has no choices", raw)
        choice = choices[0].get("message")
        if not isinstance(choice, dict):
            raise self._bad_output("its first choice has no message", raw)
        calls = []
        for i, call in enumerate(choice.get("tool_calls") or []):
            fn = (call or {}).get("function") or {}
            args = fn.get("arguments", "")
            calls.append(
                ToolCall(
                    id=str(call.get("id") or f"call_{i}"),
                    name=str(fn.get("name") or ""),
                    arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
                )
            )
        content = _content_text(choice.get("content"))
        usage_data = data.get("usage") if isinstance(data.get("usage"), dict) else None
        usage = Usage(
            _int((usage_data or {}).get("prompt_tokens", (usage_data or {}).get("input_tokens"))),
            _int((usage_data or {}).get("completion_tokens", (usage_data or {}).get("output_tokens"))),
        )
        model = str(data.get("model") or self.model)
        price = self.prices.lookup(self.model) or self.prices.lookup(model)
        if usage_data is None:
            # no usage (llama-cpp-python never sends a usage chunk when streaming): the tokens and the
            # cost are unknown, never 0 — `usage_reported` says so and `cost` is None
            cost = None
        else:
            cost = price.cost(usage) if price else self.prices.cost(self.model, usage)
        # "" rather than null beside tool calls: llama-cpp-python's server refuses a null content (HTTP 500)
        assistant: dict[str, Any] = {"role": "assistant", "content": content if content is not None else ""}
        if calls:
            assistant["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in calls
            ]
        return ChatResponse(
            content=content,
            tool_calls=tuple(calls),
            finish_reason=choices[0].get("finish_reason"),
            model=model,
            usage=usage,
            usage_reported=usage_data is not None,
            cost=cost,
            latency_ms=(time.perf_counter() - started) * 1000,
            retries=retries,
            message=assistant,
            raw=raw,
            streamed=streamed is not None,
            chunks=streamed or 0,
        )

    async def list_models(self) -> list[str]:
        """The model ids the endpoint serves (``GET /models``).

        Raises:
            AgentError: as `chat` does.
        """
        response, _ = await self._request("GET", "/models", lambda: None)
        raw = self.redact(response.text)
        try:
            data = json.loads(raw)
            return [str(m["id"]) for m in data.get("data", []) if isinstance(m, dict) and "id" in m]
        except (ValueError, AttributeError, TypeError):
            raise self._bad_output("its model list is not JSON", raw) from None


def tool_spec(name: str, description: str, parameters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A function tool in the chat-completions format."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": dict(parameters or {"type": "object", "properties": {}}),
        },
    }
