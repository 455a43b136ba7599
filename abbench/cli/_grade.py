"""Commands for grades: grade (ordinary grading, optionally adding graders), grades, judge-report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from abbench._utf8 import read_utf8
from abbench._yaml import load_yaml
from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.cli._progress import print_summary, with_progress
from abbench.formatting import judge_cost as _judge_cost, money_fixed as _money, partly_known as _partly_known
from abbench.graders import describe_bias, describe_verbosity
from abbench.metrics import judge_report
from abbench.runner import grade_experiment
from abbench.types import GradeStatus, RunState, outcome_word


def _grader_specs(texts: tuple[str, ...]) -> list[Any]:
    """Grader definitions from the command line: a name, module:function, inline YAML, or a YAML/JSON file."""
    import yaml

    specs: list[Any] = []
    for text in texts:
        path = Path(text)
        if path.suffix.lower() in (".yaml", ".yml", ".json") and path.is_file():
            try:
                data = load_yaml(read_utf8(path))
            except yaml.YAMLError as exc:
                raise click.BadParameter(
                    f"{text}: not valid YAML/JSON ({exc})", param_hint="--add-grader"
                ) from None
            specs.extend(data if isinstance(data, list) else [data])
            continue
        try:
            data = load_yaml(text)
        except yaml.YAMLError as exc:
            raise click.BadParameter(
                f"{text!r} is neither a grader name nor valid inline YAML ({exc})", param_hint="--add-grader"
            ) from None
        if not isinstance(data, (str, dict)):
            raise click.BadParameter(
                f"{text!r}: give a grader name, module:function, or a mapping such as "
                "'{type: regex, pattern: \"^fast$\"}'",
                param_hint="--add-grader",
            )
        specs.append(data)
    return specs


@cli.command("grade")
@click.argument("experiment")
@click.option(
    "--add-grader",
    "add",
    multiple=True,
    metavar="SPEC",
    help="Add a grader first: a name, module:function, inline YAML or a YAML file (repeatable).",
)
@click.option("--concurrency", type=int, help="Gradings in flight at once (overrides the definition).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@json_option
@pass_ctx
def grade_cmd(
    ctx: Context, experiment: str, add: tuple[str, ...], concurrency: int | None, quiet: bool, as_json: bool
) -> None:
    """Grade what the graders have not graded yet (no agent runs).

    Only stored executions are graded; the agent is never run. Runs with nothing new to grade are left as they are. Added graders are recorded in the
    experiment's definition; their grades join the experiment's one batch. To grade again what is
    already graded, use `abbench regrade`.

    \b
    Examples:
      abbench grade routing-v2 --add-grader read_skill
      abbench grade routing-v2 --add-grader '{type: llm_judge, model: gpt-4o-mini, rubric: {correctness: Is it right?}}'
      abbench grade routing-v2 --add-grader judges.yaml
    """
    graders = _grader_specs(add) or None
    summary = with_progress(
        quiet or as_json,
        lambda observers: grade_experiment(
            experiment, graders=graders, store=ctx.store, observers=observers, concurrency=concurrency
        ),
    )

    def human() -> None:
        print_summary(summary)
        extra = [f"{summary.up_to_date} runs up to date (nothing new to grade)"]
        if summary.pairs_judged or summary.pairs_failed:
            extra.append(f"{summary.pairs_judged} pairs judged, {summary.pairs_failed} grading failed")
        click.echo("  " + "; ".join(extra))

    emit(as_json, summary.as_dict(), human)


_SHOWN_COLUMNS = (
    "run_id",
    "other_run_id",
    "grader",
    "status",
    "passed",
    "score",
    "verdict",
    "comment",
    "error",
)


@cli.command("grades")
@click.argument("experiment")
@click.option("--grader", help="Only this grader.")
@click.option("--run", "run_id", type=int, help="Only this run (with --history: its every grade).")
@click.option(
    "--history", is_flag=True, help="Every grade, oldest first, not just the latest per (run, grader)."
)
@click.option("--limit", type=int, default=50, show_default=True, help="Rows shown in text output (0: all).")
@json_option
@pass_ctx
def grades_cmd(
    ctx: Context,
    experiment: str,
    grader: str | None,
    run_id: int | None,
    history: bool,
    limit: int,
    as_json: bool,
) -> None:
    """Show grades: latest per (run, grader), or all (--history).

    \b
    Examples:
      abbench grades routing-v2 --grader llm_judge
      abbench grades routing-v2 --run 17 --history
    """
    store = ctx.store
    exp = store.experiments.get(experiment)
    rows = store.grades.records(exp.id, grader=grader, latest=not history)
    if run_id is not None:
        rows = [r for r in rows if run_id in (r.run_id, r.other_run_id)]

    def human() -> None:
        if not rows:
            click.echo(f"no grades for {exp.ref}" + (f" by {grader}" if grader else "") + " yet")
            return
        shown = rows if limit <= 0 else rows[-limit:]
        for r in shown:
            run = f"{r.run_id}" + (f"~{r.other_run_id}" if r.other_run_id else "")
            verdict = r.verdict or (
                "-" if r.passed is None else outcome_word(RunState.PASS if r.passed else RunState.FAIL)
            )
            score = "" if r.score is None else f"{r.score:.3g}"
            what = r.error if r.status == GradeStatus.ERROR else (r.comment or "")
            what = " ".join(str(what).split())
            click.echo(
                f"{r.created_at}  run {run:<9} {r.grader:<18} {r.status:<5} {verdict:<5} {score:<6} "
                f"{what[:90]}"
            )
        if len(shown) < len(rows):
            click.echo(f"… {len(rows) - len(shown)} earlier rows not shown (--limit 0 shows all)")

    emit(
        as_json,
        [{k: getattr(r, k) for k in (*_SHOWN_COLUMNS, "dimensions", "details", "created_at")} for r in rows],
        human,
    )


@cli.command("judge-report")
@click.argument("experiment")
@click.option("--confidence", type=float, default=0.95, show_default=True, help="Of the intervals.")
@json_option
@pass_ctx
def judge_report_cmd(ctx: Context, experiment: str, confidence: float, as_json: bool) -> None:
    """Judges' position and verbosity bias, and judge cost apart from agent cost.

    The position bias of each pairwise judge is the first-slot win rate with a Wilson interval (0.5
    is unbiased), and, for pairs judged in both orders, the flip rate. Its verbosity bias is the win
    rate of the longer answer, on pairs whose lengths differ by 20% or more. Judge cost counts every grade
    written, re-grades included. Reading never grades anything.

    \b
    Example:
      abbench judge-report routing-judged
    """
    report = judge_report(experiment, store=ctx.store, confidence=confidence)

    def human() -> None:
        batches = f"{report.batches} batch" + ("" if report.batches == 1 else "es")
        click.echo(
            f"{report.experiment} (#{report.experiment_id}): grade batch {report.batch_id or '-'} ({batches})"
        )
        click.echo("judge cost (every grade written, re-grades included)")
        if not report.judge_costs:
            click.echo("  no judge grades yet")
        for c in report.judge_costs:
            saved = f" (cache saved {_money(c.saved)})" if c.saved else ""
            click.echo(
                f"  {c.grader:<20} {c.kind:<9} {c.grades:>6} grades {c.errors:>4} grading failed  "
                f"{_judge_cost(c, cash=_money)}{saved}  tokens {c.input_tokens}/{c.output_tokens}  "
                f"{', '.join(c.models) or '-'}"
            )
        agent = report.agent
        click.echo(
            f"  judges {_judges_total(report)} · agents {_agents_total(report.agent)} "
            f"({agent['executions']} executions, tokens {agent['input_tokens']}/{agent['output_tokens']})"
        )
        for warning in report.self_judging:
            click.echo(f"judge ≠ agent: {warning.message}")
        click.echo("position bias")
        if not report.position_bias:
            click.echo("  no pairwise grades yet")
        for bias in report.position_bias:
            click.echo("  " + describe_bias(bias).replace("\n", "\n  "))
        if report.verbosity_bias:
            click.echo("verbosity bias (does the judge prefer the longer answer?)")
        for verbose in report.verbosity_bias:
            click.echo(f"  {verbose.grader}:\n  " + describe_verbosity(verbose).replace("\n", "\n  "))

    emit(as_json, report.as_dict(), human)


def _judges_total(report: Any) -> str:
    """The judges' known cost, and how many of their calls had no price (never a bare $0 for those)."""
    unknown = sum(c.unknown_cost for c in report.judge_costs)
    return _partly_known(report.judge_cost, unknown, "calls without a price", cash=_money)


def _agents_total(agent: dict[str, Any]) -> str:
    """What the agents' attempts cost, and how many had an unknown cost (never a bare $0 for those)."""
    unknown = int(agent.get("unknown_cost") or 0)
    return _partly_known(agent.get("cost"), unknown, "attempts of unknown cost", cash=_money)
