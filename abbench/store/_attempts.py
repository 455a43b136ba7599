"""Store methods for execution attempts: what every attempt of a run spent, failed and retried ones included.

A run row holds only its current execution; a failed attempt (a tool loop out of turns, a reply that
does not parse, a timeout after some model calls) and an attempt a re-run replaced keep their tokens,
cost, latency, files read and transcript in ``run_attempts``, so an experiment's spend counts them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from abbench.store._base import loads
from abbench.store._noun import Noun
from abbench.store._run_record import CachedCalls
from abbench.types import AttemptOutcome, Usage

_N = TypeVar("_N", int, float)


@dataclass(frozen=True)
class AttemptRecord(CachedCalls):
    """One execution attempt of a run and what it spent.

    Attributes:
        run_id: The run.
        attempt: Its number (1 for the first execution; re-runs go on counting).
        outcome: An `abbench.types.AttemptOutcome`: ``executed``, ``failed``, ``cancelled`` (or ``running``:
            under way, or left by a process killed under it and not reconciled yet).
        failure_type: Why it failed (``max_turns``, ``bad_output``, ``timeout``, ...); None otherwise.
        error: The failure, in words.
        started_at: When it started (UTC).
        ended_at: When it ended (UTC).
        model: The model that answered its last call.
        usage: Tokens it spent; None when not reported (unknown, not zero).
        cost: What it cost; None when unknown.
        latency_ms: Its wall time.
        model_calls: Model calls it made, when the adapter counts them.
        files_read: Skill files it opened.
        sections_read: Skill sections it opened.
        transcript_path: Its transcript file, when it wrote one.
        transcript_summary: Counts of its messages and tool calls.
        cached_calls: Of `model_calls`, those the response cache answered (None: none).
        cost_saved: What those would have cost; `cost` is what the attempt spent.
    """

    run_id: int
    attempt: int
    outcome: str
    failure_type: str | None
    error: str | None
    started_at: str | None
    ended_at: str | None
    model: str | None
    usage: Usage | None
    cost: float | None
    latency_ms: float | None
    model_calls: int | None
    files_read: tuple[str, ...]
    sections_read: tuple[str, ...]
    transcript_path: Path | None
    transcript_summary: dict[str, Any]
    cached_calls: int | None = None
    cost_saved: float | None = None

    @property
    def tool_calls(self) -> int:
        """Tool calls the attempt made (0 when it recorded no transcript)."""
        return int(self.transcript_summary.get("tool_calls") or 0)


@dataclass(frozen=True)
class ArmSpend:
    """What one arm's agent spent over every attempt of its runs.

    Attributes:
        attempts: Execution attempts (an execution stored before attempts were recorded counts as one).
        failed_attempts: Attempts that failed or were cancelled while running.
        cost: Cost over every attempt; None when no attempt reported one.
        failed_cost: Of it, what the failed attempts cost; None when none reported a cost.
        unknown_cost: Attempts whose cost is unknown (left out of `cost`).
        input_tokens: Input tokens over every attempt; None when none reported tokens.
        output_tokens: Output tokens, likewise.
        latency_ms: Wall time over every attempt.
        cached_attempts: Attempts the response cache answered calls of.
        saved: What the cached calls would have cost (not in `cost`: it was saved, not spent).
        token_attempts: Attempts that reported tokens (the others are unknown, not zero).
    """

    attempts: int = 0
    failed_attempts: int = 0
    cost: float | None = None
    failed_cost: float | None = None
    unknown_cost: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float = 0.0
    cached_attempts: int = 0
    saved: float = 0.0
    token_attempts: int = 0


@dataclass(frozen=True)
class RunSpend:
    """What one run spent over all its attempts (what an estimate projects from).

    Attributes:
        run_id: The run.
        arm_id: Its arm.
        case_idx: Its case's position in the dataset.
        round: Its round.
        state: Its state now.
        attempts: Its execution attempts so far (0: never started).
        cost: Cost over them; None when any attempt's cost is unknown, or none was made.
        tokens: Input plus output tokens over them; None when none reported tokens.
        latency_ms: Wall time over them.
        model: The model that answered its last attempt, when recorded.
    """

    run_id: int
    arm_id: int
    case_idx: int
    round: int
    state: str
    attempts: int
    cost: float | None
    tokens: int | None
    latency_ms: float
    model: str | None


_NOT_FAILED = f"'{AttemptOutcome.EXECUTED}', '{AttemptOutcome.RUNNING}'"
"""Attempts that count as neither failed nor cancelled: answered, or under way now."""


class Attempts(Noun):
    """Reading execution attempts (part of ``store.attempts``; the runner's writer appends them)."""

    def of_run(self, run_ids: Sequence[int]) -> dict[int, list[AttemptRecord]]:
        """Every recorded attempt of these runs, oldest first, by run id (runs without any are absent)."""
        out: dict[int, list[AttemptRecord]] = {}
        ids = list(run_ids)
        for start in range(0, len(ids), 900):  # SQLite's limit on parameters
            chunk = ids[start : start + 900]
            rows = self._store.query(
                "SELECT run_id, attempt, outcome, failure_type, error, started_at, ended_at, model, "
                "input_tokens, output_tokens, cost, latency_ms, model_calls, files_read, sections_read, "
                "transcript_path, transcript_summary, cached_calls, cost_saved FROM run_attempts "
                "WHERE run_id IN ({}) "
                "ORDER BY run_id, attempt, id".format(",".join("?" * len(chunk))),
                chunk,
            )
            for r in rows:
                out.setdefault(r[0], []).append(
                    AttemptRecord(
                        run_id=r[0],
                        attempt=r[1],
                        outcome=r[2],
                        failure_type=r[3],
                        error=r[4],
                        started_at=r[5],
                        ended_at=r[6],
                        model=r[7],
                        usage=None if r[8] is None and r[9] is None else Usage(r[8] or 0, r[9] or 0),
                        cost=r[10],
                        latency_ms=r[11],
                        model_calls=r[12],
                        files_read=tuple(loads(r[13]) or ()),
                        sections_read=tuple(loads(r[14]) or ()),
                        transcript_path=self._store.abspath(r[15]) if r[15] else None,
                        transcript_summary=loads(r[16]) or {},
                        cached_calls=r[17],
                        cost_saved=r[18],
                    )
                )
        return out

    def recorded(self, exp_id: int) -> dict[int, dict[int, str]]:
        """The outcomes recorded from elsewhere (`abbench.runner.record_runs`) of an experiment:
        ``{run id: {the external runner's attempt number: digest of what it submitted}}``."""
        out: dict[int, dict[int, str]] = {}
        for run_id, attempt, digest in self._store.query(
            "SELECT a.run_id, a.recorded_attempt, a.recorded_digest FROM run_attempts a "
            "JOIN runs r ON r.id = a.run_id "
            "WHERE r.experiment_id=? AND a.recorded_attempt IS NOT NULL ORDER BY a.id",
            (exp_id,),
        ):
            out.setdefault(run_id, {})[int(attempt)] = str(digest)
        return out

    def spend_by_run(self, exp_id: int) -> dict[int, ArmSpend]:
        """What each arm's agent spent over every attempt (failed and replaced ones included), by arm id.

        Executions stored without attempt rows (before attempts were recorded) count as one attempt each.
        """
        # The runs in index order (arm, case, round), each with its attempts: the order the sums add in.
        # The last column counts the runs without any attempt: when there is none, no execution was
        # stored before attempts were recorded, and the second query (a probe per run) is not needed.
        recorded = self._store.query(
            f"SELECT r.arm_id, count(t.id), total(t.outcome NOT IN ({_NOT_FAILED})), sum(t.cost), "
            f"count(t.cost), sum(CASE WHEN t.outcome NOT IN ({_NOT_FAILED}) THEN t.cost END), "
            "sum(t.input_tokens), sum(t.output_tokens), total(t.latency_ms), total(t.cached_calls > 0), "
            "total(t.cost_saved), "
            "count(CASE WHEN t.input_tokens IS NOT NULL OR t.output_tokens IS NOT NULL THEN 1 END), "
            "total(t.id IS NULL) FROM runs r LEFT JOIN run_attempts t ON t.run_id = r.id "
            "WHERE r.experiment_id=? GROUP BY r.arm_id",
            (exp_id,),
        )
        without = sum(float(row[-1]) for row in recorded)
        attempted = [tuple(row)[:-1] for row in recorded if row[1]]
        legacy: list[Any] = (
            []
            if not without
            else self._store.query(
                "SELECT r.arm_id, count(*), 0, sum(r.cost), count(r.cost), NULL, sum(r.input_tokens), "
                "sum(r.output_tokens), total(r.latency_ms), 0, 0, "
                "count(CASE WHEN r.input_tokens IS NOT NULL OR r.output_tokens IS NOT NULL THEN 1 END) FROM runs r WHERE r.experiment_id=? "
                # The attempts first (the index has them): the wide run row is read only for a run without any.
                "AND CASE WHEN EXISTS (SELECT 1 FROM run_attempts t WHERE t.run_id = r.id) THEN 0 "
                "ELSE r.executed_at IS NOT NULL END GROUP BY r.arm_id",
                (exp_id,),
            )
        )
        out: dict[int, ArmSpend] = {}
        for row in [*attempted, *legacy]:
            arm, n, failed, cost, known, failed_cost, tin, tout, latency, cached, saved, with_tokens = row
            prior = out.get(arm, ArmSpend())
            out[arm] = ArmSpend(
                attempts=prior.attempts + int(n),
                failed_attempts=prior.failed_attempts + int(failed),
                cost=_add(prior.cost, cost),
                failed_cost=_add(prior.failed_cost, failed_cost),
                unknown_cost=prior.unknown_cost + int(n) - int(known),
                input_tokens=_add(prior.input_tokens, tin),
                output_tokens=_add(prior.output_tokens, tout),
                latency_ms=prior.latency_ms + float(latency or 0.0),
                cached_attempts=prior.cached_attempts + int(cached or 0),
                saved=prior.saved + float(saved or 0.0),
                token_attempts=prior.token_attempts + int(with_tokens),
            )
        return out

    def spend_of_runs(self, exp_id: int) -> list[RunSpend]:
        """What every run of the experiment spent over all its attempts, in id order."""
        rows = self._store.query(
            "SELECT r.id, r.arm_id, r.case_idx, r.round, r.state, "
            "count(t.id), sum(t.cost), count(t.cost), "
            "sum(coalesce(t.input_tokens, 0) + coalesce(t.output_tokens, 0)), "
            "count(CASE WHEN t.input_tokens IS NOT NULL OR t.output_tokens IS NOT NULL THEN 1 END), "
            "total(t.latency_ms), max(t.model), "
            "r.executed_at, r.cost, r.input_tokens, r.output_tokens, r.latency_ms, r.model "
            "FROM runs r LEFT JOIN run_attempts t ON t.run_id = r.id WHERE r.experiment_id=? "
            "GROUP BY r.id ORDER BY r.id",
            (exp_id,),
        )
        out = []
        for r in rows:
            (run_id, arm_id, case_idx, rnd, state, n, cost, known, tokens, with_tokens, latency, model) = r[
                :12
            ]
            if n == 0 and r[12] is not None:  # an execution stored before attempts were recorded
                n, cost, known, latency, model = 1, r[13], int(r[13] is not None), r[16] or 0.0, r[17]
                with_tokens = int(r[14] is not None or r[15] is not None)
                tokens = (r[14] or 0) + (r[15] or 0)
            out.append(
                RunSpend(
                    run_id=run_id,
                    arm_id=arm_id,
                    case_idx=case_idx,
                    round=rnd,
                    state=state,
                    attempts=int(n),
                    cost=cost if n and known == n else None,
                    tokens=int(tokens) if with_tokens else None,
                    latency_ms=float(latency or 0.0),
                    model=model,
                )
            )
        return out


def _add(a: _N | None, b: _N | None) -> _N | None:
    """Sum where None is unknown: unknown plus a known amount is the known amount."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b
