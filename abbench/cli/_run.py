"""Commands for experiments and their execution: create, run, try, status, pause, resume, cancel, retry, regrade."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import click

from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.types import outcome_word


def _parse_params(pairs: tuple[str, ...]) -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--param")
        out[key.strip()] = yaml.safe_load(value)
    return out


class ProgressBar:
    """A tqdm progress bar fed by the runner's observer interface."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.bar = None

    def on_progress(self, progress) -> None:
        if self.quiet:
            return
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(
                total=progress.total, unit="run", desc=progress.experiment[:30], dynamic_ncols=True
            )
        self.bar.n = progress.done
        arms = " ".join(f"{a.arm}:{a.done}/{a.total}" for a in progress.arms)
        pairs = f" pairs judged {progress.pairs_done}/{progress.pairs_total}" if progress.pairs_total else ""
        self.bar.set_postfix_str(
            f"{progress.status} {_outcome_counts(progress, '=')} {arms}{pairs}", refresh=False
        )
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _outcome_counts(p, sep: str = " ") -> str:
    """``right 5 wrong 2`` and, when there are any, the runs that got no verdict, in the words of
    `abbench.types.OUTCOME_WORDS` (a wrong answer is never called failed)."""
    parts = [("pass", p.right), ("fail", p.wrong)]
    parts += [
        (k, n)
        for k, n in (("execution_failed", p.execution_failed), ("grading_failed", p.grading_failed))
        if n
    ]
    return " ".join(f"{outcome_word(k)}{sep}{n:,}" for k, n in parts)


def _print_budget(reason, notes, handle: str) -> None:
    """The budget's pause (with the command that goes on) and its warnings, under a status line."""
    for note in notes:
        click.echo(f"warning: {note}")
    if reason is not None:
        click.echo(f"  raise the budget and go on: {reason.hint(handle)}")


def _print_summary(summary, handle: str | None = None) -> None:
    p = summary.progress
    click.echo(
        f"{summary.experiment} (#{summary.experiment_id}): {summary.status_text} in {summary.elapsed_s:.1f} s — "
        f"executed {summary.executed}, graded {summary.graded}, "
        f"{outcome_word('execution_failed')} {summary.execution_failed}, "
        f"{outcome_word('grading_failed')} {summary.grading_failed}, cancelled {summary.cancelled}"
    )
    for arm in p.arms:
        c = arm.counts
        rest = [
            ("execution_failed", arm.execution_failed),
            ("grading_failed", arm.grading_failed),
            ("cancelled", c.get("cancelled", 0)),
            ("pending", c.get("pending", 0)),
            ("executed", c.get("executed", 0)),
        ]
        click.echo(
            f"  {arm.arm:<14} right {arm.right:>5}  wrong {arm.wrong:>5}"
            + "".join(f"  {outcome_word(k)} {n:>4}" for k, n in rest if n)
        )
    _print_budget(summary.pause_reason, summary.notes, handle or f"#{summary.experiment_id}")


def _print_failures(ctx: Context, exp_id: int) -> None:
    """Execution and grading failures by kind, with one error of each kind and what to do.

    The store's state ``fail`` holds wrong answers and runs that never got one alike; a new user
    needs to be told that these are errors, not wrong answers, and which.
    """
    failed = [r for r in ctx.store.runs(exp_id, states=["fail"]) if r.execution_failed or r.grading_failed]
    if not failed:
        return
    kinds: dict[tuple[str, str], list] = {}
    for r in failed:
        kind = "execution" if r.execution_failed else "grading"
        kinds.setdefault((kind, r.failure_type or "grading_error"), []).append(r)
    click.echo(f"failures: {len(failed):,} run(s) got no verdict (errors, not wrong answers):")
    for (kind, ftype), runs in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        arms = ", ".join(f"{a} {n:,}" for a, n in Counter(r.arm for r in runs).items())
        first = runs[0]
        error = " ".join(str(first.error or "").split())
        click.echo(f"  {kind} {ftype}: {len(runs):,} ({arms})")
        if error:
            click.echo(f"    e.g. case {first.case_id}: {error[:240]}{'…' if len(error) > 240 else ''}")
    handle = ctx.store.experiment_handle(ctx.store.get_experiment(exp_id))
    if any(k == "execution" for k, _ in kinds):
        click.echo(f"  re-run them: abbench retry {handle} --failed")
    if any(k == "grading" for k, _ in kinds):
        click.echo(f"  re-grade them: abbench regrade {handle} --failed")


