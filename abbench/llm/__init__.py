"""OpenAI-compatible chat completions for agents and judges: the client, retries, prices, the cache."""

from __future__ import annotations

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.llm._cache import (
        CACHE_MODES,
        CachedReply as CachedReply,
        CallCache as CallCache,
        MemoryCache,
        ResponseCache,
        cache_endpoint as cache_endpoint,
        cache_key as cache_key,
        check_cache_mode as check_cache_mode,
        default_cache_mode as default_cache_mode,
    )
    from abbench.llm._client import ChatClient, tool_spec as tool_spec
    from abbench.llm._endpoint import (
        DEFAULT_BASE_URL,
        OPENAI_KEY_ENV,
        Endpoint,
        expand_env as expand_env,
        normalize_base_url as normalize_base_url,
        resolve_endpoint as resolve_endpoint,
    )
    from abbench.llm._failures import (
        FAILURE_TYPES,
        FailureType,
        classify_failure as classify_failure,
        is_context_overflow as is_context_overflow,
        is_validation_error as is_validation_error,
        parse_retry_after as parse_retry_after,
    )
    from abbench.llm._pool import close_connections, shared_http_client as shared_http_client
    from abbench.llm._prices import (
        BUILTIN_PRICES,
        BUILTIN_PRICES_AS_OF,
        PRICES_ENV,
        Price,
        PriceTable,
        load_prices,
        price_table as price_table,
        user_prices_path,
    )
    from abbench.llm._replies import ChatResponse, RetryPolicy, RetryRecord, ToolCall
    from abbench.llm._waits import WaitClock as WaitClock, not_working, timed_by as timed_by

__all__ = [
    "BUILTIN_PRICES",
    "BUILTIN_PRICES_AS_OF",
    "CACHE_MODES",
    "DEFAULT_BASE_URL",
    "FAILURE_TYPES",
    "OPENAI_KEY_ENV",
    "PRICES_ENV",
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
    "close_connections",
    "load_prices",
    "not_working",
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
    public=__all__,
)
