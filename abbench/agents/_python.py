"""The ``python`` adapter: a user's ``module:function`` (or ``path/to/file.py:function``), sync or async.

The callable receives the `Task` and returns an `AgentOutput`, a dict of its fields, or the
prediction as a string. Async callables run on the scheduler's loop; sync ones run in a worker
thread so they never block it (a sync callable cannot be interrupted: on timeout the run is
abandoned but the thread finishes on its own). Those threads are daemons: a callable that never
returns does not keep the process alive once the experiment is over.

Whatever the callable raises is the run's failure, never the experiment's end: ``SystemExit`` and
``KeyboardInterrupt`` raised by the callable itself fail the run like any other exception.

The task's case is the one every agent sees (`agent_case`): no gold answer, source row or metadata.
A test double that needs the gold says so with ``sees_gold: true`` on its arm, and the report's
provenance shows that arm as a test double.

The latency recorded is the callable's own: timed inside the worker thread for a sync callable and
around the awaited call for an async one, so the wait for a thread or for a busy loop is not in it.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any, cast

from abbench.agents._answer import match_label
from abbench.agents._base import Task, agent_task, register_agent
from abbench.errors import AgentError, UsageError
from abbench.llm import FailureType
from abbench.types import AgentOutput, Usage

MAX_THREADS = 128
"""Worker threads for sync callables (shared by all python agents); enough for high run concurrency."""

OUTPUT_FIELDS = tuple(f.name for f in dataclasses.fields(AgentOutput))
"""The keys a callable's dict may use."""

_file_modules: dict[tuple[str, float], Any] = {}

# Exceptions that mean the callable itself is broken: trying it again will not help.
_BUGS = (TypeError, AttributeError, NameError, ImportError, SyntaxError, NotImplementedError, AssertionError)
# Exceptions that would stop the interpreter, raised by the callable itself: its run fails, nothing more.
_EXITS = (SystemExit, KeyboardInterrupt)


class DaemonThreads(Executor):
    """Worker threads for sync callables that never keep the process alive (a `ThreadPoolExecutor`'s are
    joined when the interpreter exits, so one callable that never returns held the process forever).

    A thread is started when a call finds none idle, up to `max_threads`; idle ones wait for the next.

    Args:
        max_threads: The most threads at once.
        name: Their names' prefix.
    """

    def __init__(self, max_threads: int = MAX_THREADS, name: str = "abbench-python-agent"):
        self.max_threads = max_threads
        self.name = name
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Call ``fn(*args, **kwargs)`` in one of the threads; its future."""
        future: Future[Any] = Future()
        self._calls.put((future, functools.partial(fn, *args, **kwargs)))
        if not self._idle.acquire(blocking=False):  # no thread waiting: start one (while below the cap)
            with self._lock:
                if self._threads < self.max_threads:
                    self._threads += 1
                    threading.Thread(
                        target=self._work, name=f"{self.name}-{self._threads}", daemon=True
                    ).start()
        return future

    def _work(self) -> None:
        while True:
            future, call = self._calls.get()
            if future.set_running_or_notify_cancel():
                try:
                    result = call()
                except BaseException as exc:  # SystemExit too: it belongs to the run, not to this thread
                    future.set_exception(exc)
                else:
                    future.set_result(result)
                del future, call  # nothing of a finished call is kept while the thread waits
            self._idle.release()


_executor: DaemonThreads | None = None
_executor_lock = threading.Lock()


def _threads() -> DaemonThreads:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = DaemonThreads(MAX_THREADS)
        return _executor


def _callables(module: Any) -> list[str]:
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and callable(value)
        and getattr(value, "__module__", None) == module.__name__
    )


def _load_file(path: Path, ref: str) -> Any:
    key = (str(path), path.stat().st_mtime)
    if key in _file_modules:
        return _file_modules[key]
    name = f"abbench_user_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path} (from {ref!r}) cannot be imported as Python; give a .py file")
    module = importlib.util.module_from_spec(spec)
    # let the file import its neighbours, as it could when run as a script
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise UsageError(f"{path} (from {ref!r}) failed to import: {type(exc).__name__}: {exc}") from exc
    _file_modules[key] = module
    return module


def _module_roots(base_dir: str | os.PathLike[str] | None) -> list[Path]:
    """The folders a bare module name is also looked for in: the definition's folder, then this one."""
    roots = [Path(base_dir).resolve()] if base_dir else []
    here = Path.cwd().resolve()
    return [*roots, here] if here not in roots else roots


