"""The runs of an experiment that got no verdict, summarised in SQL: what `abbench run` lists at its end.

An execution failure (``failure_type`` set: re-run it) and a grading failure (executed, no grader
reached a verdict: re-grade it) are errors, not wrong answers. The summary counts them by kind and
type and by arm, and keeps one example of each, so its cost does not grow with the runs that passed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from abbench.store._noun import Noun
from abbench.types import RunState

GRADING_ERROR = "grading_error"
"""The type a grading failure is listed under (its ``failure_type`` stays empty in the store)."""

_FAILED = f"r.experiment_id = ? AND r.state = '{RunState.FAIL}' AND (r.failure_type IS NOT NULL OR r.passed IS NULL)"
_KIND = "CASE WHEN r.failure_type IS NOT NULL THEN 'execution' ELSE 'grading' END"
_TYPE = f"COALESCE(r.failure_type, '{GRADING_ERROR}')"


@dataclass(frozen=True)
class FailureKind:
    """The failed runs of one kind and type.

    Attributes:
        kind: ``execution`` (re-run them) or ``grading`` (re-grade them).
        failure_type: ``agent_error``, ``timeout``, ``interrupted``, ... or ``grading_error``.
        runs: How many runs.
        arms: (arm name, runs) of each arm that has some, in the order its first such run was made.
        case_id: The case of the first such run (by run id), the example shown.
        error: That run's error message, if any.
    """

    kind: str
    failure_type: str
    runs: int
    arms: tuple[tuple[str, int], ...]
    case_id: str
    error: str | None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FailureKind:
        """The kind from its fields as a JSON object (``dataclasses.asdict``'s, as a server sends it)."""
        return cls(
            kind=str(data["kind"]),
            failure_type=str(data["failure_type"]),
            runs=int(data["runs"]),
            arms=tuple((str(arm), int(n)) for arm, n in data.get("arms") or ()),
            case_id=str(data["case_id"]),
            error=data.get("error"),
        )


@dataclass(frozen=True)
class Failures:
    """An experiment's runs that got no verdict, by kind and type (most runs first).

    Attributes:
        total: Every such run.
        execution: How many are execution failures.
        grading: How many are grading failures.
        kinds: The kinds with the most runs (ties: the one failing first), at most the limit asked.
        more_kinds: Kinds left out by the limit.
        more_runs: Runs of the kinds left out.
    """

    total: int
    execution: int
    grading: int
    kinds: tuple[FailureKind, ...]
    more_kinds: int
    more_runs: int

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Failures:
        """The summary from its fields as a JSON object (``GET /api/experiments/{id}/failures``)."""
        return cls(
            total=int(data["total"]),
            execution=int(data["execution"]),
            grading=int(data["grading"]),
            kinds=tuple(FailureKind.from_dict(k) for k in data.get("kinds") or ()),
            more_kinds=int(data.get("more_kinds") or 0),
            more_runs=int(data.get("more_runs") or 0),
        )


class RunFailures(Noun):
    """The summary of an experiment's failed runs (part of ``store.runs``)."""

    def failures(self, exp_id: int, *, limit: int = 10) -> Failures:
        """The runs of experiment `exp_id` that got no verdict, by kind and type, at most `limit` kinds.

        Two grouped queries over the failed runs only: nothing is read of the runs that got a verdict.
        """
        groups: dict[tuple[str, str], list[tuple[str, int]]] = {}
        order: dict[tuple[str, str], tuple[int, int]] = {}  # (runs, first run id)
        for kind, ftype, arm, n, first in self._store.query(
            f"SELECT {_KIND}, {_TYPE}, a.name, COUNT(*), MIN(r.id) FROM runs r JOIN arms a ON a.id = r.arm_id "
            f"WHERE {_FAILED} GROUP BY 1, 2, a.id ORDER BY MIN(r.id)",
            (exp_id,),
        ):
            groups.setdefault((kind, ftype), []).append((arm, n))
            runs, earliest = order.get((kind, ftype), (0, first))
            order[(kind, ftype)] = (runs + n, min(earliest, first))
        ranked = sorted(order, key=lambda k: (-order[k][0], order[k][1]))
        shown = ranked[: max(limit, 0)]
        examples = self._failure_examples(exp_id) if shown else {}
        kinds = tuple(FailureKind(k[0], k[1], order[k][0], tuple(groups[k]), *examples[k]) for k in shown)
        left = ranked[len(shown) :]
        return Failures(
            total=sum(runs for runs, _ in order.values()),
            execution=sum(order[k][0] for k in order if k[0] == "execution"),
            grading=sum(order[k][0] for k in order if k[0] == "grading"),
            kinds=kinds,
            more_kinds=len(left),
            more_runs=sum(order[k][0] for k in left),
        )

    def _failure_examples(self, exp_id: int) -> dict[tuple[str, str], tuple[str, str | None]]:
        """(kind, type) -> (case id, error) of the first failed run of each."""
        rows = self._store.query(
            f"SELECT kind, ftype, case_id, error FROM (SELECT {_KIND} AS kind, {_TYPE} AS ftype, r.case_id, "
            f"r.error, ROW_NUMBER() OVER (PARTITION BY {_KIND}, {_TYPE} ORDER BY r.id) AS nth FROM runs r "
            f"WHERE {_FAILED}) WHERE nth = 1",
            (exp_id,),
        )
        return {(r[0], r[1]): (r[2], r[3]) for r in rows}
