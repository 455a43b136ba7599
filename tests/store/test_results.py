"""The result loaders: per-run columns and per-case sums agree with the runs as stored."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abbench.errors import NotFoundError
from abbench.store import OUTCOMES
from abbench.store.bulk._outcomes import EXECUTED_SQL, FINISHED_STATES
from tests.results import cases_of, make_experiment

SPECS = [True, False, "exec_fail", "grade_fail", "cancelled", "pending"]


@pytest.fixture
def mixed(store):
    """Two arms × 6 cases × 2 rounds covering every outcome."""
    cases = cases_of(6)
    control = [[SPECS[i], SPECS[(i + 1) % 6]] for i in range(6)]
    treatment = [
        [
            {
                "passed": True,
                "cost": 0.5,
                "latency_ms": 40.0,
                "confidence": 0.3,
                "evidence": ["SKILL.md#Rules"],
            },
            True,
        ]
        for _ in range(6)
    ]
    return make_experiment(store, "mixed", cases, {"control": control, "treatment": treatment})


def test_every_run_comes_back_with_its_outcome(store, mixed):
    table = store.runs.table(mixed.id)
    records = {r.id: r for r in store.runs.records(mixed.id)}
    assert len(table) == len(records) == 24
    for i, run_id in enumerate(table.run_id):
        rec = records[int(run_id)]
        assert (
            table.case_id[i] == rec.case_id
            and table.round[i] == rec.round
            and table.arms[table.arm_index[i]] == rec.arm
        )
        expected = (
            "pass" if rec.state == "pass" else "cancelled" if rec.state == "cancelled" else
            "execution_failed" if rec.execution_failed else "grading_failed" if rec.grading_failed else
            "fail" if rec.state == "fail" else "unfinished"
        )  # fmt: skip
        assert OUTCOMES[table.outcome[i]] == expected
        assert (math.isnan(table.passed[i]) and rec.passed is None) or table.passed[i] == rec.passed
        if rec.output is not None:
            assert table.prediction[i] == rec.output.prediction
            assert table.cost[i] == rec.output.cost and table.latency_ms[i] == rec.output.latency_ms
            assert table.evidence_cited[i] == bool(rec.output.evidence_refs)
        else:
            assert table.prediction[i] is None and math.isnan(table.cost[i])


def test_rows_are_ordered_by_arm_case_round_and_carry_case_fields(store, mixed):
    table = store.runs.table(mixed.id)
    keys = list(zip(table.arm_index, table.case_idx, table.round, strict=True))
    assert keys == sorted(keys)
    assert set(table.domain) == {"nav", "car", "media"}
    assert list(table.expected[:2]) == ["fast", "fast"]


def test_arms_can_be_chosen_and_reordered(store, mixed):
    table = store.runs.table(mixed.id, arms=["treatment", "control"])
    assert table.arms == ("treatment", "control")
    assert list(table.arm[:1]) == ["treatment"] and list(table.arm[-1:]) == ["control"]
    assert (np.diff(table.arm_index) >= 0).all()
    with pytest.raises(NotFoundError, match="no arm 'nope'; its arms: control, treatment"):
        store.runs.table(mixed.id, arms=["nope"])


def test_a_missing_run_is_read_through_the_keys(store, mixed):
    full = store.runs.table(mixed.id)
    gone = int(full.run_id[3])
    with store.transaction() as conn:
        conn.execute("DELETE FROM runs WHERE id=?", (gone,))
    partial = store.runs.table(mixed.id)
    keep = full.run_id != gone
    assert list(partial.run_id) == list(full.run_id[keep])
    assert list(partial.outcome) == list(full.outcome[keep])
    assert list(partial.case_idx) == list(full.case_idx[keep])


def test_text_columns_only_when_asked_and_separators_survive(store, mixed):
    assert store.runs.table(mixed.id).text == {}
    with store.transaction() as conn:
        conn.execute("UPDATE runs SET prediction=? WHERE id=(SELECT MIN(id) FROM runs)", ("a\x1eb",))
    table = store.runs.table(mixed.id, text=True)
    assert table.prediction[0] == "a\x1eb"
    assert table.text["evidence_refs"][-1] == ()
    assert any(refs == ("SKILL.md#Rules",) for refs in table.text["evidence_refs"])
    frame = table.to_frame()
    assert list(frame["arm"].cat.categories) == ["control", "treatment"]
    assert set(frame.columns) >= {"outcome", "reason", "tool_calls", "prediction"}


def test_case_outcomes_are_the_sums_of_the_runs(store, mixed):
    sums = store.runs.case_outcomes(mixed.id)
    table = store.runs.table(mixed.id)
    for arm_id, idx, runs, passed, failed, ef, gf, cancelled, executed, cost in zip(
        sums.arm_id, sums.case_idx, sums.runs, sums.passed, sums.failed, sums.execution_failed,
        sums.grading_failed, sums.cancelled, sums.executed, sums.cost, strict=True,
    ):  # fmt: skip
        mine = (table.arm_id == arm_id) & (table.case_idx == idx)
        codes = list(table.outcome[mine])
        assert runs == mine.sum()
        assert (passed, failed, ef, gf, cancelled) == tuple(codes.count(c) for c in (1, 2, 3, 4, 5))
        assert executed == np.count_nonzero(~np.isnan(table.latency_ms[mine]))
        spent = table.cost[mine]
        known = ~np.isnan(spent)  # no run of the case reporting a cost leaves it unknown, not 0
        assert cost == pytest.approx(np.nansum(spent) if known.any() else np.nan, nan_ok=True)


def test_executed_sums_equal_the_runs_executed_sql_counts(store):
    """A finished run's `executed` is worked out of the outcome counts, not summed: it must be what
    `EXECUTED_SQL` counts, for every state, failure and a pass graded with a score and no verdict."""
    finished = [
        True,
        False,
        "exec_fail",
        "grade_fail",
        "cancelled",
        {"failure_type": "truncated", "passed": False},
    ]
    runs = [[finished[(i + r) % 6] for r in range(3)] + ["pending", {"state": "executed"}] for i in range(6)]
    exp = make_experiment(store, "executed", cases_of(6), {"only": runs})
    with store.transaction() as conn:  # scored: in pass with a score and no verdict
        scored = conn.execute("UPDATE runs SET passed=NULL, score=0.4 WHERE case_id='c001' AND round=0")
        assert scored.rowcount == 1
    want = store.query(
        f"SELECT arm_id, case_idx, count(*), sum({EXECUTED_SQL}) FROM runs WHERE experiment_id=? "
        "GROUP BY arm_id, case_idx ORDER BY arm_id, case_idx",
        (exp.id,),
    )
    sums = store.runs.case_outcomes(exp.id)
    got = zip(
        sums.arm_id.tolist(), sums.case_idx.tolist(), sums.runs.tolist(), sums.executed.tolist(), strict=True
    )
    assert [tuple(r) for r in want] == list(got)
    assert 0 < sums.executed.sum() < sums.runs.sum()


def test_unknown_experiment(store):
    with pytest.raises(NotFoundError, match="no experiment #99"):
        store.runs.table(99)


def test_finished_runs_are_summed_from_the_partial_covering_index(store, mixed):
    plan = store.query(
        "EXPLAIN QUERY PLAN SELECT arm_id, case_idx, count(*), total(cost), total(latency_ms) FROM runs "
        f"WHERE experiment_id=? AND arm_id IN (1, 2) AND state IN {FINISHED_STATES} GROUP BY arm_id, case_idx",
        (mixed.id,),
    )
    assert "COVERING INDEX runs_results" in " ".join(str(r[-1]) for r in plan)


def test_states_and_read_flags(store):
    from abbench.store import STATES

    runs = [
        [{"passed": True, "files_read": ["SKILL.md", "refs/a.md"]}],
        ["pending"],
        ["cancelled"],
        [{"passed": False, "state": "fail"}],
        # SKILL.md alone is the injected prompt, not a read (as the read_skill grader holds)
        [{"passed": True, "files_read": ["SKILL.md"]}],
    ]
    exp = make_experiment(store, "s", cases_of(5), {"only": runs})
    with store.transaction() as conn:
        conn.execute(
            "UPDATE runs SET sections_read='[\"SKILL.md#Rules\"]', files_read='[]' WHERE case_id='c003'"
        )
    table = store.runs.table(exp.id)
    assert [STATES[s] for s in table.state] == ["pass", "pending", "cancelled", "fail", "pass"]
    assert list(table.read_file) == [True, False, False, False, False]
    assert list(table.read_section) == [False, False, False, True, False]
    assert list(table.read_skill) == [True, False, False, True, False]
    assert list(table.to_frame()["state"]) == ["pass", "pending", "cancelled", "fail", "pass"]
