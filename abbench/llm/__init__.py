"""OpenAI-compatible chat completions for agents and judges: the client, retries, prices, the cache."""

from __future__ import annotations

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.llm._cache import (
        CACHE_MODES,
        CachedReply,
        CallCache,
        MemoryCache,
        ResponseCache,
        cache_endpoint,
        cache_key,
        check_cache_mode,
        default_cache_mode,
    )
    from abbench.llm._client import ChatClient, tool_spec
    from abbench.llm._endpoint import (
        DEFAULT_BASE_URL,
        OPENAI_KEY_ENV,
        Endpoint,
        expand_env,
        normalize_base_url,
        resolve_endpoint,
    )
    from abbench.llm._failures import (
        FAILURE_TYPES,
        FailureType,
        classify_failure,
        is_context_overflow,
        is_validation_error,
        parse_retry_after,
    )
    from abbench.llm._pool import close_connections, shared_http_client
    from abbench.llm._prices import (
        BUILTIN_PRICES,
        BUILTIN_PRICES_AS_OF,
        PRICES_ENV,
        Price,
        PriceTable,
        load_prices,
        price_table,
        user_prices_path,
    )
    from abbench.llm._replies import ChatResponse, RetryPolicy, RetryRecord, ToolCall
    from abbench.llm._waits import WaitClock, not_working, timed_by

__all__ = [
    "BUILTIN_PRICES",
    "BUILTIN_PRICES_AS_OF",
    "CACHE_MODES",
    "DEFAULT_BASE_URL",
    "FAILURE_TYPES",
    "OPENAI_KEY_ENV",
    "PRICES_ENV",
    "CachedReply",
    "CallCache",
    "ChatClient",
    "ChatResponse",
    "Endpoint",
    "FailureType",
    "MemoryCache",
    "Price",
    "PriceTable",
    "ResponseCache",
    "RetryPolicy",
    "RetryRecord",
    "ToolCall",
    "WaitClock",
    "cache_endpoint",
    "cache_key",
    "check_cache_mode",
    "classify_failure",
    "close_connections",
    "default_cache_mode",
    "expand_env",
    "is_context_overflow",
    "is_validation_error",
    "load_prices",
    "normalize_base_url",
    "not_working",
    "parse_retry_after",
    "price_table",
    "resolve_endpoint",
    "shared_http_client",
    "timed_by",
    "tool_spec",
    "user_prices_path",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.llm._cache": (
            "CACHE_MODES",
            "CachedReply",
            "CallCache",
            "MemoryCache",
            "ResponseCache",
            "cache_endpoint",
            "cache_key",
            "check_cache_mode",
            "default_cache_mode",
        ),
        "abbench.llm._client": (
            "ChatClient",
            "tool_spec",
        ),
        "abbench.llm._endpoint": (
            "DEFAULT_BASE_URL",
            "OPENAI_KEY_ENV",
            "Endpoint",
            "expand_env",
            "normalize_base_url",
            "resolve_endpoint",
        ),
        "abbench.llm._failures": (
            "FAILURE_TYPES",
            "FailureType",
            "classify_failure",
            "is_context_overflow",
            "is_validation_error",
            "parse_retry_after",
        ),
        "abbench.llm._pool": (
            "close_connections",
            "shared_http_client",
        ),
        "abbench.llm._prices": (
            "BUILTIN_PRICES",
            "BUILTIN_PRICES_AS_OF",
            "PRICES_ENV",
            "Price",
            "PriceTable",
            "load_prices",
            "price_table",
            "user_prices_path",
        ),
        "abbench.llm._replies": (
            "ChatResponse",
            "RetryPolicy",
            "RetryRecord",
            "ToolCall",
        ),
        "abbench.llm._waits": (
            "WaitClock",
            "not_working",
            "timed_by",
        ),
    },
)
