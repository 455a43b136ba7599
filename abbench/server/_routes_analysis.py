"""Routes over the analysis API: reviews, exports (streamed), comparisons (409 across datasets), the gate,
reports (render, then download) and tries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, Field, field_validator
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from abbench import _actions as do
from abbench._text import control_character
from abbench.compare import BOOTSTRAP_MAX_CASES, compare_all, compare_arms, compare_experiments
from abbench.errors import ComparisonRefused, NotFoundError
from abbench.export import EXPORT_FORMATS, EXPORT_KINDS, export
from abbench.gate import evaluate_gate, load_gate
from abbench.metrics import MAX_GRADER_NAME, check_grader
from abbench.review import add_review
from abbench.runner import try_input
from abbench.server import _owned, _policy
from abbench.server._auth import Caller, require
from abbench.server._common import answer, experiment_view, settings_of, store_of, work_of
from abbench.server._problems import Problem, refusal
from abbench.server._uploads import remove, temp_folder
from abbench.store import acting_as

router = APIRouter(prefix="/api", tags=["analysis"])
Reader = Annotated[Caller, Depends(require("read"))]
Runner = Annotated[Caller, Depends(require("run"))]
Reviewer = Annotated[Caller, Depends(require("review"))]


class ReviewIn(BaseModel):
    """A person's verdict on a case."""

    case_id: str
    verdict: str = Field(
        description="gold_correct, model_correct, ambiguous_standard, missing_capability_info, unsure"
    )
    note: str | None = None
    arm: str | None = None
    run_id: int | None = None


@router.post(
    "/experiments/{ref}/reviews", status_code=201, summary="Add a review (appended, never overwriting)"
)
def review(request: Request, caller: Reviewer, ref: str, body: ReviewIn) -> JSONResponse:
    """Record the verdict as the actor named in X-Abbench-Actor (else the key's owner)."""
    store = store_of(request)
    exp = _owned.experiment(store, ref, caller.owner)
    with acting_as(caller.owner):
        r = add_review(
            exp.id, body.case_id, body.verdict, body.note, body.arm, body.run_id, caller.actor, store=store
        )
    return answer(r.as_dict() if hasattr(r, "as_dict") else r.__dict__, 201)


@router.get("/experiments/{ref}/export", summary="Download runs, grades, reviews or comparison lists")
def download_export(
    request: Request,
    caller: Reader,
    ref: str,
    what: str = "runs",
    format: str = "csv",
    arms: Annotated[
        list[str] | None, Query(description="For comparison: the two arms, control first")
    ] = None,
    vs: Annotated[str | None, Query(description="For comparison: another experiment of yours")] = None,
) -> FileResponse:
    """The file `abbench export` writes, streamed from disk and removed once sent; the header
    ``X-Abbench-Export`` holds what was written (`abbench.export.ExportResult` as JSON: rows, columns,
    notes; ``path`` the file's name)."""
    if what not in EXPORT_KINDS or format not in EXPORT_FORMATS:
        raise Problem(
            422,
            "invalid export",
            f"what={what!r}, format={format!r}: what is one of {', '.join(EXPORT_KINDS)}, "
            f"format one of {', '.join(EXPORT_FORMATS)}",
        )
    if arms is not None and len(arms) != 2:
        raise Problem(422, "invalid export", f"arms: give two (control first), not {len(arms)}")
    store = store_of(request)
    exp = _owned.experiment(store, ref, caller.owner)
    options: dict[str, Any] = {}
    if arms:
        options["arms"] = tuple(arms)
    if vs:
        options["vs"] = _owned.experiment(store, vs, caller.owner).id
    folder = temp_folder(settings_of(request).spool)
    try:
        result = export(exp.id, what, format, folder / f"{exp.name}-{what}.{format}", store=store, **options)
    except BaseException:
        remove(folder)
        raise
    name = Path(result.path).name
    written = json.dumps({**result.as_dict(), "path": name})  # ASCII: a header's value
    return FileResponse(
        result.path,
        filename=name,
        headers={"X-Abbench-Export": written},
        background=BackgroundTask(remove, folder),
    )


MAX_ITERATIONS = 100_000
"""The most bootstrap replicates a request may ask for (ten times the default): each costs the server."""
MAX_BOOTSTRAP_DRAWS = BOOTSTRAP_MAX_CASES * 10_000
"""The most cases × replicates one comparison may draw per metric: what the defaults draw at most (the
bootstrap runs up to `BOOTSTRAP_MAX_CASES` cases, 10,000 replicates), a second or two of the server's."""
_ALL_SETTINGS = ("outcome", "confidence", "alpha", "grader")
"""What `abbench compare` passes `compare_all` (every arm): the rest are a pair's."""


