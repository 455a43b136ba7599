"""The ``demo`` command: the embedded demo, offline, end to end."""

from __future__ import annotations

import click

from abbench.cli._app import Context, cli, pass_ctx
from abbench.cli._progress import progress_bar
from abbench.demo import run_demo


@cli.command("demo")
@click.option("--out-dir", default="reports", show_default=True, help="Where the HTML reports go.")
@click.option(
    "--latency-ms",
    type=int,
    default=0,
    show_default=True,
    help="Simulated latency of the builtin agent per run (to watch run control).",
)
@click.option("--rounds", type=int, help="Rounds per case (default 3).")
@click.option("--no-report", is_flag=True, help="Stop after the comparison; render no HTML.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@pass_ctx
def demo_cmd(
    ctx: Context, out_dir: str, latency_ms: int, rounds: int | None, no_report: bool, quiet: bool
) -> None:
    """Run the embedded demo offline: import, snapshot, run, grade, compare, gate, report.

    The builtin agent is an offline stand-in for a real model (no network, no keys). Running the
    demo again reuses what is stored and only re-renders the reports.

    \b
    Example:
      abbench demo            # writes reports/demo.html and reports/demo-v1-vs-v2.html
    """
    with progress_bar(quiet) as bar:

        def note(line: str) -> None:
            bar.close()  # the line goes below a finished bar, not through it; the next step opens its own
            click.echo(line)

        run_demo(
            ctx.store,
            out_dir=out_dir,
            latency_ms=latency_ms,
            rounds=rounds,
            report=not no_report,
            observers=[bar],
            note=note,
        )
