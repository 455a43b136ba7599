"""A python agent and a grader for widget tests: answers from the gold, with failures the test switches on."""

from __future__ import annotations

import asyncio

from abbench.errors import AgentError, GradingError
from tests.blocking import pass_gate

FAIL_EXECUTION: set[str] = set()
"""Case ids whose execution fails (the test empties it before a re-run)."""
FAIL_GRADING: set[str] = set()
"""Case ids whose grading fails (the test empties it before a re-grade)."""


async def answer(task):
    """The gold label after ``sleep_ms``; fails for `FAIL_EXECUTION` ids.

    Wrong (the other label) for ids ending in 7, for ids in the arm's ``wrong`` list, and in round 0
    for ids in its ``flaky`` list; confidence 0.4 for ids ending in 5; cites ``SKILL.md#规则`` when
    the arm has a skill, except for ids in its ``silent`` list; words its reason otherwise for ids in
    its ``rephrase`` list. With a ``gate`` (`tests.blocking.Gate`) it first waits there for the test.
    """
    await pass_gate(task.params)
    await asyncio.sleep(task.params.get("sleep_ms", 0) / 1000)
    case = task.case
    if case.case_id in FAIL_EXECUTION:
        raise AgentError(f"cannot answer {case.case_id}", "agent_error", retryable=False)
    wrong = (
        case.case_id.endswith("7")
        or case.case_id in task.params.get("wrong", ())
        or (task.round == 0 and case.case_id in task.params.get("flaky", ()))
    )
    other = "slow" if case.expected == "fast" else "fast"
    cite = task.skill is not None and case.case_id not in task.params.get("silent", ())
    return {
        "prediction": other if wrong else case.expected,
        "reason": ("since" if case.case_id in task.params.get("rephrase", ()) else "because")
        + f" <b>{case.input}</b>"
        + (" (the other way)" if wrong else ""),
        "confidence": 0.4 if case.case_id.endswith("5") else 0.9,
        "evidence_refs": ["SKILL.md#规则"] if cite else [],
    }


def grade(ctx):
    """Label match that cannot decide for `FAIL_GRADING` ids."""
    if ctx.case.case_id in FAIL_GRADING:
        raise GradingError(f"no verdict for {ctx.case.case_id}", raw_output="???", retryable=False)
    return ctx.output.prediction == ctx.case.expected
