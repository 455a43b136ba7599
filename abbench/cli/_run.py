"""Commands for experiments and their execution: run, status, experiments, pause, cancel, retry, regrade."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from abbench import _actions as do
from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.cli._progress import (
    outcome_counts,
    print_budget,
    print_failures,
    print_summary,
    with_progress,
    wrong_by_text,
)
from abbench.errors import worded
from abbench.runner import experiment_status, regrade_experiment, retry_runs
from abbench.snapshot import version_label
from abbench.types import ExperimentStatus, outcome_word

if TYPE_CHECKING:
    from abbench.cli._backend import Backend
    from abbench.client import Client
    from abbench.runner import Progress, RunSummary
    from abbench.store import Experiment


EXIT_BUDGET_PAUSED = 3
"""`abbench run`'s exit code when the experiment paused on its budget (its work is not done)."""


def _experiment_or_file(backend: Backend, ref: str, reuse: bool) -> Experiment:
    path = Path(ref)
    if path.suffix.lower() in (".yaml", ".yml", ".json") and path.is_file():
        return backend.create_experiment(path, reuse=reuse)
    return backend.load_experiment(ref)


@cli.command("experiments")
@click.option("--since", metavar="DATE", help="Only experiments created on or after this ISO date.")
@click.option("--all", "show_all", is_flag=True, help="Include tries (abbench try), left out by default.")
@json_option
@pass_ctx
def experiments_cmd(ctx: Context, since: str | None, show_all: bool, as_json: bool) -> None:
    """List experiments, newest first; experiments sharing a name (one per skill version) are grouped.

    A bare name picks the latest of its group; NAME@<skill version> or #ID picks another.
    """
    listed = [
        (exp, experiment_status(exp.id, store=ctx.store))
        for exp in ctx.store.experiments.all(since=since, include_tries=show_all)
    ]

    def human() -> None:
        if not listed:
            click.echo("no experiments yet; create one with `abbench create FILE.yaml`")
        groups: dict[str, list[tuple[Experiment, Progress]]] = {}
        for exp, p in listed:  # newest first, so each group is in the order of its newest experiment
            groups.setdefault(exp.name, []).append((exp, p))
        for name, group in groups.items():
            if len(group) == 1:
                click.echo(_experiment_line(*group[0]))
                continue
            click.echo(
                f"{name}: {len(group)} experiments (`{name}` is the latest, #{group[0][0].id}; "
                f"pick another as {name}@<skill version> or #ID)"
            )
            for exp, p in group:
                click.echo(_experiment_line(exp, p, "  "))

    emit(as_json, [_experiment_row(exp, p) for exp, p in listed], human)


def _experiment_row(exp: Experiment, p: Progress) -> dict[str, Any]:
    """An experiment as `abbench experiments --json` lists it."""
    return {
        "id": exp.id,
        "name": exp.name,
        "owner": exp.owner,
        "dataset": exp.dataset,
        "skill": version_label(exp.skill, exp.skill_version, draft=False) if exp.skill else None,
        "skill_version": exp.skill_version or None,
        "draft": exp.draft,
        "arms": [a.name for a in exp.arms],
        "rounds": exp.rounds,
        "status": p.status,
        "done": p.done,
        "total": p.total,
        "created_at": exp.created_at,
        "try": exp.is_try,
    }


def _experiment_line(exp: Experiment, p: Progress, indent: str = "") -> str:
    """An experiment as `abbench experiments` lists it: one line."""
    name = f"{indent}#{exp.id:<4} {exp.name:<28}"
    return (
        f"{name} {p.status:<11} {p.done:>6}/{p.total:<6} "
        # with the name, the skill version tells apart experiments named alike (one per version)
        f"{'/'.join(a.name for a in exp.arms)}  {exp.version or 'no skill'}  {exp.dataset}  {exp.created_at}"
    )


