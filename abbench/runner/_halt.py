"""Why an experiment's execution stopped, and stopping on a signal however the process was started.

A pass that stops before its work is done records why (`HaltReason`, the ``experiments.halt`` column):
stopped on purpose (Ctrl-C, SIGTERM, SIGHUP), its server shut down, or an error. A runner that dies
without a word records nothing: a dead runner with no halt was killed. Each claim to execute also
records what kind of process runs the experiment (`set_origin`: ``cli``, ``server``, ``python``), so a
server resumes at start only what its own pool was running, and never what a person stopped.

`stop_on_signals` makes SIGTERM and SIGHUP (and, in a server's runner, SIGINT) stop a pass as Ctrl-C
does — runs in flight recorded as interrupted, what was done committed, the claim released — also when
the process was started in the background by a non-interactive shell, which ignores SIGINT in it: the
stop never goes through SIGINT's handler.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import weakref
from dataclasses import dataclass
from typing import Any

from abbench import _actions as do
from abbench.errors import Said
from abbench.runner._reason import StoredReason
from abbench.store import now_iso
from abbench.types import Control, ExperimentStatus, Halt

ORIGINS = ("cli", "server", "python")
"""The kinds of process that run experiments: the CLI, a server's runner pool, a notebook or script."""

_ORIGIN = ["python"]
_ASKED: list[tuple[int, Halt]] = []
"""Signals that asked this process to stop, with what each means (the last one is the halt)."""
_STOPPING: weakref.WeakSet[Any] = weakref.WeakSet()
"""The event loops already told to stop."""

