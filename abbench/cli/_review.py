"""The review commands: review, reviews, disagreements, case (what people read case by case)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import click

from abbench._text import cells
from abbench.cli._analysis import _cut, _num, _pad, _pct
from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.formatting import plural
from abbench.review import (
    add_review,
    assign_review,
    case_detail,
    corrected_accuracy,
    disagreements,
    draw_review_sample,
    judge_agreement,
    low_confidence_threshold,
    reviewer_agreement,
    reviews,
)
from abbench.types import AttemptOutcome, GradeStatus, RunState, outcome_word

if TYPE_CHECKING:
    from abbench.review import AttemptView, CaseDetail, CaseView, CorrectedAccuracy, GradeView, RunView

_MARKS: dict[str, str] = {RunState.PASS: "✓", RunState.FAIL: "✗"}

TURNS_SHOWN = 8
"""Earlier turns of a case `abbench case` prints: the latest ones (``--full``: every one)."""
TURN_CHARS = 400
"""Characters of an earlier turn `abbench case` prints (``--full``: all of it)."""
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _answer(run: RunView) -> str:
    """A run's answer as a list shows it: the prediction, or why there is none."""
    if run.prediction is not None:
        return str(run.prediction)
    return f"({run.failure_type or outcome_word(run.state)})"


def _grade_text(name: str, grade: GradeView) -> str:
    """One grader's latest verdict on a run, as ``abbench case`` lists it."""
    if grade.status != GradeStatus.OK:
        return f"{name} grading failed ({grade.error or grade.status})"
    passed = grade.passed
    if passed is None and grade.verdict is None and grade.score is None:
        return f"{name} n/a"  # the grader does not apply here (a trajectory check on a no-skill arm)
    verdict = grade.verdict or (
        outcome_word(RunState.PASS if passed else RunState.FAIL) if passed is not None else "scored"
    )
    score = grade.score
    text = f"{name} {verdict}"
    if score is not None and grade.kind != "rule":
        text += f" {score:.3g}"
    comment = " ".join(str(grade.comment or "").split())
    return text + (f" ({comment[:80]})" if comment else "")


@cli.command("review")
@click.argument("experiment")
@click.argument("case_id", required=False)
@click.option(
    "--verdict",
    metavar="VERDICT",
    help="gold_correct, model_correct, ambiguous_standard, missing_capability_info or unsure.",
)
@click.option(
    "--sample",
    "sample_size",
    type=int,
    help="Instead of a review: draw a seeded random sample of this many judged runs to review (for the "
    "judge's accuracy corrected by people).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The sample's seed (with --sample).")
@click.option("--note", help="What you saw.")
@click.option("--arm", help="The arm whose answer you reviewed (default: the case as a whole).")
@click.option("--run", "run_id", type=int, help="The run you looked at.")
@click.option("--reviewer", help="Who reviewed (default: the OS user or $ABBENCH_USER).")
@click.option(
    "--assign",
    "assign_to",
    metavar="REVIEWER",
    help="Instead of a review: give the case (of --arm) to REVIEWER for a blind second review.",
)
@json_option
@pass_ctx
def review_cmd(ctx: Context, experiment: str, case_id: str | None, verdict: str | None, sample_size: int | None,
               seed: int, note: str | None, arm: str | None, run_id: int | None, reviewer: str | None,
               assign_to: str | None, as_json: bool) -> None:  # fmt: skip
    """Record a review of a case (appended; the latest per case and arm is the one shown), or draw a
    random sample of judged runs to review (--sample N --seed S).

    \b
    Examples:
      abbench review routing-v2 c017 --verdict gold_correct --arm treatment --note "空调 is slow, gold is right"
      abbench review routing-v2 --sample 100 --seed 7 --arm treatment
      abbench review routing-v2 c017 --arm treatment --assign bob
    """
    if assign_to is not None:
        if case_id is None:
            raise click.UsageError("give the CASE_ID to assign")
        made = assign_review(experiment, case_id, assign_to, arm=arm, store=ctx.store)
        emit(
            as_json,
            made.as_dict(),
            f"{made.case_id} {made.arm or '(case)'} assigned to {made.reviewer} for a blind second review",
        )
        return
    if sample_size is not None:
        _draw_sample(ctx, experiment, sample_size, seed, arm, as_json)
        return
    if case_id is None or verdict is None:
        raise click.UsageError(
            "give a CASE_ID and --verdict VERDICT to review a case, or --sample N --seed S to draw runs to review"
        )

    r = add_review(
        experiment, case_id, verdict, note=note, arm=arm, run_id=run_id, reviewer=reviewer, store=ctx.store
    )
    emit(
        as_json,
        r.as_dict(),
        f"review #{r.id} saved: {r.case_id} {r.arm or '(case)'} → {r.verdict} by {r.reviewer}",
    )


