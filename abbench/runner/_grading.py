"""Grading inside a runner: which runs and pairs need a grader, grading with bounded retries, the run's verdict.

The rules (docs/ARCHITECTURE.md, "Run states", "grade", "batch"), each guarding against a bug users hit:

- Grades are appended, never overwritten, and each records the execution it judged (the run's
  ``attempts`` when graded); a grade of an earlier execution is stale and never reused.
- Ordinary grading skips a (run, grader) that already has a grade of the current execution; an
  explicit re-grade grades again. "Nothing new to grade" is not a failure: the run keeps its state
  and its latest grades, and does not move at all.
- A grading failure is retried while the run stays ``evaluating`` (no flicker) only when it is
  retryable and retries remain; later ordinary passes retry it while the run's grade attempts stay
  within the experiment's ``retries``; otherwise it stays failed until someone re-grades.
- A run's verdict combines the latest grade of *every* grader of the experiment, also when only
  some of them graded in this pass.
- Pairwise graders judge two arms' runs on the same case and round after execution; their slot
  order comes from a seed derived from the experiment's seed, the case and the round.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from abbench.errors import ExperimentError, GradingError
from abbench.graders import GradeContext, Grader, GradeResult, PairContext, make_grader
from abbench.runner import _outcomes  # noqa: F401  (registers the `recorded` grader any pass may need)
from abbench.runner._control import PassParts, Tally
from abbench.runner._execution import without_nulls
from abbench.runner._flight import FlightEnd
from abbench.runner._frozen import make_frozen
from abbench.runner._limiter import loop_limiter
from abbench.runner._states import EVALUATING, FAIL, PASS, PENDING
from abbench.snapshot import Snapshot
from abbench.store import Experiment, Grade, GradeWrite, RunChange, RunRecord, Store, WorkItem, now_iso
from abbench.transcript import requested_calls
from abbench.types import AgentOutput, GradeStatus, RunState

log = logging.getLogger(__name__)


def combine_verdicts(
    results: list[tuple[str, GradeResult | None, str | None]],
    advisory: frozenset[str] | set[str] = frozenset(),
) -> tuple[bool | None, float | None, str | None]:
    """The run's verdict from its graders' latest grades: (passed, score, grading error).

    The run is decided by the graders that reached a verdict: it passes when every one of them says it
    passed, and fails when one says it failed. A grader that failed (no verdict: a judge whose reply did
    not parse) does not erase the others' verdicts; the run is a grading failure only when no grader
    reached one and some failed — as the docs define it. When none failed and none reached a verdict the
    run has none (passed None, never a pass): with a score it is *scored* (a judge without a threshold, a
    recorded score alone; so is a run with no grader of its own, judged only in pairs), without one
    grading failed. `advisory` graders are graded and shown but never decide the run, and their failures
    never fail it. The score is the first deciding grader's.
    """
    if len(results) == 1 and not advisory:  # one grader, the common case: the same verdict without the lists
        name, res, err = results[0]
        if err is not None:
            return None, None, f"grading failed — {name}: {err}"
        if res is None or res.passed is None:
            return _no_verdict(None if res is None else res.score, [name])
        return bool(res.passed), res.score, None
    deciding = [(name, res, err) for name, res, err in results if name not in advisory]
    errors = [f"{name}: {err}" for name, res, err in deciding if err is not None]
    reached = [(name, res) for name, res, err in deciding if err is None and res is not None]
    verdicts = [res.passed for _, res in reached if res.passed is not None]
    if errors and not verdicts:
        return None, None, "grading failed — " + "; ".join(errors)
    score = next((res.score for _, res in reached if res.score is not None), None)
    if not verdicts:
        return _no_verdict(score, [name for name, _, _ in deciding])
    return all(verdicts), score, None


def failed_by(
    results: list[tuple[str, GradeResult | None, str | None]],
    advisory: frozenset[str] | set[str] = frozenset(),
) -> tuple[str, ...]:
    """The deciding graders whose grade says the run failed: those that made a wrong run wrong."""
    return tuple(
        name
        for name, res, err in results
        if err is None
        and res is not None
        and res.passed is not None
        and not res.passed
        and name not in advisory
    )


def advisory_names(specs: Iterable[Any]) -> frozenset[str]:
    """The names of the advisory graders among an experiment's grader definitions (``advisory: true``),
    read from the definitions alone (a grader is named by its ``name:``, else its type), so a view asks
    without building a grader."""
    return frozenset(
        str(s.get("name") or s.get("type") or s.get("grader"))
        for s in specs
        if isinstance(s, Mapping) and s.get("advisory") is True
    )


def _no_verdict(score: float | None, names: list[str]) -> tuple[None, float | None, str | None]:
    """No grader reached a verdict: the run is scored when one gave a score (or when it has no grader
    of its own: pairwise judges only), else its grading failed."""
    if score is not None or not names:
        return None, score, None
    return None, None, "grading failed — no grader reached a verdict or gave a score"


def repeated(names: Iterable[str]) -> list[str]:
    """The names that stand more than once in `names`, sorted."""
    return sorted(name for name, n in Counter(names).items() if n > 1)


def build_graders(specs: list[Any], experiment: str, arms: list[str] | None = None) -> list[Grader]:
    """The experiment's graders from their definitions, checked against each other and its arms.

    Raises:
        UsageError: a definition is invalid (unknown grader or option).
        ExperimentError: two graders share a name (their grades would overwrite each other's
            "latest"), or a pairwise grader names arms the experiment lacks.
    """
    graders = [make_grader(g) for g in specs]
    dupes = repeated(g.name for g in graders)
    if dupes:
        raise ExperimentError(
            f"experiment {experiment!r} has several graders named {', '.join(dupes)}; "
            "give each a distinct `name:` (e.g. {type: regex, pattern: ..., name: no_apology})"
        )
    for g in graders:
        if g.kind != "pairwise" or arms is None:
            continue
        pair = tuple(getattr(g, "arms", None) or arms[:2])
        if len(pair) != 2 or not set(pair) <= set(arms):
            raise ExperimentError(
                f"pairwise grader {g.name} needs two arms of experiment {experiment!r} "
                f"({', '.join(arms)}); it names {', '.join(pair) or 'none'}"
            )
    return graders


def _current(grade: Grade | None, attempt: int) -> Grade | None:
    """`grade` when it judged the run's current execution (`attempt`), else None (stale or absent)."""
    if grade is None:
        return None
    made_on = grade.run_attempt
    return grade if made_on is None or made_on == attempt else None


