"""The ``metrics`` command: each arm's accuracy, failures, classes, stability, cost, latency, grounding."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import click

from abbench import formatting as fm
from abbench.cli._activation import print_activation
from abbench.cli._analysis import _estimate, _pad, _pct, grader_header, grader_option
from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.cli._classes import CLASSES_INLINE, f1_lines
from abbench.formatting import NA
from abbench.metrics import NO_RUN_EXECUTED, experiment_metrics

if TYPE_CHECKING:
    from abbench.metrics import (
        ArmMetrics,
        ClassReport,
        ExperimentMetrics,
        GroundingMetrics,
        GroupAccuracy,
        RunCounts,
        Stability,
        UsageMetrics,
    )


def pass_k_line(stability: Stability) -> str | None:
    """The ``metrics`` line for pass@k and pass^k, k = 1..rounds (None with one round or no verdicts)."""
    curve = stability.pass_k
    if not curve:
        return None

    def pct(x: float) -> str:
        return f"{x * 100:.1f}"

    at = " / ".join(pct(p.pass_at_k) for p in curve)
    hat = " / ".join(pct(p.pass_hat_k) for p in curve)
    short = [f"k={p.k}: {p.n_short}" for p in curve if p.n_short]
    tail = f" (cases with fewer attempts, left out: {', '.join(short)})" if short else ""
    most = max(p.n_cases for p in curve)
    fewer = [
        f"k={p.k} on {p.n_cases:,} case{'s' if p.n_cases != 1 else ''}" for p in curve if p.n_cases < most
    ]
    rests = f"; each on {most:,} cases" + (f" except {', '.join(fewer)}" if fewer else "")
    return f"pass@k {at}% · pass^k {hat}% for k = 1..{curve[-1].k}{rests}{tail}"


@cli.command("metrics")
@click.argument("experiment")
@click.option("--arm", "arms", multiple=True, metavar="ARM", help="Only this arm (repeatable).")
@click.option("--by-domain", is_flag=True, help="Also print accuracy per domain.")
@click.option("--by-round", is_flag=True, help="Also print accuracy per round.")
@click.option("--confusion", is_flag=True, help="Also print the confusion matrices.")
@click.option(
    "--classes",
    is_flag=True,
    help=f"Print every class's F1 (by default, above {CLASSES_INLINE} classes: the lowest and highest).",
)
@click.option("--cluster", type=click.Choice(["domain"]), help="Cluster the accuracy intervals by domain.")
@click.option(
    "--low-confidence", type=float, default=0.5, show_default=True, help="Confidence below this is low."
)
@click.option("--confidence", type=float, default=0.95, show_default=True, help="Coverage of the intervals.")
@grader_option
@json_option
@pass_ctx
def metrics_cmd(ctx: Context, experiment: str, arms: tuple[str, ...], by_domain: bool, by_round: bool,
                confusion: bool, classes: bool, cluster: str | None, low_confidence: float, confidence: float,
                grader: str | None, as_json: bool) -> None:  # fmt: skip
    """Per-arm metrics: accuracy with intervals, failures, classes, stability, cost, latency, grounding.

    \b
    Examples:
      abbench metrics routing-v2 --by-domain --confusion
      abbench metrics routing-v2 --grader label_match   # as label_match alone graded the runs
    """
    m = experiment_metrics(
        experiment, store=ctx.store, arms=list(arms) or None, confidence=confidence,
        low_confidence=low_confidence, cluster=cluster, grader=grader,
    )  # fmt: skip

    def human() -> None:
        _print_metrics(m, by_domain=by_domain, by_round=by_round, confusion=confusion, classes=classes)

    emit(as_json, m.as_dict(), human)


def _print_metrics(
    m: ExperimentMetrics, *, by_domain: bool, by_round: bool, confusion: bool, classes: bool
) -> None:
    """The experiment's metrics as `abbench metrics` prints them: each arm, the judging, the groups."""
    unit = "points" if m.outcome == "passed" else "score"
    click.echo(
        f"{m.experiment} (#{m.experiment_id}) on {m.dataset}: {m.rounds} round(s), outcome {m.outcome}"
    )
    if m.grader is not None:
        click.secho(grader_header(m.grader), bold=True)
    click.echo("")
    for a in m.arms:
        _print_arm(a, m.outcome, classes=classes, confusion=confusion)
        click.echo("")
    print_activation(m.activation)
    if m.judging:
        # grading cost is the judge's: a pairwise judge compares two arms and is charged to neither
        click.echo("judging (apart from the arms' execution cost):")
        for j in m.judging:
            whose = " vs ".join(j.arms) if j.kind == "pairwise" else ", ".join(j.arms)
            click.echo(
                f"  {_pad(j.grader, 20)}{j.kind:<9} {fm.judge_cost(j)} over {j.grades} grades ({whose})"
            )
        click.echo("")
    if by_domain:
        click.echo("per domain:")
        _print_groups(m.by_domain, unit, lambda r: f"{_pad(r.group, 18)}")
    if by_round:
        click.echo("per round:")
        _print_groups(m.by_round, unit, lambda r: f"round {r.group:<12}")
    for note in m.notes:
        click.echo(f"note: {note}")


