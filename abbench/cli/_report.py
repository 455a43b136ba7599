"""Commands for what leaves abbench: export (CSV/XLSX/JSONL files) and report (self-contained HTML pages)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from abbench.cli._analysis import grader_header, grader_option
from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.export import export_table, pairwise_result, write_csv, write_jsonl
from abbench.report import render_reports

if TYPE_CHECKING:
    from abbench.report import ReportResult


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


@cli.command("export")
@click.argument("experiment")
@click.option(
    "--what",
    type=click.Choice(["runs", "grades", "reviews", "comparison", "pairwise"]),
    default="runs",
    show_default=True,
    help="What to export.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "xlsx", "jsonl", "json"]),
    help="File format (default: from --out's suffix, else csv; json, the default, for --what pairwise).",
)
@click.option(
    "--out",
    metavar="FILE",
    help="The file to write ('-' for stdout, csv/jsonl only); default <experiment>-<what>.<format> here.",
)
@click.option("--arms", nargs=2, metavar="A B", help="For --what comparison: the two arms, control first.")
@click.option("--vs", metavar="EXP_B", help="For --what comparison: compare against another experiment.")
@click.option(
    "--judge", metavar="NAME", help="For --what pairwise: the pairwise judge (default: the only one)."
)
@json_option
@pass_ctx
def export_cmd(
    ctx: Context,
    experiment: str,
    what: str,
    fmt: str | None,
    out: str | None,
    arms: tuple[str, str] | None,
    vs: str | None,
    judge: str | None,
    as_json: bool,
) -> None:
    """Export an experiment's runs, grades, reviews or comparison to CSV, XLSX or JSONL, or its
    pairwise judge's contest to JSON.

    \b
    csv    UTF-8 with a byte-order mark (Excel reads Chinese correctly); text beginning with
           = + - @, a tab or a carriage return gets a leading ' so no spreadsheet runs it
    xlsx   typed cells (numbers, booleans, UTC dates), a frozen header with a filter
    jsonl  lossless: every value as stored, raw rows and full grades included
    json   --what pairwise: the double-blind workflow's shape (test_summary, rounds,
           final_result with the sign test and the judge's position and verbosity bias)

    \b
    Examples:
      abbench export routing-v2 --what runs --format xlsx --out exports/routing-v2.xlsx
      abbench export routing-v2 --what grades --format jsonl --out - | jq .
      abbench export routing-v2 --what pairwise --format json --out contest.json
    """
    if what == "pairwise":
        _export_pairwise(ctx, experiment, fmt, out, judge, as_json)
        return
    if fmt == "json":
        raise click.UsageError("--format json is for --what pairwise; tables are csv, xlsx or jsonl")
    if out == "-":
        _export_to_stdout(ctx, experiment, what, fmt or "csv", arms, vs)
        return
    result = ctx.backend.export(experiment, what, fmt, out, arms=arms, vs=vs)
    emit(
        as_json,
        result.as_dict(),
        f"wrote {_rows(result.rows, what)} to {result.path} ({result.format}, {_size(result.size_bytes)})",
    )


def _export_pairwise(
    ctx: Context, experiment: str, fmt: str | None, out: str | None, judge: str | None, as_json: bool
) -> None:
    """`export --what pairwise`: the contest as one JSON document (to stdout with ``--out -``)."""
    if fmt not in (None, "json"):
        raise click.UsageError(f"--what pairwise is written as json, not {fmt}")
    if ctx.server is not None:
        raise click.UsageError("--what pairwise reads a local store: run it where the store is")
    if out == "-":
        doc = pairwise_result(experiment, grader=judge, store=ctx.store)
        click.echo(json.dumps(doc, ensure_ascii=False, indent=2))
        return
    from abbench.export import export  # the writers: loaded by the commands that export

    result = export(experiment, "pairwise", "json", out, store=ctx.store, grader=judge)
    emit(
        as_json,
        result.as_dict(),
        f"wrote {_rows(result.rows, 'pairwise')} to {result.path} (json, {_size(result.size_bytes)})",
    )


def _export_to_stdout(
    ctx: Context, experiment: str, what: str, fmt: str, arms: tuple[str, str] | None, vs: str | None
) -> None:
    """`export --out -`: the table as CSV or JSON lines on stdout (a local store's)."""
    if ctx.server is not None:
        raise click.UsageError("with --server, export writes a file: give --out FILE (or none: a file here)")
    if fmt == "xlsx":
        raise click.UsageError("an xlsx file cannot go to stdout; give --out FILE.xlsx")
    options: dict[str, Any] = {}
    if arms:
        options["arms"] = tuple(arms)
    if vs:
        options["vs"] = vs
    table = export_table(experiment, what, store=ctx.store, **options)
    writer = write_csv if fmt == "csv" else write_jsonl
    writer(table, sys.stdout)


def _rows(n: int, what: str) -> str:
    """``1 review``, ``400 comparison rows``: the rows an export wrote, in words."""
    noun = {
        "runs": "run",
        "grades": "grade",
        "reviews": "review",
        "comparison": "comparison row",
        "pairwise": "judged pair",
    }.get(what, what)
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


@cli.command("report")
@click.argument("experiments", nargs=-1)
@click.option("--vs", metavar="EXP_B", help="Compare against another experiment on the same dataset.")
@click.option("--arms", nargs=2, metavar="A B", help="Compare these two arms, control first.")
@click.option(
    "--gate",
    "--rules",
    "gate",
    type=click.Path(dir_okay=False),
    help="A gate file (YAML/JSON) to decide pass or block (--rules: as `gate` names it).",
)
@click.option("--title", help="The page title (default: the experiment's name).")
@click.option("--out", metavar="FILE", help="The HTML file (default reports/<experiment>.html).")
@click.option(
    "--all-since", "since", metavar="DATE", help="A report for every experiment created since DATE."
)
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False),
    default="reports",
    show_default=True,
    help="Folder for a batch of reports (--all-since, or several experiments).",
)
@click.option(
    "--fail-on-block",
    is_flag=True,
    help="Exit 1 when a report's gate does not pass — block, incomplete or inconclusive (the pages are "
    "written all the same): for nightly jobs.",
)
@grader_option
@json_option
@pass_ctx
def report_cmd(
    ctx: Context,
    experiments: tuple[str, ...],
    vs: str | None,
    arms: tuple[str, str] | None,
    gate: str | None,
    title: str | None,
    out: str | None,
    since: str | None,
    out_dir: str,
    fail_on_block: bool,
    grader: str | None,
    as_json: bool,
) -> None:
    """Render a self-contained HTML report (and keep the executed notebook beside it).

    The page opens offline on any laptop or phone: plotly.js is inlined once, code is hidden, every
    string from data, models or judges is escaped, and a page holding the value of a key, token or
    secret from the environment is refused.

    \b
    Examples:
      abbench report routing-v2 --out reports/routing-v2.html
      abbench report routing-v2 --arms control v2 --gate gates/release.yaml
      abbench report routing-v2 --vs routing-v1
      abbench report --all-since 2026-11-01 --out-dir reports/nightly --fail-on-block
      abbench report routing-v2 --grader label_match   # figures as label_match alone graded the runs

    \b
    The decision is on the pair --arms names, else the gate file's baseline:/candidate:, else the
    experiment's decision:; three or more arms and no pair named: the page is written without a decision
    and the command exits 2, saying how to name one. A page on an experiment with nothing run yet says so
    at its top, shows no verdict, and the command warns. With --grader the page's figures are that
    grader's grades alone (said at its top; default file <experiment>-by-<grader>.html); the decision
    stays the gate's, on the runs' own verdicts.

    \b
    Exit codes: 0 written (whatever the verdict, unless --fail-on-block) · 1 a gate did not pass (block,
    incomplete or inconclusive) and --fail-on-block was given · 2 usage error, a report of the batch
    failed, or a decision's pair is not named (the page is written all the same).
    """
    batch = since is not None or len(experiments) > 1
    if not experiments and since is None:
        raise click.UsageError("name an experiment, several, or --all-since DATE")
    if since is not None and experiments:
        raise click.UsageError("give experiments or --all-since DATE, not both")
    if not batch:
        _report_one(ctx, experiments[0], vs=vs, arms=arms, gate=gate, title=title, out=out,
                    fail_on_block=fail_on_block, as_json=as_json, grader=grader)  # fmt: skip
        return
    if ctx.server is not None:
        raise click.UsageError(
            "a batch of reports (--all-since, several experiments) is made on a local store"
        )
    if out or vs or arms or title or grader:
        raise click.UsageError(
            "--out, --vs, --arms, --title and --grader are for one report; a batch uses --out-dir"
        )
    _report_batch(ctx, experiments, since=since, out_dir=out_dir, gate=gate, fail_on_block=fail_on_block,
                  as_json=as_json)  # fmt: skip


