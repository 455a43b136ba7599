"""For the tests that hold a fast read against the earlier read it replaced: what SQL a call ran, and a
review page read both ways with nothing kept between them."""

from __future__ import annotations

from abbench.review import disagreement_page
from abbench.review._pages import _CACHE


def statements(store, call):
    """The value of `call()` and the SQL it ran on the store's connection."""
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        return call(), seen
    finally:
        store.conn.set_trace_callback(None)


def pages_both_ways(exp_id: int, store, old, **options):
    """The review page of `options` read from `store` and from `old` (the earlier reads), each afresh."""
    _CACHE.clear()
    page = disagreement_page(exp_id, store=store, **options)
    _CACHE.clear()
    before = disagreement_page(exp_id, store=old, **options)
    _CACHE.clear()
    return page, before
