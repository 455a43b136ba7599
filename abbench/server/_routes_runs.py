"""Routes for experiments: create, list, show, control (start ... regrade), results (paged), events (SSE)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from abbench.compare import compare_arms
from abbench.errors import ExperimentError
from abbench.review import disagreements
from abbench.runner import (
    cancel_experiment,
    experiment_status,
    pause_experiment,
    resume_experiment,
    select_retry,
)
from abbench.server import _owned, _policy
from abbench.server._auth import Caller, require
from abbench.server._common import (
    answer,
    experiment_view,
    json_answer,
    pool_of,
    recent,
    rendered,
    settings_of,
    shared,
    store_of,
    work_of,
)
from abbench.server._documents import INT_MAX
from abbench.server._problems import Problem, refusal
from abbench.server._uploads import remove, temp_folder
from abbench.store import Experiment, RunRecord
from abbench.types import ExperimentStatus

router = APIRouter(prefix="/api", tags=["experiments"])
Reader = Annotated[Caller, Depends(require("read"))]
Runner = Annotated[Caller, Depends(require("run"))]
_FINAL = (ExperimentStatus.FINISHED, ExperimentStatus.CANCELLED, ExperimentStatus.INTERRUPTED)
"""Where an event stream ends once the pool does not hold the experiment: done, or stopped with nothing
that would go on without someone asking (its halt says why), so a waiting client is not held forever."""


@router.post("/experiments", status_code=201, summary="Create an experiment from its YAML or JSON definition")
async def create(request: Request, caller: Runner) -> JSONResponse:
    """The definition names the owner's datasets and snapshots; one pending run per case × round × arm."""
    body, content_type = await request.body(), request.headers.get("content-type", "")
    view = await work_of(request).run(
        caller.key.key_id, "create", owner=caller.owner, body=body, content_type=content_type
    )
    return answer(view, 201)


@router.get("/experiments", summary="This owner's experiments, newest first")
def list_all(request: Request, caller: Reader, tries: bool = False) -> JSONResponse:
    """The owner's experiments (tries only when asked)."""
    return answer(
        [experiment_view(e) for e in _owned.owned_experiments(store_of(request), caller.owner, tries=tries)]
    )


@router.get("/experiments/{ref}", summary="One experiment with its progress")
async def get_one(request: Request, caller: Reader, ref: str) -> JSONResponse:
    """Status, arms and progress (runs per state, per arm, spend); the progress at most a fifth of a second old."""
    exp = await _lookup(request, caller, ref)
    store = store_of(request)
    progress = await shared(request, ("status", exp.id), lambda: experiment_status(exp.id, store=store))
    return JSONResponse(experiment_view(exp, progress))  # plain already: `answer` would walk it again


@router.get("/experiments/{ref}/failures", summary="Its runs that got no verdict, by kind and type")
def failures(
    request: Request, caller: Reader, ref: str, limit: int = Query(10, ge=1, le=1000)
) -> JSONResponse:
    """Execution and grading failures by kind and type, with one example of each (the kinds with the
    most runs first, at most `limit`): what `abbench status` lists under the counts."""
    store = store_of(request)
    exp = _owned.experiment(store, ref, caller.owner)
    return answer(dataclasses.asdict(store.runs.failures(exp.id, limit=limit)))


async def _lookup(request: Request, caller: Caller, ref: str) -> Experiment:
    """The caller's experiment: by id on the event loop (one indexed read), by name on a worker thread."""
    store = store_of(request)
    if ref.strip().lstrip("#").isascii() and ref.strip().lstrip("#").isdigit():
        return _owned.experiment(store, ref, caller.owner)
    return await run_in_threadpool(_owned.experiment, store, ref, caller.owner)


def _allowed(request: Request, exp: Experiment, *, arms: bool = True) -> None:
    """Refuse (422) an experiment this server may not execute, whoever made it: an agent or grader it
    was not started to allow (the pool's own rule), then an endpoint, key variable or server file it
    names (`_policy`). `arms` False: a re-grade, which runs the graders only."""
    refused = pool_of(request).refusal(exp.id, regrade=not arms)
    if refused is not None:  # made elsewhere (the CLI, a notebook) with an agent this server does not run
        raise Problem(422, "not allowed on this server", refused)
    _policy.check_execution(exp.spec, settings_of(request), arms=arms)


