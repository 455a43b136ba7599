"""How each run's answer was read (format adherence), in SQL: strict JSON, structured output, the fallback.

The agents that read a model's reply (openai, command) record how its final answer was read in the
run's transcript summary (``answer_format``: ``strict``, ``structured``, ``fallback``); a run whose
reply could not be read failed as ``bad_output`` (``unreadable`` here) or ``truncated``. Runs of agents
that read no reply (builtin, python) and runs that failed otherwise (a timeout, a server error) have
no reading and are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from abbench.store._noun import Noun
from abbench.types import RunState

_READING = (
    "CASE WHEN r.failure_type = 'truncated' THEN 'truncated' "
    "WHEN r.failure_type = 'bad_output' THEN 'unreadable' "
    "WHEN r.failure_type IS NULL THEN json_extract(r.transcript_summary, '$.answer_format') END"
)
_DONE = (RunState.EXECUTED, RunState.EVALUATING, RunState.PASS, RunState.FAIL)


@dataclass(frozen=True)
class AnswerReading:
    """How one run's final answer was read.

    Attributes:
        arm_id: The run's arm.
        case_idx: Its case's position in the dataset.
        round: Its round.
        reading: ``strict``, ``structured``, ``fallback``, ``unreadable`` or ``truncated``.
    """

    arm_id: int
    case_idx: int
    round: int
    reading: str


class AnswerFormats(Noun):
    """The answer readings of an experiment's runs."""

    def answer_readings(self, exp_id: int, arm_ids: Sequence[int] | None = None) -> list[AnswerReading]:
        """How each executed (or unreadable) run's answer was read, by arm, case and round; runs with
        no reading are left out."""
        states = ", ".join(f"'{s}'" for s in _DONE)
        where = f"r.experiment_id = ? AND r.state IN ({states})"
        params: list[object] = [exp_id]
        if arm_ids is not None:
            where += f" AND r.arm_id IN ({', '.join('?' for _ in arm_ids)})"
            params += list(arm_ids)
        rows = self._store.query(
            f"SELECT r.arm_id, r.case_idx, r.round, {_READING} AS reading FROM runs r "
            f"WHERE {where} AND reading IS NOT NULL ORDER BY r.arm_id, r.case_idx, r.round",
            params,
        )
        return [AnswerReading(int(a), int(c), int(n), str(f)) for a, c, n, f in rows]
