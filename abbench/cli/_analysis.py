"""Commands for analysis: metrics, compare, gate, review, reviews, disagreements, case."""

from __future__ import annotations

import math
import sys
from functools import partial
from typing import Any

import click

from abbench._text import cells, fit
from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.cli._classes import CLASSES_INLINE, f1_lines
from abbench.cli._plan import pass_k_line
from abbench.formatting import NA, pct
from abbench.types import outcome_word


def _pad(text: object, width: int, align: str = "<") -> str:
    """`text` cut (at a word boundary) and padded to `width` terminal columns."""
    return fit(text, width, align=align)


def _cut(text: object, width: int, *, pad: bool = True) -> str:
    """`text` in at most `width` columns, marked with … when cut (and padded unless `pad` is False)."""
    return fit(text, width, pad=pad)


def _answer(run: Any) -> str:
    """A run's answer as a list shows it: the prediction, or why there is none."""
    if run.prediction is not None:
        return str(run.prediction)
    return f"({run.failure_type or outcome_word(run.state)})"


def _grade_text(name: str, grade: dict[str, Any]) -> str:
    """One grader's latest verdict on a run, as ``abbench case`` lists it."""
    if grade.get("status") != "ok":
        return f"{name} grading failed ({grade.get('error') or grade.get('status')})"
    passed = grade.get("passed")
    if passed is None and grade.get("verdict") is None and grade.get("score") is None:
        return f"{name} n/a"  # the grader does not apply here (a trajectory check on a no-skill arm)
    verdict = grade.get("verdict") or (
        outcome_word("pass" if passed else "fail") if passed is not None else "scored"
    )
    score = grade.get("score")
    text = f"{name} {verdict}"
    if score is not None and grade.get("kind") != "rule":
        text += f" {score:.3g}"
    comment = " ".join(str(grade.get("comment") or "").split())
    return text + (f" ({comment[:80]})" if comment else "")


_pct = partial(pct, missing=NA)


def _num(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.{digits}g}"


def _estimate(e, unit: str = "points") -> str:
    """``66.0% [52.2–77.6]`` for a pass rate, ``3.42 [3.1–3.7]`` for a score."""
    if e is None or e.value is None:
        return "n/a" + (f" ({e.reason})" if e is not None and e.reason else "")
    if unit == "points":
        text = _pct(e.value)
        if e.interval is not None:
            text += f" [{e.interval.low * 100:.1f}–{e.interval.high * 100:.1f}]"
        return text
    text = _num(e.value)
    if e.interval is not None:
        text += f" [{_num(e.interval.low)}–{_num(e.interval.high)}]"
    return text


def _cases(title: str, changes, limit: int) -> None:
    if not changes:
        return
    shown = ", ".join(
        f"{c.case_id} ({c.rates})" if c.a_graded > 1 or c.b_graded > 1 else c.case_id for c in changes[:limit]
    )
    more = f" … and {len(changes) - limit} more" if len(changes) > limit else ""
    click.echo(f"{title} ({len(changes)}): {shown}{more}")