def _draw_sample(ctx: Context, experiment: str, size: int, seed: int, arm: str | None, as_json: bool) -> None:
    """Draw, record and list a random review sample, with the command that reviews each run."""
    sample = draw_review_sample(experiment, size, seed=seed, arm=arm, store=ctx.store)
    exp = ctx.store.experiments.get(sample.experiment_id)
    runs = ctx.store.reviews.run_positions(exp.id, sample.run_ids)  # the drawn runs alone

    def human() -> None:
        click.echo(
            f"random review sample #{sample.id}: {sample.size} of {sample.population:,} judged runs "
            f"({arm or 'every arm'}, seed {seed}); review each, then `abbench reviews {exp.id}` shows the "
            "judge's accuracy corrected by people"
        )
        for run_id in sample.run_ids:
            _, arm_name, case_id = runs[run_id]
            click.echo(f"  abbench review {exp.id} {case_id} --arm {arm_name} --run {run_id} --verdict ...")

    emit(as_json, sample.as_dict(), human)


@cli.command("reviews")
@click.argument("experiment")
@click.option("--history", is_flag=True, help="Every review, not only the latest per case and arm.")
@click.option("--case", "case_id", help="Only this case.")
@click.option("--arm", help="Only this arm.")
@json_option
@pass_ctx
def reviews_cmd(
    ctx: Context, experiment: str, history: bool, case_id: str | None, arm: str | None, as_json: bool
) -> None:
    """List reviews (the latest per case and arm), with judge-versus-people agreement."""
    rows = reviews(experiment, store=ctx.store, latest=not history, case_id=case_id, arm=arm)
    agreement = judge_agreement(experiment, store=ctx.store)
    people = reviewer_agreement(experiment, store=ctx.store)
    corrected = _corrected(ctx, experiment, arm)

    def human() -> None:
        if not rows:
            click.echo("no reviews yet; add one with `abbench review EXP CASE --verdict ...`")
        for r in rows:
            note = f" — {r.note}" if r.note else ""
            click.echo(
                f"#{r.id:<5}{r.created_at}  {_pad(r.case_id, 16)}{_pad(r.arm or '(case)', 14)}{r.verdict:<24}"
                f"{r.reviewer or ''}{note}"
            )
        if agreement.n:
            kappa = (
                _num(agreement.kappa.kappa, 3) if agreement.kappa is not None else f"n/a ({agreement.reason})"
            )
            click.echo(
                f"judge vs people: kappa {kappa} over {agreement.n} review(s), agreement {_pct(agreement.agreement)}"
            )
        if people.items:
            click.echo(f"people vs people: {people.text}")
        for figure in corrected:
            click.echo(figure.text)

    data = {"reviews": [r.as_dict() for r in rows], "agreement": agreement.as_dict()}
    data["reviewer_agreement"] = people.as_dict()
    data["corrected_accuracy"] = [c.as_dict() for c in corrected]
    emit(as_json, data, human)


def _corrected(ctx: Context, experiment: str, arm: str | None) -> list[CorrectedAccuracy]:
    """The judge's accuracy corrected by the latest random review sample (none without a sample)."""
    exp = ctx.store.experiments.get(experiment)
    if not ctx.store.reviews.samples(exp.id):
        return []
    return list(corrected_accuracy(exp, arm, store=ctx.store))


