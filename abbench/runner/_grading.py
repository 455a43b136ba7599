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
from typing import Any

from abbench.errors import ExperimentError, GradingError
from abbench.graders import GradeContext, Grader, GradeResult, PairContext, make_grader, pair_seed
from abbench.runner._limiter import loop_limiter
from abbench.store import Grade, RunRecord, WorkItem, now_iso
from abbench.types import AgentOutput

log = logging.getLogger(__name__)


def combine_verdicts(
    results: list[tuple[str, GradeResult | None, str | None]],
) -> tuple[bool | None, float | None, str | None]:
    """The run's verdict from its graders' latest grades: (passed, score, grading error).

    A grading failure of any grader fails the run as a grading failure (passed None); otherwise the run
    passes when no grader says it failed. The score is the first grader's.
    """
    errors = [f"{name}: {err}" for name, res, err in results if err is not None]
    if errors:
        return None, None, "grading failed — " + "; ".join(errors)
    verdicts = [res.passed for _, res, _ in results if res is not None and res.passed is not None]
    passed = all(verdicts) if verdicts else True
    score = next((res.score for _, res, _ in results if res is not None and res.score is not None), None)
    return passed, score, None


def build_graders(specs: list[Any], experiment: str, arms: list[str] | None = None) -> list[Grader]:
    """The experiment's graders from their definitions, checked against each other and its arms.

    Raises:
        UsageError: a definition is invalid (unknown grader or option).
        ExperimentError: two graders share a name (their grades would overwrite each other's
            "latest"), or a pairwise grader names arms the experiment lacks.
    """
    graders = [make_grader(g) for g in specs]
    names = [g.name for g in graders]
    dupes = sorted({n for n in names if names.count(n) > 1})
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