def _print_comparison(c, by_domain: bool, limit: int, votes: dict[str, Any] | None = None) -> None:
    from abbench.compare import points

    unit = c.unit
    click.echo(f"{c.b.name} vs {c.a.name} on {c.dataset}: {c.n_cases} paired case(s), outcome {c.outcome}")
    click.secho(c.verdict.text, bold=True)
    click.echo(f"outcome: {c.verdict.outcome_text}")
    if votes is not None:
        click.echo(c.votes(**votes).text)
    click.echo("")
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
    if c.mcnemar is not None:
        click.echo(
            f"{'McNemar exact':<18}b = {c.mcnemar.b} regressed, c = {c.mcnemar.c} fixed, p = {_num(c.mcnemar.p_value, 3)}"
            f" (mid-p {_num(c.mcnemar_midp.p_value, 3)})"
        )
    if c.clustered is not None and c.difference is not None:
        click.echo(
            f"{'clustered SE':<18}{_num(c.clustered.se)} over {c.clustered.n_clusters} domains (plain {_num(c.difference.se)})"
        )
    if c.mde is not None:
        click.echo(
            f"{'detectable (MDE)':<18}{points(c.mde.delta, unit).lstrip('+')} with {c.power:.0%} power at {c.alpha:g}"
        )
    for u in c.usage:
        if u.difference is None:
            click.echo(f"{u.metric:<18}n/a ({u.reason})")
            continue
        rel = f" ({u.relative:+.1%})" if u.relative is not None else ""
        ci = f" [{_num(u.interval.low)}, {_num(u.interval.high)}]" if u.interval is not None else ""
        median = ""
        if u.median_a is not None and u.median_b is not None:
            mrel = f" ({u.median_relative:+.1%})" if u.median_relative is not None else ""
            median = f"; median {_num(u.median_a)} → {_num(u.median_b)}{mrel}"
        click.echo(
            f"{u.metric:<18}mean {_num(u.value_a)} → {_num(u.value_b)}: {u.difference:+.4g}{rel}{ci} ({u.method})"
            f"{median}"
        )
    for p in c.pairwise:
        click.echo(
            f"{'pairwise ' + p.grader:<18}{c.a.name} {p.wins_a}, {c.b.name} {p.wins_b}, ties {p.ties} "
            f"(sign test p = {_num(p.p_value, 3)})"
        )
    if c.review_agreement is not None and c.review_agreement.n:
        ra = c.review_agreement
        kappa = _num(ra.kappa.kappa, 3) if ra.kappa is not None else f"n/a ({ra.reason})"
        click.echo(
            f"{'judge vs people':<18}kappa {kappa} over {ra.n} reviewed run(s), agreement {_pct(ra.agreement)}"
        )
    click.echo("")
    for title, name in (("fixed", "fixed"), ("regressed", "regressed")):
        _cases(title, getattr(c, name), limit)
    click.echo(
        f"unchanged: {c.count('unchanged_right')} right in both, {c.count('unchanged_wrong')} wrong in both"
        if c.outcome == "passed"
        else f"unchanged: {c.count('unchanged')}"
    )
    if max(c.a.rounds, c.b.rounds) > 1:
        up, down = c.moved
        click.echo(f"per-case pass rates: {up} case(s) rose, {down} fell")
    if c.text is not None:
        t = c.text
        if t.reason_changed:
            shown = ", ".join(r.case_id for r in t.reason_changed[:limit])
            click.echo(f"same answer, new reason ({len(t.reason_changed)}): {shown}")
        if t.evidence_appeared:
            shown = ", ".join(f"{e.case_id} (+{', '.join(e.appeared)})" for e in t.evidence_appeared[:limit])
            click.echo(f"evidence appeared ({len(t.evidence_appeared)}): {shown}")
        if t.evidence_disappeared:
            shown = ", ".join(
                f"{e.case_id} (−{', '.join(e.disappeared)})" for e in t.evidence_disappeared[:limit]
            )
            click.echo(f"evidence disappeared ({len(t.evidence_disappeared)}): {shown}")
    for reason, ids in c.excluded.items():
        click.echo(
            f"left out, {reason}: {len(ids)} ({', '.join(ids[:limit])}{' …' if len(ids) > limit else ''})"
        )
    if by_domain and c.by_domain:
        click.echo("")
        click.echo(
            f"{'domain':<16}{'cases':>6}  {_pad(c.a.name, 12, '>')}  {_pad(c.b.name, 12, '>')}  {'diff':>13}  "
            "fixed/regr  p (Holm)"
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
                f"{_pad(d.domain, 16)}{d.n_cases:>6}  {a:>12}  {b:>12}  {points(d.difference, unit):>13}  "
                f"{d.fixed:>5}/{d.regressed:<4}  {_num(d.p_value, 3)} ({_num(d.p_adjusted, 3)}){flag}"
            )
    if c.notes:
        click.echo("")
        for note in c.notes:
            click.echo(f"note: {note}")


