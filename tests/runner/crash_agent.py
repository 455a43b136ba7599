"""An agent and a grader for the crash test: slow enough to be killed mid-way, logging every execution."""

from __future__ import annotations

import asyncio
import os

from tests.blocking import pass_gate


async def slow_echo(task):
    """Answers with the gold label after a short sleep; appends one line per execution to $CRASH_LOG.

    With a ``gate`` parameter it first waits there until the test lets it through (`tests.blocking`).
    """
    await pass_gate(task.params)
    await asyncio.sleep(task.params.get("sleep_ms", 30) / 1000)
    log = os.environ.get("CRASH_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{task.case.case_id}\t{task.round}\t{task.arm}\n")
    return task.case.expected if task.case.case_id[-1] not in "37" else "wrong"


async def slow_grade(ctx):
    """Label match that takes a while, so a kill can land while runs are being graded."""
    await asyncio.sleep(0.06)
    return ctx.output.prediction == ctx.case.expected