@cli.command("run")
@click.argument("experiment")
@click.option("--reuse", is_flag=True, help="With a definition file: continue the experiment if it exists.")
@click.option("--concurrency", type=int, help="Runs in flight at once (overrides the definition).")
@click.option("--as", "started_by", metavar="NAME", help="Who is running it (default: the OS user).")
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    help="Where the agents run: this process (local) or tasks on a Dask cluster (default: the definition's).",
)
@click.option(
    "--scheduler", metavar="ADDRESS", help="A running Dask scheduler (tcp://HOST:8786); implies dask."
)
@click.option(
    "--dask-local",
    type=click.IntRange(min=1),
    metavar="N",
    help="Start a LocalCluster of N worker processes.",
)
@click.option(
    "--no-wait", is_flag=True, help="With --server: start it in the server's pool and return at once."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@json_option
@pass_ctx
def run_cmd(
    ctx: Context,
    experiment: str,
    reuse: bool,
    concurrency: int | None,
    started_by: str | None,
    executor: str | None,
    scheduler: str | None,
    dask_local: int | None,
    no_wait: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Run an experiment (a name, #id, or a YAML definition to create first) until its work is done.

    An interrupted experiment continues where it stopped. Another process can pause, resume or
    cancel it meanwhile (abbench pause/resume/cancel EXPERIMENT).

    \b
    Examples:
      abbench run data/demo/experiment.yaml
      abbench run routing-v2 --concurrency 16
      abbench run routing-v2 --dask-local 4
      abbench run routing-v2 --executor dask --scheduler tcp://10.0.0.5:8786

    With Dask, each run's agent call is a task on the cluster; this process still writes the store,
    grades and shows progress (docs/running.md, "Running on a Dask cluster"). With --server, the
    server's pool runs it (with the definition's settings) and this command follows its progress.
    """
    backend = ctx.backend
    given = {"concurrency": concurrency, "started_by": started_by, "executor": executor,
             "scheduler": scheduler, "dask_local": dask_local}  # fmt: skip
    options = {k: v for k, v in given.items() if v is not None}
    if ctx.server is None and no_wait:
        raise click.UsageError("--no-wait starts it in a server's pool: give --server URL, or drop --no-wait")
    if ctx.server is not None and options:
        flags = ", ".join("--as" if k == "started_by" else f"--{k.replace('_', '-')}" for k in options)
        raise click.UsageError(
            f"{flags}: a local run's setting(s); with --server the server's pool runs the experiment with "
            "its definition's (and records $ABBENCH_ACTOR as who ran it): drop them, or drop --server"
        )
    exp = _experiment_or_file(backend, experiment, reuse)
    if no_wait:
        _start_on_server(ctx, exp, as_json)
        return
    summary = with_progress(
        quiet or as_json, lambda observers: backend.run_experiment(exp.id, observers=observers, **options)
    )

    def human() -> None:
        print_summary(summary, backend.command_handle(exp))
        print_failures(backend, exp)

    emit(as_json, summary.as_dict(), human)
    if summary.pause_reason is not None:
        # its work is not done: a script (CI) must not read the pause as success
        raise SystemExit(EXIT_BUDGET_PAUSED)


def _start_on_server(ctx: Context, exp: Experiment, as_json: bool) -> None:
    """`run --no-wait --server`: the server's pool takes it; where it stands now."""
    client = cast("Client", ctx.backend)
    client.start(exp.id)
    p = client.experiment_status(exp.id)
    emit(as_json, p.as_dict(), f"{exp.ref} started in the server's pool: {p.status}, {p.done}/{p.total} runs")


@cli.command("status")
@click.argument("experiment")
@json_option
@pass_ctx
def status_cmd(ctx: Context, experiment: str, as_json: bool) -> None:
    """Show where an experiment stands: runs per arm and state (reading never starts work)."""
    backend = ctx.backend
    p = backend.experiment_status(experiment)
    exp = backend.load_experiment(p.experiment_id)

    def human() -> None:
        click.echo(
            f"{p.experiment} (#{p.experiment_id}): {p.status_text}, {p.done}/{p.total} done: "
            f"{outcome_counts(p)}"
        )
        versions = {a.name: a.version for a in exp.arms}
        for arm in p.arms:
            states = ", ".join(f"{outcome_word(k)} {v}" for k, v in arm.outcomes().items() if v)
            version = versions.get(arm.arm)
            by = wrong_by_text(arm.wrong_by, head="  (wrong by ")
            click.echo(f"  {arm.arm:<14} {states}{by}" + (f"  · {version}" if version else ""))
        click.echo(_where_line(exp))
        handle = backend.command_handle(exp)
        if p.queued is not None:  # a server's pool holds it, or did not start it (and says why)
            if p.queued.not_started:
                click.echo(f"  {worded(p.queued.hint(handle), 'cli')}")
        elif p.halt_reason is not None:
            click.echo(f"  {worded(p.halt_reason.hint(handle), 'cli')}")
        elif p.status == ExperimentStatus.PAUSED and p.pause_reason is None and not exp.runner_alive:
            click.echo(f"  paused while no process ran it; run the rest: {do.run_experiment(handle).cli}")
        print_budget(p.pause_reason, p.notes, handle)
        print_failures(backend, exp)

    emit(as_json, {**p.as_dict(), "executor": exp.executor}, human)


def _where_line(exp: Experiment) -> str:
    """Where the experiment's agents run (or last ran): this machine, or a Dask cluster with its dashboard."""
    where = exp.executor
    running = exp.runner_alive and exp.status in (ExperimentStatus.RUNNING, ExperimentStatus.PAUSED)
    verb = "executing" if running else "last executed"
    host = f" (runner on {exp.runner_host}, pid {exp.runner_pid})" if running and exp.runner_host else ""
    if not where or where.get("executor") != "dask":
        if running or exp.runner_host:
            return f"  {verb} locally{host}"
        if exp.status != ExperimentStatus.CREATED:  # a local runner leaves no record once it releases
            return "  last executed locally"
        return (
            f"  executes {'on Dask' if exp.settings.executor == 'dask' else 'locally'} when run (not started)"
        )
    cluster = f"a LocalCluster at {where.get('scheduler')}" if where.get("local") else where.get("scheduler")
    workers = where.get("workers") or 0
    dashboard = f", dashboard {where['dashboard']}" if where.get("dashboard") else ""
    return f"  {verb} on Dask: {cluster}, {workers} worker{'s' if workers != 1 else ''}{dashboard}{host}"


@cli.command("pause")
@click.argument("experiment")
@pass_ctx
def pause_cmd(ctx: Context, experiment: str) -> None:
    """Pause a running experiment: running runs finish, no new ones start (seen within a second)."""
    backend = ctx.backend
    exp = backend.load_experiment(experiment)
    if backend.pause_experiment(exp.id):
        click.echo(f"pause asked for {exp.ref}")
    elif exp.status in (ExperimentStatus.FINISHED, ExperimentStatus.CANCELLED):  # left as it was
        click.echo(f"{exp.ref} is {exp.status}; nothing to pause")
    else:
        click.echo(f"pause asked for {exp.ref} (no process is running it now)")


@cli.command("cancel")
@click.argument("experiment")
@pass_ctx
def cancel_cmd(ctx: Context, experiment: str) -> None:
    """Cancel an experiment: runs in flight stop and pending runs become cancelled."""
    backend = ctx.backend
    exp = backend.load_experiment(experiment)
    n = backend.cancel_experiment(exp.id)
    click.echo(f"cancel asked for {exp.ref}" + ("" if n is None else f": {n} pending runs cancelled"))


@cli.command("retry")
@click.argument("experiment")
@click.option(
    "--failed",
    is_flag=True,
    help="Runs that failed: re-run the execution failures, re-grade the grading failures (no agent run).",
)
@click.option("--execution-failed", is_flag=True, help="Re-run the runs whose execution failed.")
@click.option(
    "--grading-failed",
    is_flag=True,
    help="Re-grade the runs no grader reached a verdict on, from their stored answers (no agent run).",
)
@click.option("--cancelled", is_flag=True, help="Re-run cancelled runs.")
@click.option("--disagreements", is_flag=True, help="Re-run runs whose prediction disagrees with gold.")
@click.option("--cases", "cases", multiple=True, metavar="ID", help="Only these case ids (repeatable).")
@click.option("--arm", "arms", multiple=True, help="Only these arms (repeatable).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@json_option
@pass_ctx
def retry_cmd(
    ctx: Context,
    experiment: str,
    failed: bool,
    execution_failed: bool,
    grading_failed: bool,
    cancelled: bool,
    disagreements: bool,
    cases: tuple[str, ...],
    arms: tuple[str, ...],
    quiet: bool,
    as_json: bool,
) -> None:
    """Retry runs: execution failures run again, grading failures are re-graded (no agent run).

    The runs chosen (--cancelled, --disagreements, --cases) execute again; a grading failure is graded
    again from its stored answer, never paid for twice. Old grades stay readable.

    \b
    Examples:
      abbench retry routing-v2 --failed
      abbench retry routing-v2 --grading-failed
      abbench retry routing-v2 --cases c017 --cases c042 --arm treatment
    """
    ran = with_progress(
        quiet or as_json,
        lambda observers: retry_runs(
            experiment, store=ctx.store, failed=failed, execution_failed=execution_failed,
            grading_failed=grading_failed, cancelled=cancelled, disagreements=disagreements,
            cases=list(cases) or None, arms=list(arms) or None, observers=observers,
        ),
    )  # fmt: skip
    summary = cast("RunSummary", ran)  # a count only with run=False, which the command never asks

    def human() -> None:
        print_summary(summary)
        if summary.retried_text is None:
            return
        then: dict[str, str] = {
            ExperimentStatus.PAUSED: f"; `abbench resume {experiment}` runs the rest",
            ExperimentStatus.CANCELLED: f"; `abbench retry {experiment} --cancelled` takes the cancelled ones up again",
            ExperimentStatus.INTERRUPTED: f"; `abbench run {experiment}` goes on where it stopped",
        }
        click.echo(f"retried: {summary.retried_text}{then.get(summary.status, '')}")

    emit(as_json, summary.as_dict(), human)


@cli.command("regrade")
@click.argument("experiment")
@click.option("--grader", "graders", multiple=True, help="Only this grader (repeatable).")
@click.option("--failed", is_flag=True, help="Only runs that failed.")
@click.option("--cases", "cases", multiple=True, metavar="ID", help="Only these case ids (repeatable).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@json_option
@pass_ctx
def regrade_cmd(
    ctx: Context,
    experiment: str,
    graders: tuple[str, ...],
    failed: bool,
    cases: tuple[str, ...],
    quiet: bool,
    as_json: bool,
) -> None:
    """Grade runs again from their stored executions (the agent is not run again).

    \b
    Example:
      abbench regrade routing-v2 --grader label_match
    """
    summary = with_progress(
        quiet or as_json,
        lambda observers: regrade_experiment(
            experiment, store=ctx.store, graders=list(graders) or None, failed=failed,
            cases=list(cases) or None, observers=observers,
        ),
    )  # fmt: skip
    emit(as_json, summary.as_dict(), lambda: print_summary(summary))
