"""What every agent adapter receives and must return, and how adapters are found by name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from abbench.errors import UsageError
from abbench.snapshot import Snapshot
from abbench.types import AgentOutput, Case

HIDDEN_FIELDS = ("expected", "metadata", "request_id", "source_row", "source_line")
"""The case fields no agent sees: the gold answer, and the row and notes it could be read back from."""


@dataclass(frozen=True)
class Task:
    """One (case, round, arm) handed to an agent: an isolated session with the skill injected.

    Attributes:
        case: The case to answer.
        skill: The arm's skill snapshot, or None for a no-skill arm.
        arm: The arm's name (never shown to judges).
        model: The model the arm names, if any.
        params: The arm's parameters (temperature, latency_ms, base_url, ...).
        round: 0-based round number.
        session_id: A fresh id for this run's session; nothing carries over between sessions.
        run_id: The run's id in the store (None for runs outside a store).
        label_set: The dataset's declared labels, when it has them.
        timeout_s: The per-run timeout the scheduler enforces; adapters with subprocesses honour it too.
    """

    case: Case
    skill: Snapshot | None = None
    arm: str = "a"
    model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    round: int = 0
    session_id: str = ""
    run_id: int | None = None
    label_set: tuple[str, ...] | None = None
    timeout_s: float | None = None


def agent_case(case: Case) -> Case:
    """The case as every agent sees it: its id, input, history, context and domain; the gold answer
    (`HIDDEN_FIELDS`: ``expected``, the source row, the metadata) is left out, so nothing gives it away."""
    return dataclasses.replace(case, **dict.fromkeys(HIDDEN_FIELDS))


def agent_task(task: Task) -> Task:
    """`task` with its case as agents see it (see `agent_case`)."""
    return dataclasses.replace(task, case=agent_case(task.case))


@runtime_checkable
class Agent(Protocol):
    """An agent adapter: turns a `Task` into an `AgentOutput`, or raises `AgentError`."""

    name: str

    async def run(self, task: Task) -> AgentOutput:
        """Answer one task in its own session.

        An adapter may also define ``preflight(skill, label_set)``, raising `UsageError` when an arm
        with this skill (or None) on a dataset with this declared label set (or None) could answer no
        case; experiments call it when they are created, so such an arm is refused before any run.
        """
        ...


AgentFactory = Callable[..., Agent]
"""Builds an adapter from an arm's settings: ``factory(model=..., **params)``."""

_REGISTRY: dict[str, AgentFactory] = {}


def register_agent(name: str) -> Callable[[AgentFactory], AgentFactory]:
    """Register the decorated factory under `name` (the ``agent:`` of an arm)."""

    def add(factory: AgentFactory) -> AgentFactory:
        _REGISTRY[name] = factory
        return factory

    return add


def agent_names() -> list[str]:
    """The names arms may use in ``agent:``."""
    return sorted(_REGISTRY)


def make_agent(name: str, **settings: Any) -> Agent:
    """The adapter registered under `name`, built with the arm's settings.

    Raises:
        UsageError: no adapter has that name (the message lists the valid ones).
    """
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise UsageError(f"unknown agent {name!r}; choose one of: {', '.join(agent_names())}") from None
    return factory(**settings)
