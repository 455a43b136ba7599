"""What every route module shares: the store, the settings, JSON answers."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from abbench._result import plain
from abbench.server._pool import RunnerPool
from abbench.server._settings import ServerSettings
from abbench.store import Store

if TYPE_CHECKING:  # _work runs the jobs of _jobs, which import this module
    from abbench.server._work import WorkPool


class Recent:
    """Answers computed in the last `ttl` seconds, shared by every caller polling the same thing.

    Fifty clients polling one experiment then cost one progress count per `ttl`, not fifty: what
    they see is at most `ttl` old (plus the time one recount takes), and the runs keep the CPU. One
    caller computes a stale answer again while the others keep getting the previous one, so no
    request waits for a recount but the one that makes it, and a burst of callers never recounts
    the same thing at once.
    """

    def __init__(self, ttl: float = 0.2):
        self.ttl = ttl
        self._values: dict[Any, tuple[float, Any]] = {}
        self._computing: dict[Any, threading.Event] = {}
        self._lock = threading.Lock()

    def fresh(self, key: Any) -> tuple[bool, Any]:
        """``(True, value)`` when `key` was computed within `ttl`, else ``(False, None)`` (never blocks)."""
        with self._lock:
            hit = self._values.get(key)
        if hit is not None and time.monotonic() - hit[0] < self.ttl:
            return True, hit[1]
        return False, None

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        """The value for `key` computed within `ttl`, else `compute()` (kept for the next callers)."""
        now = time.monotonic()
        with self._lock:
            hit = self._values.get(key)
            if hit is not None and now - hit[0] < self.ttl:
                return hit[1]
            running = self._computing.get(key)
            if running is None:
                running = self._computing[key] = threading.Event()
                mine = True
            else:
                mine = False
        if not mine:
            if hit is not None:
                return hit[1]  # someone is computing it again: the answer just before theirs
            running.wait()
            with self._lock:
                hit = self._values.get(key)
            return hit[1] if hit is not None else compute()  # theirs failed: try it here
        try:
            value = compute()
            with self._lock:
                if len(self._values) > 10_000:
                    self._values.clear()
                self._values[key] = (time.monotonic(), value)
        finally:
            with self._lock:
                del self._computing[key]
            running.set()
        return value


def recent(request: Request, key: Any, compute: Callable[[], Any]) -> Any:
    """`compute()`, or the same answer given within the last fifth of a second (see `Recent`)."""
    cache: Recent = request.app.state.recent
    return cache.get(key, compute)


async def shared(request: Request, key: Any, compute: Callable[[], Any]) -> Any:
    """`recent` for a route on the event loop: a fresh answer at once, else computed on a worker thread."""
    cache: Recent = request.app.state.recent
    fresh, value = cache.fresh(key)
    if fresh:
        return value
    return await run_in_threadpool(cache.get, key, compute)


def store_of(request: Request) -> Store:
    """The server's store."""
    store: Store = request.app.state.store
    return store


def settings_of(request: Request) -> ServerSettings:
    """The server's settings."""
    settings: ServerSettings = request.app.state.settings
    return settings


def pool_of(request: Request) -> RunnerPool:
    """The server's runner pool."""
    pool: RunnerPool = request.app.state.pool
    return pool


def work_of(request: Request) -> WorkPool:
    """The server's pool of work processes (what reads a caller's files and documents)."""
    work: WorkPool = request.app.state.work
    return work


def answer(data: Any, status: int = 200) -> JSONResponse:
    """A JSON answer (results as their ``as_dict()``, NaN as null)."""
    return JSONResponse(plain(data), status_code=status)


def rendered(data: Any) -> bytes:
    """The body `answer` would send for `data`: kept by `Recent`, so a shared answer is encoded once."""
    return bytes(JSONResponse(plain(data)).body)


def json_answer(body: bytes) -> Response:
    """A JSON answer whose body was `rendered` already."""
    return Response(body, media_type="application/json")


_HIDDEN = {"created_by", "upload_path", "source_path", "root", "id", "profile_id"}


