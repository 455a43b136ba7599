"""Spend under control: an experiment's and its arms' budgets, and the guard the scheduler asks before each run.

The guard starts from what every stored attempt of the experiment spent (failed, cancelled and
replaced ones included: `store.attempts.spend_by_run`) and adds each attempt as it ends. Before a run starts
it projects that run's cost and tokens from the mean of its arm's finished attempts (the
experiment's mean for an arm with none yet), adds the same for every run in flight, and refuses
the run when the projection passes a limit. Before any attempt has finished there is nothing to
project from, so runs start up to the experiment's concurrency.

A cost that is unknown (a model without prices) never counts as 0: the cost limit then holds over
the known part only, and the guard says so; the token limit, when there is one, holds regardless.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from abbench.runner._control import RunControl
from abbench.runner._pause import BUDGET_REACHED, PauseReason
from abbench.store import Arm, ArmSpend, Experiment, RunSettings, Store, WorkItem
from abbench.types import RunState

if TYPE_CHECKING:
    from abbench.store import BudgetSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """A budget: at most `max_cost` money and `max_tokens` tokens (input + output); None is no limit."""

    max_cost: float | None = None
    max_tokens: int | None = None

    @classmethod
    def from_spec(cls, spec: BudgetSpec | dict[str, Any] | None) -> Limits | None:
        """The limits of a ``budget:`` (the model or its mapping), or None when there is none."""
        if not spec:
            return None
        if not isinstance(spec, dict):  # a BudgetSpec
            spec = spec.model_dump()
        cost, tokens = spec.get("max_cost"), spec.get("max_tokens")
        if cost is None and tokens is None:
            return None
        return cls(None if cost is None else float(cost), None if tokens is None else int(tokens))


@dataclass
class _Tally:
    """One scope's spend (an arm, or the whole experiment)."""

    cost: float = 0.0
    cost_known: int = 0  # attempts that reported a cost
    unknown_cost: int = 0  # attempts whose cost is unknown
    tokens: int = 0
    tokens_known: int = 0
    inflight: int = 0

    def add(self, cost: float | None, tokens: int | None) -> None:
        if cost is None:
            self.unknown_cost += 1
        else:
            self.cost += cost
            self.cost_known += 1
        if tokens is not None:
            self.tokens += tokens
            self.tokens_known += 1

    def mean(self, what: str) -> float | None:
        if what == "cost":
            return self.cost / self.cost_known if self.cost_known else None
        return self.tokens / self.tokens_known if self.tokens_known else None

    def spent(self, what: str) -> float:
        return self.cost if what == "cost" else float(self.tokens)


