"""Callables that tests name as `module:function`: a python-adapter agent and a user grader."""

from __future__ import annotations

from abbench.types import AgentOutput, Usage


def answer(task) -> AgentOutput:
    """Answers with the gold label, except ``wrong`` for case ids listed in the arm's ``wrong`` parameter."""
    wrong = set(task.params.get("wrong", ()))
    prediction = "wrong" if task.case.case_id in wrong else task.case.expected
    return AgentOutput(
        prediction=prediction,
        reason=f"because {task.case.input}",
        evidence_refs=("SKILL.md#Rules",) if task.skill else (),
        files_read=("SKILL.md",) if task.skill else (),
        usage=Usage(10, 2),
        cost=0.001,
        session_id=task.session_id,
    )


def unpriced(task) -> AgentOutput:
    """Answers with the gold label and reports tokens but no cost (a model without a price)."""
    return AgentOutput(prediction=task.case.expected, usage=Usage(10, 2), cost=None)


def shouty(ctx):
    """A user's grader: passes when the prediction is in capitals (returns a bool)."""
    return bool(ctx.output.prediction) and ctx.output.prediction.isupper()
