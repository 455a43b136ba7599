"""How far to trust the judges: position bias of pairwise judges, and what judging cost apart from the agents.

A pairwise judge that prefers whatever it reads first is measuring the slot, not the answers. The
order of every judgement is recorded in its grade (see `pairwise_judge`), so the bias can be read
back: the first-slot win rate over decisive judgements, with a Wilson interval (an unbiased judge
sits at 0.5; an interval that excludes 0.5 is evidence of bias), and, for pairs judged in both
orders, how often the verdict changed with the order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from abbench.stats import Interval


def _wilson(k: int, n: int, confidence: float) -> Interval | None:
    """The Wilson interval of ``k / n`` (`abbench.stats.wilson_interval`); None when ``n == 0``."""
    if n == 0:
        return None
    from abbench.stats import wilson_interval  # numpy and scipy load only when an interval is asked for

    return wilson_interval(k, n, confidence)


@dataclass(frozen=True)
class PositionBias:
    """The position bias of one pairwise grader over an experiment's latest pair grades.

    Attributes:
        grader: The pairwise grader's name.
        pairs: Pairs with a readable verdict.
        judgements: Single judgements (two per pair judged in both orders).
        first_wins: Judgements won by the answer in slot 1.
        second_wins: Judgements won by the answer in slot 2.
        ties: Judgements that named no winner.
        first_win_rate: ``first_wins / (first_wins + second_wins)``; None without decisive judgements.
        first_win_interval: Its Wilson interval.
        both_orders: Pairs judged in both orders.
        inconsistent: Of those, pairs whose two verdicts differ (counted as ties).
        flips: Of those, pairs whose winner swapped (a in one order, b in the other).
        flip_rate: ``flips / both_orders``; None when no pair was judged in both orders.
        flip_interval: Its Wilson interval.
        verdicts: Final verdicts in arm terms: ``{"a": n, "b": n, "tie": n}``.
        arms: The two arms compared (a, b).
    """

    grader: str
    pairs: int
    judgements: int
    first_wins: int
    second_wins: int
    ties: int
    first_win_rate: float | None
    first_win_interval: Interval | None
    both_orders: int
    inconsistent: int
    flips: int
    flip_rate: float | None
    flip_interval: Interval | None
    verdicts: dict[str, int]
    arms: tuple[str, ...] = ()

    @property
    def decisive(self) -> int:
        """Judgements that named a winner."""
        return self.first_wins + self.second_wins

    @property
    def inconsistency_rate(self) -> float | None:
        """``inconsistent / both_orders``; None when no pair was judged in both orders."""
        return self.inconsistent / self.both_orders if self.both_orders else None

    @property
    def biased(self) -> bool | None:
        """True when the first-slot win rate's interval excludes 0.5; None without decisive judgements."""
        if self.first_win_interval is None:
            return None
        return not self.first_win_interval.contains(0.5)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        data = asdict(self)
        for key in ("first_win_interval", "flip_interval"):
            interval = getattr(self, key)
            data[key] = None if interval is None else interval.as_dict()
        data.update(decisive=self.decisive, inconsistency_rate=self.inconsistency_rate, biased=self.biased)
        data["arms"] = list(self.arms)
        return data


def measure_position_bias(
    grades: Iterable[Mapping[str, Any]], grader: str = "", *, confidence: float = 0.95
) -> PositionBias:
    """Position bias from pairwise grades (rows as `Store.grades` returns them, or just their ``details``).

    Grades that failed, or that carry no recorded judgements, are skipped.
    """
    first = second = ties = judgements = pairs = both = inconsistent = flips = 0
    verdicts = {"a": 0, "b": 0, "tie": 0}
    arms: tuple[str, ...] = ()
    for row in grades:
        if row.get("status", "ok") != "ok":
            continue
        details = row.get("details") if "details" in row else row
        singles = (details or {}).get("judgements") or []
        if not singles:
            continue
        pairs += 1
        arms = arms or tuple((details or {}).get("arms") or ())
        verdict = row.get("verdict") or _final(singles)
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        for j in singles:
            judgements += 1
            slot = j.get("winner_slot")
            if slot == 1:
                first += 1
            elif slot == 2:
                second += 1
            else:
                ties += 1
        if len(singles) >= 2:
            both += 1
            winners = {j.get("winner") for j in singles}
            inconsistent += len(winners) > 1
            flips += winners == {"a", "b"}
    decisive = first + second
    return PositionBias(
        grader=grader,
        pairs=pairs,
        judgements=judgements,
        first_wins=first,
        second_wins=second,
        ties=ties,
        first_win_rate=first / decisive if decisive else None,
        first_win_interval=_wilson(first, decisive, confidence),
        both_orders=both,
        inconsistent=inconsistent,
        flips=flips,
        flip_rate=flips / both if both else None,
        flip_interval=_wilson(flips, both, confidence),
        verdicts=verdicts,
        arms=arms,
    )


def _final(singles: list[Mapping[str, Any]]) -> str:
    winners = {j.get("winner") for j in singles}
    return winners.pop() if len(winners) == 1 else "tie"


def _store_and_experiment(ref: Any, store: Any):
    from abbench.store import open_store

    store = open_store(store)
    return store, store.get_experiment(ref)