def _experiment_or_file(ctx: Context, ref: str, reuse: bool):
    from abbench.runner import create_experiment

    path = Path(ref)
    if path.suffix.lower() in (".yaml", ".yml", ".json") and path.is_file():
        return create_experiment(path, store=ctx.store, reuse=reuse)
    return ctx.store.get_experiment(ref)


@cli.command("create")
@click.argument("definition", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--reuse", is_flag=True, help="If an experiment with this identity exists, use it instead of refusing."
)
@json_option
@pass_ctx
def create_cmd(ctx: Context, definition: str, reuse: bool, as_json: bool) -> None:
    """Create an experiment from a YAML definition (one pending run per case × round × arm).

    The definition needs name, dataset (a stored name or fingerprint, or {file, mapping}) and arms
    (name: {agent, model, skill, ...settings}); it may give rounds, graders, cases (ids, domains,
    labels, tag, limit, sample), concurrency, timeout_s, retries, gate and seed. Paths are relative to
    the definition's folder; every arm is checked now, before any run.

    \b
    Example:
      abbench create data/demo/experiment.yaml
    """
    from abbench.runner import create_experiment

    exp = create_experiment(definition, store=ctx.store, reuse=reuse)
    counts = ctx.store.run_counts(exp.id)
    total = sum(sum(c.values()) for c in counts.values())
    emit(
        as_json,
        {
            "id": exp.id,
            "name": exp.name,
            "dataset": exp.dataset,
            "runs": total,
            "arms": [a.label for a in exp.arms],
        },
        f"created {exp.ref} on {exp.dataset}: {total} runs over arms " + ", ".join(a.label for a in exp.arms),
    )


@cli.command("experiments")
@click.option("--since", metavar="DATE", help="Only experiments created on or after this ISO date.")
@click.option("--all", "show_all", is_flag=True, help="Include tries (abbench try), left out by default.")
@json_option
@pass_ctx
def experiments_cmd(ctx: Context, since: str | None, show_all: bool, as_json: bool) -> None:
    """List experiments, newest first; experiments sharing a name (one per skill version) are grouped.

    A bare name picks the latest of its group; NAME@<skill version> or #ID picks another.
    """
    from abbench.runner import experiment_status

    rows = []
    for exp in ctx.store.list_experiments(since=since, include_tries=show_all):
        p = experiment_status(exp.id, store=ctx.store)
        rows.append(
            {
                "id": exp.id,
                "name": exp.name,
                "owner": exp.owner,
                "dataset": exp.dataset,
                # with the name, the skill version tells apart experiments named alike (one per version)
                "skill": f"{exp.skill}@{exp.skill_version}" if exp.skill else None,
                "skill_version": exp.skill_version or None,
                "arms": [a.name for a in exp.arms],
                "rounds": exp.rounds,
                "status": p.status,
                "done": p.done,
                "total": p.total,
                "created_at": exp.created_at,
                "try": exp.is_try,
            }
        )

    def line(r: dict, indent: str = "") -> str:
        name = f"{indent}#{r['id']:<4} {r['name']:<28}"
        return (
            f"{name} {r['status']:<11} {r['done']:>6}/{r['total']:<6} "
            f"{'/'.join(r['arms'])}  {r['skill'] or 'no skill'}  {r['dataset']}  {r['created_at']}"
        )

    def human():
        if not rows:
            click.echo("no experiments yet; create one with `abbench create FILE.yaml`")
        groups: dict[str, list[dict]] = {}
        for r in rows:  # newest first, so each group is in the order of its newest experiment
            groups.setdefault(r["name"], []).append(r)
        for name, group in groups.items():
            if len(group) == 1:
                click.echo(line(group[0]))
                continue
            click.echo(
                f"{name}: {len(group)} experiments (`{name}` is the latest, #{group[0]['id']}; "
                f"pick another as {name}@<skill version> or #ID)"
            )
            for r in group:
                click.echo(line(r, "  "))

    emit(as_json, rows, human)


