"""The columns of the runs table as the result tables read them, and the codes of what became of a run."""

from __future__ import annotations

from collections.abc import Mapping

from abbench.types import RunOutcome, RunState

OUTCOMES: tuple[str, ...] = tuple(o.value for o in RunOutcome)
"""What became of a run, by code (the index into this tuple):

- ``unfinished`` (0): pending, running, executed (waiting for grading) or evaluating;
- ``pass`` (1): graded as right;
- ``fail`` (2): graded as wrong (a real answer that disagrees with the gold or the judge);
- ``execution_failed`` (3): the agent produced no usable answer (``failure_type`` says why);
- ``grading_failed`` (4): the answer exists but no grader reached a verdict;
- ``cancelled`` (5): cancelled before or while it ran;
- ``scored`` (6): graded with a score and no verdict (state ``pass``, ``passed`` NULL): neither right nor wrong.
"""
UNFINISHED, PASSED, FAILED, EXECUTION_FAILED, GRADING_FAILED, CANCELLED, SCORED = range(7)

# One expression, evaluated inside SQLite, that turns (state, failure_type, passed) into the codes above.
OUTCOME_SQL = (
    f"CASE state WHEN '{RunState.PASS}' THEN CASE WHEN passed IS NULL THEN 6 ELSE 1 END "
    f"WHEN '{RunState.FAIL}' THEN CASE WHEN failure_type IS NOT NULL "
    f"THEN 3 WHEN passed IS NULL THEN 4 ELSE 2 END WHEN '{RunState.CANCELLED}' THEN 5 ELSE 0 END"
)


def outcome_word_sql(outcome_words: Mapping[str, str], other_state: str = "r.state") -> str:
    """An SQL expression for run ``r``'s outcome in the words an export writes: those of the
    failures and of a score without a verdict spelled out, every other state by `outcome_words`,
    and a state it does not name as `other_state` (an SQL expression of ``r.state``)."""
    words = " ".join(f"WHEN '{k}' THEN '{w}'" for k, w in outcome_words.items())
    return (
        "(CASE WHEN r.state = 'fail' THEN (CASE WHEN r.failure_type IS NOT NULL THEN 'execution failed' "
        f"WHEN r.passed IS NULL THEN 'grading failed' ELSE 'wrong' END) "
        f"WHEN r.state = 'pass' AND r.passed IS NULL THEN '{outcome_words.get('scored', 'scored')}' "
        f"ELSE (CASE r.state {words} "
        f"ELSE {other_state} END) END)"
    )


STATES: tuple[str, ...] = tuple(s.value for s in RunState)
"""Run states by code (`RunTable.state` indexes into it), in `abbench.types.RunState` order."""
STATE_SQL = (
    "CASE state "
    + " ".join(f"WHEN '{s}' THEN {code}" for code, s in enumerate(STATES[:-1]))
    + f" ELSE {len(STATES) - 1} END"
)

# SQLite reads 9e999 as infinity: NULL becomes -inf in SQL, so numpy's fromiter converts a column in
# one pass (None would force the slow object path), and -inf becomes NaN afterwards.
_MISSING = "-9e999"

LIGHT_COLUMNS = (
    "run_id",
    "arm",
    "arm_id",
    "case_idx",
    "case_id",
    "round",
    "domain",
    "expected",
    "outcome",
    "state",
    "failure_type",
    "passed",
    "score",
    "prediction",
    "confidence",
    "cost",
    "input_tokens",
    "output_tokens",
    "tokens",
    "latency_ms",
    "evidence_cited",
    "read_file",
    "read_section",
    "read_skill",
)
"""The columns `load_runs` always returns (see `RunTable`)."""

TEXT_COLUMNS = (
    "reason",
    "evidence_refs",
    "files_read",
    "sections_read",
    "error",
    "raw_output",
    "model",
    "session_id",
    "transcript_path",
)
"""The heavy columns `load_runs` adds when asked (``text=True``), plus ``tool_calls`` (a count)."""

_LIST_COLUMNS = ("evidence_refs", "files_read", "sections_read")
_EMPTY_LIST = "('', '[]')"
# Having only SKILL.md "read" is not reading: adapters inject it into the prompt and some list it (as the
# read_skill grader holds).
_INJECTED_ONLY = """('', '[]', '["SKILL.md"]')"""
