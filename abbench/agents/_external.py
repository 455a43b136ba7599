"""The ``external`` agent: an arm whose runs are recorded from elsewhere, so it executes nothing."""

from __future__ import annotations

from typing import Any

from abbench.agents._base import Task, register_agent
from abbench.errors import AgentError
from abbench.types import AgentOutput, FailureType

NOT_RECORDED = FailureType.NOT_RECORDED
"""The failure type of a run of an ``external`` arm that `abbench run` was asked to execute."""


class ExternalAgent:
    """The agent of an arm whose runs are recorded from elsewhere: it executes nothing.

    `abbench run` on such an arm fails its pending runs as ``not_recorded`` (not retryable), saying
    how to record them; recording an outcome later replaces that failure.
    """

    name = "external"
    offers_skills = True  # what an external agent offered and loaded is whatever it reports

    def __init__(self, **settings: Any) -> None:
        self.settings = settings

    async def run(self, task: Task) -> AgentOutput:
        """Refuse: the runs of this arm are recorded from elsewhere."""
        raise AgentError(
            f"arm {task.arm!r} is run elsewhere (agent: external); record its outcomes with "
            "abbench.record_runs, POST /api/experiments/{id}/runs or abbench import-results",
            NOT_RECORDED,
            retryable=False,
        )


@register_agent("external")
def external_agent(**settings: Any) -> ExternalAgent:
    """Build the ``external`` adapter (any settings are kept as the arm's description: model, tool)."""
    return ExternalAgent(**settings)
