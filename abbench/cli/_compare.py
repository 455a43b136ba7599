"""The ``compare`` command: two arms or two experiments (the verdict first, then the figures), or all arms."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import click

from abbench import formatting as fm
from abbench.cli._activation import print_trigger_help
from abbench.cli._analysis import _estimate, _num, _pad, _pct, grader_header, grader_option
from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.compare import experiment_pair, points, vote_policy
from abbench.formatting import NA

if TYPE_CHECKING:
    from abbench.compare import CaseChange, Comparison, MultiComparison, TextChanges


def _cases(title: str, changes: Sequence[CaseChange], limit: int) -> None:
    if not changes:
        return
    shown = ", ".join(
        f"{c.case_id} ({c.rates})" if c.a_graded > 1 or c.b_graded > 1 else c.case_id for c in changes[:limit]
    )
    more = f" … and {len(changes) - limit:,} more" if len(changes) > limit else ""
    click.echo(f"{title} ({len(changes):,}): {shown}{more}")


def _print_comparison(
    c: Comparison, by_domain: bool, limit: int, votes: dict[str, Any] | None = None
) -> None:
    """A comparison as `abbench compare` prints it: the verdict, the figures, the cases that moved."""
    _print_verdict(c, votes)
    click.echo("")
    _print_figures(c)
    _print_usage(c)
    if c.format_adherence is not None:
        click.echo(f"{'format adherence':<18}{c.format_adherence.text}")
    if c.skill_following is not None:
        click.echo(f"{'skill-following':<18}{c.skill_following.text} ({c.skill_following.grader})")
    _print_agreement(c)
    click.echo("")
    print_trigger_help(c.trigger_help)
    _print_changes(c, limit)
    if c.text is not None:
        _print_text_changes(c.text, limit)
    for reason, ids in c.excluded.items():
        click.echo(
            f"left out, {reason}: {len(ids):,} ({', '.join(ids[:limit])}{' …' if len(ids) > limit else ''})"
        )
    if by_domain and c.by_domain:
        click.echo("")
        _print_domains(c)
    if c.notes:
        click.echo("")
        for note in c.notes:
            click.echo(f"note: {note}")


def _print_verdict(c: Comparison, votes: dict[str, Any] | None) -> None:
    """What was compared, the verdict and its outcome (and the votes, when the experiment counts them)."""
    click.echo(f"{c.b.name} vs {c.a.name} on {c.dataset}: {c.n_cases:,} paired case(s), outcome {c.outcome}")
    if c.grader is not None:
        click.secho(grader_header(c.grader), bold=True)
    click.secho(c.verdict.text, bold=True)
    click.echo(f"outcome: {c.verdict.outcome_text}")
    if votes is not None:
        click.echo(c.votes(**votes).text)
    # what each side ran, its skill version named as everywhere (a draft marked)
    two = c.a.experiment_id != c.b.experiment_id
    sides = [
        f"{word} {f'{s.experiment}: ' if two else ''}{s.label}"
        for word, s in (("baseline", c.a), ("candidate", c.b))
    ]
    click.echo("; ".join(sides))


def _print_figures(c: Comparison) -> None:
    """Both arms' accuracy, the difference with its interval and test, McNemar, clustered SE, the MDE."""
    unit = c.unit
    width = max(len(c.a.name), len(c.b.name), 10)
    click.echo(f"{'':<18}{c.a.name:<{width + 26}}{c.b.name}")
    click.echo(
        f"{'accuracy' if unit == 'points' else 'mean score':<18}{_estimate(c.value_a, unit):<{width + 26}}{_estimate(c.value_b, unit)}"
    )
    main = c.main
    if main is not None:
        iv = c.interval
        ci = f"[{points(iv.low, unit)}, {points(iv.high, unit)}]" if iv is not None else "(no interval)"
        click.echo(
            f"{'difference':<18}{points(main.difference, unit)} {ci} ({c.verdict.test}, p = {_num(c.verdict.p_value, 3)})"
        )
    if c.mcnemar is not None and c.mcnemar_midp is not None:
        click.echo(
            f"{'McNemar exact':<18}b = {c.mcnemar.b:,} regressed, c = {c.mcnemar.c:,} fixed, p = {_num(c.mcnemar.p_value, 3)}"
            f" (mid-p {_num(c.mcnemar_midp.p_value, 3)})"
        )
    if c.clustered is not None and c.difference is not None:
        click.echo(
            f"{'clustered SE':<18}{_num(c.clustered.se)} over {c.clustered.n_clusters:,} domains (plain {_num(c.difference.se)})"
        )
    if c.mde is not None:
        click.echo(
            f"{'detectable (MDE)':<18}{points(c.mde.delta, unit).lstrip('+')} with {c.power:.0%} power at {c.alpha:g}"
        )
    elif c.n_cases and c.moved == (0, 0):
        click.echo(
            f"{'detectable (MDE)':<18}not informative: no case changed between the arms (no discordant case)"
        )
    if c.heterogeneity is not None:
        click.echo(f"{'across domains':<18}{c.heterogeneity.text}")