def _print_arm(a: ArmMetrics, outcome: str, *, classes: bool, confusion: bool) -> None:
    """One arm's block of lines, under its label."""
    click.secho(a.label, bold=True)
    _print_accuracy(a, outcome)
    _print_runs(a.counts)
    if a.classes is not None:
        _print_classes(a.classes, full=classes)
        if a.classes_note:
            click.echo(f"  {'':<20}{a.classes_note}")
    elif a.classes_reason:
        click.echo(f"  {'classes':<20}n/a ({a.classes_reason})")
    _print_stability(a.stability)
    _print_usage(a.usage)
    _print_grounding(a.grounding)
    if a.format_adherence is not None:
        click.echo(f"  {'format adherence':<20}{a.format_adherence.text}")
    if a.skill_following is not None:
        f = a.skill_following
        click.echo(f"  {'skill-following':<20}{f.text}")
        for s in f.most_skipped:
            click.echo(f"  {'  most skipped':<20}{s.text}")
    for j in a.judges:
        # a long grader and dimension name still leaves a space before the figure
        click.echo(f"  {'judge ' + j.grader + ' ' + j.dimension:<19} {_estimate(j.estimate, 'score')}")
    if confusion and a.classes is not None:
        _print_confusion(a.classes)


def _print_accuracy(a: ArmMetrics, outcome: str) -> None:
    """The arm's main figure (accuracy, or mean score), strict accuracy and the mean score beside it."""
    unit = "points" if outcome == "passed" else "score"
    main = a.accuracy if outcome == "passed" else a.score
    assert main is not None  # the outcome is the score only when the graders score
    click.echo(
        f"  {'accuracy' if unit == 'points' else 'mean score':<20}{_estimate(main, unit)}  ({main.method}, {main.n_cases} cases)"
    )
    if outcome == "passed":
        click.echo(
            f"  {'strict accuracy':<20}{_estimate(a.strict_accuracy)}  (execution and grading failures count as wrong)"
        )
    if a.score is not None and outcome == "passed":
        click.echo(f"  {'mean score':<20}{_estimate(a.score, 'score')}")


def _print_runs(c: RunCounts) -> None:
    """How the arm's runs ended: right, wrong, and each way of getting no verdict."""
    failures = ", ".join(f"{k} {v}" for k, v in c.failure_types.items())
    click.echo(
        f"  {'runs':<20}{c.runs}: "
        + (f"{c.scored} scored (no verdict), " if c.scored else "")
        + f"{c.passed} right, {c.failed} wrong, {c.execution_failed} execution failed"
        f"{' (' + failures + ')' if failures else ''}, {c.grading_failed} grading failed, {c.cancelled} cancelled, "
        f"{c.unfinished} unfinished" + (f", {c.not_graded} not graded by it" if c.not_graded else "")
    )


def _print_classes(report: ClassReport, *, full: bool) -> None:
    """Per-class F1, predictions that are the gold of no run counted, and the labels left out."""
    for line in f1_lines(report, full=full):
        click.echo(line)
    if report.confusion.unknown_predictions:
        odd = ", ".join(f"{k!r} ×{v}" for k, v in list(report.confusion.unknown_predictions.items())[:5])
        click.echo(
            f"  {'other predictions':<20}{odd} (the gold of no run counted: each a class with F1 0 in the macro)"
        )
    if report.absent_note:
        click.echo(f"  {'labels left out':<20}{report.absent_note}")


def _print_stability(s: Stability) -> None:
    """Flip rate and agreement over rounds, the flaky cases, and pass@k."""
    if s.flip_rate is not None:
        click.echo(
            f"  {'stability':<20}flip rate {_pct(s.flip_rate)} of {s.n_cases} cases, agreement {_pct(s.agreement)}, "
            + (f"{len(s.flaky)} flaky" if s.flaky_rate is not None else "flaky n/a (no right/wrong verdicts)")
            + (f" ({', '.join(s.flaky[:5])}{' …' if len(s.flaky) > 5 else ''})" if s.flaky else "")
        )
    else:
        click.echo(f"  {'stability':<20}n/a ({s.reason})")
    if line := pass_k_line(s):
        click.echo(f"  {'over k rounds':<20}{line}")