@dataclass
class BudgetGuard:
    """Decides whether the next run of an arm may start, and keeps what each arm has spent.

    Args:
        limits: The experiment's budget (None: none).
        arm_limits: Arm id -> that arm's budget.
        prior: What each arm's stored attempts spent already (`store.attempts.spend_by_run`).
        arm_names: Arm id -> name, for the reasons it gives.
        concurrency: How many runs may start before any attempt has finished.
        arm_models: Arm id -> its model, named when its cost is unknown.
        priced: The arms whose definition gives prices (their unknown costs come from unknown usage).
    """

    limits: Limits | None
    arm_limits: dict[int, Limits]
    prior: dict[int, ArmSpend]
    arm_names: dict[int, str]
    concurrency: int
    arm_models: dict[int, str | None] = field(default_factory=dict)
    priced: frozenset[int] = (
        frozenset()
    )  # arms whose definition gives prices: an unknown cost is unknown usage
    arms: dict[int, _Tally] = field(default_factory=dict)
    stopped: dict[int | None, str] = field(default_factory=dict)  # scope (arm id, None) -> limit hit
    _warned: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        for arm_id in self.arm_names:
            spend = self.prior.get(arm_id, ArmSpend())
            tally = _Tally(
                cost=spend.cost or 0.0,
                cost_known=spend.attempts - spend.unknown_cost,
                unknown_cost=spend.unknown_cost,
            )
            tally.tokens = (spend.input_tokens or 0) + (spend.output_tokens or 0)
            tally.tokens_known = spend.token_attempts
            self.arms[arm_id] = tally

    @property
    def active(self) -> bool:
        """Whether any budget applies."""
        return self.limits is not None or bool(self.arm_limits)

    def _total(self) -> _Tally:
        total = _Tally()
        for t in self.arms.values():
            total.cost += t.cost
            total.cost_known += t.cost_known
            total.unknown_cost += t.unknown_cost
            total.tokens += t.tokens
            total.tokens_known += t.tokens_known
            total.inflight += t.inflight
        return total

    def refusal(self, arm_id: int) -> tuple[int | None, str] | None:
        """Which budget the next run of `arm_id` would pass, as (scope, ``cost``|``tokens``), or None.

        The scope is the arm's id for the arm's own budget, None for the experiment's.
        """
        arm = self.arms[arm_id]
        checks: list[tuple[int | None, Limits, list[_Tally]]] = []
        if arm_id in self.arm_limits:
            checks.append((arm_id, self.arm_limits[arm_id], [arm]))
        if self.limits is not None:
            checks.append((None, self.limits, list(self.arms.values())))
        total = self._total()
        for scope, limits, tallies in checks:
            for what, limit in (("cost", limits.max_cost), ("tokens", limits.max_tokens)):
                if limit is None:
                    continue
                if self._passes(arm, tallies, total, what, float(limit)):
                    return scope, what
        return None

    def _passes(self, arm: _Tally, tallies: list[_Tally], total: _Tally, what: str, limit: float) -> bool:
        spent = sum(t.spent(what) for t in tallies)
        limit *= 1 + 1e-9  # a run that lands exactly on the limit fits, whatever the float sums say
        if spent >= limit:
            return True
        fallback = total.mean(what)
        projected = spent
        for t in tallies:
            mean = t.mean(what) if t.mean(what) is not None else fallback
            if mean is None:
                continue
            projected += t.inflight * mean
        next_mean = arm.mean(what) if arm.mean(what) is not None else fallback
        if next_mean is None:
            # nothing finished yet to project from: start up to the concurrency, no more
            return sum(t.inflight for t in tallies) >= self.concurrency
        return projected + next_mean > limit

    def start(self, arm_id: int) -> None:
        """A run of the arm starts (it counts as in flight until `end`)."""
        self.arms[arm_id].inflight += 1

    def end(self, arm_id: int) -> None:
        """A run of the arm is no longer in flight."""
        self.arms[arm_id].inflight -= 1

    def spent(self, arm_id: int, cost: float | None, tokens: int | None, model: str | None = None) -> None:
        """An attempt of the arm ended having spent this (None: unknown)."""
        self.arms[arm_id].add(cost, tokens)
        if cost is None:
            self._warn_unknown(arm_id, model)

    def inflight(self, scope: int | None) -> int:
        """Runs in flight in a scope (an arm id, or None for the whole experiment)."""
        if scope is None:
            return sum(t.inflight for t in self.arms.values())
        return self.arms[scope].inflight

    def _warn_unknown(self, arm_id: int, model: str | None) -> None:
        limits = [self.arm_limits.get(arm_id), self.limits]
        if not any(lim is not None and lim.max_cost is not None for lim in limits):
            return
        if arm_id in self._warned:
            return
        self._warned.add(arm_id)
        log.warning("%s", self.unknown_cost_note(arm_id, model))

    def unknown_cost_note(self, arm_id: int, model: str | None = None) -> str:
        """What a cost budget can promise when the arm's runs have no known cost."""
        return unknown_cost_note(
            self.arm_names[arm_id],
            model or self.arm_models.get(arm_id),
            priced=arm_id in self.priced,
            tokens_limited=any(
                lim is not None and lim.max_tokens is not None
                for lim in (self.arm_limits.get(arm_id), self.limits)
            ),
        )

    def warnings(self) -> tuple[str, ...]:
        """One note per arm with a cost budget whose attempts include some of unknown cost."""
        notes = []
        for arm_id, tally in self.arms.items():
            limits = [self.arm_limits.get(arm_id), self.limits]
            if tally.unknown_cost and any(lim is not None and lim.max_cost is not None for lim in limits):
                notes.append(self.unknown_cost_note(arm_id))
        return tuple(notes)

    def reason(self, scope: int | None, by: str, counts: dict[str, dict[str, int]]) -> PauseReason:
        """The `PauseReason` for a budget reached in `scope`, with the figures now."""
        if scope is None:
            limits, tallies = self.limits or Limits(), list(self.arms.values())
            runs = list(counts.values())
        else:
            limits, tallies = self.arm_limits[scope], [self.arms[scope]]
            runs = [counts.get(self.arm_names[scope], {})]
        known = sum(t.cost_known for t in tallies)
        reported = sum(t.tokens_known for t in tallies)
        return PauseReason(
            reason=BUDGET_REACHED,
            arm=None if scope is None else self.arm_names[scope],
            spent=sum(t.cost for t in tallies) if known else None,
            max_cost=limits.max_cost,
            tokens=sum(t.tokens for t in tallies) if reported else None,
            max_tokens=limits.max_tokens,
            runs_done=sum(c.get(s, 0) for c in runs for s in _DONE),
            runs_total=sum(sum(c.values()) for c in runs),
            unknown_cost=sum(t.unknown_cost for t in tallies),
            by=by,
        )