class CompareIn(BaseModel):
    """Two arms of one experiment, or an arm of each of two experiments (b − a), or every arm (``all``);
    how to compare them: `abbench.compare.CompareOptions`' fields."""

    experiment: str
    vs: str | None = Field(None, description="A second experiment: compare its arm with the first's")
    a: str | None = None
    b: str | None = None
    all: bool = Field(False, description="Every arm: Cochran's Q and each arm against the first")
    grader: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_GRADER_NAME,
        description="Compare as this grader alone graded the runs (a grader of the experiment; 422 lists them)",
    )
    outcome: Literal["auto", "passed", "score"] = "auto"
    cluster: Literal["domain"] | None = None
    confidence: float = Field(0.95, gt=0, lt=1)
    alpha: float = Field(0.05, gt=0, lt=1)
    power: float = Field(0.8, gt=0, lt=1)
    margin: float = Field(0.02, ge=0, allow_inf_nan=False)
    iterations: int = Field(10_000, ge=1, le=MAX_ITERATIONS, description="Bootstrap replicates")
    seed: int = Field(0, ge=0, lt=2**32)
    bootstrap: bool | None = None
    details: bool | None = None

    def settings(self) -> dict[str, Any]:
        """The options as `compare_arms` takes them by name."""
        return self.model_dump(exclude={"experiment", "vs", "a", "b", "all"})


@contextmanager
def _in_own_words() -> Iterator[None]:
    """Within the caller's own experiments (looked up already), an arm, grader or class that is missing
    is told in the library's words, as a local store tells it: its names are the caller's."""
    try:
        yield
    except NotFoundError as exc:
        raise refusal(404, "not found", exc) from None


def _check_draws(store: Any, exp: Any, body: CompareIn) -> None:
    """Refuse a pair's comparison whose bootstrap would draw more than `MAX_BOOTSTRAP_DRAWS` (its cases
    counted as the dataset's: a pair holds no more), saying how many replicates its cases allow."""
    n = store.datasets.get(exp.dataset_id).n_cases
    drawn = n if body.bootstrap or (body.bootstrap is None and n <= BOOTSTRAP_MAX_CASES) else 0
    if drawn * body.iterations > MAX_BOOTSTRAP_DRAWS:
        most = max(1, MAX_BOOTSTRAP_DRAWS // drawn)
        raise Problem(
            422,
            "too much work",
            f"iterations: {body.iterations:,} bootstrap replicates of {n:,} cases draw more than this server "
            f"draws for one comparison ({MAX_BOOTSTRAP_DRAWS:,} cases × replicates); give iterations ≤ {most:,}, "
            "or bootstrap: false (central-limit intervals for cost, latency and tokens)",
        )


@router.post("/compare", summary="Compare two arms or two experiments (409 when the datasets differ)")
def compare(request: Request, caller: Reader, body: CompareIn) -> JSONResponse:
    """The paired comparison; a comparison across dataset fingerprints is refused with both of them."""
    store = store_of(request)
    first = _owned.experiment(store, body.experiment, caller.owner)
    with _in_own_words():
        return _compare(store, caller, first, body)


def _compare(store: Any, caller: Caller, first: Any, body: CompareIn) -> JSONResponse:
    if body.all:
        settings = {k: v for k, v in body.settings().items() if k in _ALL_SETTINGS}
        return answer(compare_all(first.id, store=store, **settings))
    if body.vs is None:
        _check_draws(store, first, body)
        return answer(compare_arms(first.id, body.a, body.b, store=store, **body.settings()))
    other = _owned.experiment(store, body.vs, caller.owner)
    if first.dataset != other.dataset:
        refused = ComparisonRefused(
            f"experiment {first.name!r} ran on dataset {first.dataset} and {other.name!r} on {other.dataset}: a "
            "paired comparison needs both on the same cases; run one again on the other's dataset: ",
            do.clone_on_dataset(other.name, first.dataset),
            kind="dataset",
            name=other.dataset,
        )
        raise refusal(409, "comparison refused", refused, fingerprints=[first.dataset, other.dataset])
    _check_draws(store, first, body)
    return answer(
        compare_experiments(first.id, other.id, arm_a=body.a, arm_b=body.b, store=store, **body.settings())
    )


class GateIn(BaseModel):
    """A gate: rules (default the experiment's own) and the pair (default its decision)."""

    rules: list[dict[str, Any]] | dict[str, Any] | None = None
    arms: list[str] | None = None
    vs: str | None = None
    source: str | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="Where the rules were written (a file's name), for the messages",
    )
    cluster: Literal["domain"] | None = None

    @field_validator("source")
    @classmethod
    def _printable(cls, source: str | None) -> str | None:
        """A source is said in every message of the gate and in its result: a line break or an escape
        in it would forge a line, or move the cursor, wherever they are shown."""
        where = control_character(source) if source is not None else None
        if where is not None:
            raise ValueError(f"a source is a file's name, printed as it is; this one holds {where}")
        return source