def _print_all(m) -> None:
    from abbench.compare import points

    click.echo(
        f"{m.experiment} (#{m.experiment_id}) on {m.dataset}: {len(m.arms)} arms, {m.n_cases} case(s) graded in all"
    )
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
            f"{p.b} vs {p.a}: {points(p.difference, unit)} {ci}, {p.fixed} fixed, {p.regressed} regressed, "
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
@json_option
@pass_ctx
def compare_cmd(ctx: Context, experiment: str, other: str | None, arms, by_domain: bool, cluster, outcome, confidence,
                alpha, margin, power, iterations, seed, bootstrap, details, limit: int, as_json: bool) -> None:  # fmt: skip
    """Compare two arms, or two experiments on the same dataset: the verdict first, then the figures.

    \b
    Examples:
      abbench compare routing-v2 --arms control treatment
      abbench compare routing-v1 routing-v2            # each experiment's last arm
      abbench compare routing-v1 routing-v2 --arms treatment treatment --by-domain
      abbench compare demo                             # three or more arms and no decision: pair:
                                                       # Cochran's Q and each vs the first
    Exit code 1 when the experiments ran on different datasets.
    """
    from abbench.compare import compare_all, compare_arms, compare_experiments, experiment_pair, vote_policy

    options: dict[str, Any] = dict(
        store=ctx.store, outcome=outcome, confidence=confidence, alpha=alpha,
    )  # fmt: skip
    stats_options = dict(
        power=power, iterations=iterations, seed=seed, bootstrap=bootstrap, details=details, cluster=cluster,
        margin=margin,
    )  # fmt: skip
    if other is not None:
        c = compare_experiments(
            experiment, other, arm_a=arms[0] if arms else None, arm_b=arms[1] if arms else None,
            **options, **stats_options,
        )  # fmt: skip
        votes = vote_policy(ctx.store.get_experiment(other))
    else:
        exp = ctx.store.get_experiment(experiment)
        if not arms and len(exp.arms) > 2 and experiment_pair(exp) is None:
            m = compare_all(exp, store=ctx.store, outcome=outcome, confidence=confidence, alpha=alpha)
            emit(as_json, m.as_dict(), lambda: _print_all(m))
            return
        c = compare_arms(
            exp, arms[0] if arms else None, arms[1] if arms else None, **options, **stats_options
        )
        votes = vote_policy(exp)
    data = c.as_dict()
    if votes is not None:
        data["votes"] = c.votes(**votes).as_dict()
    emit(as_json, data, lambda: _print_comparison(c, by_domain, limit, votes))


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
@json_option
@pass_ctx
def metrics_cmd(ctx: Context, experiment: str, arms, by_domain, by_round, confusion, classes, cluster,
                low_confidence, confidence, as_json) -> None:  # fmt: skip
    """Per-arm metrics: accuracy with intervals, failures, classes, stability, cost, latency, grounding.

    \b
    Example:
      abbench metrics routing-v2 --by-domain --confusion
    """
    from abbench.metrics import experiment_metrics

    m = experiment_metrics(
        experiment, store=ctx.store, arms=list(arms) or None, confidence=confidence,
        low_confidence=low_confidence, cluster=cluster,
    )  # fmt: skip

    def human() -> None:
        unit = "points" if m.outcome == "passed" else "score"
        click.echo(
            f"{m.experiment} (#{m.experiment_id}) on {m.dataset}: {m.rounds} round(s), outcome {m.outcome}"
        )
        click.echo("")
        for a in m.arms:
            c = a.counts
            click.secho(a.label, bold=True)
            main = a.accuracy if m.outcome == "passed" else a.score
            click.echo(
                f"  {'accuracy' if unit == 'points' else 'mean score':<20}{_estimate(main, unit)}  ({main.method}, {main.n_cases} cases)"
            )
            if m.outcome == "passed":
                click.echo(
                    f"  {'strict accuracy':<20}{_estimate(a.strict_accuracy)}  (execution and grading failures count as wrong)"
                )
            if a.score is not None and m.outcome == "passed":
                click.echo(f"  {'mean score':<20}{_estimate(a.score, 'score')}")
            failures = ", ".join(f"{k} {v}" for k, v in c.failure_types.items())
            click.echo(
                f"  {'runs':<20}{c.runs}: {c.passed} right, {c.failed} wrong, {c.execution_failed} execution failed"
                f"{' (' + failures + ')' if failures else ''}, {c.grading_failed} grading failed, {c.cancelled} cancelled, "
                f"{c.unfinished} unfinished"
            )
            if a.classes is not None:
                for line in f1_lines(a.classes, full=classes):
                    click.echo(line)
                if a.classes.confusion.unknown_predictions:
                    odd = ", ".join(
                        f"{k!r} ×{v}" for k, v in list(a.classes.confusion.unknown_predictions.items())[:5]
                    )
                    click.echo(f"  {'outside the labels':<20}{odd} (each a class with F1 0 in the macro)")
                if a.classes.absent_note:
                    click.echo(f"  {'labels left out':<20}{a.classes.absent_note}")
            elif a.classes_reason:
                click.echo(f"  {'classes':<20}n/a ({a.classes_reason})")
            s = a.stability
            if s.flip_rate is not None:
                click.echo(
                    f"  {'stability':<20}flip rate {_pct(s.flip_rate)} of {s.n_cases} cases, agreement {_pct(s.agreement)}, "
                    + (
                        f"{len(s.flaky)} flaky"
                        if s.flaky_rate is not None
                        else "flaky n/a (no right/wrong verdicts)"
                    )
                    + (f" ({', '.join(s.flaky[:5])}{' …' if len(s.flaky) > 5 else ''})" if s.flaky else "")
                )
            else:
                click.echo(f"  {'stability':<20}n/a ({s.reason})")
            if line := pass_k_line(s):
                click.echo(f"  {'over k rounds':<20}{line}")
            u = a.usage
            judges = f", judges {_num(u.judge_cost)}" if u.judge_cost else ""
            if u.total_cost is None:
                click.echo(f"  {'cost':<20}not reported by the agent{judges}")
            else:
                click.echo(
                    f"  {'cost':<20}mean {_num(u.cost.mean)}, total {_num(u.total_cost)}, per correct answer "
                    f"{_num(u.cost_per_correct)}{judges}"
                )
            if u.failed_attempts or u.cached_attempts:
                failed = (
                    f", execution failed on {u.failed_attempts}"
                    + (f" ({_num(u.spent_on_failures)})" if u.spent_on_failures is not None else "")
                    if u.failed_attempts
                    else ""
                )
                saved = (
                    f"; saved {_num(u.saved)} by the response cache ({u.cached_attempts} attempts cached)"
                    if u.cached_attempts
                    else ""
                )
                click.echo(
                    f"  {'spent':<20}{_num(u.spent) if u.spent is not None else 'cost not reported'} over "
                    f"{u.attempts} attempts{failed}{saved}"
                )
            click.echo(
                f"  {'latency ms':<20}mean {_num(u.latency_ms.mean)}, p50 {_num(u.latency_ms.p50)}, p95 {_num(u.latency_ms.p95)}"
            )
            click.echo(
                f"  {'tokens':<20}mean {_num(u.tokens.mean)}, p50 {_num(u.tokens.p50)}, p95 {_num(u.tokens.p95)}"
                if u.tokens.n
                else f"  {'tokens':<20}not reported by the agent"
            )
            g = a.grounding
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
            for j in a.judges:
                # a long grader and dimension name still leaves a space before the figure
                click.echo(
                    f"  {'judge ' + j.grader + ' ' + j.dimension:<19} {_estimate(j.estimate, 'score')}"
                )
            if confusion and a.classes is not None:
                cm = a.classes.confusion
                click.echo("  confusion (rows gold, columns predicted):")
                click.echo("    " + " " * 14 + "".join(" " + _pad(col, 10, ">") for col in cm.columns))
                for label, row in zip(cm.labels, cm.counts, strict=True):
                    click.echo(f"    {_pad(label, 14)}" + "".join(f"{n:>11}" for n in row))
            click.echo("")
        if m.judging:
            # grading cost is the judge's: a pairwise judge compares two arms and is charged to neither
            click.echo("judging (apart from the arms' execution cost):")
            for j in m.judging:
                whose = " vs ".join(j.arms) if j.kind == "pairwise" else ", ".join(j.arms)
                click.echo(
                    f"  {_pad(j.grader, 20)}{j.kind:<9} {_num(j.cost)} over {j.grades} grades ({whose})"
                )
            click.echo("")
        if by_domain:
            click.echo("per domain:")
            for r in m.by_domain:
                click.echo(
                    f"  {_pad(r.arm, 14)}{_pad(r.group, 18)}{_estimate(r.accuracy, unit):<28}{r.runs} runs, "
                    f"{r.failures} execution or grading failed"
                )
        if by_round:
            click.echo("per round:")
            for r in m.by_round:
                click.echo(
                    f"  {_pad(r.arm, 14)}round {r.group:<12}{_estimate(r.accuracy, unit):<28}{r.runs} runs, "
                    f"{r.failures} execution or grading failed"
                )
        for note in m.notes:
            click.echo(f"note: {note}")

    emit(as_json, m.as_dict(), human)


