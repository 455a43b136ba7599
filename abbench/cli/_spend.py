"""Commands for spend: estimate what an experiment will cost, and resume it (with a higher budget)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.cli._progress import print_failures, print_summary, with_progress
from abbench.formatting import duration as _duration, money_trimmed as money
from abbench.runner import PauseReason, estimate_experiment, resume_experiment
from abbench.types import ExperimentStatus

if TYPE_CHECKING:
    from abbench.runner import Estimate, Projection
    from abbench.store import Experiment


@cli.command("resume")
@click.argument("experiment")
@click.option("--budget", type=float, metavar="MONEY", help="Raise the cost limit (budget.max_cost) to this.")
@click.option("--max-tokens", type=int, help="Raise the token limit (budget.max_tokens) to this.")
@click.option("--arm", help="Raise this arm's budget instead of the experiment's.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@json_option
@pass_ctx
def resume_cmd(
    ctx: Context,
    experiment: str,
    budget: float | None,
    max_tokens: int | None,
    arm: str | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Resume a paused experiment; with --budget / --max-tokens, raise its budget and go on.

    A process still running it goes on there. An experiment paused by its budget has no process
    left: with a higher budget, this command runs the rest itself, as `abbench run` does.

    \b
    Examples:
      abbench resume routing-v2
      abbench resume routing-v2 --budget 8.00
      abbench resume routing-v2 --arm treatment --max-tokens 4000000
    """
    backend = ctx.backend
    exp = backend.load_experiment(experiment)
    handle = backend.command_handle(exp)
    raising = budget is not None or max_tokens is not None
    reason = PauseReason.from_dict(exp.pause_reason) if exp.status == ExperimentStatus.PAUSED else None
    if arm is not None and not raising:
        raise click.UsageError("--arm says whose budget to raise: give --budget and/or --max-tokens too")
    if not raising and reason is not None and not exp.runner_alive:
        # going on as it is would stop again at once
        emit(
            as_json,
            {"experiment": exp.name, "resumed": False, "pause_reason": reason.as_dict()},
            f"{exp.ref} is paused: {reason.text}; raise the budget to go on: {reason.hint(handle).cli}",
        )
        return
    if not raising:
        alive = backend.resume_experiment(exp.id)
        emit(
            as_json,
            {"experiment": exp.name, "resumed": True, "running_elsewhere": alive},
            f"resume asked for {exp.ref}"
            + ("" if alive else f"; no process is running it: continue with `abbench run {handle}`"),
        )
        return
    if ctx.server is not None:  # the server's pool runs the rest, never this process
        _resume_on_server(ctx, exp, budget, max_tokens, arm, as_json)
        return
    result = with_progress(
        quiet or as_json,
        lambda observers: resume_experiment(
            exp.id, store=ctx.store, budget=budget, max_tokens=max_tokens, arm=arm, run=True,
            observers=observers,
        ),
    )  # fmt: skip
    limits = ctx.store.experiments.get(exp.id).spec.as_json()
    if arm is not None:
        limits = limits["arms"][arm]
    said = _limits_text(limits.get("budget") or {})
    whose = f"arm {arm}'s budget" if arm else "budget"
    if isinstance(result, bool):  # True: a process is running it (with run=True, never False)
        emit(
            as_json,
            {"experiment": exp.name, "resumed": True, "running_elsewhere": True, "budget": limits["budget"]},
            f"{whose} of {exp.ref} now {said}; resume asked of the process running it",
        )
        return

    def human() -> None:
        click.echo(f"{whose} of {exp.ref} now {said}")
        print_summary(result, handle)
        print_failures(ctx.backend, exp)

    emit(as_json, result.as_dict(), human)


