"""How `abbench metrics` and `abbench compare` print skill activation and the trigger-vs-help split."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import click

from abbench import formatting as fm
from abbench.cli._analysis import _estimate, _pct
from abbench.metrics import ACTIVATION_FIGURES

if TYPE_CHECKING:
    from abbench.compare import TriggerHelp
    from abbench.metrics import ActivationComparison, ArmActivation, ExperimentActivation


def print_activation(report: ExperimentActivation | None) -> None:
    """The activation block: each offered arm's figures, what was left out, and the paired comparisons."""
    if report is None or not report.offered:
        return
    click.secho(
        "skill activation (offered arms; execution failures are not correct non-triggers):", bold=True
    )
    for a in report.arms:
        _print_arm(a)
    for c in report.comparisons:
        click.echo(f"  {comparison_line(c)}")
    click.echo("")


def _print_arm(a: ArmActivation) -> None:
    if not a.offered:
        click.echo(f"  {a.arm}: not assessed ({a.reason})")
        return
    click.echo(f"  {a.arm}: offered {', '.join(a.skills_offered) or '(not yet known)'}")
    for field, word in ACTIVATION_FIGURES:
        est = getattr(a, field)
        counted = f"  ({est.n_cases} cases, {est.method})" if est.value is not None else ""
        click.echo(f"    {word:<18}{_estimate(est)}{counted}")
    left = [f"{a.counted} runs counted", f"{a.execution_failed} execution failures left out"]
    if a.not_executed:
        left.append(f"{a.not_executed} not executed")
    if a.not_recorded:
        left.append(f"{a.not_recorded} recorded no loads")
    if a.expected_not_offered:
        left.append(f"{a.expected_not_offered} expected a skill not offered")
    click.echo(f"    {'':<18}{'; '.join(left)}")
    if a.loads:
        click.echo(f"    {'loads':<18}{', '.join(f'{k} {v}' for k, v in a.loads.items())}")


def comparison_line(c: ActivationComparison) -> str:
    """``alone vs plugin (correct): 80.0% → 50.0%, −30.0 points [..], McNemar exact p = 0.07 on 20 cases``."""
    head = f"{c.a} vs {c.b} ({c.what})"
    if c.diff is None:
        return f"{head}: not assessed ({c.reason})"
    interval = "" if c.interval is None else f" [{c.interval.low * 100:+.1f} to {c.interval.high * 100:+.1f}]"
    excluded = f", {c.excluded} cases in one arm only" if c.excluded else ""
    return (
        f"{head}: {_pct(c.rate_a)} → {_pct(c.rate_b)}, {c.diff * 100:+.1f} points{interval}, "
        f"exact McNemar p = {c.p_value:.3g} on {c.n_paired} cases ({c.only_a} only A, {c.only_b} only B){excluded}"
    )


_points = partial(fm.difference, word="points", missing="n/a", zero_sign=False)


def print_trigger_help(t: TriggerHelp | None) -> None:
    """The trigger-vs-help lines of a comparison: ITT and per-protocol per arm, then the split."""
    if t is None:
        return
    click.secho("trigger vs help:", bold=True)
    for side in (t.a, t.b):
        p = "n/a" if side.activation is None else _pct(side.activation)
        click.echo(
            f"  {side.arm} ({side.mode}): had the skill in {p} of runs · accuracy every case "
            f"{_estimate(side.intention_to_treat)} · when loaded {_estimate(side.per_protocol)}"
            + (
                f" · loaded the wrong sibling in {_pct(side.wrong_sibling)} of runs"
                f" (accuracy {_estimate(side.when_sibling)})"
                if side.sibling_runs and side.wrong_sibling is not None
                else ""
            )
        )
    click.echo(f"  effect {_points(t.total)} = loaded more often {_points(t.loaded_more_often)}")
    click.echo(
        f"      ({_points(t.activation_difference)} activation × {_points(t.help_when_loaded)} help when loaded)"
    )
    click.echo(
        f"    + helped more when loaded {_points(t.helped_more_when_loaded)}"
        f" + when not loaded {_points(t.when_not_loaded)}"
    )
    if t.reason:
        click.echo(f"  note: {t.reason}")
    click.echo("")
