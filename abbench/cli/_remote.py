"""The commands that work on a server (``abbench --server URL ...``) through `abbench.client.Client` and
are not yet written once over `abbench.cli._backend.Backend`: snapshot, run, compare, gate. (The others
that work on a server are: `abbench.cli._commands.ON_A_SERVER`.)

They take the local commands' names and main arguments. The key comes from $ABBENCH_KEY, the actor
(recorded on the runs started) from $ABBENCH_ACTOR, else the CI's job when one is named ($GITHUB_JOB,
$CI_JOB_NAME).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from abbench.cli._app import Context, emit, json_option, pass_ctx
from abbench.cli._backend import remote_client

if TYPE_CHECKING:
    from abbench.client import Client
    from abbench.runner import Progress


@click.group("remote")
def remote() -> None:
    """Commands that run against `abbench serve`."""


def _client(ctx: Context) -> Client:
    assert ctx.server is not None
    return remote_client(ctx.server)


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