_DONE = (RunState.EXECUTED, RunState.EVALUATING, RunState.PASS, RunState.FAIL)


def unknown_cost_note(arm: str, model: str | None, *, tokens_limited: bool, priced: bool = False) -> str:
    """The warning for a cost budget over runs whose cost is unknown: no prices, or — for an arm that
    has prices — no usage reported by the server (a stream without a usage chunk)."""
    if priced:
        what = "cost unknown (the server reported no token usage for some calls; the arm's prices are set)"
    else:
        what = f"cost unknown (no prices for model {model})" if model else "cost unknown (no prices)"
    then = (
        "the cost budget counts only known costs; the max_tokens budget is what holds"
        if tokens_limited
        else "the cost budget cannot be enforced on its runs: give the model's prices "
        "(prices: {input, output}) or a max_tokens budget"
    )
    return f"arm {arm}: {what}: {then}"


def _priced(arms: Iterable[Arm]) -> frozenset[int]:
    return frozenset(a.id for a in arms if a.params.get("prices"))


def budget_limits(spec: RunSettings, arms: Iterable[Arm]) -> tuple[Limits | None, dict[int, Limits]]:
    """The experiment's budget and each arm's (by arm id) from its stored definition."""
    limits = Limits.from_spec(spec.budget)
    arm_limits: dict[int, Limits] = {}
    for arm in arms:
        arm_spec = spec.arms.get(arm.name)
        own = Limits.from_spec(arm_spec.budget if arm_spec is not None else None)
        if own is not None:
            arm_limits[arm.id] = own
    return limits, arm_limits


