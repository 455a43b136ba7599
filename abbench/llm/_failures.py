"""How a failed chat call is read: the failure types, the server's message, Retry-After, refused features."""

from __future__ import annotations

import email.utils
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from abbench._text import clip
from abbench.types import FailureType as FailureType

FAILURE_TYPES = tuple(
    t.value
    for t in (
        FailureType.AUTH,
        FailureType.BAD_OUTPUT,
        FailureType.BAD_REQUEST,
        FailureType.CONNECTION_ERROR,
        FailureType.NOT_FOUND,
        FailureType.QUOTA,
        FailureType.RATE_LIMITED,
        FailureType.SERVER_ERROR,
        FailureType.STREAM_INTERRUPTED,
        FailureType.TIMEOUT,
        FailureType.TRUNCATED,
    )
)
"""The `AgentError.failure_type` values the chat client raises (a subset of `FailureType`)."""


_RETRIED = {
    FailureType.RATE_LIMITED,
    FailureType.SERVER_ERROR,
    FailureType.CONNECTION_ERROR,
    FailureType.TIMEOUT,
}


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds a response asks the client to wait: ``retry-after-ms``, or ``Retry-After`` given as
    seconds or as an HTTP date. None when it asks nothing (or says something unreadable)."""
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = (lower.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _server_message(text: str) -> tuple[str, str | None]:
    """The human message and the error code of an error body (OpenAI, vLLM, Ollama, proxies)."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            message = err.get("message") or err.get("detail") or err.get("msg")
            code = err.get("code") or err.get("type")
            if message:
                return str(message), (str(code) if code else None)
        elif isinstance(err, str):
            return err, None
        if isinstance(data.get("detail"), str):
            return data["detail"], None
    snippet = " ".join(text.split())
    return clip(snippet, 300) or "(empty body)", None


_VALIDATION = re.compile(r"\b\d+ validation errors?\b|\brequestvalidationerror\b|\bvalidation error for\b")


_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|exceeds? (?:the )?context (?:window|length)|"
    r"requested tokens \(\d+\) exceed|prompt is too long|too many tokens"
)


def is_context_overflow(message: str) -> bool:
    """Whether an error says the prompt does not fit the model's context (OpenAI's
    ``context_length_exceeded``, llama-cpp-python's "Requested tokens (N) exceed context window"):
    the same request fails the same way again, whatever status or CLI it came through."""
    return _OVERFLOW.search(message.lower()) is not None


def is_validation_error(message: str) -> bool:
    """Whether a server's error message is a request-validation error (pydantic's "N validation
    errors"), whatever status it came with: llama-cpp-python answers those with HTTP 500."""
    return _VALIDATION.search(message.lower()) is not None


def classify_failure(status: int, message: str, code: str | None) -> tuple[FailureType, bool]:
    """The failure type of an HTTP error and whether trying again may help."""
    blob = f"{code or ''} {message}".lower()
    if status == 429:
        if "insufficient_quota" in blob or "exceeded your current quota" in blob:
            return FailureType.QUOTA, False
        return FailureType.RATE_LIMITED, True
    if status in (401, 403):
        return FailureType.AUTH, False
    if status == 404:
        return FailureType.NOT_FOUND, False
    if status == 408:
        return FailureType.TIMEOUT, True
    if is_context_overflow(blob):
        return FailureType.BAD_REQUEST, False
    if status >= 500 and is_validation_error(blob):
        # a server that answers a request it cannot read with a 500 (llama-cpp-python: FastAPI's
        # validation error, caught by its route handler): the same request fails the same way again
        return FailureType.BAD_REQUEST, False
    if status == 409 or status >= 500:
        return FailureType.SERVER_ERROR, True
    return FailureType.BAD_REQUEST, False


# Features some servers refuse; dropped per (base URL, model) after the first refusal, so the
# refusal costs one extra request per process instead of one per call.
_REFUSED: dict[tuple[str, str], set[str]] = {}


def _refused_feature(message: str, payload: Mapping[str, Any]) -> str | None:
    text = message.lower()
    rf = payload.get("response_format")
    if rf is not None and ("response_format" in text or "json_schema" in text or "json mode" in text):
        return (
            "json_schema" if isinstance(rf, dict) and rf.get("type") == "json_schema" else "response_format"
        )
    if "max_tokens" in payload and "max_completion_tokens" in text:
        return "max_tokens"
    if "temperature" in payload and "temperature" in text:
        return "temperature"
    if "seed" in payload and "seed" in text and ("unsupported" in text or "not support" in text):
        return "seed"
    if "stream_options" in payload and ("stream_options" in text or "include_usage" in text):
        return "stream_options"
    return None


class _Failure(Exception):
    def __init__(
        self,
        failure_type: FailureType,
        retryable: bool,
        message: str,
        status: int | None = None,
        retry_after: float | None = None,
        raw: str | None = None,
    ):
        super().__init__(message)
        self.failure_type = failure_type
        self.retryable = retryable
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.raw = raw


_ADVICE: dict[str, str] = {
    FailureType.AUTH: "check that the key in ${env} is valid for this endpoint (the arm's api_key_env names the variable)",
    FailureType.QUOTA: "the account behind the key has no quota left; check its billing",
    FailureType.RATE_LIMITED: "the endpoint is rate limiting; lower the concurrency or raise max_retries",
    FailureType.SERVER_ERROR: "the server failed; try again later",
    FailureType.NOT_FOUND: "check base_url (it usually ends in /v1) and the model name (ChatClient.list_models() lists them)",
    FailureType.BAD_REQUEST: "the server rejected the request; check the model name and the arm's settings",
    FailureType.TIMEOUT: "no answer in time; raise timeout_s or check the server",
    FailureType.CONNECTION_ERROR: "cannot reach the endpoint; check base_url and that the server is running",
    FailureType.BAD_OUTPUT: "the server's reply is not a chat completion; check that base_url points at an OpenAI-compatible API",
    FailureType.TRUNCATED: "the reply was cut at max_tokens before its answer was whole; raise the arm's max_tokens",
    FailureType.STREAM_INTERRUPTED: "the stream broke off before its end; what arrived is kept with the attempt, "
    "and the run may be retried",
}