_WORDS: dict[str, str] = {
    Halt.KILLED: "its process died without a word (killed, out of memory, or a lost machine)",
    Halt.STOPPED: "stopped on purpose",
    Halt.SERVER_STOPPED: "its server stopped",
    Halt.ERROR: "stopped by an error",
}
_PROCESS = {"cli": "abbench", "server": "a server's runner", "python": "a Python process"}


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process is asked to stop (SIGTERM, SIGHUP; SIGINT in a
    server's runner).

    A KeyboardInterrupt, so a run stops exactly as on Ctrl-C: runs in flight are recorded as
    interrupted, what was done is committed, and the runner's claim is released.

    Attributes:
        signum: The signal.
    """

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def set_origin(origin: str) -> None:
    """Say what kind of process this is (``cli``, ``server``, ``python``), recorded with every claim.

    Raises:
        ValueError: an unknown kind.
    """
    if origin not in ORIGINS:
        raise ValueError(f"unknown runner origin {origin!r}; one of {', '.join(ORIGINS)}")
    _ORIGIN[0] = origin


def process_origin() -> str:
    """What kind of process this is (`set_origin`; ``python`` unless an entry point said otherwise)."""
    return _ORIGIN[0]


def signals_asked() -> int:
    """How many stop signals this process has received (a pass compares it before and after)."""
    return len(_ASKED)


def last_signal() -> tuple[int, Halt] | None:
    """The last stop signal received, with what it means; None when none was."""
    return _ASKED[-1] if _ASKED else None


def stop_on_signals(
    names: tuple[str, ...] = ("SIGTERM", "SIGHUP"), *, halt: Halt = Halt.STOPPED, override: bool = False
) -> None:
    """Make these signals stop the process as Ctrl-C does, instead of killing it mid-write.

    Outside an event loop the handler raises `Terminated` where the main thread is. Inside one (a pass
    under ``asyncio.run``) it raises `Terminated` from a callback of that loop, never inside a task (an
    agent's coroutine would die with it, logged as never retrieved): the loop stops, ``asyncio.run``
    cancels the pass, which records its runs in flight as interrupted and the halt, and `Terminated`
    comes out of ``asyncio.run``. Unlike the Ctrl-C path (``_thread.interrupt_main``), this works when
    SIGINT is ignored, as it is for a non-interactive shell's background jobs.

    Signals a parent set to be ignored (``nohup`` ignores SIGHUP) stay ignored, unless `override`.

    Args:
        names: The signals.
        halt: What they mean: `Halt.STOPPED` (a person stopped it) or `Halt.SERVER_STOPPED`.
        override: Handle them whatever they did before (a server's runner, whose only parent is the
            server that stops it with them, even when the server itself was started ignoring SIGINT).
    """

    def stop(signum: int, frame: Any) -> None:
        stop_for_signal(signum, halt)

    for name in names:
        sig = getattr(signal, name, None)
        if sig is not None and (override or unhandled(sig)):
            signal.signal(sig, stop)


def unhandled(sig: int) -> bool:
    """Whether `sig` does what it does by default (SIGINT: Python's KeyboardInterrupt), neither ignored
    nor handled by someone else: only such a signal is made to stop a pass."""
    current = signal.getsignal(sig)
    return current is signal.SIG_DFL or (sig == signal.SIGINT and current is signal.default_int_handler)


def stop_for_signal(signum: int, halt: Halt = Halt.STOPPED) -> None:
    """The work of `stop_on_signals`' handler (for a handler installed elsewhere, such as the CLI's).

    Raises:
        Terminated: outside an event loop, where the main thread is.
    """
    _ASKED.append((signum, halt))
    aio = sys.modules.get("asyncio")  # not imported: no loop runs (and --help need not load it)
    loop = None
    if aio is not None:
        try:
            loop = aio.get_running_loop()
        except RuntimeError:
            loop = None
    if loop is None or loop.is_closed():
        raise Terminated(signum)
    if loop in _STOPPING:
        return  # a second signal while the pass records what it did: let it finish (SIGKILL will not wait)
    _STOPPING.add(loop)
    loop.call_soon_threadsafe(_terminate, signum)


def _terminate(signum: int) -> None:
    raise Terminated(signum)


@dataclass(frozen=True)
class HaltReason(StoredReason):
    """Why an experiment's execution stopped before it was done, as every view says it.

    Attributes:
        why: A `Halt`: ``killed``, ``stopped``, ``server stopped`` or ``error``.
        origin: What kind of process ran it: ``cli``, ``server``, ``python`` (None: unknown).
        pid: Its process id.
        host: Its machine.
        signal: The signal that stopped it (``SIGTERM``); None for Ctrl-C in a notebook, an error or a kill.
        at: When (UTC, ISO 8601); None when it died without a word.
        error: The error that stopped it, with `Halt.ERROR`.
        while_server_ran: A server's runner killed while its server lived (seen by the server): not
            lost to the server's end, so no server resumes it on its own.
    """

    why: str
    origin: str | None = None
    pid: int | None = None
    host: str | None = None
    signal: str | None = None
    at: str | None = None
    error: str | None = None
    while_server_ran: bool = False

    @property
    def resumable_by_server(self) -> bool:
        """Whether a server may resume it on its own: only what its own pool ran and lost to a kill or
        to the server's shutdown, never what a person stopped or an error ended."""
        return (
            self.origin == "server"
            and self.why in (Halt.KILLED, Halt.SERVER_STOPPED)
            and not self.while_server_ran
        )

    @property
    def text(self) -> str:
        """``stopped on purpose (SIGTERM to abbench, pid 4242 on host, 2026-11-03 12:04 UTC)``."""
        who = _PROCESS.get(self.origin or "", "its runner")
        where = f"{who}, pid {self.pid}" if self.pid else who
        if self.host:
            where += f" on {self.host}"
        if self.signal:
            where = f"{self.signal} to {where}"
        when = f", {self.at[:16].replace('T', ' ')} UTC" if self.at else ""
        said = f"{_WORDS.get(self.why, self.why)} ({where}{when})"  # a Halt hashes as its text
        if self.why == Halt.ERROR and self.error:
            said += f": {self.error}"
        if self.while_server_ran:
            said += " while its server ran"
        return said

    def hint(self, handle: str) -> Said:
        """What a person does to go on (the parts: each view words the action, `abbench.errors.worded`)."""
        if self.why == Halt.SERVER_STOPPED:
            return (
                "the server resumes it when it starts again; or run the rest here: ",
                do.run_experiment(handle),
            )
        return ("run the rest: ", do.run_experiment(handle))

    @classmethod
    def here(cls, why: Halt, *, signum: int | None = None, error: str | None = None) -> HaltReason:
        """This process stopping now, for `why`."""
        return cls(
            why=str(why),
            origin=process_origin(),
            pid=os.getpid(),
            host=socket.gethostname(),
            signal=signal.Signals(signum).name if signum is not None else None,
            at=now_iso(),
            error=error,
        )


def paused_unstarted(exp: Any) -> bool:
    """Whether a person paused `exp` (an `abbench.store.Experiment`) before any process executed it:
    it stays paused (run or resume goes on), it was not interrupted."""
    return (
        exp.status == ExperimentStatus.PAUSED
        and exp.control == Control.PAUSE
        and exp.runner_origin is None
        and not exp.runner_alive
        and not exp.pause_reason
    )


def halt_of(exp: Any) -> HaltReason | None:
    """Why `exp` (an `abbench.store.Experiment`) stopped before its work was done: its recorded halt,
    or killed when its runner died without recording one; None while a runner holds it, or when it is
    not left unfinished by a runner (created, finished, cancelled, paused by its budget)."""
    left = (ExperimentStatus.RUNNING, ExperimentStatus.PAUSED, ExperimentStatus.INTERRUPTED)
    if exp.status not in left or exp.runner_alive:
        return None
    recorded = HaltReason.from_dict(exp.halt)
    if recorded is not None:
        return recorded
    if exp.pause_reason and exp.status == ExperimentStatus.PAUSED:
        return None  # paused by its budget: it waits for a higher one, nothing stopped it
    if exp.runner_origin is None and exp.status == ExperimentStatus.INTERRUPTED:
        return None  # left by an abbench from before halts were recorded: nothing to say
    if paused_unstarted(exp):
        return None  # a person paused it before any process ran it: nothing died
    return HaltReason(
        why=str(Halt.KILLED), origin=exp.runner_origin, pid=exp.runner_pid, host=exp.runner_host
    )