@cli.command("disagreements")
@click.argument("experiment")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(["all", "gold", "low_confidence", "no_evidence", "flaky", "arms"]),
    help="Which kind (repeatable; default all).",
)
@click.option("--arm", "arms", multiple=True, metavar="ARM", help="Only runs of this arm (repeatable).")
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    help="Low-confidence threshold [default: halfway between chance and certainty, (1 + 1/k)/2 for k labels; "
    "0.5 without labels].",
)
@click.option("--limit", type=int, help="At most this many cases.")
@json_option
@pass_ctx
def disagreements_cmd(ctx: Context, experiment: str, kinds: tuple[str, ...], arms: tuple[str, ...],
                      threshold: float | None, limit: int | None, as_json: bool) -> None:  # fmt: skip
    """List cases worth a review: gold vs prediction, low confidence, no evidence, flaky, arms disagreeing."""
    kind = None if not kinds or "all" in kinds else list(kinds)
    found = disagreements(
        experiment, kind, store=ctx.store, arms=list(arms) or None, threshold=threshold, limit=limit
    )

    def human() -> None:
        if not found:
            click.echo("nothing to review")
            return
        # Case ids are shown whole (they are what `abbench case` takes); long gold values are cut.
        id_width = max(12, *(cells(d.case_id) for d in found)) + 2
        gold_width = min(40, max(4, *(cells(str(d.case.expected)) for d in found)))
        kind_width = max(len(",".join(d.kinds)) for d in found) + 2
        for d in found:
            answers = []
            by_arm: dict[str, list[RunView]] = {}
            for r in d.runs:
                by_arm.setdefault(r.arm, []).append(r)
            for arm, runs in by_arm.items():
                preds = "/".join(_answer(r) for r in runs)
                answers.append(f"{arm}: {preds}")
            reviewed = f"  [reviewed: {', '.join(r.verdict for r in d.reviews)}]" if d.reviews else ""
            click.echo(
                f"{_pad(d.case_id, id_width)}{_pad(','.join(d.kinds), kind_width)}"
                f"gold {_cut(d.case.expected, gold_width)}  {'; '.join(answers)}{reviewed}"
            )
            # the input alone can mislead ("the third one"): say it answers earlier turns (`abbench case` shows them)
            turns = len(d.case.turns)
            before = f"(after {plural(turns, 'earlier turn')}) " if turns else ""
            click.echo(f"{'':<{id_width}}{before}{_cut(' '.join(str(d.case.input).split()), 100, pad=False)}")
        more = f" (--limit {limit}: there may be more)" if limit is not None and len(found) >= limit else ""
        click.echo(f"{len(found):,} case(s){more}; answers per arm are by round: round 1/round 2/…")
        if any(d.case.turns for d in found):
            click.echo(f"earlier turns of a case: abbench case {experiment} CASE_ID")
        if kind is None or "low_confidence" in kind:
            click.echo(
                f"low confidence: {low_confidence_threshold(experiment, threshold, store=ctx.store).text}"
            )

    emit(as_json, [d.as_dict() for d in found], human)


def _attempt_text(a: AttemptView) -> str:
    """One line per execution attempt: how it ended and what it spent (and where its transcript is)."""
    text = a.summary
    if a.transcript_path and a.outcome != AttemptOutcome.EXECUTED:
        text += f"; transcript: {a.transcript_path}"
    return text


@cli.command("case")
@click.argument("experiment")
@click.argument("case_id")
@click.option(
    "--full",
    is_flag=True,
    help=f"Every earlier turn, each whole [default: the last {TURNS_SHOWN}, each cut at {TURN_CHARS:,} characters].",
)
@json_option
@pass_ctx
def case_cmd(ctx: Context, experiment: str, case_id: str, full: bool, as_json: bool) -> None:
    """Show one case in full: earlier turns, input, gold, every run's answer, reason, evidence, tool calls,
    reviews."""
    d = case_detail(experiment, case_id, store=ctx.store)

    emit(as_json, d.as_dict(), lambda: _print_case(d, full=full))