def _import_module(target: str, base_dir: str | os.PathLike[str] | None) -> Any:
    """Import ``target``; when it is not importable, from the definition's folder or the current one.

    A console script does not put the current folder on ``sys.path``, so ``agent_mod:answer`` beside
    the experiment definition would otherwise be "not found" although it is right there.
    """
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        first = target.split(".", 1)[0]
        if exc.name != first:
            raise
        for root in _module_roots(base_dir):
            if (root / f"{first}.py").is_file() or (root / first / "__init__.py").is_file():
                if str(root) not in sys.path:
                    sys.path.insert(0, str(root))
                importlib.invalidate_caches()
                return importlib.import_module(target)
        raise


def load_callable(ref: str, *, base_dir: str | os.PathLike[str] | None = None) -> Callable[..., Any]:
    """The callable a reference names: ``package.module:function``, ``path/to/file.py:function``, or
    ``module:Class.method`` (attributes may be dotted).

    Args:
        ref: The reference.
        base_dir: Where relative file paths start (default: the current folder).

    Raises:
        UsageError: the reference is malformed, the module or file cannot be found or imported, or it
            has no such callable — the message says which, and lists what the module does define.
    """
    ref = str(ref).strip()
    target, sep, attr = ref.rpartition(":")
    if not sep or not target or not attr or (len(target) == 1 and target.isalpha()):
        raise UsageError(
            f"python agent reference {ref!r} must look like module:function or path/to/file.py:function"
        )
    is_file = target.endswith(".py") or "/" in target or "\\" in target
    if is_file:
        path = Path(target).expanduser()
        if not path.is_absolute():
            path = Path(base_dir or os.getcwd()) / path
        path = path.resolve()
        if not path.is_file():
            raise UsageError(
                f"no file {str(path)!r} (from {ref!r}); give a path relative to {str(Path(base_dir or os.getcwd()))!r} "
                "or an absolute one"
            )
        module = _load_file(path, ref)
    else:
        try:
            module = _import_module(target, base_dir)
        except ModuleNotFoundError as exc:
            if exc.name and (target == exc.name or target.startswith(exc.name + ".")):
                last = target.rsplit(".", 1)[-1]
                where = ", ".join(repr(str(r)) for r in _module_roots(base_dir))
                raise UsageError(
                    f"no module named {target!r} (from {ref!r}): not importable and not found in {where}; "
                    f"put its folder on PYTHONPATH, or give a file path such as path/to/{last}.py:{attr}"
                ) from None
            raise UsageError(f"importing {target!r} (from {ref!r}) failed: {exc}") from exc
        except Exception as exc:
            raise UsageError(
                f"importing {target!r} (from {ref!r}) failed: {type(exc).__name__}: {exc}"
            ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            names = ", ".join(_callables(module)) or "none"
            raise UsageError(
                f"{target} has no {attr!r} (from {ref!r}); the callables it defines: {names}"
            ) from None
    if not callable(obj):
        raise UsageError(f"{ref!r} names a {type(obj).__name__}, not a function; point it at a callable")
    return cast("Callable[..., Any]", obj)


def _timed(fn: Callable[..., Any], task: Task) -> tuple[Any, float]:
    """Call `fn` in the worker thread and time it there: the wait for a free thread and for the
    loop to take the result back belong to the scheduler, not to the agent."""
    started = time.perf_counter()
    result = fn(task)
    return result, time.perf_counter() - started


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


class PythonAgent:
    """An agent that is a Python callable taking a `Task`.

    Args:
        function: ``module:function``, ``path/to/file.py:function``, or the callable itself.
        model: Recorded on outputs that name no model.
        base_dir: Where a relative file path starts.
        sees_gold: Hand the callable the whole case, gold answer (``expected``), source row and
            metadata included: for test doubles that answer from the gold, never for a real agent.
        **params: Other arm settings; the callable sees them as ``task.params``.

    Raises:
        UsageError: the reference cannot be loaded (see `load_callable`), or `sees_gold` is not
            true or false.
    """

    name = "python"
    inline = False
    """Call a plain (not async) function in the calling thread instead of the shared thread pool: set by
    a Dask worker, whose task thread is the call's own (no hop to a pool thread and back per run)."""

    def __init__(
        self,
        function: str | Callable[..., Any] | None = None,
        *,
        model: str | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        sees_gold: bool = False,
        **params: Any,
    ):
        if not isinstance(sees_gold, bool):
            raise UsageError(f"sees_gold must be true or false, not {sees_gold!r}")
        if function is None:
            raise UsageError(
                "the python agent needs `function:` — module:function or path/to/file.py:function"
            )
        if callable(function):
            self.function = function
            self.ref = (
                f"{getattr(function, '__module__', '?')}:{getattr(function, '__qualname__', repr(function))}"
            )
        else:
            self.function = load_callable(function, base_dir=base_dir)
            self.ref = str(function)
        self.model = model
        self.sees_gold = sees_gold
        self.params = params
        self._async = _is_async(self.function)  # asked once: `inspect` costs more than a call

    def __repr__(self) -> str:
        return f"PythonAgent({self.ref!r})"

    async def run(self, task: Task) -> AgentOutput:
        """Call the function with `task` and turn what it returns into an `AgentOutput`.

        Raises:
            AgentError: the function raised (``agent_error``; retryable unless the exception points
                at a bug such as TypeError), or returned nothing usable (``bad_output``).
        """
        seen = task if self.sees_gold else agent_task(task)
        try:
            if self._async:
                started = time.perf_counter()
                result = await self.function(seen)
                elapsed = time.perf_counter() - started
            elif self.inline:
                result, elapsed = _timed(self.function, seen)
            else:
                loop = asyncio.get_running_loop()
                call = functools.partial(contextvars.copy_context().run, _timed, self.function, seen)
                result, elapsed = await loop.run_in_executor(_threads(), call)
                if inspect.isawaitable(result):
                    started = time.perf_counter()
                    result = await result
                    elapsed += time.perf_counter() - started
        except AgentError:
            raise
        except (Exception, *_EXITS) as exc:
            raise AgentError(
                f"{self.ref} raised {type(exc).__name__}{f': {exc}' if str(exc) else ''} "
                f"(case {task.case.case_id})",
                retryable=not isinstance(exc, (*_BUGS, *_EXITS)),
            ) from exc
        try:
            return self._output(result, task, elapsed * 1000)
        except (
            TypeError,
            ValueError,
            OverflowError,
        ) as exc:  # a dict whose values do not fit ("many" tokens)
            raise self._bad(
                f"returned a {type(result).__name__} that cannot be read ({exc})", result, task
            ) from None

    def _bad(self, what: str, result: Any, task: Task) -> AgentError:
        return AgentError(
            f"{self.ref} {what} (case {task.case.case_id}); return an AgentOutput, a dict of its fields "
            f"({', '.join(OUTPUT_FIELDS)}), or the prediction as a string",
            FailureType.BAD_OUTPUT,
            retryable=False,
            raw_output=None if result is None else repr(result)[:2000],
        )

    def _output(self, result: Any, task: Task, latency_ms: float) -> AgentOutput:
        if isinstance(result, AgentOutput):
            output = result
        elif isinstance(result, str):
            text = result.strip()
            if not text:
                raise self._bad("returned an empty string", result, task)
            # built whole at once: the common case of a callable returning its label, on the hot path
            return AgentOutput(
                prediction=match_label(text, task.label_set) or text,
                raw_output=result,
                latency_ms=latency_ms,
                session_id=task.session_id or None,
                model=self.model or task.model,
            )
        elif isinstance(result, Mapping):
            output = self._from_dict(result, task)
        elif result is None:
            raise self._bad("returned None", result, task)
        else:
            raise self._bad(f"returned a {type(result).__name__}", result, task)
        if output.prediction is None or not str(output.prediction).strip():
            raise self._bad("returned no prediction", result, task)
        prediction = output.prediction
        if isinstance(prediction, Mapping | list | tuple):  # an object answer is kept as JSON text
            prediction = json.dumps(prediction, ensure_ascii=False, default=str)
        prediction = str(prediction).strip()
        return dataclasses.replace(
            output,
            prediction=match_label(prediction, task.label_set) or prediction,
            latency_ms=output.latency_ms or latency_ms,
            session_id=output.session_id or task.session_id or None,
            model=output.model or self.model or task.model,
        )

    def _from_dict(self, result: Mapping[str, Any], task: Task) -> AgentOutput:
        unknown = sorted(set(map(str, result)) - set(OUTPUT_FIELDS))
        if unknown:
            raise self._bad(f"returned unknown key(s) {', '.join(unknown)}", result, task)
        fields = dict(result)
        for name in ("evidence_refs", "transcript", "files_read", "sections_read"):
            if name in fields:
                value = fields[name]
                fields[name] = (value,) if isinstance(value, str | dict) else tuple(value or ())
        usage = fields.get("usage")
        if isinstance(usage, Mapping):
            fields["usage"] = Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)))
        elif usage is None:
            fields.pop("usage", None)
        if fields.get("cost") is None:
            fields.pop("cost", None)
        if "prediction" not in fields:
            raise self._bad("returned a dict without 'prediction'", result, task)
        return AgentOutput(**fields)


@register_agent("python")
def python_agent(**settings: Any) -> PythonAgent:
    """Build the ``python`` adapter from an arm's settings: ``function`` (required), ``model``,
    ``base_dir``; anything else reaches the callable as ``task.params``."""
    return PythonAgent(**settings)