def _resume_on_server(
    ctx: Context,
    exp: Experiment,
    budget: float | None,
    max_tokens: int | None,
    arm: str | None,
    as_json: bool,
) -> None:
    """`resume --budget` with ``--server``: the new cost limit, and the server goes on (its pool)."""
    if max_tokens is not None or arm is not None:
        raise click.UsageError(
            "with --server, resume raises the experiment's cost limit (--budget) only; --max-tokens and "
            "--arm work on a local store"
        )
    ctx.backend.resume_experiment(exp.id, budget=budget)
    limits = ctx.backend.load_experiment(exp.id).definition.get("budget") or {}
    emit(
        as_json,
        {"experiment": exp.name, "resumed": True, "running_elsewhere": True, "budget": limits},
        f"budget of {exp.ref} now {_limits_text(limits)}; resume asked of the server",
    )


def _limits_text(limits: dict[str, Any]) -> str:
    parts = []
    if limits.get("max_cost") is not None:
        parts.append(money(limits["max_cost"]))
    if limits.get("max_tokens") is not None:
        parts.append(f"{limits['max_tokens']:,} tokens")
    return " and ".join(parts) or "none"


@cli.command("estimate")
@click.argument("experiment")
@click.option("--pilot", default=5, show_default=True, help="Cases per arm the pilot runs.")
@click.option(
    "--from",
    "from_experiment",
    metavar="EXPERIMENT",
    help="Take the per-run figures from this earlier experiment on the same arms (nothing runs).",
)
@click.option("--confidence", default=0.95, show_default=True, help="The interval's level.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar for the pilot.")
@json_option
@pass_ctx
def estimate_cmd(
    ctx: Context,
    experiment: str,
    pilot: int,
    from_experiment: str | None,
    confidence: float,
    quiet: bool,
    as_json: bool,
) -> None:
    """Project what an experiment will cost — money, tokens, wall time — per arm, before running it.

    Runs a pilot of --pilot cases per arm first (ordinary runs of the experiment: `abbench run`
    reuses them, never runs them again), or reads the figures of an earlier experiment (--from).
    Warns when a budget would be reached. A cost without prices is unknown, never $0.

    \b
    Examples:
      abbench estimate routing-v2
      abbench estimate routing-v3 --from routing-v2
    """
    est = with_progress(
        quiet or as_json,
        lambda observers: estimate_experiment(
            experiment, store=ctx.store, pilot=pilot, from_experiment=from_experiment, confidence=confidence,
            observers=observers,
        ),
    )  # fmt: skip
    emit(as_json, est.as_dict(), lambda: _print_estimate(est))


def _print_estimate(est: Estimate) -> None:
    level = f"{100 * est.confidence:g} %"
    ran = f"; the pilot ran {est.pilot_runs:,} runs" if est.pilot_runs else ""
    click.echo(f"{est.experiment} (#{est.experiment_id}): estimate from the {est.source}{ran}")
    click.echo(f"  interval: {level} {est.method}")
    click.echo(f"  {'arm':<14} {'runs':>11}  {'cost':<30} {'tokens':<34} agent time")
    for a in est.arms:
        cost = "unknown" if a.cost_unknown else _projection(a.cost, money)
        click.echo(
            f"  {a.arm:<14} {a.runs - a.left:>5}/{a.runs:<5}  {cost:<30} "
            f"{_projection(a.tokens, _tokens):<34} {_projection(a.agent_s, _duration)}"
        )
    unknown = [a for a in est.arms if a.cost_unknown]
    total_cost = "unknown" if unknown else _projection(est.cost, money)
    click.echo(
        f"  {'all':<14} {'':>11}  {total_cost:<30} {_projection(est.tokens, _tokens):<34} "
        f"wall {_projection(est.wall_s, _duration)} at concurrency {est.concurrency}"
    )
    for note in est.warnings:
        click.echo(f"warning: {note}")


def _projection(p: Projection | None, fmt: Callable[[float], str]) -> str:
    if p is None:
        return "unknown"
    if p.low is None or p.high is None:
        return f"{fmt(p.value)} (no interval: 1 run measured)"
    if p.low == p.high == p.value:
        return fmt(p.value)
    return f"{fmt(p.value)} ({fmt(p.low)}–{fmt(p.high)})"


def _tokens(v: float) -> str:
    return f"{v:,.0f}"
