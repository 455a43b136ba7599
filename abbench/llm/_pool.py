"""The HTTP connection pool shared by every client on one event loop, closed when the loop shuts down."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from typing import Any

import httpx

_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[httpx.AsyncClient, Any]] = (
    weakref.WeakKeyDictionary()
)


async def _close_when_loop_shuts_down(client: httpx.AsyncClient) -> AsyncIterator[None]:
    # An async generator parked at `yield` is closed by `loop.shutdown_asyncgens()`, which
    # `asyncio.run` calls before closing the loop: the one hook every loop runner has.
    try:
        yield
    finally:
        await client.aclose()
        for loop, (pooled, _) in list(_POOLS.items()):
            if pooled is client:
                _POOLS.pop(loop, None)


async def shared_http_client() -> httpx.AsyncClient:
    """The pooled ``httpx.AsyncClient`` of the running event loop (created on first use)."""
    loop = asyncio.get_running_loop()
    entry = _POOLS.get(loop)
    if entry is not None and not entry[0].is_closed:
        return entry[0]
    client = httpx.AsyncClient(
        limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        follow_redirects=False,
    )
    keeper = _close_when_loop_shuts_down(client)
    _POOLS[loop] = (client, keeper)
    await keeper.__anext__()
    return client


async def close_connections() -> None:
    """Close the running loop's pooled connections now (they reopen on the next request)."""
    entry = _POOLS.pop(asyncio.get_running_loop(), None)
    if entry is not None:
        await entry[1].aclose()
