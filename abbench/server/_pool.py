"""The server's runner pool: experiments started over HTTP run in child processes the server supervises.

Each running experiment has a process of its own (`abbench.server._child`), the store's writer while it
runs, as ``abbench run`` would be; the server only reads its progress (SQLite WAL lets it read while
the child writes) and asks for pause and cancel through the experiment's control column, which the
child obeys between runs. A separate interpreter is what keeps both quick: runs and requests never
wait for one GIL. At most `workers` children run at once, at a lower CPU priority than the server;
more experiments wait in the queue.

Every experiment the pool accepts is recorded as queued with it (`abbench.runner.QueuedWork`) before
the caller's 202, and stays so until the pass that does the work claims it. When the server starts,
it starts what the last server accepted and never started (unless a person paused or cancelled it
meanwhile, or it is no longer allowed: then its status says why it was not started), and resumes
what its own pool was running when the last server stopped (killed with it, or stopped by its
shutdown), as ``abbench run`` does — and nothing else: not an experiment a CLI or a notebook ran,
not one a person stopped on purpose, not one whose runner a kill took while its server lived
(`abbench.runner.HaltReason.resumable_by_server`). Every experiment the pool runs,
resumes or re-grades must use only the agents and graders the server allows (`_allowed.refusal`).

A child dies with its server: its standard input is a pipe from the server, which ends when the server
does (SIGKILL included), and the child then exits at once. Nothing it left is lost or done twice: the
next server's reconciliation turns its runs in flight into actionable states.
"""

from __future__ import annotations

import collections
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import abbench
from abbench.runner import HaltReason, QueuedWork, halt_of, list_experiments
from abbench.server import _policy
from abbench.server._allowed import refusal
from abbench.server._child import Job
from abbench.server._problems import Problem
from abbench.server._settings import ServerSettings
from abbench.store import Experiment, Store, now_iso
from abbench.types import ExperimentStatus, Halt

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 30.0
"""How long a shutting-down server waits for its children to record their runs in flight."""


@dataclass
class _Entry:
    """An experiment the pool holds: queued (no process yet) or running in `proc`."""

    job: Job
    proc: subprocess.Popen[bytes] | None = None
    done: threading.Event = field(default_factory=threading.Event)


_WORK = ("regrade", "graders", "failed", "regrade_ids")
"""The fields that say which work is asked: the same in a `Job`, a `QueuedWork` and `RunnerPool.submit`."""


def _work(record: Job | QueuedWork) -> dict[str, Any]:
    """The work `record` asks for, as `QueuedWork.here` and `RunnerPool.submit` take it."""
    return {name: getattr(record, name) for name in _WORK}


def _queued(job: Job) -> QueuedWork:
    """What the pool records when it accepts `job`."""
    return QueuedWork.here(job.owner, job.actor, **_work(job))


