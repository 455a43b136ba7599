"""Agents and graders that misbehave on purpose, for the robustness tests (importable as module:function)."""

from __future__ import annotations

import os
import threading

from tests.blocking import pass_gate, pass_gate_sync

BARRIER = threading.Barrier(2, timeout=300)
"""Two graders must be inside `meet` at once to pass it: only possible when they run in threads."""


def meet(ctx):
    """A synchronous grader that waits at `BARRIER` for a second grader (fails if graders run one by one)."""
    BARRIER.wait()
    return True


async def block_loop(ctx):
    """A badly written async grader: it blocks the whole event loop until the test opens $BLOCK_GATE."""
    pass_gate_sync({"gate": os.environ.get("BLOCK_GATE")})
    return True


async def slow_judge(ctx):
    """An async judge that answers when the test lets it through $JUDGE_GATE (a `tests.blocking.Gate`)."""
    await pass_gate({"gate": os.environ.get("JUDGE_GATE")})
    return True


async def slow_pair(ctx):
    """A pairwise judge that answers when the test lets it through $JUDGE_GATE; the first arm wins."""
    await pass_gate({"gate": os.environ.get("JUDGE_GATE")})
    return {"verdict": "a", "score": 1.0}


GARBAGE = {
    "confidence_word": {"prediction": "fast", "confidence": "very"},
    "cost_word": {"prediction": "fast", "cost": "cheap"},
    "negative_cost": {"prediction": "fast", "cost": -1},
    "usage_word": {"prediction": "fast", "usage": {"input_tokens": "many"}},
    "refs_not_a_list": {"prediction": "fast", "evidence_refs": 5},
}
"""Answers a careless python agent might return, keyed by the case's `metadata.garbage`."""

READABLE = {
    "percent": ({"prediction": "fast", "confidence": "80%"}, {"confidence": 0.8}),
    "nan_confidence": ({"prediction": "fast", "confidence": float("nan")}, {"confidence": None}),
    "object_prediction": ({"prediction": {"route": "fast"}}, {"prediction": '{"route": "fast"}'}),
    "mixed_refs": (
        {"prediction": "fast", "evidence_refs": ["SKILL.md#A", None, 3]},
        {"evidence_refs": '["SKILL.md#A","3"]'},
    ),
}
"""Answers that can be read, and the columns they are stored as."""


def careless(task):
    """Returns the answer named by the task's ``kind`` parameter from GARBAGE or READABLE."""
    kind = task.params["kind"]
    return GARBAGE[kind] if kind in GARBAGE else READABLE[kind][0]