@cli.command("gate")
@click.argument("experiment", required=False)
@click.option(
    "--rules",
    "rules_file",
    type=click.Path(dir_okay=False),
    help="Gate file (JSON or YAML); default: the experiment's own gate, else the three dimensions.",
)
@click.option(
    "--arms",
    nargs=2,
    metavar="A B",
    help="Baseline and candidate arms (default: the gate file's pair, else the experiment's decision:).",
)
@click.option(
    "--vs",
    "baseline",
    metavar="EXP",
    help="A baseline experiment on the same dataset (EXPERIMENT is the candidate).",
)
@click.option("--cluster", type=click.Choice(["domain"]), help="Cluster-robust intervals over domains.")
@click.option(
    "--fail-on-inconclusive/--allow-inconclusive",
    default=True,
    show_default=True,
    help="Exit 1 when the gate is inconclusive (the default: no evidence is no reason to ship); "
    "--allow-inconclusive exits 0 then, e.g. for an advisory run.",
)
@click.option("--list-metrics", is_flag=True, help="List the metrics a rule may use, and exit.")
@json_option
@pass_ctx
def gate_cmd(ctx: Context, experiment, rules_file, arms, baseline, cluster, fail_on_inconclusive, list_metrics,
             as_json) -> None:  # fmt: skip
    """Apply a gate: the pair, the outcome and its coverage first, then each rule and the three dimensions.

    \b
    The pair is --arms, else the gate file's baseline:/candidate:, else the experiment's decision:; two
    arms need no name (first is the baseline); three or more and no name is refused (exit 2).
    Outcomes: pass, pass with warnings (exit 0); block, incomplete (fewer runs graded than the gate's
    min_coverage, default all) (exit 1); inconclusive — a block rule the evidence does not settle
    (non_inferior with an interval straddling its margin) and none blocking, or no rule assessed at all —
    exit 1 with --fail-on-inconclusive (the default), 0 with --allow-inconclusive. A usage error exits 2.

    \b
    A gate file (YAML or JSON) lists rules; warnings never block:
      rules:
        - {metric: non_inferior, margin: 0.02}      # not more than 2 points worse
        - {metric: regressed, op: "<=", value: 2}
        - {metric: p95_latency_ms, op: "<=", value: 8000, severity: warn}
        - "no_domain_significant_regression == true"
    \b
    Examples:
      abbench gate routing-v2 --rules gate.yaml
      abbench gate routing-v2 --vs routing-v1
    """
    from abbench.gate import METRICS, evaluate_gate, metric_names

    if list_metrics:
        rows = [
            {"metric": name, "scope": m.scope, "kind": m.kind, "description": m.description}
            for name, m in zip(metric_names(), METRICS.values(), strict=True)
        ]

        def listing() -> None:
            click.echo(
                "Unprefixed arm metrics are about the candidate (B); write a.NAME, b.NAME or ARM.NAME for others."
            )
            for scope in ("comparison", "arm", "decision"):
                click.secho(f"{scope} metrics:", bold=True)
                for r in rows:
                    if r["scope"] == scope:
                        click.echo(f"  {r['metric']:<34}{r['kind']:<8}{r['description']}")

        emit(as_json, rows, listing)
        return
    if experiment is None:
        raise click.UsageError("give the EXPERIMENT to gate (or --list-metrics)")
    result = evaluate_gate(
        experiment, rules_file, store=ctx.store, arms=arms or None, vs=baseline, cluster=cluster
    )

    def human() -> None:
        colour = {"pass": "green", "pass with warnings": "yellow"}.get(result.outcome, "red")
        # The pair first, then the outcome and the coverage it rests on: nobody reads a PASS without its pair.
        click.secho(
            f"{result.pair_text}: GATE {result.outcome.upper()} — {result.coverage.text}",
            fg=colour,
            bold=True,
        )
        click.echo(
            f"  {result.experiment} (#{result.experiment_id}); pair named by {result.pair.named_by}; "
            f"rules: {result.source}"
        )
        if result.outcome != "pass":
            click.echo(f"  {result.outcome}: {result.reason}")
        for r in result.rules:
            if r.status == "pass":
                mark = "✓"
            elif r.blocks:
                mark = "✗"
            elif r.status == "missing" and r.rule.allow_missing:
                mark = "·"
            else:
                mark = "!"
            severity = "" if r.rule.severity == "block" else " [warn]"
            click.echo(f"  {mark} {r.message}{severity}")
        click.echo(f"decision ({result.pair_text}):")
        for d in result.decision.dimensions:
            # a summary that opens with its own conclusion ("not assessed: ...") is not told twice
            summary = d.summary.removeprefix(f"{d.conclusion}: ") if d.conclusion else d.summary
            click.echo(f"  {d.name:<11}{d.conclusion:<13}{summary}")
        if result.votes is not None:
            click.echo(f"  {result.votes.text}")
        if result.verdict:
            click.echo(f"verdict: {result.verdict}")
        if result.verdict_outcome:
            click.echo(f"outcome: {result.verdict_outcome}")
        for note in result.notes:
            click.echo(f"note: {note}")
        if result.outcome == "inconclusive" and not fail_on_inconclusive:
            click.echo("note: inconclusive allowed (--allow-inconclusive): exit 0")

    emit(as_json, result.as_dict(), human)
    if result.outcome == "inconclusive" and not fail_on_inconclusive:
        return
    if not result.passed:
        sys.exit(1)