@cli.command("run")
@click.argument("experiment")
@click.option("--reuse", is_flag=True, help="With a definition file: continue the experiment if it exists.")
@click.option("--concurrency", type=int, help="Runs in flight at once (overrides the definition).")
@click.option("--as", "started_by", metavar="NAME", help="Who is running it (default: the OS user).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@json_option
@pass_ctx
def run_cmd(
    ctx: Context,
    experiment: str,
    reuse: bool,
    concurrency: int | None,
    started_by: str | None,
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
    """
    from abbench.runner import run_experiment

    exp = _experiment_or_file(ctx, experiment, reuse)
    bar = ProgressBar(quiet or as_json)
    try:
        summary = run_experiment(
            exp.id, store=ctx.store, observers=[bar], concurrency=concurrency, started_by=started_by
        )
    finally:
        bar.close()

    def human() -> None:
        _print_summary(summary, ctx.store.experiment_handle(exp))
        _print_failures(ctx, exp.id)

    emit(as_json, summary.as_dict(), human)


@cli.command("status")
@click.argument("experiment")
@json_option
@pass_ctx
def status_cmd(ctx: Context, experiment: str, as_json: bool) -> None:
    """Show where an experiment stands: runs per arm and state (reading never starts work)."""
    from abbench.runner import experiment_status

    p = experiment_status(experiment, store=ctx.store)

    def human():
        click.echo(
            f"{p.experiment} (#{p.experiment_id}): {p.status_text}, {p.done}/{p.total} done: "
            f"{_outcome_counts(p)}"
        )
        for arm in p.arms:
            states = ", ".join(f"{outcome_word(k)} {v}" for k, v in arm.outcomes().items() if v)
            click.echo(f"  {arm.arm:<14} {states}")
        handle = ctx.store.experiment_handle(ctx.store.get_experiment(p.experiment_id))
        _print_budget(p.pause_reason, p.notes, handle)
        _print_failures(ctx, p.experiment_id)

    emit(as_json, p.as_dict(), human)


def _control(command: str, doc: str):
    @cli.command(command, help=doc)
    @click.argument("experiment")
    @pass_ctx
    def control(ctx: Context, experiment: str) -> None:
        from abbench import runner

        exp = ctx.store.get_experiment(experiment)
        if command == "pause":
            alive = runner.pause_experiment(exp.id, store=ctx.store)
            if alive:
                click.echo(f"pause asked for {exp.ref}")
            elif exp.status in ("finished", "cancelled"):  # pause_experiment left it as it was
                click.echo(f"{exp.ref} is {exp.status}; nothing to pause")
            else:
                click.echo(f"pause asked for {exp.ref} (no process is running it now)")
        else:
            n = runner.cancel_experiment(exp.id, store=ctx.store)
            click.echo(f"cancel asked for {exp.ref}" + ("" if n is None else f": {n} pending runs cancelled"))

    return control


_control(
    "pause", "Pause a running experiment: running runs finish, no new ones start (seen within a second)."
)
_control("cancel", "Cancel an experiment: runs in flight stop and pending runs become cancelled.")


@cli.command("retry")
@click.argument("experiment")
@click.option("--failed", is_flag=True, help="Re-run failed runs (execution or grading failures).")
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
    cancelled: bool,
    disagreements: bool,
    cases: tuple[str, ...],
    arms: tuple[str, ...],
    quiet: bool,
    as_json: bool,
) -> None:
    """Re-run selected runs: they execute again (their old grades stay readable).

    \b
    Examples:
      abbench retry routing-v2 --failed
      abbench retry routing-v2 --cases c017 --cases c042 --arm treatment
    """
    from abbench.runner import retry_runs

    bar = ProgressBar(quiet or as_json)
    try:
        summary = retry_runs(
            experiment,
            store=ctx.store,
            failed=failed,
            cancelled=cancelled,
            disagreements=disagreements,
            cases=list(cases) or None,
            arms=list(arms) or None,
            observers=[bar],
        )
    finally:
        bar.close()
    emit(as_json, summary.as_dict(), lambda: _print_summary(summary))


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
    from abbench.runner import regrade_experiment

    bar = ProgressBar(quiet or as_json)
    try:
        summary = regrade_experiment(
            experiment,
            store=ctx.store,
            graders=list(graders) or None,
            failed=failed,
            cases=list(cases) or None,
            observers=[bar],
        )
    finally:
        bar.close()
    emit(as_json, summary.as_dict(), lambda: _print_summary(summary))


@cli.command("clone")
@click.argument("experiment")
@click.option("--name", required=True, help="The new experiment's name.")
@click.option("--arm", "arm_name", help="The arm to replace or add.")
@click.option("--skill", help="New skill folder or snapshot for that arm ('none' for no skill).")
@click.option("--agent", help="New agent for that arm.")
@click.option("--model", help="New model for that arm.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Arm parameter (repeatable).")
@click.option("--rounds", type=int, help="A different number of rounds.")
@json_option
@pass_ctx
def clone_cmd(
    ctx: Context,
    experiment: str,
    name: str,
    arm_name: str | None,
    skill: str | None,
    agent: str | None,
    model: str | None,
    params: tuple[str, ...],
    rounds: int | None,
    as_json: bool,
) -> None:
    """Clone an experiment with one arm replaced (a new skill version, a new model).

    \b
    Example:
      abbench clone routing-v2 --name routing-v3 --arm treatment --skill skills/fast-slow-routing-v3
    """
    from abbench.runner import clone_experiment

    arms = None
    if arm_name:
        change: dict[str, Any] = {}
        if skill is not None:
            change["skill"] = None if skill.lower() == "none" else skill
        if agent:
            change["agent"] = agent
        if model:
            change["model"] = model
        if params:
            change["params"] = _parse_params(params)
        arms = {arm_name: change}
    elif skill or agent or model or params:
        raise click.UsageError("--skill/--agent/--model/--param need --arm to say which arm changes")
    exp = clone_experiment(experiment, name=name, arms=arms, rounds=rounds, store=ctx.store)
    emit(
        as_json,
        {"id": exp.id, "name": exp.name, "parent_id": exp.parent_id},
        f"created {exp.ref} from #{exp.parent_id}: arms " + ", ".join(a.label for a in exp.arms),
    )


@cli.command("try")
@click.argument("text")
@click.option("--skill", help="Skill folder or snapshot reference (none: no skill).")
@click.option("--agent", default="builtin", show_default=True, help="Agent adapter.")
@click.option("--model", help="Model id for the adapter.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Adapter parameter (repeatable).")
@click.option("--expected", help="The gold label, to grade the answer.")
@click.option("--label", "labels", multiple=True, help="A label the agent may choose (repeatable).")
@json_option
@pass_ctx
def try_cmd(
    ctx: Context,
    text: str,
    skill: str | None,
    agent: str,
    model: str | None,
    params: tuple[str, ...],
    expected: str | None,
    labels: tuple[str, ...],
    as_json: bool,
) -> None:
    """Try one input at once: prints the prediction, reason, confidence, cited evidence and files read.

    The try is kept as a one-case experiment, run through the same machinery as any other, but left
    out of `abbench experiments` and `abbench datasets` unless --all; a refused try stores nothing.

    \b
    Example:
      abbench try "到目的地电量够不够" --skill data/demo/skills/fast-slow-routing-v2
    """
    from abbench.errors import ExperimentError
    from abbench.runner import try_input

    try:
        result = try_input(
            text,
            skill=skill,
            agent=agent,
            model=model,
            params=_parse_params(params),
            expected=expected,
            labels=list(labels) or None,
            store=ctx.store,
        )
    except ExperimentError as exc:
        if "declares none" in str(exc) and not labels:
            # the library speaks of arms and profiles; here the labels are a command-line option
            if skill:
                raise ExperimentError(
                    f"the skill {skill} names no labels (no `labels:` in its SKILL.md front matter, no "
                    "`→ label` rule): name the labels to choose among (--label fast --label slow), or "
                    "add `labels: [fast, slow]` to its front matter"
                ) from None
            raise ExperimentError(
                "the builtin agent without a skill chooses among labels, and none were given: name "
                "them (--label fast --label slow), or try a skill (--skill DIR)"
            ) from None
        raise

    def human():
        click.echo(
            f"prediction  {result.prediction or '(none)'}"
            + (
                f"   (expected {expected}: {outcome_word('pass' if result.passed else 'fail')})"
                if expected and result.prediction
                else ""
            )
        )
        if result.error:
            click.echo(f"error       {result.error}")
            if "label set" in result.error and not labels:
                click.echo("hint        name the labels the agent may choose: --label fast --label slow")
        click.echo(f"confidence  {'' if result.confidence is None else f'{result.confidence:.2f}'}")
        click.echo(f"reason      {result.reason or ''}")
        click.echo(f"files read  {', '.join(result.files_read) or '(none)'}")
        if result.sections_read:  # an agent may read sections (read_section) without opening a whole file
            click.echo(f"sections    {', '.join(result.sections_read)}")
        click.echo("evidence")
        for ev in result.evidence:
            click.echo(f"  {ev['ref']}" + ("" if ev["text"] is not None else "   (not found in the skill!)"))
            for line in (ev["text"] or "").splitlines()[:6]:
                click.echo(f"    │ {line}")
        click.echo(
            f"kept as experiment #{result.experiment_id} {result.experiment} "
            "(tries are left out of `abbench experiments`; --all lists them)"
        )

    emit(as_json, result.as_dict(), human)
    if result.prediction is None and result.error:
        raise SystemExit(2)  # the input could not be answered: exit as for an input error
