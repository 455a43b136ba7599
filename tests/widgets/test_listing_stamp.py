"""`Store.listing_stamp`, which 02's list follows: what it must be read again for, even within one second."""

from __future__ import annotations

from unittest import mock

from abbench.runner import create_experiment
from abbench.widgets import RunControlWidget
from tests.blocking import wait_for


def test_a_status_or_control_changed_in_the_second_of_creation_moves_the_stamp(store, small):
    with mock.patch("abbench.store._base.time.time", return_value=1_800_000_000.0):  # one frozen second
        exp = create_experiment(
            {"name": "e", "dataset": small.fingerprint, "arms": {"a": {"agent": "builtin"}}}, store=store
        )
        created = store.listing_stamp()
        store.experiments.set_status(exp.id, "running")
        running = store.listing_stamp()
        store.experiments.set_control(exp.id, "pause")
        paused = store.listing_stamp()
    assert len({created, running, paused}) == 3
    assert store.listing_stamp() == paused  # nothing changed: the same stamp, so no list is read again


def test_the_follower_reads_the_stamp_only_after_a_commit_and_then_lists_the_new_experiment(store, small):
    with (
        mock.patch.object(store, "state_stamp", wraps=store.state_stamp) as state,
        mock.patch.object(store, "listing_stamp", wraps=store.listing_stamp) as listing,
    ):
        widget = RunControlWidget(store, dataset=small.fingerprint, poll_s=0.01)
        wait_for(lambda: state.call_count >= 10, "ten ticks with nothing committed")
        # the list read when the widget was built, and the first tick's: no stamp (a scan) per idle tick
        assert listing.call_count == 2
        exp = create_experiment(
            {"name": "elsewhere", "dataset": small.fingerprint, "arms": {"a": {"agent": "builtin"}}},
            store=store,
        )
        wait_for(lambda: exp.id in widget.chooser.values, "the list read again after the commit")
        widget.close()


def test_a_list_read_that_fails_midway_is_read_again_on_the_next_tick(store, small):
    """A busy store can fail the read of the lists after the stamp was taken: the stamp must not count
    as read then, or the new experiment would never be listed (02 missed a terminal's run this way)."""
    widget = RunControlWidget(store, dataset=small.fingerprint, poll_s=0.01)
    real = store.experiments.all
    failed = []

    def busy_once():
        if not failed:
            failed.append(1)
            raise RuntimeError("database is locked")
        return real()

    with mock.patch.object(store.experiments, "all", side_effect=busy_once):
        exp = create_experiment(
            {"name": "elsewhere", "dataset": small.fingerprint, "arms": {"a": {"agent": "builtin"}}},
            store=store,
        )
        wait_for(lambda: exp.id in widget.chooser.values, "the list read again after the failed read")
    assert failed == [1]
    widget.close()
