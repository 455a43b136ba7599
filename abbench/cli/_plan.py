"""Commands for planning: how many cases an experiment needs, and how many more a running one does."""

from __future__ import annotations

import click

from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.compare import plan_from_experiment
from abbench.stats import plan_experiment


@cli.command("plan")
@click.argument("experiment", required=False)
@click.option("--baseline", type=float, help="Arm A's expected pass rate, e.g. 0.85 (EXPERIMENT: observed).")
@click.option("--effect", type=float, help="The difference worth detecting, b − a, e.g. 0.05 for 5 points.")
@click.option("--rounds", type=float, help="Rounds per case planned (default 1; EXPERIMENT: its rounds).")
@click.option("--discordance", type=float, help="Share of cases the arms answer differently (one right).")
@click.option("--from", "source", metavar="EXP", help="Take discordance and variances from this experiment.")
@click.option("--arms", nargs=2, metavar="A B", help="The pair of EXPERIMENT / --from (default: its pair).")
@click.option("--power", type=float, default=0.8, show_default=True, help="Desired power.")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Two-sided significance level.")
@json_option
@pass_ctx
def plan_cmd(ctx: Context, experiment: str | None, baseline: float | None, effect: float | None,
             rounds: float | None, discordance: float | None, source: str | None, arms: tuple[str, str] | None,
             power: float, alpha: float, as_json: bool) -> None:  # fmt: skip
    """Cases needed to detect a difference between two arms run on the same cases.

    Without EXPERIMENT: a plan for a new experiment (McNemar's test on the cases the arms answer
    differently; Connor 1987). With --from, the discordance and round-to-round variances of an earlier
    experiment. With EXPERIMENT (running or finished): how many more cases it needs.

    \b
    Examples:
      abbench plan --baseline 0.85 --effect 0.05
      abbench plan --baseline 0.85 --effect 0.05 --discordance 0.12
      abbench plan --baseline 0.85 --effect 0.05 --rounds 3 --from routing-v1
      abbench plan routing-v2 --effect 0.03
    """
    a, b = arms if arms else (None, None)
    if experiment is not None:
        if source is not None or discordance is not None:
            raise click.UsageError(
                "with EXPERIMENT the plan uses its own figures: drop --from / --discordance"
            )
        plan = plan_from_experiment(
            experiment, effect, a=a, b=b, baseline=baseline, rounds=rounds, power=power, alpha=alpha,
            store=ctx.store,
        )  # fmt: skip
    else:
        if effect is None or (baseline is None and source is None):
            raise click.UsageError(
                "give --baseline and --effect (e.g. --baseline 0.85 --effect 0.05), or EXPERIMENT"
            )
        if source is not None and discordance is not None:
            raise click.UsageError("--discordance and --from both give the discordance: use one")
        if source is not None:
            plan = plan_from_experiment(
                source, effect, a=a, b=b, baseline=baseline, rounds=rounds, power=power, alpha=alpha,
                more=False, store=ctx.store,
            )  # fmt: skip
        else:
            assert baseline is not None  # without --from, --baseline was required above
            plan = plan_experiment(
                baseline, effect, rounds=1 if rounds is None else rounds, discordance=discordance,
                power=power, alpha=alpha,
            )  # fmt: skip

    def human() -> None:
        click.echo(plan.text)
        click.echo(f"  from {plan.source}; method {plan.method}, {plan.rounds:g} round(s) per case")
        for note in plan.notes:
            click.echo(f"  note: {note}")

    emit(as_json, {**plan.as_dict(), "more": plan.more, "text": plan.text}, human)