def _start(request: Request, caller: Caller, exp: Experiment, **job: Any) -> bool:
    pool, settings = pool_of(request), settings_of(request)
    if pool.busy(exp.id):
        return False
    if exp.runner_alive:
        raise refusal(409, "busy", ExperimentError(*exp.busy_message()))
    _allowed(request, exp, arms=not job.get("regrade"))
    if pool.queued_for(caller.owner) >= settings.per_owner_running:
        raise Problem(
            429,
            "owner quota",
            f"owner {caller.owner} already has {settings.per_owner_running} experiments running or queued on this "
            "server; wait for one to finish",
            headers={"Retry-After": "30"},
        )
    return pool.submit(exp.id, caller.owner, actor=caller.actor, **job)


def _control_answer(request: Request, exp: Experiment, **extra: Any) -> JSONResponse:
    store = store_of(request)
    fresh = store.experiments.get(exp.id)
    return answer({**experiment_view(fresh, experiment_status(exp.id, store=store)), **extra}, 202)


@router.post(
    "/experiments/{ref}/start", status_code=202, summary="Run the remaining work in the server's pool"
)
def start(request: Request, caller: Runner, ref: str) -> JSONResponse:
    """Queue the experiment in the server's runner pool (a no-op when it is already there)."""
    exp = _owned.experiment(store_of(request), ref, caller.owner)
    return _control_answer(request, exp, queued=_start(request, caller, exp))


@router.post("/experiments/{ref}/pause", status_code=202, summary="Pause: runs in flight finish, no new ones")
def pause(request: Request, caller: Runner, ref: str) -> JSONResponse:
    """Ask the runner to pause (it obeys between runs)."""
    store = store_of(request)
    exp = _owned.experiment(store, ref, caller.owner)
    pause_experiment(exp.id, store=store)
    pool_of(request).unqueue(exp.id)  # not started yet: it stays paused (its status says so)
    return _control_answer(request, exp)


@router.post("/experiments/{ref}/resume", status_code=202, summary="Resume a paused experiment")
def resume(
    request: Request,
    caller: Runner,
    ref: str,
    budget: float | None = Query(None, gt=0, allow_inf_nan=False, description="A new budget (max_cost)."),
) -> JSONResponse:
    """Go on; when no runner holds it any more (paused by its budget), queue it again."""
    store = store_of(request)
    exp = _owned.experiment(store, ref, caller.owner)
    _allowed(request, exp)  # refused before its control changes
    alive = resume_experiment(exp.id, store=store, budget=budget)
    queued = False if alive or pool_of(request).busy(exp.id) else _start(request, caller, exp)
    return _control_answer(request, exp, queued=queued)


@router.post("/experiments/{ref}/cancel", status_code=202, summary="Cancel: pending runs are cancelled")
def cancel(request: Request, caller: Runner, ref: str) -> JSONResponse:
    """Cancel the experiment (runs in flight are cancelled, pending ones marked cancelled)."""
    store = store_of(request)
    exp = _owned.experiment(store, ref, caller.owner)
    cancelled = cancel_experiment(exp.id, store=store)
    pool_of(request).unqueue(exp.id)
    return _control_answer(request, exp, cancelled_runs=cancelled)


@router.post("/experiments/{ref}/retry", status_code=202, summary="Re-run selected runs in the pool")
def retry(
    request: Request,
    caller: Runner,
    ref: str,
    failed: bool = False,
    execution_failed: bool = False,
    grading_failed: bool = False,
    cancelled: bool = False,
    cases: Annotated[list[str] | None, Query()] = None,
) -> JSONResponse:
    """Queue a retry: execution failures (and cancelled runs, named cases) go back to pending and run
    again; grading failures are graded again from their stored answers, never re-run (``failed``
    asks for both). The answer says how many of each (``reset``, ``regrade``)."""
    store = store_of(request)
    exp = _owned.experiment(store, ref, caller.owner)
    if pool_of(request).busy(exp.id):
        raise Problem(
            409, "busy", f"experiment {exp.name!r} is running on this server; wait for it, then retry"
        )
    if exp.runner_alive:
        raise refusal(409, "busy", ExperimentError(*exp.busy_message()))
    chosen = select_retry(
        exp,
        store=store,
        failed=failed,
        execution_failed=execution_failed,
        grading_failed=grading_failed,
        cancelled=cancelled,
        cases=cases,
    )
    _allowed(request, exp, arms=bool(chosen.rerun))  # refused before any run is reset
    if chosen.rerun:
        store.runs.reset(list(chosen.rerun), "re-run requested")
    queued = _start(request, caller, exp, regrade_ids=chosen.regrade)
    return _control_answer(
        request, exp, reset=len(chosen.rerun), regrade=len(chosen.regrade), retried=chosen.text, queued=queued
    )


