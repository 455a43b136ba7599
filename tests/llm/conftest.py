"""What the chat client's tests share: a fast retry policy, a price table, a message, and a client."""

from __future__ import annotations

from abbench.llm import ChatClient, RetryPolicy

FAST = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05)
PRICES = {"m": {"input": 1.0, "output": 2.0}}
HI = [{"role": "user", "content": "hi"}]


def client(server, **kw) -> ChatClient:
    """A client of model ``m`` (priced by `PRICES`, retrying fast) on `server`; `kw` overrides either."""
    kw.setdefault("retry", FAST)
    kw.setdefault("prices", PRICES)
    return ChatClient(kw.pop("model", "m"), base_url=server.base_url, **kw)