@dataclass(frozen=True)
class GradingOptions:
    """How one pass grades: what the runner was asked, and the experiment's settings that apply.

    Attributes:
        retries: Extra tries of a retryable grading failure (the experiment's ``retries``).
        regrade: Grade again even what already has a grade of the current execution.
        run_ids: Only these runs (pairs: when either run is one of them); None: every run.
        priority: The experiment's priority on the shared limiter.
        concurrency: Pairs judged at once.
        seed: The experiment's seed (pairwise slot order).
        backoff: The wait before retry number n of a failed grading.
        regrade_ids: Runs graded again in a pass that otherwise grades as usual (a retry of grading
            failures), as `regrade` grades every run.
    """

    retries: int
    regrade: bool
    run_ids: list[int] | None
    priority: int
    concurrency: int
    seed: int
    backoff: Callable[[int], float]
    regrade_ids: frozenset[int] = frozenset()


class GradingPlan:
    """Which graders grade in this pass and what they must still grade, read before the work starts.

    Args:
        store: The open store.
        experiment: The experiment (its graders come from its definition).
        only: Only these grader names grade (every pointwise grader still counts for the verdict).
        retries: Ordinary passes retry a retryable grading failure while a run's grade attempts stay
            within this.

    Raises:
        ExperimentError: `only` names a grader the experiment lacks, or the graders are invalid.
    """

    def __init__(self, store: Store, experiment: Experiment, *, only: set[str] | None, retries: int) -> None:
        self.store = store
        self.exp = experiment
        self.retries = retries
        arm_names = [a.name for a in experiment.arms]
        graders = build_graders(list(experiment.settings.graders), experiment.name, arm_names)
        selected = graders
        if only:
            unknown = only - {g.name for g in graders}
            if unknown:
                raise ExperimentError(
                    f"experiment {experiment.name!r} has no grader {', '.join(sorted(unknown))}; "
                    f"its graders: {', '.join(g.name for g in graders) or '(none)'}"
                )
            selected = [g for g in graders if g.name in only]
        # every pointwise grader counts for the verdict (but the advisory ones); only the selected grade now
        self.all_pointwise = [g for g in graders if g.kind != "pairwise"]
        self.advisory = frozenset(g.name for g in graders if getattr(g, "advisory", False))
        self.pointwise = [g for g in selected if g.kind != "pairwise"]
        self.pairwise = [g for g in selected if g.kind == "pairwise"]
        self.pair_arms: dict[str, tuple[str, ...]] = {
            g.name: tuple(getattr(g, "arms", None) or arm_names[:2]) for g in self.pairwise
        }
        self.latest: dict[int, dict[str, Grade]] | None = None
        self.attempts: dict[int, int] = {}  # run id -> the execution of this pass its grades judge

    @property
    def grades_anything(self) -> bool:
        """Whether the experiment has graders at all (without, its runs stay executed)."""
        return bool(self.all_pointwise or self.pairwise)

    def needs(self, grader: Grader, prior: Grade | None, grade_attempts: int) -> bool:
        """Whether ordinary grading must call `grader` on a run whose current grade is `prior`."""
        if prior is None:
            return True
        if prior.status == GradeStatus.OK:
            return False  # nothing new to grade
        return bool(prior.retryable) and grade_attempts <= self.retries

    def preload_latest(self) -> dict[int, dict[str, Grade]]:
        """The latest pointwise grade of every (run, grader) of the experiment, in one query."""
        latest: dict[int, dict[str, Grade]] = {}
        for row in self.store.grades.records(self.exp.id):
            if row.other_run_id is None:
                latest.setdefault(row.run_id, {})[row.grader] = row
        self.latest = latest
        return latest

    def select(self, items: list[WorkItem], records: dict[int, RunRecord], tally: Tally) -> list[WorkItem]:
        """Of stored executions, those some grader must still grade (plus every run left ``executed``).

        Loads the latest grades of the experiment once; runs with nothing new to grade are counted as
        up to date in `tally` and left exactly as they are.
        """
        latest = self.preload_latest()
        attempts = {r.id: r.attempts for r in records.values()}
        chosen = []
        for item in items:
            graded = latest.get(item.run_id, {})
            attempt = attempts.get(item.run_id, item.attempts)
            if item.state == RunState.EXECUTED or any(
                self.needs(g, _current(graded.get(g.name), attempt), item.grade_attempts)
                for g in self.pointwise
            ):
                chosen.append(item)
            else:
                tally.up_to_date += 1
        return chosen

    def load_outputs(self, items: list[WorkItem]) -> dict[int, RunRecord]:
        """The stored runs of `items` (their outputs, transcripts, attempts), by run id."""
        if not items:
            return {}
        records = {}
        ids = [i.run_id for i in items]
        for start in range(0, len(ids), 900):
            for rec in self.store.runs.records(run_ids=ids[start : start + 900]):
                records[rec.id] = rec
        return records


