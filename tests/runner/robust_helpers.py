"""Agents and graders that misbehave on purpose, for the robustness tests (importable as module:function)."""

from __future__ import annotations

import asyncio
import os
import threading
import time

BARRIER = threading.Barrier(2, timeout=5)
"""Two graders must be inside `meet` at once to pass it: only possible when they run in threads."""


def meet(ctx):
    """A synchronous grader that waits at `BARRIER` for a second grader (fails if graders run one by one)."""
    BARRIER.wait()
    return True


async def block_loop(ctx):
    """A badly written async grader: it blocks the whole event loop for $BLOCK_S seconds."""
    time.sleep(float(os.environ.get("BLOCK_S", "3")))
    return True


async def slow_judge(ctx):
    """An async judge that takes $JUDGE_S seconds (default 30) to answer."""
    await asyncio.sleep(float(os.environ.get("JUDGE_S", "30")))
    return True


async def slow_pair(ctx):
    """A pairwise judge that takes $JUDGE_S seconds; the first arm wins."""
    await asyncio.sleep(float(os.environ.get("JUDGE_S", "30")))
    return {"verdict": "a", "score": 1.0}
