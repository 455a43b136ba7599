"""One experiment run for the server in a process of its own: ``python -m abbench.server._child JOB``.

The server spawns it (`abbench.server._pool.RunnerPool`) and reads; the child is the store's writer
while its experiment runs, exactly as ``abbench run`` is: it claims the experiment, keeps its
heartbeat, and obeys pause and cancel through the experiment's control column. Its own interpreter
(and GIL) means the requests the server answers never wait for the runs, nor the runs for them.

It imports the runner and the store only, never FastAPI. Its standard input is a pipe from the server
that stays open as long as the server lives: when it ends (the server died, SIGKILL included), the
child stops at once, as if the machine had lost power, leaving its runs to the next server's
reconciliation. SIGINT or SIGTERM (the server shutting down) stops it as Ctrl-C stops ``abbench run``:
runs in flight are recorded as interrupted, with the halt ``server stopped``, and the next server
resumes them. Its claim records that a server's pool runs the experiment (origin ``server``): a server
resumes only those, never an experiment a person ran elsewhere or stopped on purpose.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
from dataclasses import asdict, dataclass
from typing import Any

from abbench.runner import QueuedWork, regrade_experiment, run_experiment, set_origin, stop_on_signals
from abbench.store import acting_as, open_store
from abbench.types import Halt

log = logging.getLogger("abbench.server.child")

ORPHANED_EXIT = 75
"""The child's exit code when the server that started it is gone (its lifeline pipe ended)."""


@dataclass(frozen=True)
class Job:
    """What a child does for one experiment (sent to it as JSON on its command line).

    Attributes:
        exp_id: The experiment.
        store: The store folder.
        owner: Who it runs for (the key's owner: everything it records belongs to them).
        actor: The person or job named in the request, recorded on every run (default: the owner).
        regrade: Grade again from stored executions instead of running the remaining work.
        graders: With `regrade`, only these graders (empty: all).
        failed: With `regrade`, only runs that failed.
        nice: How much lower the child's CPU priority is than the server's (Linux nice).
        regrade_ids: Grading failures a retry asked to grade again in this run (never executed again).
    """

    exp_id: int
    store: str
    owner: str
    actor: str = ""
    regrade: bool = False
    graders: tuple[str, ...] = ()
    failed: bool = False
    nice: int = 0
    regrade_ids: tuple[int, ...] = ()

    def to_json(self) -> str:
        """The job as the child's command-line argument."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Job:
        """The job a server sent."""
        data: dict[str, Any] = json.loads(text)
        data["graders"] = tuple(data.get("graders") or ())
        data["regrade_ids"] = tuple(data.get("regrade_ids") or ())
        return cls(**data)


def _watch_lifeline() -> None:
    """Exit at once when standard input ends: the server holding its other end is gone."""

    def watch() -> None:
        # The descriptor, not sys.stdin: a thread blocked in a buffered read holds the buffer's lock,
        # and the interpreter, flushing its standard streams at exit, then aborts (SIGABRT, "could
        # not acquire lock for <stdin> at interpreter shutdown") — every child, even one that finished.
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        os._exit(ORPHANED_EXIT)  # no clean-up: the next server reconciles, as after a power loss

    threading.Thread(target=watch, name="abbench-lifeline", daemon=True).start()


def run_job(job: Job) -> None:
    """Run `job` in this process (the store's writer until it ends)."""
    if job.nice > 0:
        with contextlib.suppress(AttributeError, OSError):  # not allowed, or not Unix: the same priority
            os.nice(job.nice)
    store = open_store(job.store)
    try:
        queued = QueuedWork.from_dict(store.experiments.get(job.exp_id).queued)
        if queued is not None and queued.not_started:  # a person paused or cancelled it meanwhile
            log.info("experiment #%d: not started: %s", job.exp_id, queued.not_started)
            return
        with acting_as(job.owner):
            if job.regrade:
                regrade_experiment(
                    job.exp_id, store=store, graders=list(job.graders) or None, failed=job.failed
                )
            else:
                run_experiment(
                    job.exp_id,
                    store=store,
                    started_by=job.actor or job.owner,
                    regrade_ids=job.regrade_ids or None,
                )
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    """The child's entry point: one argument, the `Job` as JSON; returns the exit code."""
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    job = Job.from_json(args[0])
    set_origin("server")
    stop_on_signals(("SIGINT", "SIGTERM"), halt=Halt.SERVER_STOPPED, override=True)
    _watch_lifeline()
    try:
        run_job(job)
    except KeyboardInterrupt:
        log.info("experiment #%d: stopped by the server; what was done is kept", job.exp_id)
        return 130
    except Exception:
        log.exception("experiment #%d stopped with an error", job.exp_id)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
