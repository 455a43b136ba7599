"""`Store.listing_stamp`, which 02's list follows: what it must be read again for, even within one second."""

from __future__ import annotations

from unittest import mock

from abbench.runner import create_experiment


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