@cli.command("review")
@click.argument("experiment")
@click.argument("case_id")
@click.option(
    "--verdict",
    required=True,
    metavar="VERDICT",
    help="gold_correct, model_correct, ambiguous_standard, missing_capability_info or unsure.",
)
@click.option("--note", help="What you saw.")
@click.option("--arm", help="The arm whose answer you reviewed (default: the case as a whole).")
@click.option("--run", "run_id", type=int, help="The run you looked at.")
@click.option("--reviewer", help="Who reviewed (default: the OS user or $ABBENCH_USER).")
@json_option
@pass_ctx
def review_cmd(ctx: Context, experiment, case_id, verdict, note, arm, run_id, reviewer, as_json) -> None:
    """Record a review of a case (appended; the latest per case and arm is the one shown).

    \b
    Example:
      abbench review routing-v2 c017 --verdict gold_correct --arm treatment --note "空调 is slow, gold is right"
    """
    from abbench.review import add_review

    r = add_review(
        experiment, case_id, verdict, note=note, arm=arm, run_id=run_id, reviewer=reviewer, store=ctx.store
    )
    emit(
        as_json,
        r.as_dict(),
        f"review #{r.id} saved: {r.case_id} {r.arm or '(case)'} → {r.verdict} by {r.reviewer}",
    )


