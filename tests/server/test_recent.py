"""The answers polls share: one caller computes, the others get the last answer or wait for that one."""

from __future__ import annotations

import threading

import pytest

from abbench.server._common import Recent


def test_a_fresh_answer_is_shared_and_a_stale_one_recomputed():
    cache, calls = Recent(ttl=3600), []
    assert cache.get("k", lambda: calls.append(1) or "first") == "first"
    assert cache.get("k", lambda: calls.append(2) or "second") == "first"  # fresh: not computed again
    assert cache.fresh("k") == (True, "first") and cache.fresh("other") == (False, None)
    cache.ttl = 0  # everything is stale now
    assert cache.get("k", lambda: calls.append(3) or "third") == "third"
    assert calls == [1, 3]


def _computing(cache: Recent, answer: str, out: list[str]) -> tuple[threading.Thread, threading.Event]:
    """A thread that asks `cache` for "k" (appending what it gets to `out`), once its computation of
    `answer` has begun; the computation ends when the returned event is set."""
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait()
        return answer

    worker = threading.Thread(target=lambda: out.append(cache.get("k", slow)))
    worker.start()
    started.wait()
    return worker, release


def test_while_one_caller_recomputes_the_others_get_the_previous_answer_at_once():
    cache = Recent(ttl=0)
    cache.get("k", lambda: "old")
    out: list[str] = []
    worker, release = _computing(cache, "new", out)
    assert cache.get("k", lambda: "never") == "old"  # not computed twice, and not waiting for it
    release.set()
    worker.join()
    assert out == ["new"] and cache.get("k", lambda: "later") == "later"


def test_without_a_previous_answer_callers_get_the_one_being_computed_not_their_own():
    cache = Recent(ttl=3600)
    out: list[str] = []
    first, release = _computing(cache, "only", out)
    second = threading.Thread(target=lambda: out.append(cache.get("k", lambda: "twice")))
    second.start()
    release.set()
    first.join()
    second.join()
    assert out == ["only", "only"]


def test_a_computation_that_fails_leaves_nothing_behind():
    cache = Recent(ttl=3600)

    def fail() -> str:
        raise RuntimeError("store busy")

    with pytest.raises(RuntimeError):
        cache.get("k", fail)
    assert cache.get("k", lambda: "retried") == "retried"