def _report_one(ctx: Context, experiment: str, *, vs: str | None, arms: tuple[str, str] | None, gate: str | None,
                title: str | None, out: str | None, fail_on_block: bool, as_json: bool,
                grader: str | None = None) -> None:  # fmt: skip
    """One page: what was written and the decision; exit 2 on a refusal, 1 on a block with --fail-on-block."""
    r = ctx.backend.render_report(
        experiment,
        out,
        vs=vs,
        arms=list(arms) if arms else None,
        gate=gate,
        title=title,
        progress=not as_json and sys.stderr.isatty(),
        grader=grader,
    )
    lines = [f"wrote {r.html_path} ({_size(r.size_bytes)}, {r.figures} figures) in {r.seconds:.1f} s"]
    if r.grader is not None:
        lines.append(grader_header(r.grader, "every figure of the page (the decision is the gate's)"))
    if r.decision:
        lines.append(f"decision: {r.verdict_line}" + (f" — {r.headline}" if r.headline else ""))
    if r.notebook_path is not None:  # a server keeps the notebook it executed
        lines.append(f"executed notebook: {r.notebook_path}")
    emit(as_json, r.as_dict(), "\n".join(lines))
    _warn([r])
    if r.refusal:
        sys.exit(2)
    if fail_on_block and r.decision and not r.passed:
        sys.exit(1)


