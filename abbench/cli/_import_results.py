"""The import-results command: another tool's logs (Inspect AI, promptfoo, skill-creator) as an experiment."""

from __future__ import annotations

import click

from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.interop import import_results

_FORMATS = ("inspect", "promptfoo", "skill-creator")


@cli.command("import-results")
@click.argument("format", type=click.Choice(_FORMATS), metavar="FORMAT")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True), metavar="PATH...")
@click.option(
    "--dataset",
    "dataset",
    metavar="REF",
    help="Match the runs to this stored dataset's cases (by id, then input).",
)
@click.option(
    "--create-dataset",
    is_flag=True,
    help="Create a dataset from the logs' inputs and gold answers (the default without --dataset).",
)
@click.option("--experiment", "name", metavar="NAME", help="The experiment's name (default: <tool>-<task>).")
@json_option
@pass_ctx
def import_results_cmd(
    ctx: Context,
    format: str,
    paths: tuple[str, ...],
    dataset: str | None,
    create_dataset: bool,
    name: str | None,
    as_json: bool,
) -> None:
    """Import runs made by another tool as an experiment, so compare, gate and report apply to them.

    FORMAT is one of: inspect (Inspect AI eval logs, .eval or .json; needs pip install
    'abbench[inspect]'), promptfoo (the JSON of `promptfoo eval -o out.json`), skill-creator (an
    iteration / benchmark folder of anthropics/skills' skill-creator: eval-*/with_skill|without_skill/
    run-*/grading.json, benchmark.json).

    Each model, provider or configuration becomes an arm (agent: external), each epoch, repeat or
    run number a round, and the tool's own verdict (Inspect scorers, promptfoo assertions,
    skill-creator expectations) a `recorded` grader. Importing the same files again changes nothing;
    a log that differs from what was recorded for a run is refused, naming the case, arm and round.

    \b
    Examples:
      abbench import-results inspect logs/*.eval
      abbench import-results promptfoo out.json --experiment routing-prompts
      abbench import-results skill-creator internal-comms-workspace/iteration-1
      abbench import-results inspect logs/*.eval --dataset demo     # the cases they were run on
      abbench compare skill-creator-internal-comms && abbench gate skill-creator-internal-comms
    """
    if dataset and create_dataset:
        raise click.UsageError("give --dataset REF or --create-dataset, not both")

    result = import_results(format, list(paths), store=ctx.store, dataset=dataset, experiment=name)

    def human() -> None:
        rec = result.recording
        made = "created" if result.created_dataset else "matched to"
        click.echo(
            f"experiment {result.experiment.name} (#{result.experiment.id}): {result.cases} cases × "
            f"{result.rounds} rounds × {len(result.arms)} arms ({', '.join(result.arms)})"
        )
        click.echo(f"  dataset {made} {result.dataset.fingerprint}")
        click.echo(f"  {rec.recorded} runs recorded, {rec.unchanged} already recorded (unchanged)")
        if rec.grading is not None:
            click.echo(f"  graded: {rec.grading.graded}; grading failed: {rec.grading.grading_failed}")
        click.echo(f"  next: abbench compare {result.experiment.name}")

    emit(as_json, result.as_dict(), human)
