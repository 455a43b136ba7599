"""The runs of an experiment as columns (`RunTable`) and the case fields beside them (`CaseFields`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from abbench.store._run_columns import FAILED, GRADING_FAILED, LIGHT_COLUMNS, OUTCOMES, STATES, TEXT_COLUMNS
from abbench.types import RunState

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


@dataclass(frozen=True)
class RunTable:
    """One experiment's runs as numpy columns, one row per run, ordered by arm, case and round.

    Attributes:
        experiment_id: The experiment.
        arms: Arm names in the experiment's order; ``arm_index`` points into it.
        run_id: Run ids.
        arm_index: Position of each run's arm in `arms`.
        arm_id: Each run's arm id in the store.
        case_idx: Position of the case in the dataset.
        case_id: The case id (object array of str).
        round: 0-based round.
        domain: The case's domain (object array; None where the case has none).
        expected: The case's gold label or reference answer (object array; None where absent).
        outcome: Outcome codes, an index into `OUTCOMES`.
        state: State codes, an index into `STATES` (the run's state as stored).
        failure_type: For execution failures, the kind (object array; None otherwise).
        passed: 1.0 / 0.0 for graded runs, NaN otherwise.
        score: The graded score (NaN when not graded).
        prediction: The agent's answer (object array; None when it gave none).
        confidence: The agent's confidence 0..1 (NaN when it gave none).
        cost: Money spent by the agent (NaN when not executed).
        input_tokens: Prompt tokens (NaN when not executed).
        output_tokens: Completion tokens (NaN when not executed).
        tokens: Input plus output tokens.
        latency_ms: Wall time of the execution (NaN when not executed, or not reported: `executed` says
            which runs finished their execution).
        evidence_cited: Whether the answer cited at least one skill reference.
        read_file: Whether the agent opened a skill file during the run (SKILL.md alone is not opening:
            it is injected into the prompt).
        read_section: Whether it opened a skill section.
        read_skill: Either of the two.
        text: The heavy columns when loaded (``reason``, ``evidence_refs`` as tuples, ..., and
            ``tool_calls``, the tool calls each session made), else empty.
        execution_done: Whether each run's execution finished, kept when `outcome` holds one grader's
            verdicts rather than the run's own (`GraderVerdicts.on`); None: `executed` reads it from
            the state and the outcome.
    """

    experiment_id: int
    arms: tuple[str, ...]
    run_id: np.ndarray
    arm_index: np.ndarray
    arm_id: np.ndarray
    case_idx: np.ndarray
    case_id: np.ndarray
    round: np.ndarray
    domain: np.ndarray
    expected: np.ndarray
    outcome: np.ndarray
    state: np.ndarray
    failure_type: np.ndarray
    passed: np.ndarray
    score: np.ndarray
    prediction: np.ndarray
    confidence: np.ndarray
    cost: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    tokens: np.ndarray
    latency_ms: np.ndarray
    evidence_cited: np.ndarray
    read_file: np.ndarray
    read_section: np.ndarray
    read_skill: np.ndarray
    text: dict[str, np.ndarray]
    execution_done: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.run_id.size)

    @property
    def executed(self) -> np.ndarray:
        """Whether each run's execution finished with an answer (`EXECUTED_SQL`, from its state): its
        latency, cost or tokens may still be unknown (NaN), which never makes it unexecuted."""
        import numpy as np

        if self.execution_done is not None:
            return self.execution_done
        done = (
            STATES.index(RunState.EXECUTED),
            STATES.index(RunState.EVALUATING),
            STATES.index(RunState.PASS),
        )
        executed: np.ndarray = (
            np.isin(self.state, done) | (self.outcome == FAILED) | (self.outcome == GRADING_FAILED)
        )
        return executed

    @property
    def arm(self) -> np.ndarray:
        """Each run's arm name (object array)."""
        import numpy as np

        return np.asarray(self.arms, dtype=object)[self.arm_index] if self.arms else np.empty(0, object)

    def arm_rows(self, index: int) -> slice:
        """The rows of the arm at `index` in `arms`, as a slice: the runs are ordered by arm, and a
        slice makes `select` give views of the columns rather than copies of them."""
        import numpy as np

        start, stop = np.searchsorted(self.arm_index, (index, index + 1))
        return slice(int(start), int(stop))

    def select(self, mask: np.ndarray | slice) -> RunTable:
        """The runs where `mask` is true (a boolean array or index array), as a new table; a slice
        gives a table of views."""
        import numpy as np

        values = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                v = v[mask]
            elif f.name == "text":
                v = {k: col[mask] for k, col in v.items()}
            values[f.name] = v
        return RunTable(**values)

    def to_frame(self) -> pd.DataFrame:
        """The table as a pandas DataFrame (arm and outcome as categoricals), one row per run."""
        import pandas as pd

        data: dict[str, Any] = {}
        for name in LIGHT_COLUMNS:
            if name == "arm":
                data[name] = pd.Categorical.from_codes(self.arm_index, categories=pd.Index(self.arms))
            elif name == "outcome":
                data[name] = pd.Categorical.from_codes(self.outcome, categories=pd.Index(OUTCOMES))
            elif name == "state":
                data[name] = pd.Categorical.from_codes(self.state, categories=pd.Index(STATES))
            else:
                data[name] = getattr(self, name)
        data.update(self.text)
        return pd.DataFrame(data)


@dataclass(frozen=True)
class CaseFields:
    """The case fields analysis shows, for a set of case positions of one dataset.

    Attributes:
        case_idx: Positions in the dataset (sorted).
        case_id: Case ids (object array).
        domain: Domains (object array; None where absent).
        expected: Gold labels or reference answers (object array; None where absent).
    """

    case_idx: np.ndarray
    case_id: np.ndarray
    domain: np.ndarray
    expected: np.ndarray

    def positions(self, case_idx: np.ndarray) -> np.ndarray:
        """Where each of `case_idx` sits in these arrays (every value must be present)."""
        import numpy as np

        return np.searchsorted(self.case_idx, case_idx)


def _empty_table(exp_id: int, arms: tuple[str, ...], text: bool) -> RunTable:
    import numpy as np

    ints, floats, objects = (np.empty(0, dtype=np.int64), np.empty(0), np.empty(0, dtype=object))
    return RunTable(
        experiment_id=exp_id,
        arms=arms,
        run_id=ints,
        arm_index=ints,
        arm_id=ints,
        case_idx=ints,
        case_id=objects,
        round=ints,
        domain=objects,
        expected=objects,
        outcome=ints,
        state=ints,
        failure_type=objects,
        passed=floats,
        score=floats,
        prediction=objects,
        confidence=floats,
        cost=floats,
        input_tokens=floats,
        output_tokens=floats,
        tokens=floats,
        latency_ms=floats,
        evidence_cited=np.empty(0, dtype=bool),
        read_file=np.empty(0, dtype=bool),
        read_section=np.empty(0, dtype=bool),
        read_skill=np.empty(0, dtype=bool),
        text={**{name: objects for name in TEXT_COLUMNS}, "tool_calls": ints} if text else {},
    )