def position_bias(
    ref: int | str | Any,
    *,
    store: str | Path | Any = None,
    grader: str | None = None,
    confidence: float = 0.95,
) -> list[PositionBias]:
    """The position bias of each pairwise grader of an experiment (its latest grade per pair).

    Args:
        ref: The experiment (id, name, or Experiment).
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).
        grader: Only this pairwise grader.
        confidence: Of the intervals.
    """
    store, exp = _store_and_experiment(ref, store)
    rows = [r for r in store.grades(exp.id, grader=grader) if r["kind"] == "pairwise"]
    names = list(dict.fromkeys(r["grader"] for r in rows))
    return [
        measure_position_bias([r for r in rows if r["grader"] == name], name, confidence=confidence)
        for name in names
    ]


@dataclass(frozen=True)
class JudgeCost:
    """What one grader spent on an experiment, over every grade it wrote (re-grades included).

    Attributes:
        grader: The grader's name.
        kind: rule, judge or pairwise.
        grades: Grades written (each judge call that reached a verdict or failed).
        errors: Of those, grading failures.
        models: The judge models that answered.
        cost: The known cost, in the price table's currency (USD by default).
        unknown_cost: Judge replies whose model has no price (their cost is not in `cost`).
        input_tokens: Judge input tokens.
        output_tokens: Judge output tokens.
    """

    grader: str
    kind: str
    grades: int
    errors: int
    models: tuple[str, ...]
    cost: float
    unknown_cost: int
    input_tokens: int
    output_tokens: int

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        data = asdict(self)
        data["models"] = list(self.models)
        return data


def judge_costs(ref: int | str | Any, *, store: str | Path | Any = None) -> list[JudgeCost]:
    """Judge cost and tokens per grader of an experiment (rule graders cost nothing and are left out)."""
    store, exp = _store_and_experiment(ref, store)
    return [
        JudgeCost(**{**row, "models": tuple(row["models"])})
        for row in store.judge_usage(exp.id)
        if row["kind"] != "rule" or row["models"]
    ]


@dataclass(frozen=True)
class JudgeReport:
    """An experiment's judges at a glance: position bias, and judge cost apart from agent cost.

    Attributes:
        experiment: The experiment's name.
        experiment_id: Its id.
        batch_id: Its grade batch.
        batches: Distinct batch ids among its grades (1 by design; 0 before any grade).
        position_bias: Per pairwise grader.
        judge_costs: Per judge grader.
        agent: What the agents spent: ``executions``, ``cost``, ``input_tokens``, ``output_tokens``.
    """

    experiment: str
    experiment_id: int
    batch_id: str | None
    batches: int
    position_bias: tuple[PositionBias, ...]
    judge_costs: tuple[JudgeCost, ...]
    agent: dict[str, Any]

    @property
    def judge_cost(self) -> float:
        """Known judge cost over every judge grader."""
        return sum(c.cost for c in self.judge_costs)

    @property
    def agent_cost(self) -> float:
        """What the agents' stored executions cost."""
        return float(self.agent.get("cost", 0.0))

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "experiment": self.experiment,
            "experiment_id": self.experiment_id,
            "batch_id": self.batch_id,
            "batches": self.batches,
            "judge_cost": self.judge_cost,
            "agent_cost": self.agent_cost,
            "agent": dict(self.agent),
            "judge_costs": [c.as_dict() for c in self.judge_costs],
            "position_bias": [b.as_dict() for b in self.position_bias],
        }


def judge_report(
    ref: int | str | Any, *, store: str | Path | Any = None, confidence: float = 0.95
) -> JudgeReport:
    """Position bias of every pairwise grader and judge cost per grader, with agent cost beside it.

    Reading never grades or starts anything.
    """
    store, exp = _store_and_experiment(ref, store)
    return JudgeReport(
        experiment=exp.name,
        experiment_id=exp.id,
        batch_id=exp.batch_id,
        batches=len(store.batches(exp.id)),
        position_bias=tuple(position_bias(exp.id, store=store, confidence=confidence)),
        judge_costs=tuple(judge_costs(exp.id, store=store)),
        agent=store.agent_usage(exp.id),
    )


def _fmt_rate(rate: float | None, interval: Interval | None) -> str:
    if rate is None or interval is None:
        return "n/a"
    return f"{rate:.2f} [{interval.low:.2f}, {interval.high:.2f}]"


def describe_bias(bias: PositionBias) -> str:
    """One paragraph for people: the first-slot win rate, what it means, and the flip rate."""
    lines = [
        f"{bias.grader}: {bias.pairs} pairs ({' vs '.join(bias.arms) or 'a vs b'}), {bias.judgements} judgements; "
        f"verdicts a {bias.verdicts.get('a', 0)}, b {bias.verdicts.get('b', 0)}, tie {bias.verdicts.get('tie', 0)}"
    ]
    conf = f"{bias.first_win_interval.confidence:.0%}" if bias.first_win_interval else ""
    verdict = {True: "biased towards a slot", False: "no position bias shown", None: "no decisive judgement"}[
        bias.biased
    ]
    lines.append(
        f"  first-slot win rate {_fmt_rate(bias.first_win_rate, bias.first_win_interval)} "
        f"({conf} Wilson; {bias.first_wins} first, {bias.second_wins} second, {bias.ties} ties) — {verdict}"
    )
    if bias.both_orders:
        lines.append(
            f"  both orders: {bias.both_orders} pairs, flip rate {_fmt_rate(bias.flip_rate, bias.flip_interval)}, "
            f"inconsistent {bias.inconsistent} (counted as ties)"
        )
    return "\n".join(lines)
