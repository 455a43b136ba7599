"""Why an experiment stopped reads the same in every view: status, the run widget's line, the report."""

from __future__ import annotations

import pytest

from abbench.report import experiment_provenance
from abbench.runner import HaltReason, create_experiment, experiment_status, halt_of
from abbench.types import Halt


@pytest.fixture
def left(store, definition):
    """An experiment whose runner stopped half way: status running, no live runner."""
    exp = create_experiment(definition(rounds=1), store=store)
    store.experiments.set_status(exp.id, "running")
    return exp


def _halted(store, exp, **fields):
    store.experiments.set_status(exp.id, "interrupted")
    store.experiments.set_halt(exp.id, HaltReason(**fields).as_dict())
    return store.experiments.get(exp.id)


def test_a_stop_on_purpose_is_said_with_its_signal_and_process_everywhere(store, left):
    from abbench.widgets._progress_view import status_text

    exp = _halted(store, left, why=str(Halt.STOPPED), origin="cli", pid=4242, host="build-7", signal="SIGTERM",
                  at="2026-11-03T12:04:05+00:00")  # fmt: skip
    said = "stopped on purpose (SIGTERM to abbench, pid 4242 on build-7, 2026-11-03 12:04 UTC)"
    p = experiment_status(exp.id, store=store)
    assert p.status_text == f"interrupted: {said}"
    assert p.as_dict()["halt_reason"]["why"] == "stopped"
    assert said in status_text(p, "interrupted", "#1 exp")
    assert experiment_provenance(exp.id, store=store).halted_because == said
    assert not halt_of(exp).resumable_by_server


def test_a_runner_that_died_without_a_word_reads_as_killed(store, left):
    exp = store.experiments.get(left.id)
    unknown = halt_of(exp)  # left running by an abbench from before origins were recorded
    assert unknown.why == Halt.KILLED and unknown.origin is None and not unknown.resumable_by_server
    store.experiments.claim_runner(exp.id, origin="server")
    with store.transaction() as conn:  # the claim of a process that is gone (its heartbeat stale)
        conn.execute("UPDATE experiments SET runner_pid=999999999, heartbeat_at=0 WHERE id=?", (exp.id,))
    exp = store.experiments.get(exp.id)
    halt = halt_of(exp)
    assert halt.why == Halt.KILLED and halt.origin == "server" and halt.resumable_by_server
    assert experiment_status(exp.id, store=store).status_text.startswith(
        "interrupted: its process died without a word (killed, out of memory, or a lost machine) "
        "(a server's runner, pid 999999999"
    )


def test_a_server_stop_may_be_resumed_by_the_server_a_kill_seen_by_it_not(store, left):
    stopped = HaltReason(why=str(Halt.SERVER_STOPPED), origin="server")
    assert stopped.resumable_by_server
    seen = HaltReason(why=str(Halt.KILLED), origin="server", signal="SIGKILL", while_server_ran=True)
    assert not seen.resumable_by_server and seen.text.endswith("while its server ran")
    assert not HaltReason(why=str(Halt.KILLED), origin="cli").resumable_by_server
    assert not HaltReason(why=str(Halt.ERROR), origin="server", error="disk full").resumable_by_server
