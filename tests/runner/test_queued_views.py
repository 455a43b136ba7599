"""Work a server accepted and has not started: said in every status view, taken by the pass that does
it, and marked not started when a person pauses or cancels it first (a server then never starts it)."""

from __future__ import annotations

import pytest

from abbench.runner import (
    QueuedWork,
    cancel_experiment,
    create_experiment,
    experiment_status,
    pause_experiment,
    run_experiment,
)


@pytest.fixture
def queued(store, definition):
    """An experiment a server's pool accepted (as `RunnerPool.submit` records it) and never started."""
    exp = create_experiment(definition(rounds=1), store=store)
    work = QueuedWork(at="2026-11-03T12:04:05+00:00", owner="alice", actor="ci/job-42", pid=4242, host="b7")
    store.experiments.set_queued(exp.id, work.as_dict())
    return exp


def test_queued_work_is_said_in_the_status_and_taken_by_the_pass_that_does_it(store, queued):
    from abbench.widgets._progress_view import status_text

    said = (
        "queued on a server (asked by ci/job-42, pid 4242 on b7, 2026-11-03 12:04 UTC) for its remaining runs"
    )
    p = experiment_status(queued.id, store=store)
    assert p.status_text == f"created: {said}: waiting for a free runner"
    assert p.as_dict()["queued"]["actor"] == "ci/job-42"
    assert said in status_text(p, "created", "#1 exp")
    run_experiment(queued.id, store=store)  # any pass that claims it takes it over
    assert store.experiments.get(queued.id).queued is None
    assert experiment_status(queued.id, store=store).queued is None


@pytest.mark.parametrize("stop, words", [(pause_experiment, "paused"), (cancel_experiment, "cancelled")])
def test_a_person_who_stops_it_before_it_started_leaves_it_not_started(store, queued, stop, words):
    stop(queued.id, store=store)
    work = QueuedWork.from_dict(store.experiments.get(queued.id).queued)
    assert work is not None and work.not_started == f"{words} before it started"
    assert experiment_status(queued.id, store=store).status_text.endswith(
        f"for its remaining runs; not started: {words} before it started"
    )


def test_leaving_what_was_never_queued_changes_nothing(store, definition):
    exp = create_experiment(definition(rounds=1), store=store)
    assert store.experiments.leave_queued(exp.id, "why") is False
    assert store.experiments.get(exp.id).queued is None