@cli.command("reviews")
@click.argument("experiment")
@click.option("--history", is_flag=True, help="Every review, not only the latest per case and arm.")
@click.option("--case", "case_id", help="Only this case.")
@click.option("--arm", help="Only this arm.")
@json_option
@pass_ctx
def reviews_cmd(ctx: Context, experiment, history, case_id, arm, as_json) -> None:
    """List reviews (the latest per case and arm), with judge-versus-people agreement."""
    from abbench.review import judge_agreement, reviews

    rows = reviews(experiment, store=ctx.store, latest=not history, case_id=case_id, arm=arm)
    agreement = judge_agreement(experiment, store=ctx.store)

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

    emit(as_json, {"reviews": [r.as_dict() for r in rows], "agreement": agreement.as_dict()}, human)


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
@click.option("--threshold", type=float, default=0.5, show_default=True, help="Low-confidence threshold.")
@click.option("--limit", type=int, help="At most this many cases.")
@json_option
@pass_ctx
def disagreements_cmd(ctx: Context, experiment, kinds, arms, threshold, limit, as_json) -> None:
    """List cases worth a review: gold vs prediction, low confidence, no evidence, flaky, arms disagreeing."""
    from abbench.review import disagreements

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
            by_arm: dict[str, list] = {}
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
            click.echo(f"{'':<{id_width}}{_cut(' '.join(str(d.case.input).split()), 100, pad=False)}")
        more = f" (--limit {limit}: there may be more)" if limit is not None and len(found) >= limit else ""
        click.echo(f"{len(found)} case(s){more}; answers per arm are by round: round 0/round 1/…")

    emit(as_json, [d.as_dict() for d in found], human)


