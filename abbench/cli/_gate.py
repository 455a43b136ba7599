"""The ``gate`` command: the pair, the outcome and its coverage first, then each rule and the decision."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.gate import METRICS, GateOutcome, RuleStatus, Severity, metric_names

if TYPE_CHECKING:
    from abbench.gate import GateResult, MetricDef, RuleOutcome


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
def gate_cmd(ctx: Context, experiment: str | None, rules_file: str | None, arms: tuple[str, str] | None,
             baseline: str | None, cluster: str | None, fail_on_inconclusive: bool, list_metrics: bool,
             as_json: bool) -> None:  # fmt: skip
    """Apply a gate: the pair, the outcome and its coverage first, then each rule and the three dimensions.

    \b
    The pair is --arms, else the gate file's baseline:/candidate:, else the experiment's decision:; two
    arms need no name (first is the baseline); three or more and no name is refused (exit 2).
    Outcomes: pass, pass with warnings (exit 0); block, incomplete (fewer runs graded than the gate's
    min_coverage, default all) (exit 1); inconclusive — a block rule the evidence does not settle
    (non_inferior, or the default capability rule, with an interval straddling the margin; the line says
    about how many more cases would settle it) and none blocking, or no rule assessed at all — exit 1
    with --fail-on-inconclusive (the default), 0 with --allow-inconclusive. A usage error exits 2.

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
    if list_metrics:
        _list_metrics(as_json)
        return
    if experiment is None:
        raise click.UsageError("give the EXPERIMENT to gate (or --list-metrics)")
    result = ctx.backend.evaluate_gate(experiment, rules_file, arms=arms, vs=baseline, cluster=cluster)
    allowed = result.outcome == GateOutcome.INCONCLUSIVE and not fail_on_inconclusive
    emit(as_json, result.as_dict("cli"), lambda: _print_gate(result, allowed))
    if allowed:
        return
    if not result.passed:
        sys.exit(1)


def _list_metrics(as_json: bool) -> None:
    """The metrics a rule may use, by scope (`--list-metrics`)."""
    metrics: list[tuple[str, MetricDef]] = list(zip(metric_names(), METRICS.values(), strict=True))
    rows: list[dict[str, Any]] = [
        {"metric": name, "scope": m.scope, "kind": m.kind, "description": m.description}
        for name, m in metrics
    ]

    def listing() -> None:
        click.echo(
            "Unprefixed arm metrics are about the candidate (B); write a.NAME, b.NAME or ARM.NAME for others."
        )
        for scope in ("comparison", "arm", "decision"):
            click.secho(f"{scope} metrics:", bold=True)
            for name, m in metrics:
                if m.scope == scope:
                    click.echo(f"  {name:<34}{m.kind:<8}{m.description}")

    emit(as_json, rows, listing)


def _rule_mark(r: RuleOutcome) -> str:
    """✓ holds, ✗ blocks, ? a block rule the evidence does not settle, · allowed to have no value and has
    none, ! anything else (a warning)."""
    if r.status == RuleStatus.PASS:
        return "✓"
    if r.blocks:
        return "✗"
    if r.status == RuleStatus.INCONCLUSIVE and r.rule.severity == Severity.BLOCK:
        return "?"
    if r.status == RuleStatus.MISSING and r.rule.allow_missing:
        return "·"
    return "!"


def _print_gate(result: GateResult, inconclusive_allowed: bool) -> None:
    """A gate's outcome as `abbench gate` prints it."""
    colour = {GateOutcome.PASS: "green", GateOutcome.PASS_WITH_WARNINGS: "yellow"}.get(result.outcome, "red")
    # The pair first, then the outcome and the coverage it rests on: nobody reads a PASS without its pair.
    click.secho(
        f"{result.pair_text}: GATE {result.outcome.upper()} — {result.coverage.text}",
        fg=colour,
        bold=True,
    )
    click.echo(
        f"  {result.experiment} (#{result.experiment_id}); pair named by {result.pair.named_in('cli')}; "
        f"rules: {result.source}"
    )
    said = _Said()
    if result.outcome != GateOutcome.PASS:
        click.echo(f"  {result.outcome}: {result.worded_reason('cli')}")
        # the rules' reasons that line gave (an inconclusive gate's reason is made of its unsettled rules')
        said.tell(*(r.explanation for r in result.rules if r.explanation in result.reason))
    for r in result.rules:
        severity = "" if r.rule.severity == Severity.BLOCK else " [warn]"
        click.echo(f"  {_rule_mark(r)} {said(r.message)}{severity}")
    click.echo(f"decision ({result.pair_text}):")
    for d in result.decision.dimensions:
        # a summary that opens with its own conclusion ("not assessed: ...") is not told twice
        summary = d.summary.removeprefix(f"{d.conclusion}: ") if d.conclusion else d.summary
        click.echo(f"  {d.name:<11}{d.conclusion:<13}{said(summary)}")
        said.tell(summary)
    if result.votes is not None:
        click.echo(f"  {result.votes.text}")
    if result.verdict:
        click.echo(f"verdict: {result.verdict}")
    if result.verdict_outcome:
        click.echo(f"outcome: {said(result.verdict_outcome)}")
    for note in result.notes:
        click.echo(f"note: {note}")
    if inconclusive_allowed:
        click.echo("note: inconclusive allowed (--allow-inconclusive): exit 0")


class _Said:
    """Tells a long explanation once: a later line that repeats one already told points back to it.

    The inconclusive reason (the interval, the margin, how many more cases would settle it) reaches the
    outcome line, its rule's line, the decision and the comparison's outcome; printed four times it buries
    the rest of the gate.
    """

    def __init__(self) -> None:
        self._told: list[str] = []

    def tell(self, *clauses: str) -> None:
        """Remember explanations just printed (the rules' reasons, a decision's summary)."""
        self._told.extend(c for c in clauses if c)

    def __call__(self, text: str) -> str:
        told = [clause for clause in self._told if clause in text]
        return text.replace(max(told, key=len), "(as above)") if told else text
