"""Commands that read a definition: create, clone and try.

Apart from `abbench run` (abbench/cli/_run.py) because a definition loads its models (pydantic, YAML), and
running a stored experiment loads neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from abbench._yaml import load_yaml
from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.errors import ExperimentError
from abbench.graders import experiment_self_judging
from abbench.runner import clone_experiment, try_input
from abbench.types import RunState, outcome_word

if TYPE_CHECKING:
    from abbench.runner import ArmSpec


def _parse_params(pairs: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--param")
        out[key.strip()] = load_yaml(value)
    return out


@cli.command("create")
@click.argument("definition", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--reuse", is_flag=True, help="If an experiment with this identity exists, use it instead of refusing."
)
@click.option(
    "-q", "--quiet", is_flag=True, help="Print only the id (for scripts: EXP=$(abbench create -q FILE))."
)
@json_option
@pass_ctx
def create_cmd(ctx: Context, definition: str, reuse: bool, quiet: bool, as_json: bool) -> None:
    """Create an experiment from a YAML definition (one pending run per case × round × arm).

    The definition needs name, dataset (a stored name or fingerprint, or {file, mapping}) and arms
    (name: {agent, model, skill, ...settings}); it may give rounds, graders, cases (ids, domains,
    labels, tag, limit, sample), concurrency, timeout_s, retries, gate and seed. Paths are relative to
    the definition's folder; every arm is checked now, before any run. With --server, the definition
    names datasets and snapshots uploaded there.

    \b
    Examples:
      abbench create data/demo/experiment.yaml
      EXP=$(abbench --server URL create -q ci-experiment.yaml)
    """
    exp = ctx.backend.create_experiment(definition, reuse=reuse)
    total = ctx.backend.experiment_status(exp.id).total
    arms = [a.label for a in exp.arms]
    warnings = [w.message for w in experiment_self_judging(exp)]
    if not as_json:
        for warning in warnings:  # on stderr: `create -q` still prints the id alone
            click.echo(f"warning: {warning}", err=True)
    emit(
        as_json,
        {"id": exp.id, "name": exp.name, "dataset": exp.dataset, "runs": total, "arms": arms}
        | ({"warnings": warnings} if warnings else {}),
        str(exp.id)
        if quiet
        else f"created {exp.ref} on {exp.dataset}: {total} runs over arms {', '.join(arms)}",
    )


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
    arms: dict[str, ArmSpec | dict[str, Any]] | None = None
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

    def human() -> None:
        click.echo(
            f"prediction  {result.prediction or '(none)'}"
            + (
                f"   (expected {expected}: {outcome_word(RunState.PASS if result.passed else RunState.FAIL)})"
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
