"""The runner's heartbeat: keeps its claim on an experiment fresh from a thread of its own."""

from __future__ import annotations

import logging
import threading

from abbench.store import Store

log = logging.getLogger(__name__)

HEARTBEAT_S = 1.0
"""How often a runner refreshes its claim (other processes presume it dead after HEARTBEAT_STALE_S)."""


class Heartbeat:
    """Refreshes a runner's claim every `interval` seconds until stopped.

    It beats from its own thread and connection, not from the event loop: a grader or agent that blocks
    the loop, or a slow start (loading a large dataset, importing a heavy agent module), must not make
    a live runner look dead — another process would then claim the experiment and execute its runs a
    second time.

    Args:
        store: The store holding the experiment.
        exp_id: The experiment whose claim to keep.
        interval: Seconds between beats.
    """

    def __init__(self, store: Store, exp_id: int, *, interval: float = HEARTBEAT_S):
        self.store = store
        self.exp_id = exp_id
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"abbench-heartbeat-{exp_id}", daemon=True)

    def start(self) -> Heartbeat:
        """Start beating (the claim was just taken, so the first beat comes after one interval)."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop beating and wait for the thread (at most a few seconds)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    if not self.store.experiments.beat_runner(self.exp_id):
                        log.warning(
                            "experiment #%s: this process no longer holds its runner claim", self.exp_id
                        )
                except Exception as exc:  # a busy or failing store: the next beat tries again
                    log.warning("experiment #%s: heartbeat not written (%s)", self.exp_id, exc)
        finally:
            self.store.close_thread_connection()