def _print_usage(c: Comparison) -> None:
    """Cost, latency and tokens: mean (and median) of each arm and the difference."""
    for u in c.usage:
        name = fm.USAGE_NAMES.get(u.metric, u.metric)
        if u.difference is None:
            click.echo(f"{name:<18}n/a ({u.reason})")
            continue
        f = partial(fm.usage, u.metric, missing=NA)
        rel = f" ({u.relative:+,.1%})" if u.relative is not None else ""
        ci = (
            f" [{f(u.interval.low, signed=True)}, {f(u.interval.high, signed=True)}]"
            if u.interval is not None
            else ""
        )
        median = ""
        if u.median_a is not None and u.median_b is not None:
            mrel = f" ({u.median_relative:+,.1%})" if u.median_relative is not None else ""
            median = f"; median {f(u.median_a)} → {f(u.median_b)}{mrel}"
        click.echo(
            f"{name:<18}mean {f(u.value_a)} → {f(u.value_b)}: {f(u.difference, signed=True)}{rel}{ci} ({u.method})"
            f"{median}"
        )


def _print_agreement(c: Comparison) -> None:
    """The pairwise judges' wins, and how far the judges agree with the people who reviewed."""
    for p in c.pairwise:
        click.echo(
            f"{'pairwise ' + p.grader:<18}{c.a.name} {p.wins_a:,}, {c.b.name} {p.wins_b:,}, ties {p.ties:,} "
            f"(sign test p = {_num(p.p_value, 3)})"
        )
        for t in p.dimensions:
            means = f"mean {_num(t.mean_a, 2)} → {_num(t.mean_b, 2)}"
            click.echo(
                f"{'  ' + t.dimension:<18}total {c.a.name} {t.total_a:,.1f}, {c.b.name} {t.total_b:,.1f}; "
                f"{means} over {t.pairs:,} pair(s)"
            )
    if c.review_agreement is not None and c.review_agreement.n:
        ra = c.review_agreement
        kappa = _num(ra.kappa.kappa, 3) if ra.kappa is not None else f"n/a ({ra.reason})"
        click.echo(
            f"{'judge vs people':<18}kappa {kappa} over {ra.n:,} reviewed run(s), agreement {_pct(ra.agreement)}"
        )


def _print_changes(c: Comparison, limit: int) -> None:
    """The cases fixed and regressed, those unchanged, and how per-case pass rates moved."""
    _cases("fixed", c.fixed, limit)
    _cases("regressed", c.regressed, limit)
    click.echo(
        f"unchanged: {c.count('unchanged_right'):,} right in both, {c.count('unchanged_wrong'):,} wrong in both"
        if c.outcome == "passed"
        else f"unchanged: {c.count('unchanged'):,}"
    )
    if max(c.a.rounds, c.b.rounds) > 1:
        up, down = c.moved
        click.echo(f"per-case pass rates: {up:,} case(s) rose, {down:,} fell")