def _printable(text: object) -> str:
    """`text` safe to print: a control character (an escape sequence, a carriage return) shown as its
    code instead of moving the cursor or forging a line; line breaks and tabs kept."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def _say(text: str) -> None:
    """Print a line of a case's text (what a dataset, an agent or a reviewer wrote) with `_printable`."""
    click.echo(_printable(text))


def _print_history(case: CaseView, full: bool) -> None:
    """The turns before the input, oldest first and labelled by role (the verdict may rest on them): the
    last `TURNS_SHOWN`, each cut at `TURN_CHARS` characters, saying what was left out; `full`: all, whole."""
    excerpt = case.history_excerpt() if full else case.history_excerpt(TURNS_SHOWN, TURN_CHARS)
    if not excerpt.total:
        return
    click.echo(f"history: {plural(excerpt.total, 'earlier turn')}, oldest first")
    if excerpt.hidden:
        click.echo(f"  … {plural(excerpt.hidden, 'earlier turn')} not shown")
    width = max(len(t.role) for t in excerpt.turns)
    for t in excerpt.turns:
        text = f"{t.text} [+{t.left_out:,} characters]" if t.left_out else t.text
        first, *rest = _printable(text).splitlines() or [""]
        click.echo(f"  {t.role:>{width}}: {first}")
        for line in rest:
            click.echo(f"  {'':>{width}}  {line}")
    if excerpt.cut or excerpt.hidden:
        click.echo("  (--full prints every turn whole)")


def _print_case(d: CaseDetail, *, full: bool = False) -> None:
    """A case as `abbench case` prints it: the case (its earlier turns first), each run, then the reviews."""
    c = d.case
    click.secho(
        f"{c.case_id} ({c.domain or 'no domain'}){'  ' + ', '.join(d.kinds) if d.kinds else ''}",
        bold=True,
    )
    _print_history(c, full)
    _say(f"input: {c.input}")
    _say(f"gold:  {c.expected}")
    for r in d.runs:
        _print_run(r)
    for rev in d.history:
        _say(f"  review #{rev.id} {rev.created_at} {rev.arm or '(case)'}: {rev.verdict} {rev.note or ''}")


def _print_run(r: RunView) -> None:
    """One run of the case: its answer and verdict, grades, evidence, what it read and called."""
    verdict = _MARKS.get(r.outcome) or outcome_word(r.outcome)
    conf = f" conf {r.confidence:.2f}" if r.confidence is not None else ""
    _say(f"  {r.arm} round {r.round + 1}: {_answer(r)} {verdict}{conf}  {r.reason or ''}")
    if r.error:
        _say(f"    error: {r.error}")
    if r.grades:
        # a run is right only when every grader says so: say which one did not
        _say("    grades: " + " · ".join(_grade_text(n, g) for n, g in r.grades.items()))
    for e in r.evidence:
        where = (
            f" → {e.resolved}"
            if e.found and e.resolved != e.ref
            else ("" if e.found else " (not found in the skill)")
        )
        _say(f"    cites {e.ref}{where}")
    if r.sections_read or r.files_read:
        _say(f"    read: {', '.join(r.sections_read or r.files_read)}")
    for call in r.calls or ():
        _say(f"    tool {call.name}({call.arguments})")
    if r.transcript_path:
        _say(f"    transcript: {r.transcript_path}")
    attempts = r.attempts or ()
    if len(attempts) > 1 or any(a.outcome != AttemptOutcome.EXECUTED or a.cached for a in attempts):
        # what every attempt spent: a failed one (out of turns, unreadable, timed out) cost money too
        for a in attempts:
            _say(f"    {_attempt_text(a)}")
            for call in a.tool_calls if a.outcome != AttemptOutcome.EXECUTED else ():
                _say(f"      tool {call.name}({call.arguments})")