class GradingMixin:
    """The grading half of `ExperimentRunner` (it provides store, exp, writer, cases, arms, ...)."""

    # -- preparing -------------------------------------------------------------------------------------

    def _prepare_graders(self) -> None:
        exp = self.exp
        arm_names = [a.name for a in exp.arms]
        graders = build_graders(list(exp.spec.get("graders", ["label_match"])), exp.name, arm_names)
        selected = graders
        if self.only_graders:
            unknown = self.only_graders - {g.name for g in graders}
            if unknown:
                raise ExperimentError(
                    f"experiment {exp.name!r} has no grader {', '.join(sorted(unknown))}; "
                    f"its graders: {', '.join(g.name for g in graders) or '(none)'}"
                )
            selected = [g for g in graders if g.name in self.only_graders]
        # every pointwise grader counts for the verdict; only the selected ones grade now
        self.all_pointwise = [g for g in graders if g.kind != "pairwise"]
        self.pointwise = [g for g in selected if g.kind != "pairwise"]
        self.pairwise = [g for g in selected if g.kind == "pairwise"]
        self.pair_arms: dict[str, tuple[str, ...]] = {
            g.name: tuple(getattr(g, "arms", None) or arm_names[:2]) for g in self.pairwise
        }
        self._latest: dict[int, dict[str, Grade]] | None = None
        self._attempts: dict[int, int] = {}

    def _needs(self, grader: Grader, prior: Grade | None, grade_attempts: int) -> bool:
        """Whether ordinary grading must call `grader` on a run whose current grade is `prior`."""
        if prior is None:
            return True
        if prior.status == "ok":
            return False  # nothing new to grade
        return bool(prior.retryable) and grade_attempts <= self.retries

    def _preload_latest(self) -> dict[int, dict[str, Grade]]:
        """The latest pointwise grade of every (run, grader) of the experiment, in one query."""
        latest: dict[int, dict[str, Grade]] = {}
        for row in self.store.grades(self.exp.id):
            if row.other_run_id is None:
                latest.setdefault(row.run_id, {})[row.grader] = row
        self._latest = latest
        return latest

    def _select_for_grading(self, items: list[WorkItem], records: dict[int, RunRecord]) -> list[WorkItem]:
        """Of stored executions, those some grader must still grade (plus every run left ``executed``).

        Loads the latest grades of the experiment once; runs with nothing new to grade are counted as
        up to date and left exactly as they are.
        """
        latest = self._preload_latest()
        attempts = {r.id: r.attempts for r in records.values()}
        chosen = []
        for item in items:
            graded = latest.get(item.run_id, {})
            attempt = attempts.get(item.run_id, item.attempts)
            if item.state == "executed" or any(
                self._needs(g, _current(graded.get(g.name), attempt), item.grade_attempts)
                for g in self.pointwise
            ):
                chosen.append(item)
            else:
                self._up_to_date += 1
        return chosen

    # -- pointwise grading -----------------------------------------------------------------------------

    def _load_outputs(self, items: list[WorkItem]) -> dict[int, RunRecord]:
        if not items:
            return {}
        records = {}
        ids = [i.run_id for i in items]
        for start in range(0, len(ids), 900):
            for rec in self.store.runs(run_ids=ids[start : start + 900]):
                records[rec.id] = rec
        return records

    def _context(self, item: WorkItem, output: AgentOutput, record: RunRecord | None) -> GradeContext:
        arm = self.arms[item.arm_id]
        if record is not None:
            tool_calls = int(record.transcript_summary.get("tool_calls", 0))
        else:
            tool_calls = sum(len(m.get("tool_calls") or ()) for m in output.transcript if isinstance(m, dict))
        return GradeContext(
            case=self.cases[item.case_idx],
            output=output,
            skill=self.skills[item.arm_id],
            label_map=self.label_map,
            label_set=self.label_set,
            arm=arm.name,
            round=item.round,
            run_id=item.run_id,
            transcript_path=record.transcript_path if record is not None else None,
            tool_calls=tool_calls,
            agent=arm.agent,
            model=arm.model,
            cache=self._judge_cache(item.round),
        )

    def _attempt(self, item: WorkItem, record: RunRecord | None) -> int:
        if item.run_id in self._attempts:
            return self._attempts[item.run_id]
        return record.attempts if record is not None else item.attempts

    async def _grade(self, item: WorkItem, output: AgentOutput, record: RunRecord | None) -> None:
        attempt = self._attempt(item, record)
        if record is None:
            existing: dict[str, Grade] = {}  # an execution of this pass has no grades yet
        elif self._latest is not None:
            existing = self._latest.get(item.run_id, {})
        else:
            existing = self.store.latest_grades(item.run_id)
        existing = {k: v for k, v in existing.items() if _current(v, attempt) is not None}
        todo = [
            g
            for g in self.pointwise
            if self.regrade or self._needs(g, existing.get(g.name), item.grade_attempts)
        ]
        from_state = self._states[item.run_id]
        if not todo and from_state in ("pass", "fail"):
            self._up_to_date += 1  # nothing new to grade: no transition, no flicker
            return
        ctx = self._context(item, output, record)
        self._move(item, "evaluating")
        fresh: dict[str, tuple[GradeResult | None, str | None]] = {}
        worker = asyncio.current_task()
        self._grading[item.run_id] = worker
        try:
            for grader in todo:
                fresh[grader.name] = await self._grade_one(grader, ctx, item, attempt)
        except asyncio.CancelledError:
            if item.run_id not in self._cancel_asked:
                raise  # the runner itself is stopping: _interrupt() records the run
            if worker.cancelling():
                worker.uncancel()
            # Cancelled by a person while its graders worked: the execution stays, grading waits
            # (grades already written in this pass are kept and not asked for again).
            self._move(item, "executed", None, "cancelled while grading: waits for grading")
            return
        finally:
            self._grading.pop(item.run_id, None)
        results: list[tuple[str, GradeResult | None, str | None]] = []
        for grader in self.all_pointwise:
            if grader.name in fresh:
                results.append((grader.name, *fresh[grader.name]))
            elif grader.name in existing:
                prior = existing[grader.name]
                results.append((grader.name, _result_from_row(prior), prior.error))
        passed, score, error = combine_verdicts(results)
        fields: dict[str, Any] = {
            "passed": None if passed is None else int(passed),
            "score": score,
            "grade_attempts": item.grade_attempts + (1 if todo else 0),
            "finished_at": now_iso(),
            "error": error,
        }
        if from_state == "fail" or error:
            fields["failure_type"] = None
        self._move(item, "pass" if passed else "fail", fields)
        if error is None:
            self._graded += 1
        else:
            self._failed += 1
            self._grading_failed += 1

    async def _grade_one(
        self, grader: Grader, ctx: Any, item: WorkItem, attempt: int, other_attempt: int | None = None
    ) -> tuple[GradeResult | None, str | None]:
        """Grade with retries for retryable grading failures; the run stays `evaluating` meanwhile."""
        ids = {"run_attempt": attempt}
        if isinstance(ctx, PairContext):
            ids.update(other_run_id=ctx.b.run_id, other_run_attempt=other_attempt)
        tries = 0
        while True:
            tries += 1
            try:
                if getattr(grader, "blocking", False):
                    # A person's plain function may block (a synchronous HTTP call to a judge, a
                    # sleep): in a thread it cannot stall the other runs, pause/cancel or the watchdog.
                    result = await asyncio.get_running_loop().run_in_executor(None, grader, ctx)
                else:
                    result = grader(ctx)
                if inspect.isawaitable(result):
                    result = await result
                if not isinstance(result, GradeResult):
                    raise GradingError(
                        f"grader {grader.name} returned {type(result).__name__}, not a GradeResult"
                    )
            except GradingError as exc:
                if exc.retryable and tries <= self.retries and not self._cancelling:
                    log.info("grader %s on run %s: %s; trying again", grader.name, item.run_id, exc)
                    await asyncio.sleep(self._backoff(tries))
                    continue
                spent = {k: v for k, v in exc.spent.items() if k in _SPENT}
                self.writer.grade(
                    self.exp.id,
                    item.run_id,
                    grader.name,
                    grader.kind,
                    "error",
                    error=str(exc),
                    raw_output=exc.raw_output,
                    retryable=exc.retryable,
                    details={"tries": tries},
                    **spent,
                    **ids,
                )
                return None, str(exc)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                message = f"{type(exc).__name__}: {exc}"
                log.warning("grader %s raised on run %s: %s", grader.name, item.run_id, message)
                self.writer.grade(
                    self.exp.id,
                    item.run_id,
                    grader.name,
                    grader.kind,
                    "error",
                    error=message,
                    retryable=False,
                    details={"traceback": traceback.format_exc()},
                    **ids,
                )
                return None, message
            self.writer.grade(
                self.exp.id, item.run_id, grader.name, grader.kind, "ok", **_result_values(result), **ids
            )
            return result, None

    # -- pairwise grading ------------------------------------------------------------------------------

    def _pair_jobs(self) -> list[tuple[Grader, int, int, RunRecord, RunRecord]]:
        exp = self.exp
        records = [r for r in self.store.runs(exp.id) if r.output is not None and not r.execution_failed]
        by_key: dict[tuple[int, int], dict[str, RunRecord]] = {}
        for r in records:
            by_key.setdefault((r.case_idx, r.round), {})[r.arm] = r
        jobs = []
        for grader in self.pairwise:
            first, second = self.pair_arms[grader.name]
            history: dict[tuple[int, int], list[Grade]] = {}
            if not self.regrade:
                for row in self.store.grades(exp.id, grader=grader.name, latest=False):
                    if row.other_run_id is not None:
                        history.setdefault((row.run_id, row.other_run_id), []).append(row)
            for (case_idx, rnd), runs in sorted(by_key.items()):
                a, b = runs.get(first), runs.get(second)
                if a is None or b is None:
                    continue
                if self.run_ids is not None and a.id not in self.run_ids and b.id not in self.run_ids:
                    continue
                if not self.regrade and not self._pair_needs(history.get((a.id, b.id), []), a, b):
                    continue
                jobs.append((grader, case_idx, rnd, a, b))
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
        if latest.status == "ok":
            return False
        errors = sum(1 for r in rows if r.status == "error")
        return bool(latest.retryable) and errors <= self.retries

    async def _grade_pairs(self) -> None:
        """Blind pairwise judging of two arms' outputs on the same case and round (run states unchanged)."""
        self.writer.flush()  # the pairs are read from the store: every execution of this pass must be in it
        jobs = self._pair_jobs()
        if not jobs:
            return
        limiter = loop_limiter()
        semaphore = asyncio.Semaphore(self.concurrency)
        self.tracker.pairs_total, self.tracker.pairs_done = len(jobs), 0
        self.tracker.maybe_emit(force=True)

        async def judge(grader, case_idx, rnd, a, b):
            async with semaphore:
                while self._paused and not self._cancelling:  # a pause holds judging as it holds runs
                    await self._resume.wait()
                if self._cancelling:
                    return
                await limiter.acquire(self.priority)
                try:
                    items = [
                        WorkItem(
                            r.id, r.arm_id, case_idx, r.case_id, rnd, r.state, r.attempts, r.grade_attempts
                        )
                        for r in (a, b)
                    ]
                    ctx = PairContext(
                        case=self.cases[case_idx],
                        a=self._context(items[0], a.output, a),
                        b=self._context(items[1], b.output, b),
                        seed=pair_seed(self.seed, a.case_id, rnd),
                    )
                    _, error = await self._grade_one(grader, ctx, items[0], a.attempts, b.attempts)
                    if error is None:
                        self._pairs_judged += 1
                    else:
                        self._pairs_failed += 1
                    self.tracker.pairs_done += 1
                    self.tracker.maybe_emit()
                finally:
                    limiter.release()

        self._pair_judging = asyncio.gather(*(judge(*job) for job in jobs))
        try:
            await self._pair_judging
        except asyncio.CancelledError:
            if not self._cancelling:
                raise
            log.info("experiment %s: pairwise judging cancelled", self.exp.name)
        finally:
            self._pair_judging = None


_SPENT = ("judge_model", "judge_cost", "input_tokens", "output_tokens", "cached", "cost_saved")


def _result_values(result: GradeResult) -> dict[str, Any]:
    return {
        "passed": result.passed,
        "score": result.score,
        "verdict": result.verdict,
        "dimensions": result.dimensions,
        "comment": result.comment,
        "raw_output": result.raw_output,
        "judge_model": result.judge_model,
        "judge_cost": result.judge_cost,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "details": result.details,
        "cached": result.cached or None,
        "cost_saved": result.cost_saved,
    }


def _result_from_row(row: Grade) -> GradeResult | None:
    if row.status != "ok":
        return None
    return GradeResult(passed=row.passed, score=row.score, verdict=row.verdict)