def _child_env() -> dict[str, str]:
    """The server's environment, with this abbench first on the path (the child runs the same code)."""
    root = str(Path(abbench.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else os.pathsep.join((root, path))}


class RunnerPool:
    """Runs experiments for the server in child processes, at most `workers` at once, each once at a time.

    Args:
        store: The server's store (the children open the same folder).
        workers: Children running at once; more experiments wait in the queue.
        nice: How much lower the children's CPU priority is than the server's (Linux nice; 0: the same).
        settings: The agents and graders the server allows (default: builtin and external agents, rule
            graders: `ServerSettings`' defaults).
    """

    def __init__(self, store: Store, workers: int, nice: int = 0, settings: ServerSettings | None = None):
        self.store = store
        self.workers = max(1, workers)
        self.nice = max(0, nice)
        self.settings = settings or ServerSettings(store=store.path)
        self._entries: dict[int, _Entry] = {}
        self._queue: collections.deque[int] = collections.deque()
        self._lock = threading.Lock()
        self._closed = False

    def busy(self, exp_id: int) -> bool:
        """Whether the pool is running (or has queued) this experiment."""
        with self._lock:
            return exp_id in self._entries

    def queued_for(self, owner: str) -> int:
        """How many experiments of `owner` the pool is running or has queued."""
        with self._lock:
            return sum(1 for e in self._entries.values() if e.job.owner == owner)

    def refusal(self, exp_id: int, *, regrade: bool = False) -> str | None:
        """Why this server does not run the experiment (an agent or grader it does not allow), or None."""
        return refusal(self.store.experiments.get(exp_id), self.settings, regrade=regrade)

    def submit(
        self,
        exp_id: int,
        owner: str,
        *,
        actor: str = "",
        regrade: bool = False,
        graders: tuple[str, ...] = (),
        failed: bool = False,
        regrade_ids: tuple[int, ...] = (),
    ) -> bool:
        """Queue the experiment's remaining work (or, with `regrade`, a re-grade) unless it is held
        already or uses an agent or grader this server does not allow (logged; `refusal` says why).

        The work is recorded with the experiment (`QueuedWork`) before it can start: a server killed
        before its pool gets to it starts it at its next start.
        """
        refused = self.refusal(exp_id, regrade=regrade)
        if refused is not None:
            log.warning("not run: %s", refused)
            return False
        job = Job(
            exp_id=exp_id,
            store=str(self.store.path),
            owner=owner,
            actor=actor or owner,
            regrade=regrade,
            graders=tuple(graders),
            failed=failed,
            nice=self.nice,
            regrade_ids=tuple(regrade_ids),
        )
        entry = _Entry(job)
        with self._lock:
            if self._closed or exp_id in self._entries:
                return False
            self._entries[exp_id] = entry  # held, not yet in the queue: nothing launches it before
        try:  # it is recorded, so the claim of its runner always comes after (and clears) the record
            self.store.experiments.set_queued(exp_id, _queued(job).as_dict())
        except BaseException:
            with self._lock:
                del self._entries[exp_id]
            entry.done.set()
            raise
        with self._lock:
            self._queue.append(exp_id)
        self._launch()
        return True

    def unqueue(self, exp_id: int) -> bool:
        """Drop the experiment from the queue when no runner has started it yet (a person paused or
        cancelled it, which its queued record says: it must not start later); True when dropped."""
        with self._lock:
            entry = self._entries.get(exp_id)
            if entry is None or entry.proc is not None or exp_id not in self._queue:
                return False
            self._queue.remove(exp_id)
            del self._entries[exp_id]
        entry.done.set()
        return True

    def _launch(self) -> None:
        """Start children for queued experiments while fewer than `workers` run."""
        with self._lock:
            running = sum(1 for e in self._entries.values() if e.proc is not None)
            while not self._closed and self._queue and running < self.workers:
                exp_id = self._queue.popleft()
                entry = self._entries[exp_id]
                try:
                    entry.proc = subprocess.Popen(
                        [sys.executable, "-m", "abbench.server._child", entry.job.to_json()],
                        stdin=subprocess.PIPE,  # the lifeline: it ends when this process does
                        env=_child_env(),
                        start_new_session=True,  # a Ctrl-C meant for the server reaches it only through us
                    )
                except OSError as exc:
                    log.exception("experiment #%d: cannot start its runner process", exp_id)
                    del self._entries[exp_id]
                    self._not_started(exp_id, f"the server could not start its runner process ({exc})")
                    entry.done.set()
                    continue
                running += 1
                log.info("experiment #%d runs in process %d", exp_id, entry.proc.pid)
                threading.Thread(
                    target=self._reap, args=(exp_id, entry), name=f"abbench-reap-{exp_id}", daemon=True
                ).start()

    def _reap(self, exp_id: int, entry: _Entry) -> None:
        """Wait for a child to end, note how it ended, and start the next queued experiment."""
        assert entry.proc is not None
        code = entry.proc.wait()
        if entry.proc.stdin is not None:
            entry.proc.stdin.close()
        if code != 0:
            log.warning(
                "experiment #%d: its runner process %d ended with code %d", exp_id, entry.proc.pid, code
            )
        if code < 0 and not self._closed:
            self._note_killed(exp_id, entry.proc.pid, -code)
        if not self._closed:
            self._settle_queued(exp_id, entry.proc.pid, code)
        with self._lock:
            if self._entries.get(exp_id) is entry:
                del self._entries[exp_id]
        entry.done.set()
        self._launch()

    def wait(self, exp_id: int, timeout: float | None = None) -> None:
        """Block until the pool's job for the experiment ends (for tests and shutdown)."""
        with self._lock:
            entry = self._entries.get(exp_id)
        if entry is not None:
            entry.done.wait(timeout)

    def _note_killed(self, exp_id: int, pid: int, signum: int) -> None:
        """A runner died by a signal while this server lived (a person's kill, out of memory): say so,
        and that no server resumes it on its own (it was not lost to a server's end)."""
        try:
            exp = self.store.experiments.get(exp_id)
            if exp.runner_pid != pid or exp.halt or exp.runner_alive:
                return  # it recorded its own end, or someone else holds it now
            try:
                name = signal.Signals(signum).name
            except ValueError:
                name = f"signal {signum}"
            halt = HaltReason(
                why=str(Halt.KILLED), origin="server", pid=pid, host=exp.runner_host, signal=name,
                at=now_iso(), while_server_ran=True,
            )  # fmt: skip
            self.store.experiments.set_halt(exp_id, halt.as_dict())
        except Exception:  # a busy store: the experiment shows as killed all the same
            log.exception("experiment #%d: could not record how its runner ended", exp_id)

    def _not_started(self, exp_id: int, why: str) -> None:
        """Record why the work queued for the experiment was not started (its status shows it)."""
        try:
            self.store.experiments.leave_queued(exp_id, why)
        except Exception:  # a busy store: the log says it all the same
            log.exception("experiment #%d: could not record why it was not started", exp_id)

    def _settle_queued(self, exp_id: int, pid: int, code: int) -> None:
        """A runner ended without claiming its experiment (the claim clears what was queued): with
        nothing to do (code 0) the queued work is done; otherwise say it was not started, and why."""
        try:
            queued = QueuedWork.from_dict(self.store.experiments.get(exp_id).queued)
        except Exception:
            log.exception("experiment #%d: could not read what was queued for it", exp_id)
            return
        if queued is None or queued.not_started:
            return  # its runner claimed it (or said already): its halt says what became of it
        if code == 0:
            self.store.experiments.set_queued(exp_id, None)
        else:
            self._not_started(exp_id, f"its runner process {pid} ended with code {code} before it started")

    def _why_not_start(self, exp: Experiment, queued: QueuedWork) -> str | None:
        """Why a starting server does not start the work the last one queued, or None when it may."""
        if exp.runner_alive:
            return f"process {exp.runner_pid} on {exp.runner_host} runs it now"
        refused = refusal(exp, self.settings, regrade=queued.regrade)
        if refused is not None:
            return refused
        try:
            _policy.check_execution(exp.spec, self.settings, arms=not queued.regrade)
        except Problem as problem:
            return problem.detail
        return None

    def start_queued(self) -> list[int]:
        """Start what the last server accepted (202) and never started; returns their ids.

        Left, with why in its status (`QueuedWork.not_started`) and the log: an experiment another
        process runs now, and one using an agent, grader, endpoint or key variable this server does
        not allow. Work a person paused or cancelled before it started says so already
        (`abbench.runner.pause_experiment`, `cancel_experiment`), and is never started.
        """
        waiting = []
        for exp in list_experiments(store=self.store, include_tries=True):
            queued = QueuedWork.from_dict(exp.queued)
            if queued is not None and not queued.not_started and not self.busy(exp.id):
                waiting.append((queued.at, exp.id, exp, queued))
        ids = []
        for _, _, exp, queued in sorted(waiting):  # in the order they were accepted
            why = self._why_not_start(exp, queued)
            if why is not None:
                self._not_started(exp.id, f"the server restarted and left it: {why}")
                log.warning("experiment %s is not started: %s; a person starts it", exp.ref, why)
                continue
            log.info("starting experiment %s: %s", exp.ref, queued.text)
            if self.submit(exp.id, queued.owner, actor=queued.actor, **_work(queued)):
                ids.append(exp.id)
        return ids

    def resume_left_over(self) -> list[int]:
        """Queue what the last server's pool was running when it stopped (killed with it, or stopped
        by its shutdown), then what it accepted and never started (`start_queued`), in the order they
        were in; returns their ids.

        Left for a person, each with a line in the log: experiments a CLI or a notebook ran, those
        stopped on purpose or by an error, those whose runner a kill took while its server lived, and
        those using an agent or grader this server does not allow.
        """
        ids = []
        for exp in sorted(list_experiments(store=self.store, include_tries=True), key=lambda e: e.id):
            if exp.queued:
                continue  # accepted and never started since: `start_queued` decides
            if exp.status not in (ExperimentStatus.RUNNING, ExperimentStatus.INTERRUPTED):
                continue
            halt = halt_of(exp)
            if halt is None:
                continue  # a live runner holds it, or an older abbench left it: nothing to resume here
            if not halt.resumable_by_server:
                log.warning("experiment %s is left as it is: %s; a person resumes it", exp.ref, halt.text)
                continue
            refused = refusal(exp, self.settings)
            if refused is not None:
                log.warning("experiment %s is left as it is: %s", exp.ref, refused)
                continue
            log.info("resuming experiment %s (%s)", exp.ref, halt.text)
            if self.submit(exp.id, exp.owner):
                ids.append(exp.id)
        return ids + self.start_queued()

    def shutdown(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop taking work; running children stop as on Ctrl-C (runs in flight recorded as interrupted,
        the halt ``server stopped``, which the next server resumes).

        Queued experiments stay recorded as queued: the next server starts them, and resumes the
        interrupted ones. A child that has not stopped within `timeout` seconds is killed
        (reconciliation covers it too).
        """
        with self._lock:
            self._closed = True
            self._queue.clear()
            running = [e for e in self._entries.values() if e.proc is not None]
        for entry in running:
            assert entry.proc is not None
            if entry.proc.poll() is None:
                # SIGTERM, not SIGINT: a server started as a script's background job passes an ignored
                # SIGINT on to its children (the child handles both all the same)
                entry.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for entry in running:
            assert entry.proc is not None
            try:
                entry.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("experiment #%d: its runner did not stop in time; killed", entry.job.exp_id)
                entry.proc.kill()
                entry.proc.wait()
