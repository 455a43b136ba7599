"""Request work that reads what a caller sent, in a process of its own with CPU, memory and time bounds.

Importing a data file, previewing a mapping, unpacking and snapshotting a skill, creating an
experiment from its definition and recording outcomes all parse bytes a caller chose (`_jobs`). A
hostile file can make a parser allocate gigabytes, run for minutes or abort the interpreter; here
it can only end its own process:

- Each job runs in a child forked from a warm fork server that has abbench loaded (`multiprocessing`'s
  *forkserver*: a job starts in milliseconds, not the second a fresh interpreter takes), at the
  runners' lower CPU priority, with its own GIL: the server keeps answering everyone meanwhile.
- Its CPU time (``RLIMIT_CPU``) and address space (``RLIMIT_AS``) are bounded, and so is its wall
  time (it is killed). A job that passes a bound, or crashes (an allocation failure, SIGABRT), is
  answered 422 with the bound; a store write it had begun is rolled back (one transaction).
- At most `ServerSettings.request_workers` jobs run at once, and one at a time per key: a key with a
  job running gets 429, and the others wait their turn for a free slot (then 503).

The answer (or the problem) comes back as plain data through a pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import resource
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from abbench.errors import AbbenchError
from abbench.server._jobs import JOBS
from abbench.server._problems import Problem, abbench_problem, scrub_paths
from abbench.server._settings import ServerSettings
from abbench.store import Store

log = logging.getLogger(__name__)

SLOT_WAIT_S = 30.0
"""How long a job waits for a free slot before the request answers 503."""


@dataclass(frozen=True)
class Limits:
    """What one job may use: CPU seconds, bytes of address space, and how much lower its priority is."""

    cpu_s: float
    memory_bytes: int
    nice: int


def _bounded(limits: Limits) -> None:
    """Apply `limits` to this process (a job's child), and end it when its fork server is gone.

    It leads a process group of its own: what it starts (git, a report's kernel) is stopped with it.
    """
    with contextlib.suppress(OSError):
        os.setsid()
    cpu = max(1, int(limits.cpu_s))
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))  # SIGXCPU, then SIGKILL
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    if limits.nice > 0:
        with contextlib.suppress(OSError):
            os.nice(limits.nice)
    parent = os.getppid()

    def watch() -> None:  # the server died (and its fork server with it): nothing waits for the answer
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(75)

    threading.Thread(target=watch, name="abbench-work-lifeline", daemon=True).start()


def _child(job: str, kwargs: dict[str, Any], limits: Limits, conn: Any) -> None:
    """A job's process: run it within `limits`, and send ``("ok", value)`` or ``("problem", ...)``."""
    _bounded(limits)
    try:
        answer: tuple[Any, ...] = ("ok", JOBS[job](**kwargs))
    except Problem as exc:
        answer = ("problem", exc.status, exc.title, exc.detail, exc.extra)
    except AbbenchError as exc:
        answer = ("problem", *abbench_problem(exc))
    except MemoryError:
        answer = ("memory",)
    except RecursionError:
        answer = ("problem", 422, "invalid input", "what was sent nests too deeply to be read", {})
    except Exception:
        log.exception("work %s failed", job)
        answer = ("problem", 500, "server error", "the server failed on this request; its log says why", {})
    conn.send(answer)
    conn.close()


class WorkPool:
    """Runs request jobs in bounded child processes (see the module): at most `request_workers` at once.

    Args:
        settings: The server's settings (the bounds, the number of slots).
        store: The server's store (the jobs open the same folder).
    """

    def __init__(self, settings: ServerSettings, store: Store):
        self.settings, self.store = settings, store
        self.limits = Limits(settings.request_cpu_s, settings.request_memory_mb << 20, settings.runner_nice)
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["__main__", "abbench.server._jobs"])
        self._threads = ThreadPoolExecutor(settings.request_workers, thread_name_prefix="abbench-work")
        self._slots: asyncio.Semaphore | None = None
        self._keys: set[str] = set()
        self._live: set[Any] = set()
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Start the fork server now (on a thread of its own), so the first request does not wait for it."""

        def start() -> None:
            with contextlib.suppress(Exception):
                multiprocessing.forkserver.ensure_running()

        threading.Thread(target=start, name="abbench-work-warm", daemon=True).start()

    async def run(self, key_id: str, job: str, **kwargs: Any) -> Any:
        """The job's answer, or the problem it (or its bounds) answered with, raised as a `Problem`.

        Raises:
            Problem: the job's own problem; 422 for a job past a bound or crashed; 429 when the key has
                a job running; 503 when no slot frees within `SLOT_WAIT_S`.
        """
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.settings.request_workers)
        with self._lock:
            if key_id in self._keys:
                raise Problem(
                    429,
                    "too many requests",
                    f"key {key_id} has an upload, import, preview, definition or outcomes being read; "
                    "send the next when it is answered",
                    headers={"Retry-After": "1"},
                )
            self._keys.add(key_id)
        try:
            try:
                await asyncio.wait_for(self._slots.acquire(), SLOT_WAIT_S)
            except TimeoutError:
                raise Problem(
                    503,
                    "busy",
                    "the server is reading other requests' files; try again shortly",
                    headers={"Retry-After": "5"},
                ) from None
            try:
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(self._threads, self._run, job, kwargs)
            finally:
                self._slots.release()
        finally:
            with self._lock:
                self._keys.discard(key_id)

    def _run(self, job: str, kwargs: dict[str, Any]) -> Any:
        """Run `job` in a child and wait for its answer (on a thread of the pool)."""
        receiver, sender = self._context.Pipe(duplex=False)
        proc = self._context.Process(
            target=_child, args=(job, {"settings": self.settings, **kwargs}, self.limits, sender), daemon=True
        )
        proc.start()
        sender.close()
        with self._lock:
            self._live.add(proc)
        try:
            answer = receiver.recv() if receiver.poll(self.settings.request_timeout_s) else ("timeout",)
        except (EOFError, OSError):
            answer = ("died",)
        finally:
            receiver.close()
            if answer[0] not in ("ok", "problem"):
                _kill_group(proc)
            proc.join(10)
            with self._lock:
                self._live.discard(proc)
        if answer[0] not in ("ok", "problem") and proc.pid is not None:
            self.store.datasets.discard_partial(proc.pid)  # what it was writing when it was stopped
        return self._answer(job, answer, proc.exitcode)

    def _answer(self, job: str, answer: tuple[Any, ...], code: int | None) -> Any:
        if answer[0] == "ok":
            return answer[1]
        if answer[0] == "problem":
            _, status, title, detail, extra = answer
            headers = extra.pop("headers", None)
            raise Problem(status, title, scrub_paths(self.settings, detail), headers=headers, **extra)
        s = self.settings
        if answer[0] == "timeout":
            why = f"it took longer than this server's {s.request_timeout_s:g} s (--request-timeout)"
        elif answer[0] == "memory" or code == -signal.SIGABRT:
            why = f"it needed more memory than this server's {s.request_memory_mb:,} MB (--request-memory-mb)"
        elif code in (-signal.SIGXCPU, -signal.SIGKILL):
            why = f"it needed more CPU time than this server's {s.request_cpu_s:g} s (--request-cpu)"
        else:
            why = f"its reader stopped ({_ended(code)})"
        log.warning("work %s refused: %s", job, why)
        raise Problem(
            422,
            "over this server's limits",
            f"what was sent could not be read: {why}; nothing was stored. Send a smaller or simpler file, "
            "or ask whoever runs the server to raise the limit",
            limit=why,
        )

    def shutdown(self) -> None:
        """Stop every job still running (their requests end with the server; nothing half-stored stays)."""
        with self._lock:
            live = list(self._live)
        for proc in live:
            _kill_group(proc)
        self._threads.shutdown(wait=False, cancel_futures=True)


def _kill_group(proc: Any) -> None:
    """Kill a job's process and everything it started (its process group: git, a kernel)."""
    with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.kill()


def _ended(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
