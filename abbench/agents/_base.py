"""What every agent adapter receives and must return, and how adapters are found by name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from abbench._registry import Registry
from abbench.errors import UnknownName, UsageError
from abbench.llm import CallCache
from abbench.snapshot import Snapshot
from abbench.types import AgentOutput, Case, Usage


@dataclass
class Spending:
    """What one attempt's session has used so far, filled in by the adapter as it goes.

    The runner hands a fresh one to every attempt (``Task.spending``) and reads it when the attempt
    fails — an error, a reply that cannot be read, the run's timeout, a cancel — so the tokens, cost,
    transcript and files of the model calls made before the failure are kept with the attempt, not
    dropped. An adapter that calls no model may ignore it.

    Attributes:
        transcript: The session's messages and tool calls so far (the adapter may share its own list).
        files_read: Skill files opened so far.
        sections_read: Skill sections opened so far.
        calls: Model calls made.
        input_tokens: Prompt tokens over the calls that reported usage (None before any did), the
            cached ones left out (nothing was spent on them).
        output_tokens: Completion tokens, likewise.
        cost: Money spent over the calls (None when no call was made or a call's cost is unknown);
            a call answered from the response cache spent nothing and is counted in `cost_saved`.
        model: The model that answered the last call.
        cached_calls: Of `calls`, those answered from the response cache.
        cost_saved: What those would have cost (None when none was cached or a cost is unknown).
        skills_offered: The names in an offered arm's catalogue (None: nothing offered); the runner
            fills it before the agent starts.
        skills_loaded: The offered skills loaded so far, in order (None: nothing offered).
        first_load_turn: The model turn (1-based) of the first load, once there was one.
    """

    transcript: list[dict[str, Any]] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    sections_read: list[str] = field(default_factory=list)
    calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    model: str | None = None
    cached_calls: int = 0
    cost_saved: float | None = None
    skills_offered: list[str] | None = None
    skills_loaded: list[str] | None = None
    first_load_turn: int | None = None
    _cost_known: bool = field(default=True, repr=False)

    def offer(self, names: Sequence[str]) -> None:
        """Record the catalogue of an offered arm: nothing loaded yet."""
        self.skills_offered = list(names)
        self.skills_loaded = []

    def load(self, name: str, turn: int) -> None:
        """Record that the agent loaded the offered skill `name` at model turn `turn` (1-based)."""
        if self.skills_loaded is None:
            self.skills_loaded = []
        if name not in self.skills_loaded:
            self.skills_loaded.append(name)
        if self.first_load_turn is None:
            self.first_load_turn = turn

    def activation(self) -> dict[str, Any]:
        """What was offered and loaded, as the `AgentOutput` fields of the same names."""
        return {
            "skills_offered": None if self.skills_offered is None else tuple(self.skills_offered),
            "skills_loaded": None if self.skills_loaded is None else tuple(self.skills_loaded),
            "first_load_turn": self.first_load_turn,
        }

    def add_call(
        self, usage: Usage | None, cost: float | None, model: str | None = None, *, cached: bool = False
    ) -> None:
        """Count one model call: its usage (None when the endpoint reported none) and cost (None:
        unknown); a `cached` call (answered from the response cache) saved its cost instead."""
        self.calls += 1
        if cached:
            self.cached_calls += 1
            self.cost_saved = (self.cost_saved or 0.0) + (cost or 0.0)
            # no token was spent on it either: the attempt's tokens stay what it paid for
            if model:
                self.model = model
            if self.cost is None and self._cost_known:
                self.cost = 0.0
            return
        if usage is not None:
            self.input_tokens = (self.input_tokens or 0) + usage.input_tokens
            self.output_tokens = (self.output_tokens or 0) + usage.output_tokens
        if cost is None:
            self._cost_known = False
        self.cost = ((self.cost or 0.0) + cost) if (self._cost_known and cost is not None) else None
        if model:
            self.model = model

    @property
    def usage(self) -> Usage | None:
        """The tokens so far, or None when no call reported any (unknown, not zero)."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return Usage(self.input_tokens or 0, self.output_tokens or 0)

    @property
    def empty(self) -> bool:
        """True when nothing was used or recorded."""
        return not (self.calls or self.transcript or self.files_read or self.sections_read)


MAX_OUTPUT_BYTES = 5_000_000
"""The most of an agent's output abbench keeps: what a command agent keeps of its CLI's stdout (and of
its stderr) by default, and what one outcome recorded from elsewhere may hold as JSON."""

HIDDEN_FIELDS = ("expected", "expected_skill", "metadata", "request_id", "source_row", "source_line")
"""The case fields no agent sees: the gold answer, and the row and notes it could be read back from."""


@dataclass(frozen=True)
class Task:
    """One (case, round, arm) handed to an agent: an isolated session with the skill injected (or offered).

    Attributes:
        case: The case to answer.
        skill: The arm's skill snapshot to inject, or None for a no-skill arm — and for an offered arm,
            whose skills are in `skills` only, so an adapter that ignores `skill_mode` injects nothing.
        skills: Every skill of the arm, in order (the catalogue of an offered arm; ``(skill,)`` when
            injected; () for none).
        skill_mode: ``injected`` or ``offered``.
        arm: The arm's name (never shown to judges).
        model: The model the arm names, if any.
        params: The arm's parameters (temperature, latency_ms, base_url, ...).
        round: 0-based round number.
        session_id: A fresh id for this run's session; nothing carries over between sessions.
        run_id: The run's id in the store (None for runs outside a store).
        label_set: The dataset's declared labels, when it has them.
        timeout_s: The per-run timeout the scheduler enforces; adapters with subprocesses honour it too.
        spending: Where the adapter records what the attempt uses as it goes (see `Spending`); None
            outside the runner.
        cache: The response cache the run's model calls go through, with its mode and this round
            (see `abbench.llm.CallCache`); None: no cache.
    """

    case: Case
    skill: Snapshot | None = None
    skills: tuple[Snapshot, ...] = ()
    skill_mode: str = "injected"
    arm: str = "a"
    model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    round: int = 0
    session_id: str = ""
    run_id: int | None = None
    label_set: tuple[str, ...] | None = None
    timeout_s: float | None = None
    spending: Spending | None = field(default=None, compare=False, repr=False)
    cache: CallCache | None = field(default=None, compare=False, repr=False)

    @property
    def offered(self) -> tuple[Snapshot, ...]:
        """The skills offered in a catalogue: `skills` in the offered mode, else ()."""
        return self.skills if self.skill_mode == "offered" else ()


def agent_case(case: Case) -> Case:
    """The case as every agent sees it: its id, input, history, context and domain; the gold answer
    (`HIDDEN_FIELDS`: ``expected``, the source row, the metadata) is left out, so nothing gives it away."""
    hidden: dict[str, Any] = dict.fromkeys(HIDDEN_FIELDS)
    return dataclasses.replace(case, **hidden)


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

_BUILTIN = {
    "builtin": "abbench.agents._builtin",
    "command": "abbench.agents._command",
    "external": "abbench.agents._external",
    "openai": "abbench.agents._openai",
    "python": "abbench.agents._python",
}
"""The adapters abbench ships, by the module that registers each: imported when first asked for, so a
run of `python` arms never loads the HTTP client behind `openai` (``abbench.agents`` loads lazily)."""
_REGISTRY: Registry[AgentFactory] = Registry(_BUILTIN)


def register_agent(name: str) -> Callable[[AgentFactory], AgentFactory]:
    """Register the decorated factory under `name` (the ``agent:`` of an arm)."""
    return _REGISTRY.register(name)


def agent_names() -> list[str]:
    """The names arms may use in ``agent:``."""
    return _REGISTRY.names()


def make_agent(name: str, **settings: Any) -> Agent:
    """The adapter registered under `name`, built with the arm's settings.

    Raises:
        UsageError: no adapter has that name (the message lists the valid ones).
    """
    return agent_factory(name)(**settings)


def agent_factory(name: str) -> AgentFactory:
    """The factory registered under `name`.

    Raises:
        UsageError: no adapter has that name (the message lists the valid ones).
    """
    factory = _REGISTRY.load(name)
    if factory is None:
        raise UnknownName("agent", name, agent_names())
    return factory


def check_settings(agent: str, settings: Mapping[str, Any], valid: Sequence[str]) -> None:
    """Refuse settings an adapter does not have.

    Raises:
        UsageError: a setting is unknown (the message names it and lists the valid ones).
    """
    unknown = sorted(set(settings) - set(valid))
    if unknown:
        raise UsageError(
            f"the {agent} agent has no setting {', '.join(map(repr, unknown))}; valid settings: {', '.join(valid)}"
        )
