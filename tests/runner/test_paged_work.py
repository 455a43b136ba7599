"""A runner pass over many runs reads its work items and cases a page at a time, in the same order,
with the same results, and forgets each run once it is through (its memory stays flat in N)."""

from __future__ import annotations

import asyncio

import pytest

from abbench.runner import ExperimentRunner, create_experiment, run_experiment
from abbench.runner._work import CasePages, WorkQueue
from abbench.store import INTERRUPTED
from abbench.types import RunState
from tests.runner.conftest import make_cases


def _materialised(store, exp_id):
    """The work a pass held before paging: pending and executed runs, then interrupted ones, sorted."""
    items = store.runs.work_items(exp_id, (RunState.PENDING, RunState.EXECUTED))
    items += store.runs.interrupted_items(exp_id)
    return sorted(items, key=lambda i: (i.round, i.case_idx, i.arm_id))


def _mix_states(store, exp_id):
    """Some runs of every kind a pass meets: done, executed, interrupted, failed for good, cancelled."""
    ids = [r.id for r in store.runs.records(exp_id)]
    with store.transaction() as conn:
        for n, rid in enumerate(ids):
            state, ftype = [
                ("pending", None),
                ("pass", None),
                ("executed", None),
                ("fail", INTERRUPTED),
                ("fail", "agent_error"),
                ("cancelled", None),
                ("pending", None),
            ][n % 7]
            conn.execute("UPDATE runs SET state=?, failure_type=? WHERE id=?", (state, ftype, rid))


@pytest.mark.parametrize("page_cases", [1, 2, 3, 5, 7, 100])
def test_work_pages_are_the_materialised_work_in_its_order(store, definition, page_cases):
    exp = create_experiment(definition(rounds=3), store=store)
    _mix_states(store, exp.id)
    pages = list(store.runs.work_pages(exp.id, page_cases=page_cases))
    flat = [i for p in pages for i in p]
    assert flat == _materialised(store, exp.id)
    assert len(flat) == store.runs.count_work(exp.id)
    assert [store.runs.count_work(exp.id, at_most=k) for k in (1, len(flat), len(flat) + 1)] == [
        1,
        len(flat),
        len(flat),
    ]
    assert all(len({i.case_idx for i in p}) <= page_cases and len({i.round for i in p}) <= 1 for p in pages)


def test_work_pages_of_an_experiment_without_runs_are_none(store):
    assert list(store.runs.work_pages(12345)) == []
    assert store.runs.count_work(12345) == 0


def test_cases_between_are_the_loaded_cases(store):
    info = store.datasets.save("many", make_cases(23), label_set=["fast", "slow"])
    cases = store.datasets.load_cases(info)
    assert store.datasets.cases_between(info.id, 5, 12) == {i: cases[i] for i in range(5, 12)}
    assert store.datasets.cases_between(info.id, 20, 40) == {i: cases[i] for i in range(20, 23)}
    assert store.datasets.cases_between(info.id, 30, 40) == {}


def test_case_pages_read_a_page_at_a_time_and_read_a_dropped_page_again(store):
    info = store.datasets.save("many", make_cases(23), label_set=["fast", "slow"])
    cases = store.datasets.load_cases(info)
    pages = CasePages(store, info.id, size=5, keep=2)
    assert [pages[i] for i in range(23)] == cases
    assert pages.reads == 5 and len(pages._pages) == 2
    assert pages[0] == cases[0] and pages.reads == 6  # dropped, read again
    assert pages[22] == cases[22] and pages.reads == 6  # still kept
    assert len(pages) == 23 and list(pages) == list(range(23))
    with pytest.raises(KeyError):
        pages[23]


def test_work_queue_takes_pages_in_order_and_drains_the_rest():
    seen = []
    queue = WorkQueue([[], [1, 2], [], [3], [4, 5]], seen.append)  # items need not be work items here
    assert queue and queue.peek() == 1
    assert [queue.popleft(), queue.popleft(), queue.popleft()] == [1, 2, 3]
    assert seen == [[1, 2], [3]]
    assert list(queue.drain()) == [4, 5]
    assert not queue
    with pytest.raises(IndexError):
        queue.popleft()


def _events(store, exp_id):
    """Every run's transitions (its case, round, arm), in the order the pass made them."""
    rows = store.query(
        "SELECT r.case_id, r.round, a.name, e.from_state, e.to_state FROM run_events e "
        "JOIN runs r ON r.id = e.run_id JOIN arms a ON a.id = r.arm_id WHERE r.experiment_id=? ORDER BY e.id",
        (exp_id,),
    )
    return [tuple(r) for r in rows]


def _results(store, exp_id):
    return sorted(
        (
            r.case_id,
            r.round,
            r.arm,
            r.state,
            r.failure_type,
            r.output.prediction if r.output else None,
            r.passed,
        )
        for r in store.runs.records(exp_id)
    )


def test_a_paged_pass_does_what_a_held_one_does(store, definition, monkeypatch):
    # one worker: the order of the transitions is the order of the work
    spec = definition(concurrency=1, rounds=3)
    spec["arms"]["control"]["fail"] = ["c004"]
    held = create_experiment({**spec, "name": "held"}, store=store)
    paged = create_experiment({**spec, "name": "paged"}, store=store)
    for exp in (held, paged):
        _mix_states(store, exp.id)
    run_experiment(held.id, store=store)
    monkeypatch.setattr(ExperimentRunner, "page_runs", 0)
    monkeypatch.setattr("abbench.runner._scheduler.PAGE_CASES", 2)
    summary = run_experiment(paged.id, store=store)
    assert summary.status == "finished"
    assert _events(store, paged.id) == _events(store, held.id)
    assert _results(store, paged.id) == _results(store, held.id)
    assert len(store.grades.records(paged.id)) == len(store.grades.records(held.id))


def test_a_pass_forgets_each_run_it_is_through_with(store, definition, monkeypatch):
    monkeypatch.setattr(ExperimentRunner, "page_runs", 0)
    exp = create_experiment(definition(rounds=3), store=store)
    runner = ExperimentRunner(store, store.experiments.get(exp.id))
    summary = asyncio.run(runner.run())
    assert summary.executed == 36 and summary.graded == 36
    assert runner._moves is not None and runner._moves.states == {}
    assert runner.plan.attempts == {} and runner._stored_outputs == {}
    assert len(runner.inputs.cases._pages) <= 4  # type: ignore[attr-defined]