@dataclass(eq=False)
class Grading:
    """The grading half of a runner pass: grade a run (pointwise) and judge pairs, with bounded retries.

    Attributes:
        plan: The graders of this pass and what they must still grade.
        parts: What the pass's two halves share (inputs, writer, moves, control, tally, caches).
        store: The open store (pairs are read from it).
        exp: The experiment.
        options: How this pass grades.
    """

    plan: GradingPlan
    parts: PassParts
    _: KW_ONLY
    store: Store
    exp: Experiment
    options: GradingOptions
    _shared: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict, init=False)
    """(arm id, round) -> `_shared_context`."""

    # -- pointwise grading -----------------------------------------------------------------------------

    def _graded_skill(self, item: WorkItem, output: AgentOutput) -> Snapshot | None:
        """The skill the run's answer is judged against: the injected one, or the first offered skill
        the agent loaded (None when it loaded none)."""
        offered = self.parts.inputs.offered.get(item.arm_id, ())
        if not offered:
            return self.parts.inputs.skills[item.arm_id]
        by_name = {s.skill_name: s for s in offered}
        return next((by_name[n] for n in output.skills_loaded or () if n in by_name), None)

    def _context(self, item: WorkItem, output: AgentOutput, record: RunRecord | None) -> GradeContext:
        if record is not None:
            tool_calls = int(record.transcript_summary.get("tool_calls", 0))
        elif output.transcript:
            tool_calls = requested_calls(output.transcript)
        else:
            tool_calls = 0
        shared = self._shared.get((item.arm_id, item.round))
        if shared is None:
            shared = self._shared[item.arm_id, item.round] = self._shared_context(item)
        values = shared.copy()
        values["case"] = self.parts.inputs.cases[item.case_idx]
        values["output"] = output
        if item.arm_id in self.parts.inputs.offered:  # the skill it loaded, if any: this run's own
            values["skill"] = self._graded_skill(item, output)
        values["run_id"] = item.run_id
        values["transcript_path"] = record.transcript_path if record is not None else None
        values["tool_calls"] = tool_calls
        return make_frozen(GradeContext, values)

    def _shared_context(self, item: WorkItem) -> dict[str, Any]:
        """The fields of a `GradeContext` that every run of the item's arm and round has alike, in the
        order of its fields (made once for each: a context per run is on the hot path)."""
        arm = self.parts.inputs.arms[item.arm_id]
        return {
            "case": None,
            "output": None,
            "skill": self.parts.inputs.skills[item.arm_id],
            "label_map": self.parts.inputs.label_map,
            "label_set": self.parts.inputs.label_set,
            "arm": arm.name,
            "round": item.round,
            "run_id": None,
            "transcript_path": None,
            "tool_calls": 0,
            "agent": arm.agent,
            "model": arm.model,
            "cache": self.parts.caches.for_judge(item.round, arm.name),
        }

    def _attempt(self, item: WorkItem, record: RunRecord | None) -> int:
        if item.run_id in self.plan.attempts:
            return self.plan.attempts[item.run_id]
        return record.attempts if record is not None else item.attempts

    def _existing(self, item: WorkItem, record: RunRecord | None, attempt: int) -> dict[str, Grade]:
        """The run's latest grades of its current execution, by grader."""
        if record is None:
            return {}  # an execution of this pass has no grades yet
        if self.plan.latest is not None:
            existing = self.plan.latest.get(item.run_id, {})
        else:
            existing = self.store.grades.latest(item.run_id)
        return {k: v for k, v in existing.items() if _current(v, attempt) is not None}

    async def grade(
        self,
        item: WorkItem,
        output: AgentOutput,
        record: RunRecord | None,
        worker: asyncio.Task[Any] | None = None,
    ) -> None:
        """Grade one executed run with the graders that must, and move it to its verdict.

        `worker` is the task this is awaited in (default: the current one), which a cancel cancels.
        """
        attempt = self._attempt(item, record)
        existing = self._existing(item, record, attempt)
        if not existing:  # no grade yet: every grader grades (`GradingPlan.needs` of no prior grade)
            todo = self.plan.pointwise
        else:
            again = self.options.regrade or item.run_id in self.options.regrade_ids
            todo = [
                g
                for g in self.plan.pointwise
                if again or self.plan.needs(g, existing.get(g.name), item.grade_attempts)
            ]
        from_state = self.parts.moves.states.get(item.run_id, item.state)
        if not todo and from_state in (PASS, FAIL):
            self.parts.tally.up_to_date += 1  # nothing new to grade: no transition, no flicker
            return
        ctx = self._context(item, output, record)
        self.parts.moves.move(item, EVALUATING)
        fresh = await self._grade_todo(item, ctx, todo, attempt, worker)
        if fresh is None:
            return
        self._verdict(item, from_state, fresh, existing, graded=bool(todo))

    async def _grade_todo(
        self,
        item: WorkItem,
        ctx: GradeContext,
        todo: list[Grader],
        attempt: int,
        worker: asyncio.Task[Any] | None,
    ) -> dict[str, tuple[GradeResult | None, str | None]] | None:
        """Each grader of `todo` on the run; None when a person cancelled it meanwhile."""
        fresh: dict[str, tuple[GradeResult | None, str | None]] = {}
        if worker is None:
            worker = asyncio.current_task()
            assert worker is not None  # graded inside a worker task
        with self.parts.control.flight(item.run_id, worker) as flight:
            for grader in todo:
                fresh[grader.name] = await self._grade_one(grader, ctx, item, attempt)
        # the runner itself stopping goes on out of the block: the scheduler records the run as interrupted
        if flight.ended is FlightEnd.CANCEL:
            # Cancelled by a person while its graders worked: the execution stays, grading waits
            # (grades already written in this pass are kept and not asked for again).
            self.parts.moves.move(item, RunState.EXECUTED, None, "cancelled while grading: waits for grading")
            return None
        return fresh

    def _verdict(
        self,
        item: WorkItem,
        from_state: str,
        fresh: dict[str, tuple[GradeResult | None, str | None]],
        existing: dict[str, Grade],
        *,
        graded: bool,
    ) -> None:
        """Combine every pointwise grader's latest grade into the run's verdict and move it there."""
        results: list[tuple[str, GradeResult | None, str | None]] = []
        for grader in self.plan.all_pointwise:
            if grader.name in fresh:
                results.append((grader.name, *fresh[grader.name]))
            elif grader.name in existing:
                prior = existing[grader.name]
                results.append((grader.name, _result_from_row(prior), prior.error))
        passed, score, error = combine_verdicts(results, self.plan.advisory)
        failed = [name for name, _, err in results if err is not None]
        if error is None and failed:
            # decided by the graders that reached a verdict; the ones that did not are kept as grades
            log.info("run %s decided without grader(s) %s (no verdict)", item.run_id, ", ".join(failed))
        fields: RunChange = {
            "passed": None if passed is None else int(passed),
            "score": score,
            "grade_attempts": item.grade_attempts + (1 if graded else 0),
            "finished_at": now_iso(),
            "error": error,
        }
        if from_state == FAIL or error:
            fields["failure_type"] = None
        if item.state == PENDING:  # executed in this pass: its verdict columns are NULL
            fields = without_nulls(fields)
        # A verdict of right, or a score without a verdict (outcome *scored*, passed NULL), ends in pass;
        # a wrong answer and a grading failure in fail.
        wrong_by = () if error or passed is not False else failed_by(results, self.plan.advisory)
        self.parts.moves.move(item, FAIL if error or passed is False else PASS, fields, None, wrong_by)
        if error is None:
            self.parts.tally.graded += 1
        else:
            self.parts.tally.failed += 1
            self.parts.tally.grading_failed += 1

    async def _grade_one(
        self,
        grader: Grader,
        ctx: GradeContext | PairContext,
        item: WorkItem,
        attempt: int,
        other_attempt: int | None = None,
    ) -> tuple[GradeResult | None, str | None]:
        """Grade with retries for retryable grading failures; the run stays `evaluating` meanwhile."""
        other_run_id = ctx.b.run_id if isinstance(ctx, PairContext) else None
        if other_run_id is None:
            other_attempt = None
        tries = 0
        while True:
            tries += 1
            try:
                result = _call_grader(grader, ctx)
                if type(result) is not GradeResult:  # a rule's answer is one already: nothing to await
                    result = await _grade_result(grader, result)
            except GradingError as exc:
                if exc.retryable and tries <= self.options.retries and not self.parts.control.cancelling:
                    log.info("grader %s on run %s: %s; trying again", grader.name, item.run_id, exc)
                    await asyncio.sleep(self.options.backoff(tries))
                    continue
                spent = {k: v for k, v in exc.spent.items() if k in _SPENT}
                failed = GradeWrite(self.exp.id, item.run_id, grader.name, grader.kind, "error", **spent)
                self.parts.writer.grade(
                    failed._replace(
                        other_run_id=other_run_id,
                        error=str(exc),
                        raw_output=exc.raw_output,
                        retryable=exc.retryable,
                        details={"tries": tries},
                        run_attempt=attempt,
                        other_run_attempt=other_attempt,
                    )
                )
                return None, str(exc)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                message = f"{type(exc).__name__}: {exc}"
                log.warning("grader %s raised on run %s: %s", grader.name, item.run_id, message)
                details = {"traceback": traceback.format_exc()}
                self.parts.writer.grade(
                    GradeWrite(
                        self.exp.id,
                        item.run_id,
                        grader.name,
                        grader.kind,
                        GradeStatus.ERROR,
                        other_run_id=other_run_id,
                        error=message,
                        retryable=False,
                        details=details,
                        run_attempt=attempt,
                        other_run_attempt=other_attempt,
                    )
                )
                return None, message
            self.parts.writer.grade(
                _ok_grade(self.exp.id, item, grader, result, other_run_id, attempt, other_attempt)
            )
            return result, None

    # -- pairwise grading ------------------------------------------------------------------------------

    def _pair_jobs(self) -> list[_PairJob]:
        exp = self.exp
        records = [
            r for r in self.store.runs.records(exp.id) if r.output is not None and not r.execution_failed
        ]
        by_key: dict[tuple[int, int], dict[str, RunRecord]] = {}
        for r in records:
            by_key.setdefault((r.case_idx, r.round), {})[r.arm] = r
        jobs = []
        regrade, run_ids = self.options.regrade, self.options.run_ids
        for grader in self.plan.pairwise:
            first, second = self.plan.pair_arms[grader.name]
            history: dict[tuple[int, int], list[Grade]] = {}
            if not regrade:
                for row in self.store.grades.records(exp.id, grader=grader.name, latest=False):
                    if row.other_run_id is not None:
                        history.setdefault((row.run_id, row.other_run_id), []).append(row)
            for (case_idx, rnd), runs in sorted(by_key.items()):
                a, b = runs.get(first), runs.get(second)
                if a is None or b is None:
                    continue
                if run_ids is not None and a.id not in run_ids and b.id not in run_ids:
                    continue
                if not regrade and not self._pair_needs(history.get((a.id, b.id), []), a, b):
                    continue
                jobs.append(_PairJob(grader, case_idx, rnd, a, b))
        return jobs

    def _pair_needs(self, rows: list[Grade], a: RunRecord, b: RunRecord) -> bool:
        # only judgements of the two current executions count; older ones judged other outputs
        rows = [
            r
            for r in rows
            if r.run_attempt in (None, a.attempts) and r.other_run_attempt in (None, b.attempts)
        ]
        if not rows:
            return True
        latest = rows[-1]
        if latest.status == GradeStatus.OK:
            return False
        errors = sum(1 for r in rows if r.status == GradeStatus.ERROR)
        return bool(latest.retryable) and errors <= self.options.retries

    async def grade_pairs(self) -> None:
        """Blind pairwise judging of two arms' outputs on the same case and round (run states unchanged)."""
        self.parts.writer.flush()  # the pairs are read from the store: every execution of this pass must be in it
        jobs = self._pair_jobs()
        if not jobs:
            return
        limiter = loop_limiter()
        semaphore = asyncio.Semaphore(self.options.concurrency)
        tracker = self.parts.moves.tracker
        tracker.pairs_total, tracker.pairs_done = len(jobs), 0
        tracker.maybe_emit(force=True)

        async def judge(job: _PairJob) -> None:
            async with semaphore:
                while (
                    self.parts.control.paused and not self.parts.control.cancelling
                ):  # a pause holds judging too
                    await self.parts.control.resume.wait()
                if self.parts.control.cancelling:
                    return
                await limiter.acquire(self.options.priority)
                try:
                    await self._judge_pair(job)
                finally:
                    limiter.release()

        judging = asyncio.gather(*(judge(job) for job in jobs))
        with self.parts.control.judging_pairs(judging) as flight:
            await judging
        if flight.ended is FlightEnd.CANCEL:
            log.info("experiment %s: pairwise judging cancelled", self.exp.name)

    async def _judge_pair(self, job: _PairJob) -> None:
        from abbench.graders import pair_seed  # here: a run judged by rules never loads the pairwise judge

        a, b = job.a, job.b
        assert a.output is not None and b.output is not None  # jobs are made of executed runs
        items = [
            WorkItem(
                r.id, r.arm_id, job.case_idx, r.case_id, job.round, r.state, r.attempts, r.grade_attempts
            )
            for r in (a, b)
        ]
        ctx = PairContext(
            case=self.parts.inputs.cases[job.case_idx],
            a=self._context(items[0], a.output, a),
            b=self._context(items[1], b.output, b),
            seed=pair_seed(self.options.seed, a.case_id, job.round),
        )
        _, error = await self._grade_one(job.grader, ctx, items[0], a.attempts, b.attempts)
        if error is None:
            self.parts.tally.pairs_judged += 1
        else:
            self.parts.tally.pairs_failed += 1
        self.parts.moves.tracker.pairs_done += 1
        self.parts.moves.tracker.maybe_emit()


