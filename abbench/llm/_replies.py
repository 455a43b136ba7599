"""What a chat call returns and how it is retried: the reply, its tool calls, the retry policy and record."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from abbench.types import Usage


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How the client retries rate limits, server errors, dropped connections and timeouts.

    Attributes:
        max_retries: Retries after the first attempt (0 = one attempt only).
        base_delay_s: The first backoff; it doubles with every retry.
        max_delay_s: Backoff never exceeds this.
        max_retry_after_s: The longest ``Retry-After`` honoured; a server asking for more ends the
            call with a retryable ``rate_limited`` error carrying `AgentError.retry_after`.
        retry_timeouts: Whether a request that timed out is sent again.
    """

    max_retries: int = 3
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0
    retry_timeouts: bool = True

    def backoff_s(self, retries_done: int, rng: random.Random | None = None) -> float:
        """The wait before the next retry: exponential, with "equal jitter" (half fixed, half random)."""
        cap = min(self.max_delay_s, self.base_delay_s * 2**retries_done)
        wait: float = cap / 2 + (rng or random).uniform(0, cap / 2)
        return wait


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for.

    Attributes:
        id: The call id, echoed back in the tool result message.
        name: The tool's name.
        arguments: The arguments as the model wrote them (a JSON string, possibly malformed).
    """

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict.

        Raises:
            ValueError: they are not a JSON object (the message says what was wrong).
        """
        text = self.arguments.strip() or "{}"
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
        return value


@dataclass(frozen=True, slots=True)
class RetryRecord:
    """One failed attempt that the client retried.

    Attributes:
        attempt: 1-based number of the failed attempt.
        failure_type: What went wrong (see `FAILURE_TYPES`).
        status: The HTTP status, when there was a response.
        message: The server's message (redacted).
        wait_s: How long the client waited before the next attempt.
        retry_after_s: The wait the server asked for, when it asked.
    """

    attempt: int
    failure_type: str
    status: int | None
    message: str
    wait_s: float
    retry_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """One successful chat completion.

    Attributes:
        content: The assistant text (None when the model only called tools).
        tool_calls: The tool calls asked for.
        finish_reason: ``stop``, ``tool_calls``, ``length`` ... as the server said.
        model: The model that answered, as the server reported it.
        usage: Tokens of this call.
        usage_reported: False when the server sent no usage (the counts are then 0; a stream from a
            server that ignores ``stream_options.include_usage`` has none).
        cost: USD for this call, or None when the model has no price.
        latency_ms: Wall time, retries and waits included.
        retries: The failed attempts that were retried before this success.
        message: The assistant message, ready to append to the conversation.
        raw: The response body as received (for a stream: the completion it assembles to, as JSON).
        streamed: The reply came as a stream of chunks.
        chunks: Data chunks of a streamed reply.
        cached: The reply came from the response cache: no request was sent, `cost` was saved, not
            spent.
        cache_key: Its key in the response cache, when the call went through one.
    """

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    model: str
    usage: Usage
    usage_reported: bool
    cost: float | None
    latency_ms: float
    retries: tuple[RetryRecord, ...] = ()
    message: dict[str, Any] = field(default_factory=dict)
    raw: str = ""
    streamed: bool = False
    chunks: int = 0
    cached: bool = False
    cache_key: str | None = None

    @property
    def text(self) -> str:
        """The assistant text, ``""`` when there is none."""
        return self.content or ""