def _report_batch(ctx: Context, experiments: tuple[str, ...], *, since: str | None, out_dir: str,
                  gate: str | None, fail_on_block: bool, as_json: bool) -> None:  # fmt: skip
    """A page per experiment: each one written or failed; exit 2 on any failure, 1 on a block with --fail-on-block."""
    result = render_reports(
        since=since,
        experiments=list(experiments) if experiments else None,
        out_dir=Path(out_dir),
        store=ctx.store,
        gate=gate,
    )

    def human() -> None:
        if not result.results and not result.failures:
            click.echo(f"no experiment created since {since}")
        for r in result.results:
            verdict = f"  {r.verdict_line}" if r.decision else "  NO DECISION"
            click.echo(
                f"wrote {r.html_path} ({_size(r.size_bytes)}) in {r.seconds:.1f} s  {r.experiment}{verdict}"
            )
        for f in result.failures:
            click.secho(f"failed {f.experiment}: {f.error}", fg="red", err=True)

    emit(as_json, result.as_dict(), human)
    _warn(result.results)
    if result.failures or any(r.refusal for r in result.results):
        sys.exit(2)
    if fail_on_block and any(r.decision and not r.passed for r in result.results):
        sys.exit(1)


def _warn(results: Sequence[ReportResult]) -> None:
    """Say on stderr what a page could not decide, so a script sees it without opening the page."""
    for r in results:
        for line in r.warnings:
            click.secho(f"warning: {line}", fg="yellow", err=True)