@dataclass(frozen=True)
class _PairJob:
    """Two arms' runs on one case and round, for one pairwise grader."""

    grader: Grader
    case_idx: int
    round: int
    a: RunRecord
    b: RunRecord


def _call_grader(grader: Grader, ctx: GradeContext | PairContext) -> Any:
    """Start grading: the grader's answer, or what to await for it (`_grade_result`).

    Called, not awaited: a rule answers at once, and a coroutine per run cost more than the rule.
    """
    if getattr(grader, "blocking", False):
        # A person's plain function may block (a synchronous HTTP call to a judge, a
        # sleep): in a thread it cannot stall the other runs, pause/cancel or the watchdog.
        return asyncio.get_running_loop().run_in_executor(None, grader, ctx)
    return grader(ctx)


async def _grade_result(grader: Grader, result: Any) -> GradeResult:
    """The `GradeResult` a grader's answer (`_call_grader`) stands for, awaited when it must be."""
    if inspect.isawaitable(result):
        result = await result
    if not isinstance(result, GradeResult):
        raise GradingError(f"grader {grader.name} returned {type(result).__name__}, not a GradeResult")
    return result


_OK = str(GradeStatus.OK)

_SPENT = ("judge_model", "judge_cost", "input_tokens", "output_tokens", "cached", "cost_saved")

_RESULT_FIELDS = tuple(name for name in GradeResult.__dataclass_fields__ if name != "cached")
"""A grader's result's fields, each stored as the grade's field of the same name (``cached`` aside:
NULL, not false, when no judge reply came from the cache)."""


def _ok_grade(
    exp_id: int,
    item: WorkItem,
    grader: Grader,
    result: GradeResult,
    other_run_id: int | None,
    attempt: int,
    other_attempt: int | None,
) -> GradeWrite:
    """The grade to store of a grader that reached a result (on `item`'s execution `attempt`)."""
    return GradeWrite(
        exp_id,
        item.run_id,
        grader.name,
        grader.kind,
        _OK,
        other_run_id=other_run_id,
        run_attempt=attempt,
        other_run_attempt=other_attempt,
        cached=result.cached or None,
        **{name: getattr(result, name) for name in _RESULT_FIELDS},
    )


def _result_from_row(row: Grade) -> GradeResult | None:
    if row.status != GradeStatus.OK:
        return None
    return GradeResult(passed=row.passed, score=row.score, verdict=row.verdict)
