"""The commands that work on a server (``abbench --server URL ...``) through `abbench.client.Client` and
are not yet written once over `abbench.cli._backend.Backend`: import, snapshot, create, run, compare,
gate, report. (status, pause, resume, cancel and export are: `abbench.cli._commands.ON_A_SERVER`.)

They take the local commands' names and main arguments. The key comes from $ABBENCH_KEY, the actor
(recorded on the runs started) from $ABBENCH_ACTOR, else the CI's job when one is named ($GITHUB_JOB,
$CI_JOB_NAME).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from abbench._utf8 import read_utf8
from abbench._yaml import load_yaml
from abbench.cli._app import Context, emit, json_option, pass_ctx, read_options
from abbench.cli._backend import remote_client
from abbench.cli._data import _echo_report, read_text
from abbench.dataset import ValidationReport

if TYPE_CHECKING:
    from abbench.client import Client
    from abbench.runner import Progress


@click.group("remote")
def remote() -> None:
    """Commands that run against `abbench serve`."""


def _client(ctx: Context) -> Client:
    assert ctx.server is not None
    return remote_client(ctx.server)


@remote.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--mapping", help="A mapping profile file (.yaml/.json) or a saved profile's name.")
@click.option("--name", help="The dataset's name (default: the file's stem).")
@read_options
@click.option("--skip-invalid", is_flag=True, help="Import the valid rows, keep the report.")
@json_option
@pass_ctx
def import_cmd(
    ctx: Context,
    file: str,
    mapping: str | None,
    name: str | None,
    sheet: str | None,
    header_row: int | None,
    encoding: str | None,
    delimiter: str | None,
    file_format: str | None,
    recipe: str | None,
    splits: tuple[str, ...],
    skip_invalid: bool,
    as_json: bool,
) -> None:
    """Upload FILE and import it on the server (the local `import`'s read options); prints the fingerprint."""
    with _client(ctx) as c:
        ds = c.import_dataset(
            file,
            mapping,
            name=name,
            sheet=sheet,
            header_row=header_row,
            encoding=encoding,
            delimiter=delimiter,
            format=file_format,
            recipe=recipe,
            splits=list(splits),
            skip_invalid=skip_invalid or None,
        )
    emit(as_json, ds, lambda: _print_import(ds, Path(file).name))


def _print_import(ds: dict[str, Any], file_name: str) -> None:
    """The server's import, said as the local `import` says it (the lines a server's answer holds)."""
    if ds.get("reused"):
        click.echo(
            f"already imported: {ds['fingerprint']} holds the same {ds['n_cases']} cases; nothing stored"
        )
    else:
        click.echo(f"imported {ds['fingerprint']}  ({ds['n_cases']} cases from {file_name})")
    if ds.get("profile_name"):
        click.echo(f"  mapping     {ds['profile_name']}@{ds.get('profile_version')}")
    click.echo(f"  read        {read_text(ds.get('read_options') or {})}")
    kind = ds.get("expected_kind") or {}
    if kind.get("kind"):
        how = "declared by the mapping" if kind.get("declared") else "from the values"
        click.echo(f"  gold kind   {kind['kind']}s ({how}: {kind.get('reason', '')})")
    _echo_report(ValidationReport.from_dict(ds.get("validation")))


@remote.command("snapshot")
@click.argument("folder", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--git", "git_url", metavar="URL", help="Snapshot a git repository the server clones instead.")
@click.option("--ref", metavar="REF", help="With --git: a branch, tag or commit (default HEAD).")
@click.option("--path", "sub", metavar="SUB", help="With --git: the skill folder inside the repository.")
@json_option
@pass_ctx
def snapshot_cmd(
    ctx: Context, folder: str | None, git_url: str | None, ref: str | None, sub: str | None, as_json: bool
) -> None:
    """Upload a skill folder (or name a git URL and ref the server clones); prints the snapshot's hash."""
    if (folder is None) == (git_url is None):
        raise click.UsageError("give a skill folder to upload, or --git URL (with --ref, --path), not both")
    if git_url is None and (ref or sub):
        raise click.UsageError("--ref and --path go with --git URL")
    with _client(ctx) as c:
        snap = c.snapshot_git(git_url, ref or "HEAD", sub) if git_url else c.snapshot_skill(str(folder))
    emit(as_json, snap, snap["hash"])


@remote.command("create")
@click.argument("definition", type=click.Path(exists=True, dir_okay=False))
@json_option
@pass_ctx
def create_cmd(ctx: Context, definition: str, as_json: bool) -> None:
    """Create an experiment from a definition naming uploaded datasets and snapshots; prints its id."""
    with _client(ctx) as c:
        exp = c.create_experiment(definition)
    data = {"id": exp.id, "name": exp.name, "dataset": exp.dataset, "arms": [a.label for a in exp.arms]}
    emit(as_json, data, str(exp.id))


def _status_line(p: Progress) -> str:
    return f"#{p.experiment_id} {p.experiment}: {p.status}, {p.done}/{p.total} runs"


@remote.command("run")
@click.argument("experiment")
@click.option("--no-wait", is_flag=True, help="Start it and return at once.")
@json_option
@pass_ctx
def run_cmd(ctx: Context, experiment: str, no_wait: bool, as_json: bool) -> None:
    """Run the experiment in the server's pool and wait for it to finish."""
    with _client(ctx) as c:
        c.start(experiment)
        p = c.experiment_status(experiment) if no_wait else c.wait(experiment)
    emit(as_json, p, _status_line(p))


@remote.command("compare")
@click.argument("experiment")
@click.option("--vs", help="A second experiment (same dataset): compare its arm with this one's.")
@click.option("-a", "arm_a", help="The baseline arm.")
@click.option("-b", "arm_b", help="The candidate arm.")
@json_option
@pass_ctx
def compare_cmd(
    ctx: Context, experiment: str, vs: str | None, arm_a: str | None, arm_b: str | None, as_json: bool
) -> None:
    """The paired comparison (exit 1 when refused: different datasets)."""
    with _client(ctx) as c:
        result = (
            c.compare_experiments(experiment, vs, arm_a, arm_b)
            if vs
            else c.compare_arms(experiment, arm_a, arm_b)
        )
    emit(as_json, result, lambda: _print_comparison(result))


def _print_comparison(result: dict[str, Any]) -> None:
    """The comparison as the local `compare` heads it: the pair, the verdict, the outcome, the notes."""
    verdict = result.get("verdict") or {}
    outcomes = result.get("outcomes") or {}

    def arm(side: Any) -> str:
        return str(side.get("arm") if isinstance(side, dict) else side)

    click.echo(
        f"{arm(result.get('b'))} vs {arm(result.get('a'))} on {result.get('dataset')}: "
        f"{result.get('n_cases')} paired case(s), outcome {result.get('outcome')}"
    )
    click.echo(verdict.get("text") or "no verdict")
    if verdict.get("outcome_text"):
        click.echo(f"outcome: {verdict['outcome_text']}")
    if outcomes:
        counts = ", ".join(f"{k} {v}" for k, v in outcomes.items() if isinstance(v, int))
        if counts:
            click.echo(f"cases: {counts}")
    for note in result.get("notes") or ():
        click.echo(f"note: {note}")


@remote.command("gate")
@click.argument("experiment")
@click.option("--rules", type=click.Path(exists=True, dir_okay=False), help="A gate file (YAML/JSON).")
@json_option
@pass_ctx
def gate_cmd(ctx: Context, experiment: str, rules: str | None, as_json: bool) -> None:
    """Evaluate the gate; exit 0 on pass (with warnings), 1 otherwise (block, incomplete, inconclusive)."""
    with _client(ctx) as c:
        result = c.evaluate_gate(experiment, rules)

    emit(as_json, result, lambda: _print_gate(result))
    if not str(result["outcome"]).startswith("pass"):
        sys.exit(1)


_MARKS = {"pass": "✓", "fail": "✗", "warn": "!", "missing": "?", "inconclusive": "?"}


def _print_gate(result: dict[str, Any]) -> None:
    """The gate as the local `gate` prints it: its pair, outcome and coverage, each rule, the decision."""
    pair = result.get("pair") or {}
    coverage = result.get("coverage") or {}
    click.echo(f"gate: {result['outcome']}")
    click.echo(
        f"  {pair.get('candidate')} vs {pair.get('baseline')} (pair named by {pair.get('named_by', '?')}); "
        f"{coverage.get('text', 'coverage unknown')}"
        + (f" — {coverage['gap']}" if coverage.get("gap") else "")
    )
    for rule in result.get("rules") or ():
        mark = _MARKS.get(str(rule.get("status")), "·")
        text = rule.get("message") or (rule.get("rule") or {}).get("name") or "?"
        click.echo(f"  {mark} {text}")
    decision = result.get("decision") or {}
    if decision:
        click.echo(f"decision ({pair.get('candidate')} vs {pair.get('baseline')}):")
        for dim in ("capability", "cost", "stability"):
            d = decision.get(dim) or {}
            if d:
                click.echo(f"  {dim:<10} {d.get('conclusion', '?'):<12} {d.get('summary', '')}")
    if result.get("verdict_outcome"):
        click.echo(f"outcome: {result['verdict_outcome']}")
    for note in result.get("notes") or ():
        click.echo(f"note: {note}")


@remote.command("report")
@click.argument("experiment")
@click.option("--rules", type=click.Path(exists=True, dir_okay=False), help="A gate file for the decision.")
@click.option("--out", type=click.Path(dir_okay=False), help="The HTML file (default <experiment>.html).")
@pass_ctx
def report_cmd(ctx: Context, experiment: str, rules: str | None, out: str | None) -> None:
    """Render the report on the server and download it; prints the file written."""
    gate = None
    if rules:
        gate = load_yaml(read_utf8(rules))
    with _client(ctx) as c:
        click.echo(c.render_report(experiment, out, rules=gate))