@router.post("/experiments/{ref}/regrade", status_code=202, summary="Grade again from stored executions")
def regrade(
    request: Request,
    caller: Runner,
    ref: str,
    failed: bool = False,
    graders: Annotated[list[str] | None, Query()] = None,
) -> JSONResponse:
    """Queue a re-grade (the agent never runs again; grades are appended to the batch)."""
    store = store_of(request)
    exp = _owned.experiment(store, ref, caller.owner)
    queued = _start(request, caller, exp, regrade=True, graders=tuple(graders or ()), failed=failed)
    return _control_answer(request, exp, queued=queued)


@router.post(
    "/experiments/{ref}/runs",
    status_code=201,
    summary="Record outcomes of runs executed elsewhere, then grade",
)
async def record(request: Request, caller: Runner, ref: str) -> JSONResponse:
    """An external runner's outcomes (``{"outcomes": [...]}`` or the list itself), as `abbench.record_runs`.

    Validated like agent answers (422 with every problem, naming case, arm, round and field; nothing is
    stored then), idempotent per (arm, case, round, attempt), graded by the experiment's graders.
    """
    exp = await _lookup(request, caller, ref)
    if pool_of(request).busy(exp.id):
        raise Problem(409, "busy", f"experiment {exp.name!r} is running on this server; record when it stops")
    _allowed(request, exp, arms=False)  # the outcomes are graded here
    folder = temp_folder(settings_of(request).spool)
    try:
        body = folder / "outcomes.json"
        with open(body, "wb") as out:  # the body as it arrives (counted by BodyLimit), then read apart
            async for chunk in request.stream():
                out.write(chunk)
        summary = await work_of(request).run(
            caller.key.key_id,
            "record",
            owner=caller.owner,
            actor=caller.actor,
            exp_id=exp.id,
            body_path=str(body),
        )
    finally:
        await run_in_threadpool(remove, folder)
    return answer(summary, 201)


def _run_view(r: RunRecord) -> dict[str, Any]:
    out = r.output
    usage = getattr(out, "usage", None) if out else None
    return {
        "run_id": r.id,
        "arm": r.arm,
        "case_id": r.case_id,
        "round": r.round + 1,  # from 1, as every view shows rounds (the store counts from 0)
        "state": r.state,
        "failure_type": r.failure_type,
        "error": r.error,
        "attempts": r.attempts,
        "passed": r.passed,
        "score": r.score,
        "prediction": out.prediction if out else None,
        "reason": out.reason if out else None,
        "confidence": out.confidence if out else None,
        "evidence_refs": list(out.evidence_refs) if out else [],
        "cost": out.cost if out else None,
        "latency_ms": out.latency_ms if out else None,
        "tokens": getattr(usage, "total_tokens", None),
        "started_by": r.started_by,
        "finished_at": r.finished_at,
    }


def _case_filter(store: Any, exp: Experiment, moved: str | None, disagreement: bool) -> set[str] | None:
    keep: set[str] | None = None
    if moved:
        if moved not in ("fixed", "regressed", "moved"):
            raise Problem(422, "invalid filter", f"moved={moved!r}: choose fixed, regressed or moved")
        c = compare_arms(exp.id, store=store)
        changes = {"fixed": c.fixed, "regressed": c.regressed, "moved": (*c.fixed, *c.regressed)}[moved]
        keep = {ch.case_id for ch in changes}
    if disagreement:
        found = {d.case_id for d in disagreements(exp.id, store=store)}
        keep = found if keep is None else keep & found
    return keep