@dataclass(eq=False)
class RunBudget:
    """The runner's side of the budget: admit a run, count each attempt's spend, say why the work paused.

    Attributes:
        store: The open store (the limits and the spend so far are read from it).
        exp: The experiment.
        control: Pause and cancel of this pass (a cancel ends a wait for budget room).
        concurrency: Runs in flight at once (the projection's start).
        grade_only: A grading pass spends nothing on agents: no budget applies.
        guard: The limits and the spend so far, once `start` built them (None: no budget applies).
        over_budget: Work items not started because a budget would be passed.
    """

    store: Store
    exp: Experiment
    control: RunControl
    _: KW_ONLY
    concurrency: int
    grade_only: bool
    guard: BudgetGuard | None = field(default=None, init=False)
    over_budget: list[WorkItem] = field(default_factory=list, init=False)
    _waiters: list[asyncio.Future[None]] = field(default_factory=list, init=False)
    """Workers waiting for runs in flight to end."""

    def __post_init__(self) -> None:
        self._models = {a.id: a.model for a in self.exp.arms}

    def start(self) -> None:
        """Build the guard from the stored definition (a resume may have raised it) and spend so far."""
        exp = self.store.experiments.get(self.exp.id)
        limits, arm_limits = budget_limits(exp.settings, exp.arms)
        if self.grade_only or (limits is None and not arm_limits):
            self.guard = None
            return
        self.guard = BudgetGuard(
            limits,
            arm_limits,
            self.store.attempts.spend_by_run(exp.id),
            {a.id: a.name for a in exp.arms},
            self.concurrency,
            {a.id: a.model for a in exp.arms},
            _priced(exp.arms),
        )
        for note in self.guard.warnings():
            log.warning("experiment %s: %s", exp.name, note)

    def reload(self) -> None:
        """A resume may have raised the limits while this runner waited: read them again."""
        if self.guard is None:
            return
        exp = self.store.experiments.get(self.exp.id)
        self.guard.limits, self.guard.arm_limits = budget_limits(exp.settings, exp.arms)
        self.guard.stopped.clear()
        self._wake()

    def warnings(self) -> tuple[str, ...]:
        """The guard's warnings (a cost budget over runs of unknown cost); none without a budget."""
        return self.guard.warnings() if self.guard is not None else ()

    def _wake(self) -> None:
        # One future per waiter, made before it waits: an event set and cleared at once would be
        # missed by a waiter whose task had not started waiting yet.
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def admit(self, item: WorkItem) -> bool:
        """Whether `item`'s run may start under the budget; waits while runs in flight may free room.

        True counts the run as in flight (`release` ends that). False: a budget is reached, and the
        run is left as it is for a later resume.
        """
        guard = self.guard
        if guard is None:
            return True
        while True:
            if None in guard.stopped or item.arm_id in guard.stopped:
                return False
            refused = guard.refusal(item.arm_id)
            if refused is None:
                guard.start(item.arm_id)
                return True
            scope, by = refused
            if guard.inflight(scope) == 0:
                # nothing in flight can lower the projection: the budget is reached for this scope
                guard.stopped.setdefault(scope, by)
                self._wake()
                log.info(
                    "experiment %s: %s budget reached (%s); no new run starts",
                    self.exp.name,
                    "the experiment's" if scope is None else f"arm {guard.arm_names[scope]}'s",
                    by,
                )
                return False
            changed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(changed)
            await self.control.wait_unless_cancelled(changed)
            if self.control.cancelling:
                return False

    def release(self, item: WorkItem) -> None:
        """The run admitted by `admit` is no longer in flight."""
        if self.guard is not None:
            self.guard.end(item.arm_id)
            self._wake()

    def count_spend(
        self,
        item: WorkItem,
        cost: float | None,
        input_tokens: int | None,
        output_tokens: int | None,
        model: str | None,
    ) -> None:
        """One attempt of `item` ended having spent this (every attempt counts, failed ones too)."""
        if self.guard is None:
            return
        tokens = None
        if input_tokens is not None or output_tokens is not None:
            tokens = (input_tokens or 0) + (output_tokens or 0)
        self.guard.spent(item.arm_id, cost, tokens, model or self._models.get(item.arm_id))
        self._wake()

    def pause_reason(self, counts: dict[str, dict[str, int]]) -> PauseReason | None:
        """Why the work stopped short, when a budget left runs unstarted (the experiment's first)."""
        guard = self.guard
        if guard is None or not self.over_budget or not guard.stopped:
            return None
        scope = None if None in guard.stopped else next(iter(guard.stopped))
        return guard.reason(scope, guard.stopped[scope], counts)


def budget_notes(exp: Experiment, store: Store) -> tuple[str, ...]:
    """The budget's warnings for a stored experiment (a cost budget over runs of unknown cost)."""
    limits, arm_limits = budget_limits(exp.settings, exp.arms)
    if limits is None and not arm_limits:
        return ()
    spend = store.attempts.spend_by_run(exp.id)
    if not any(s.unknown_cost for s in spend.values()):
        return ()
    guard = BudgetGuard(
        limits, arm_limits, spend, {a.id: a.name for a in exp.arms}, 1, {a.id: a.model for a in exp.arms},
        _priced(exp.arms),
    )  # fmt: skip
    return guard.warnings()