def _print_text_changes(t: TextChanges, limit: int) -> None:
    """Cases whose answer stayed but whose reason or cited evidence changed."""
    if t.reason_changed:
        shown = ", ".join(r.case_id for r in t.reason_changed[:limit])
        click.echo(f"same answer, new reason ({len(t.reason_changed):,}): {shown}")
    if t.evidence_appeared:
        shown = ", ".join(f"{e.case_id} (+{', '.join(e.appeared)})" for e in t.evidence_appeared[:limit])
        click.echo(f"evidence appeared ({len(t.evidence_appeared):,}): {shown}")
    if t.evidence_disappeared:
        shown = ", ".join(
            f"{e.case_id} (−{', '.join(e.disappeared)})" for e in t.evidence_disappeared[:limit]
        )
        click.echo(f"evidence disappeared ({len(t.evidence_disappeared):,}): {shown}")
    for word, ids in (("became", t.became_no_evidence), ("stopped being", t.stopped_no_evidence)):
        if ids:
            click.echo(f"{word} no evidence ({len(ids):,}): {', '.join(ids[:limit])}")


def _print_domains(c: Comparison) -> None:
    """The per-domain table, Holm-adjusted, with significant changes flagged."""
    unit = c.unit
    click.echo(
        f"{'domain':<16}{'cases':>6}  {_pad(c.a.name, 12, '>')}  {_pad(c.b.name, 12, '>')}  {'diff':>13}  "
        f"{'moved (tested)':<22}  p (Holm)"
    )
    for d in c.by_domain:
        flag = (
            " ▼ significant regression"
            if d.significant_regression
            else (" ▲" if d.significant_improvement else "")
        )
        a = _pct(d.value_a) if unit == "points" else _num(d.value_a)
        b = _pct(d.value_b) if unit == "points" else _num(d.value_b)
        click.echo(
            f"{_pad(d.domain, 16)}{d.n_cases:>6,}  {a:>12}  {b:>12}  {points(d.difference, unit):>13}  "
            f"{d.moved_text:<22}  {_num(d.p_value, 3)} ({_num(d.p_adjusted, 3)}){flag}"
        )
    if c.by_domain:
        first = c.by_domain[0]
        test = first.test if first.test.endswith(" test") else f"{first.test} test"
        click.echo(f"  p: the {test} in each domain, Holm-adjusted over {len(c.by_domain):,} domains")
    if c.by_domain and c.by_domain[0].test != "exact McNemar":
        click.echo(
            "  moved: cases whose per-case pass rate (or mean score) rose or fell, the counts the exact sign "
            "test uses"
        )


def _print_all(m: MultiComparison) -> None:
    """Three or more arms: Cochran's Q, each arm's pass rate, then each pair (Holm-adjusted)."""
    click.echo(
        f"{m.experiment} (#{m.experiment_id}) on {m.dataset}: {len(m.arms):,} arms, {m.n_cases:,} case(s) graded in all"
    )
    if m.grader is not None:
        click.secho(grader_header(m.grader), bold=True)
    if m.cochran is not None:
        click.secho(
            f"Cochran's Q = {m.cochran.statistic:.3f}, df {m.cochran.df}, p = {_num(m.cochran.p_value, 3)} "
            f"({'the arms differ' if m.cochran.p_value < 0.05 else 'no difference detectable between the arms'})",
            bold=True,
        )
    for arm, est in m.pass_rates.items():
        click.echo(f"  {arm:<20}{_estimate(est)}")
    click.echo("")
    unit = "points" if m.outcome == "passed" else "score"
    for p in m.pairs:
        ci = (
            f"[{points(p.interval.low, unit)}, {points(p.interval.high, unit)}]"
            if p.interval is not None
            else ""
        )
        mark = "significant" if p.significant else "not significant"
        click.echo(
            f"{p.b} vs {p.a}: {points(p.difference, unit)} {ci}, {p.fixed:,} fixed, {p.regressed:,} regressed, "
            f"p = {_num(p.p_value, 3)}, Holm {_num(p.p_adjusted, 3)} ({mark})"
        )
    for note in m.notes:
        click.echo(f"note: {note}")