def _print_usage(u: UsageMetrics) -> None:
    """Cost (judges' apart), what the attempts spent, latency and tokens."""
    cash = partial(fm.money, missing=NA)
    judges = (
        ", judges unknown (a judge call had no price)"
        if u.judge_cost is None
        else f", judges {cash(u.judge_cost)}"
        if u.judge_cost
        else ""
    )
    if not u.executed:  # unknown, never $0 beside what the attempts spent
        click.echo(f"  {'cost':<20}n/a: {NO_RUN_EXECUTED}{judges}")
    elif u.total_cost is None:
        click.echo(f"  {'cost':<20}not reported by the agent{judges}")
    else:
        click.echo(
            f"  {'cost':<20}mean {cash(u.cost.mean)}, total {cash(u.total_cost)}, per correct answer "
            f"{cash(u.cost_per_correct)}{judges}"
        )
        if u.cost.missing:
            click.echo(f"  {'':<20}{u.cost_gap}")
    if u.failed_attempts or u.cached_attempts or u.unknown_cost_attempts:
        failed = (
            f", execution failed on {u.failed_attempts}"
            + (f" ({cash(u.spent_on_failures)})" if u.spent_on_failures is not None else "")
            if u.failed_attempts
            else ""
        )
        saved = (
            f"; saved {cash(u.saved)} by the response cache ({u.cached_attempts} attempts cached)"
            if u.cached_attempts
            else ""
        )
        unknown = (
            f"; {u.unknown_cost_attempts} attempts of unknown cost not counted (killed or cancelled before "
            "their call answered, no usage reported, or no prices)"
            # an agent that reports no cost and lost nothing: "cost not reported" says it all
            if u.unknown_cost_attempts and (u.spent is not None or u.failed_attempts)
            else ""
        )
        click.echo(
            f"  {'spent':<20}{cash(u.spent) if u.spent is not None else 'cost not reported'} over "
            f"{u.attempts} attempts{failed}{saved}{unknown}"
        )
    lat = partial(fm.ms, missing=NA)
    click.echo(
        f"  {'latency':<20}mean {lat(u.latency_ms.mean)}, p50 {lat(u.latency_ms.p50)}, p95 {lat(u.latency_ms.p95)}"
        + _unreported(u.latency_ms.missing, u.executed)
        if u.latency_ms.n
        else f"  {'latency':<20}not reported by the agent"
    )
    tok = partial(fm.num, digits=0, missing=NA)
    click.echo(
        f"  {'tokens':<20}mean {tok(u.tokens.mean)}, p50 {tok(u.tokens.p50)}, p95 {tok(u.tokens.p95)}"
        + f" (prompt {tok(u.input_tokens.mean)}, completion {tok(u.output_tokens.mean)} per run)"
        + _unreported(u.tokens.missing, u.executed)
        if u.tokens.n
        else f"  {'tokens':<20}not reported by the agent"
    )


def _unreported(missing: int, executed: int) -> str:
    """`` (over the 148 of 240 runs that reported it)`` when some executed runs did not."""
    return f" (over the {executed - missing:,} of {executed:,} runs that reported it)" if missing else ""


def _print_grounding(g: GroundingMetrics) -> None:
    """Answers without evidence, with low confidence, and accuracy when the skill was read or not."""
    parts = [
        f"no evidence {_pct(g.no_evidence.value)}"
        if g.no_evidence.value is not None
        else f"no evidence n/a ({g.no_evidence.reason})",
        f"low confidence (<{g.threshold:g}) {_pct(g.low_confidence.value)}",
    ]
    if g.skill_read.value is not None:
        parts.append(
            f"skill read {_pct(g.skill_read.value)} (accuracy {_pct(g.accuracy_when_read.value)} when read, "
            f"{_pct(g.accuracy_when_not_read.value)} when not)"
        )
    click.echo(f"  {'grounding':<20}{'; '.join(parts)}")


def _print_confusion(report: ClassReport) -> None:
    """The confusion matrix: rows gold, columns predicted."""
    cm = report.confusion
    click.echo("  confusion (rows gold, columns predicted):")
    click.echo("    " + " " * 14 + "".join(" " + _pad(col, 10, ">") for col in cm.columns))
    for label, row in zip(cm.labels, cm.counts, strict=True):
        click.echo(f"    {_pad(label, 14)}" + "".join(f"{n:>11}" for n in row))


def _print_groups(rows: tuple[GroupAccuracy, ...], unit: str, group: Callable[[GroupAccuracy], str]) -> None:
    """Accuracy per domain or per round: one line per arm and group (`group` writes the group's cell)."""
    for r in rows:
        click.echo(
            f"  {_pad(r.arm, 14)}{group(r)}{_estimate(r.accuracy, unit):<28}{r.runs} runs, "
            f"{r.failures} execution or grading failed"
        )