def _attempt_text(a) -> str:
    """One line per execution attempt: how it ended and what it spent (and where its transcript is)."""
    text = a.summary
    if a.transcript_path and a.outcome != "executed":
        text += f"; transcript: {a.transcript_path}"
    return text


@cli.command("case")
@click.argument("experiment")
@click.argument("case_id")
@json_option
@pass_ctx
def case_cmd(ctx: Context, experiment, case_id, as_json) -> None:
    """Show one case in full: input, gold, every run's answer, reason, evidence, tool calls, reviews."""
    from abbench.review import case_detail

    d = case_detail(experiment, case_id, store=ctx.store)

    def human() -> None:
        c = d.case
        click.secho(
            f"{c.case_id} ({c.domain or 'no domain'}){'  ' + ', '.join(d.kinds) if d.kinds else ''}",
            bold=True,
        )
        click.echo(f"input: {c.input}")
        click.echo(f"gold:  {c.expected}")
        for r in d.runs:
            verdict = {"pass": "✓", "fail": "✗"}.get(r.outcome) or outcome_word(r.outcome)
            conf = f" conf {r.confidence:.2f}" if r.confidence is not None else ""
            click.echo(f"  {r.arm} round {r.round}: {_answer(r)} {verdict}{conf}  {r.reason or ''}")
            if r.error:
                click.echo(f"    error: {r.error}")
            if r.grades:
                # a run is right only when every grader says so: say which one did not
                click.echo("    grades: " + " · ".join(_grade_text(n, g) for n, g in r.grades.items()))
            for e in r.evidence:
                where = (
                    f" → {e.resolved}"
                    if e.found and e.resolved != e.ref
                    else ("" if e.found else " (not found in the skill)")
                )
                click.echo(f"    cites {e.ref}{where}")
            if r.sections_read or r.files_read:
                click.echo(f"    read: {', '.join(r.sections_read or r.files_read)}")
            for call in r.calls or ():
                click.echo(f"    tool {call.name}({call.arguments})")
            if r.transcript_path:
                click.echo(f"    transcript: {r.transcript_path}")
            attempts = r.attempts or ()
            if len(attempts) > 1 or any(a.outcome != "executed" or a.cached for a in attempts):
                # what every attempt spent: a failed one (out of turns, unreadable, timed out) cost money too
                for a in attempts:
                    click.echo(f"    {_attempt_text(a)}")
                    for call in a.tool_calls if a.outcome != "executed" else ():
                        click.echo(f"      tool {call.name}({call.arguments})")
        for rev in d.history:
            click.echo(
                f"  review #{rev.id} {rev.created_at} {rev.arm or '(case)'}: {rev.verdict} {rev.note or ''}"
            )

    emit(as_json, d.as_dict(), human)