@router.get(
    "/experiments/{ref}/results", summary="Runs, paged, filtered by arm, state, round, moved, disagreement"
)
async def results(
    request: Request,
    caller: Reader,
    ref: str,
    arm: str | None = None,
    state: Annotated[list[str] | None, Query()] = None,
    round: int | None = Query(None, description="One round, numbered from 1 as every view shows them"),
    moved: str | None = Query(
        None, description="fixed, regressed or moved (either), between the decision pair"
    ),
    disagreement: bool = False,
    offset: int = Query(0, ge=0, le=INT_MAX),
    limit: int = Query(100, ge=1, le=1000),
) -> Response:
    """A page of runs with the total that match (unfiltered: in arm, round, case order; filtered: in id order).
    Rounds are numbered from 1, in the runs and in the filter.

    The unfiltered page, what pollers ask for, is read and rendered once per fifth of a second for
    every caller (its total is the progress's, as old).
    """
    if arm or state or round is not None or moved or disagreement:
        return await run_in_threadpool(
            _filtered, request, caller, ref, _Filters(arm, state, round, moved, disagreement), offset, limit
        )
    exp = await _lookup(request, caller, ref)
    store = store_of(request)

    def render() -> bytes:
        total = _progress(request, exp.id).total
        return rendered(_results_view(total, offset, limit, store.runs.slice(exp.id, offset, limit)))

    return json_answer(await shared(request, ("page", exp.id, offset, limit), render))


@dataclass(frozen=True)
class _Filters:
    """What a results page is filtered by (`round` numbered from 1, as the caller sent it)."""

    arm: str | None
    state: list[str] | None
    round: int | None
    moved: str | None
    disagreement: bool


def _store_round(exp: Experiment, asked: int) -> int:
    """The store's 0-based round for the 1-based round a caller asked for; 422 outside the experiment's."""
    if not 1 <= asked <= exp.rounds:
        raise Problem(
            422,
            "invalid filter",
            f"round={asked}: rounds are numbered from 1; experiment {exp.name!r} has "
            + (f"rounds 1 to {exp.rounds}" if exp.rounds > 1 else "one round (round=1)"),
        )
    return asked - 1


def _filtered(
    request: Request, caller: Caller, ref: str, filters: _Filters, offset: int, limit: int
) -> JSONResponse:
    """A page of the runs that pass the filters, read whole (on a worker thread)."""
    store = store_of(request)
    exp = _owned.experiment(store, ref, caller.owner)
    arm = filters.arm
    if arm is not None:
        exp.arm(arm)  # an unknown arm: the message lists the arms
    rnd = None if filters.round is None else _store_round(exp, filters.round)
    runs = store.runs.records(exp.id, states=filters.state)
    keep = _case_filter(store, exp, filters.moved, filters.disagreement)
    chosen = [
        r
        for r in runs
        if (arm is None or r.arm == arm)
        and (rnd is None or r.round == rnd)
        and (keep is None or r.case_id in keep)
    ]
    return answer(_results_view(len(chosen), offset, limit, chosen[offset : offset + limit]))


def _results_view(total: int, offset: int, limit: int, page: list[RunRecord]) -> dict[str, Any]:
    return {"total": total, "offset": offset, "limit": limit, "runs": [_run_view(r) for r in page]}


def _progress(request: Request, exp_id: int) -> Any:
    """The experiment's progress, shared by every caller within `Recent.ttl`."""
    store = store_of(request)
    return recent(request, ("status", exp_id), lambda: experiment_status(exp_id, store=store))


async def _events(request: Request, exp_id: int, every: float) -> AsyncIterator[str]:
    """The event stream: it waits on the event loop, and reads the store only for a stale progress."""
    store = store_of(request)
    last: tuple[Any, ...] | None = None
    status = None
    while True:
        progress = await shared(request, ("status", exp_id), lambda: experiment_status(exp_id, store=store))
        key = (progress.status, progress.done, progress.total)
        if progress.status != status:
            status = progress.status
            yield f"event: state\ndata: {json.dumps({'status': status})}\n\n"
        if key != last:
            last = key
            yield f"event: progress\ndata: {json.dumps(progress.as_dict(), default=str)}\n\n"
        left = progress.queued is not None and progress.queued.not_started  # a server did not start it
        # paused with no process of the pool left: its budget stopped it, and nothing moves until a resume
        over = progress.status in _FINAL or progress.status == ExperimentStatus.PAUSED or left
        if over and not pool_of(request).busy(exp_id):
            yield f"event: end\ndata: {json.dumps({'status': progress.status})}\n\n"
            return
        await asyncio.sleep(every)


@router.get("/experiments/{ref}/events", summary="Server-sent events: progress and state changes")
def events(
    request: Request, caller: Reader, ref: str, every: float = Query(0.5, ge=0.1, le=10)
) -> StreamingResponse:
    """`state` when the status changes, `progress` when runs finish, `end` when it is over (finished,
    cancelled, interrupted, or paused with no process of the pool running it)."""
    exp = _owned.experiment(store_of(request), ref, caller.owner)
    return StreamingResponse(
        _events(request, exp.id, every), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )
