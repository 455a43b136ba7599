"""A python agent and a grader for widget tests: answers from the gold, with failures the test switches on."""

from __future__ import annotations

import asyncio

from abbench.errors import AgentError, GradingError

FAIL_EXECUTION: set[str] = set()
"""Case ids whose execution fails (the test empties it before a re-run)."""
FAIL_GRADING: set[str] = set()
"""Case ids whose grading fails (the test empties it before a re-grade)."""


async def answer(task):
    """The gold label (``wrong`` for ids ending in 7), after ``sleep_ms``; fails for `FAIL_EXECUTION` ids."""
    await asyncio.sleep(task.params.get("sleep_ms", 0) / 1000)
    if task.case.case_id in FAIL_EXECUTION:
        raise AgentError(f"cannot answer {task.case.case_id}", "agent_error", retryable=False)
    return {
        "prediction": "wrong" if task.case.case_id.endswith("7") else task.case.expected,
        "reason": f"because <b>{task.case.input}</b>",
        "confidence": 0.4 if task.case.case_id.endswith("5") else 0.9,
    }


def grade(ctx):
    """Label match that cannot decide for `FAIL_GRADING` ids."""
    if ctx.case.case_id in FAIL_GRADING:
        raise GradingError(f"no verdict for {ctx.case.case_id}", raw_output="???", retryable=False)
    return ctx.output.prediction == ctx.case.expected