@cli.command("compare")
@click.argument("experiment")
@click.argument("other", required=False)
@click.option(
    "--arms",
    nargs=2,
    metavar="A B",
    help="The two arms: baseline then candidate (with two experiments: one of each).",
)
@click.option("--by-domain", is_flag=True, help="Also print the per-domain table (Holm-adjusted).")
@click.option("--cluster", type=click.Choice(["domain"]), help="Cluster-robust errors over domains.")
@click.option(
    "--outcome",
    type=click.Choice(["auto", "passed", "score"]),
    default="auto",
    show_default=True,
    help="What decides right or wrong.",
)
@click.option("--confidence", type=float, default=0.95, show_default=True, help="Coverage of the intervals.")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Significance level.")
@click.option(
    "--margin",
    type=click.FloatRange(min=0),
    default=0.02,
    show_default=True,
    help="Non-inferiority margin of the outcome (better / not worse / worse / inconclusive): 0.02 = 2 points.",
)
@click.option(
    "--power", type=float, default=0.8, show_default=True, help="Power for the minimum detectable effect."
)
@click.option("--iterations", type=int, default=10_000, show_default=True, help="Bootstrap replicates.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option(
    "--bootstrap/--no-bootstrap", default=None, help="Force or skip the bootstrap (default: by size)."
)
@click.option("--details/--no-details", default=None, help="Compare reasons and evidence (default: by size).")
@click.option("--limit", type=int, default=20, show_default=True, help="Case ids listed per list.")
@grader_option
@json_option
@pass_ctx
def compare_cmd(ctx: Context, experiment: str, other: str | None, arms: tuple[str, str] | None, by_domain: bool,
                cluster: str | None, outcome: str, confidence: float, alpha: float, margin: float, power: float,
                iterations: int, seed: int, bootstrap: bool | None, details: bool | None, limit: int,
                grader: str | None, as_json: bool) -> None:  # fmt: skip
    """Compare two arms, or two experiments on the same dataset: the verdict first, then the figures.

    \b
    Examples:
      abbench compare routing-v2 --arms control treatment
      abbench compare routing-v1 routing-v2            # each experiment's last arm
      abbench compare routing-v1 routing-v2 --arms treatment treatment --by-domain
      abbench compare demo                             # three or more arms and no decision: pair:
                                                       # Cochran's Q and each vs the first
      abbench compare routing-v2 --grader label_match  # as label_match alone graded the runs
    Exit code 1 when the experiments ran on different datasets.
    """
    backend = ctx.backend
    options: dict[str, Any] = dict(outcome=outcome, confidence=confidence, alpha=alpha, grader=grader)
    stats_options: dict[str, Any] = dict(
        power=power, iterations=iterations, seed=seed, bootstrap=bootstrap, details=details, cluster=cluster,
        margin=margin,
    )  # fmt: skip
    arm_a, arm_b = arms if arms else (None, None)
    if other is not None:
        c = backend.compare_experiments(experiment, other, arm_a, arm_b, **options, **stats_options)
        votes = vote_policy(backend.load_experiment(other))
    else:
        exp = backend.load_experiment(experiment)
        if not arms and len(exp.arms) > 2 and experiment_pair(exp) is None:
            m = backend.compare_all(exp.id, **options)
            emit(as_json, m.as_dict(), lambda: _print_all(m))
            return
        c = backend.compare_arms(exp.id, arm_a, arm_b, **options, **stats_options)
        votes = vote_policy(exp)
    data = c.as_dict()
    if votes is not None:
        data["votes"] = c.votes(**votes).as_dict()
    emit(as_json, data, lambda: _print_comparison(c, by_domain, limit, votes))