def dataset_view(info: Any) -> dict[str, Any]:
    """A dataset as a caller sees it: no server paths, no other owner's name."""
    data = {k: v for k, v in dataclasses.asdict(info).items() if k not in _HIDDEN}
    validation = getattr(info, "validation", None)
    if validation is not None and hasattr(validation, "to_dict"):
        data["validation"] = validation.to_dict()
    answer: dict[str, Any] = plain(data)
    return answer


def snapshot_view(snap: Any) -> dict[str, Any]:
    """A snapshot as a caller sees it (no server paths)."""
    data = snap.to_dict(files=False)
    return {k: v for k, v in data.items() if k not in _HIDDEN}


def taken_view(store: Any, snap: Any) -> dict[str, Any]:
    """A snapshot just taken, as `abbench.snapshot.TakenSnapshot.from_dict` reads it: its files (the
    caller's own), references and takings, and no server path."""
    taken = store.snapshots.taken(snap)
    data = {k: v for k, v in snap.to_dict(files=True).items() if k not in _HIDDEN}
    return {
        **data,
        "n_refs": taken.n_refs,
        "times_taken": taken.times_taken,
        "first_taken_at": taken.first_taken_at,
    }


def experiment_view(exp: Any, progress: Any | None = None) -> dict[str, Any]:
    """An experiment: its record (what `abbench.store.Experiment.from_dict` reads back: identity,
    definition, arms, status, runner), whether a process runs it now, and its progress when given."""
    data = {
        "id": exp.id,
        "name": exp.name,
        "owner": exp.owner,
        "skill": exp.skill,
        "skill_version": exp.skill_version,
        "dataset": exp.dataset,
        "definition": _public_definition(exp.definition),
        "rounds": exp.rounds,
        "status": exp.status,
        "control": exp.control,
        "batch_id": exp.batch_id,
        "priority": exp.priority,
        "tags": list(exp.tags),
        "gate": None if isinstance(exp.gate, str) else exp.gate,  # a file's name is a server path
        "parent_id": exp.parent_id,
        "arms": [dataclasses.asdict(a) for a in exp.arms],
        "created_at": exp.created_at,
        "updated_at": exp.updated_at,
        "runner_pid": exp.runner_pid,
        "runner_host": exp.runner_host,
        "heartbeat_at": exp.heartbeat_at,
        "runner_alive": exp.runner_alive,
        "runner_origin": exp.runner_origin,
        "executor": exp.executor,
        "pause_reason": exp.pause_reason,
        "stop_reason": exp.stop_reason,
        "halt": exp.halt,
        "queued": exp.queued,
    }
    view: dict[str, Any] = plain(data)
    if progress is not None:
        view["progress"] = progress_view(progress)
    return view


def _public_definition(definition: dict[str, Any]) -> dict[str, Any]:
    """A stored definition without what names the server's files: where each arm's skill was read from
    (a folder, for an experiment made with the CLI) and a gate file's name."""
    public = dict(definition)
    if isinstance(public.get("arms"), dict):
        public["arms"] = {
            name: {k: v for k, v in arm.items() if k != "skill_source"} if isinstance(arm, dict) else arm
            for name, arm in public["arms"].items()
        }
    if isinstance(public.get("gate"), str):
        public["gate"] = None
    return public


_progress_views: dict[Any, tuple[Any, dict[str, Any]]] = {}


def progress_view(progress: Any) -> dict[str, Any]:
    """``plain(progress.as_dict())``, made once per progress object (never mutate it).

    The pollers of one experiment share one progress for `Recent.ttl` (see `shared`): its JSON-ready
    view, the bulk of ``GET /experiments/{id}``'s work, is then made once for all of them.
    """
    key = getattr(progress, "experiment_id", None)
    hit = _progress_views.get(key)
    if hit is not None and hit[0] is progress:
        return hit[1]
    view: dict[str, Any] = plain(progress.as_dict())
    if len(_progress_views) > 10_000:
        _progress_views.clear()
    _progress_views[key] = (progress, view)  # the object is held: its identity is not reused meanwhile
    return view
