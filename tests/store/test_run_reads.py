"""The reads a poll of a running experiment makes: counts per arm and state, and one page of runs."""

from __future__ import annotations

from collections import Counter

import pytest

from abbench.types import RunState
from tests.results import cases_of, make_experiment

IN_FLIGHT = [{"state": "running", "passed": None}, {"state": "executed", "passed": None}]
SPECS = [True, False, "exec_fail", "grade_fail", "cancelled", "pending", *IN_FLIGHT, {"state": "evaluating"}]


@pytest.fixture
def every_state(store):
    """Three arms × 9 cases × 2 rounds, each state of a run several times, unevenly across arms."""
    cases = cases_of(9)
    arms = {
        "control": [[SPECS[i], SPECS[(i + 1) % 9]] for i in range(9)],
        "treatment": [[SPECS[(2 * i) % 9], "pending"] for i in range(9)],
        "third": [[True, SPECS[(i + 4) % 9]] for i in range(9)],
    }
    return make_experiment(store, "states", cases, arms)


def test_run_counts_agree_with_the_runs_read_whole(store, every_state):
    counted = Counter((r.arm, r.state) for r in store.runs.records(every_state.id))
    counts = store.runs.counts(every_state.id)
    assert list(counts) == ["control", "treatment", "third"]  # arm order
    for arm, states in counts.items():
        assert states == {s.value: counted[(arm, s.value)] for s in RunState}
    assert {s for (_, s) in counted} == {s.value for s in RunState}  # every state is exercised


def test_run_counts_of_an_experiment_without_runs_name_its_arms(store, every_state):
    store.conn.execute("DELETE FROM runs WHERE experiment_id=?", (every_state.id,))
    assert store.runs.counts(every_state.id) == {
        a: {s.value: 0 for s in RunState} for a in ("control", "treatment", "third")
    }


@pytest.mark.parametrize(
    ("offset", "limit"), [(0, 1), (0, 10), (7, 13), (17, 100), (53, 5), (54, 5), (500, 10)]
)
def test_a_page_is_the_slice_of_every_run_in_order(store, every_state, offset, limit):
    every = [r for chunk in store.runs.iter_records(every_state.id, chunk=7) for r in chunk]
    assert len(every) == 54
    assert store.runs.slice(every_state.id, offset, limit) == every[offset : offset + limit]
