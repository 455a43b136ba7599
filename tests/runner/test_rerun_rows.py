"""A re-run leaves no column of the execution it replaced: the row is what a first run would have made.

The runner writes only the non-NULL columns of a run that entered the pass pending (a narrower update is
cheaper); this holds because a pending run's execution and verdict columns are NULL — a new run's are,
and `store.runs.reset` sets them so. Here a rich first execution (reason, confidence, usage, cost,
evidence, a transcript) and an execution failure (error, traceback) are re-run by an agent that answers
with a bare label, and every row must equal the one a fresh experiment with that agent stores.
"""

from __future__ import annotations

from abbench.agents import register_agent
from abbench.errors import AgentError
from abbench.runner import create_experiment, retry_runs, run_experiment
from abbench.types import AgentOutput, Usage

_MODE = {"rich": True}

_KEPT = ("id", "session_id", "started_at", "executed_at", "finished_at", "updated_at", "latency_ms")
_KEPT += ("attempts", "grade_attempts", "experiment_id", "arm_id")


class RichThenBare:
    """A rich answer (and a failure for c001) while `_MODE["rich"]`; the bare gold label after."""

    name = "rich-then-bare"

    def __init__(self, model=None, **params):
        self.model = model

    async def run(self, task):
        if not _MODE["rich"]:
            return AgentOutput(prediction=task.case.expected)
        if task.case.case_id == "c001":
            raise AgentError("cannot answer c001", "agent_error", retryable=False, raw_output="half")
        return AgentOutput(
            prediction="wrong" if task.case.case_id == "c002" else task.case.expected,
            reason="because",
            confidence=0.7,
            evidence_refs=("SKILL.md#Rules",),
            transcript=({"role": "user", "content": task.case.input},),
            files_read=("SKILL.md",),
            usage=Usage(10, 2),
            cost=0.001,
            model="m1",
        )


register_agent("rich-then-bare")(RichThenBare)


def _rows(store, exp_id):
    rows = store.query("SELECT * FROM runs WHERE experiment_id=? ORDER BY case_idx, round, arm_id", (exp_id,))
    names = [d[1] for d in store.query("PRAGMA table_info(runs)")]
    return [{k: v for k, v in zip(names, r, strict=True) if k not in _KEPT} for r in rows]


def test_a_rerun_row_equals_a_first_run_row(store, definition):
    arms = {"a": {"agent": "rich-then-bare"}}
    _MODE["rich"] = True
    exp = create_experiment(definition(arms=arms, rounds=1, retries=0), store=store)
    run_experiment(exp.id, store=store)
    before = {r["case_id"]: r for r in _rows(store, exp.id)}
    assert before["c001"]["failure_type"] == "agent_error" and before["c001"]["raw_output"] == "half"
    assert before["c000"]["reason"] == "because" and before["c002"]["passed"] == 0

    _MODE["rich"] = False
    retry_runs(exp.id, store=store, failed=True, disagreements=True, run=False)  # failure, wrong answer
    retry_runs(exp.id, store=store, cases=["c000"], run=False)  # and a right one
    run_experiment(exp.id, store=store)
    fresh = create_experiment(definition(name="exp-fresh", arms=arms, rounds=1, retries=0), store=store)
    run_experiment(fresh.id, store=store)

    after = {r["case_id"]: r for r in _rows(store, exp.id)}
    first = {r["case_id"]: r for r in _rows(store, fresh.id)}
    for case_id in ("c000", "c001", "c002"):
        assert after[case_id] == first[case_id], case_id
        assert after[case_id]["reason"] is None and after[case_id]["error"] is None
        assert after[case_id]["traceback"] is None and after[case_id]["cost"] is None