@router.post(
    "/experiments/{ref}/gate", summary="Evaluate a gate: pass, warnings, block, incomplete, inconclusive"
)
def gate(request: Request, caller: Reader, ref: str, body: GateIn) -> JSONResponse:
    """The gate's outcome with its pair, rules and coverage."""
    store = store_of(request)
    exp = _owned.experiment(store, ref, caller.owner)
    vs = _owned.experiment(store, body.vs, caller.owner).id if body.vs else None
    _own_gate_inline(exp, body.rules)
    names = tuple(a.name for a in exp.arms)
    with _in_own_words():
        rules = load_gate(body.rules, arms=names, origin=body.source) if body.rules is not None else None
        result = evaluate_gate(exp.id, rules, store=store, arms=body.arms, vs=vs, cluster=body.cluster)
    return answer(result.as_dict("http"))


def _own_gate_inline(exp: Any, rules: Any) -> None:
    """Without rules, the experiment's own gate is used: refused when it is a file's name (an experiment
    created from the command line may name one), which the server would read."""
    if rules is None and isinstance(exp.gate, str):
        raise _policy.refused_path(f"experiment {exp.name!r}: gate", "gate")


class ReportIn(GateIn):
    """A report: the gate's rules and pair, and the grader whose grades alone the page's figures are."""

    grader: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_GRADER_NAME,
        description="The page's figures as this grader alone graded the runs (the decision stays the gate's)",
    )


def _report_path(request: Request, exp_id: int) -> Path:
    return store_of(request).path / "reports" / "served" / f"{exp_id}.html"


@router.post("/experiments/{ref}/report", status_code=201, summary="Render the report (download it with GET)")
async def report(request: Request, caller: Reader, ref: str, body: ReportIn | None = None) -> JSONResponse:
    """Render the self-contained HTML report now (a papermill kernel: seconds, not milliseconds), in a
    work process within this server's limits, one at a time per key."""
    store = store_of(request)
    exp = await run_in_threadpool(_owned.experiment, store, ref, caller.owner)
    body = body or ReportIn()
    vs = (await run_in_threadpool(_owned.experiment, store, body.vs, caller.owner)).id if body.vs else None
    rules, arms = body.rules, body.arms
    _own_gate_inline(exp, rules)
    if isinstance(rules, dict):  # a gate file's content: its pair, then its rules
        pair = [rules.get("baseline"), rules.get("candidate")]
        arms = arms or ([str(a) for a in pair] if all(pair) else None)
        rules = list(rules.get("rules") or [])
    out = _report_path(request, exp.id)
    if body.grader is not None:  # refused before a work process starts, listing the graders
        await run_in_threadpool(check_grader, exp, body.grader, store)
    data = await work_of(request).run(
        caller.key.key_id, "report", exp_id=exp.id, vs=vs, arms=arms, rules=rules, out=str(out),
        grader=body.grader,
    )  # fmt: skip
    return answer({**data, "download": f"/api/experiments/{exp.id}/report"}, 201)


@router.get("/experiments/{ref}/report", summary="Download the rendered report (HTML)")
def report_file(request: Request, caller: Reader, ref: str) -> FileResponse:
    """The page rendered last by POST; 404 until one was."""
    exp = _owned.experiment(store_of(request), ref, caller.owner)
    path = _report_path(request, exp.id)
    if not path.is_file():
        raise Problem(404, "not found", f"no report of experiment {exp.id} yet; render one: POST this route")
    return FileResponse(path, media_type="text/html", filename=f"{exp.name}.html")


class TryIn(BaseModel):
    """One input for one arm: a one-case experiment, kept with the same records."""

    input: str
    skill: str | None = Field(None, description="A snapshot of yours (hash, label or skill name)")
    agent: str = "builtin"
    model: str | None = None
    expected: str | None = None
    labels: list[str] | None = None


@router.post("/try", status_code=201, summary="Try one input now (a one-case experiment)")
def try_one(request: Request, caller: Runner, body: TryIn) -> JSONResponse:
    """Run one input through an agent now and answer with its result."""
    store, settings = store_of(request), settings_of(request)
    _policy.check_try(body.agent, settings)
    skill = _owned.snapshot(store, body.skill, caller.owner).hash if body.skill else None
    with acting_as(caller.owner):
        result = try_input(
            body.input,
            skill=skill,
            agent=body.agent,
            model=body.model,
            expected=body.expected,
            labels=body.labels,
            store=store,
            started_by=caller.actor,
        )
    exp = (
        _owned.experiment(store, result.experiment_id, caller.owner)
        if hasattr(result, "experiment_id")
        else None
    )
    data = result.as_dict()
    data.pop("transcript_path", None)
    if exp is not None:
        data["experiment"] = experiment_view(exp)
    return answer(data, 201)
