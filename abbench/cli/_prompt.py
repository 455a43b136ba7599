"""The ``prompt`` command: what an agent or a judge would be sent for one case, sent nowhere."""

from __future__ import annotations

import json
from typing import Any

import click

from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.runner import PromptPreview, preview_prompt

_SHOWN = ("messages", "tools")


@cli.command("prompt")
@click.argument("experiment")
@click.argument("case_id")
@click.option("--arm", default=None, help="The arm whose agent (or whose answer, for a judge) is shown.")
@click.option("--judge", default=None, help="A judge's grader name: show the judge's prompt instead.")
@click.option("--round", "round_", type=int, default=1, show_default=True, help="The round, from 1.")
@json_option
@pass_ctx
def prompt_cmd(
    ctx: Context,
    experiment: str,
    case_id: str,
    arm: str | None,
    judge: str | None,
    round_: int,
    as_json: bool,
) -> None:
    """Show the exact prompt an agent or judge would receive for one case, without calling anything.

    The request is built by the agent's (or judge's) own code, as a run would build it: its messages,
    the tools offered, the model and every other field of the request body. Nothing is sent and
    nothing is stored. A judge's prompt holds the arm's stored answer to the case, so the case must
    have been run; a pairwise judge shows one request per slot order.

    \b
    Examples:
      abbench prompt routing c001 --arm treatment
      abbench prompt routing c001 --arm treatment --judge llm_judge
      abbench prompt routing c001 --judge pairwise_judge --json
    """
    preview = preview_prompt(experiment, case_id, arm=arm, judge=judge, round=round_, store=ctx.store)
    emit(as_json, preview.as_dict(), lambda: _print(preview))


def _print(p: PromptPreview) -> None:
    who = f"judge {p.judge} ({p.kind})" if p.judge else f"agent {p.agent} of arm {p.arm}"
    click.echo(
        f"{p.experiment}: case {p.case_id}, round {p.round} — {who}, model {p.model or '-'} "
        f"at {p.base_url or '-'}"
    )
    if p.judge:
        click.echo(f"judging the answer of arm {p.arm}")
    if p.note:
        click.echo(p.note)
    for i, body in enumerate(p.requests, 1):
        if len(p.requests) > 1:
            click.echo(f"\n=== request {i} of {len(p.requests)} ===")
        for m in body.get("messages", []):
            click.echo(f"\n--- {m.get('role')} ---")
            click.echo(_content(m.get("content")))
        tools = body.get("tools") or []
        click.echo(f"\n--- tools offered: {len(tools) or 'none'} ---")
        for t in tools:
            fn = t.get("function", {})
            click.echo(f"{fn.get('name')}: {fn.get('description', '')}")
            click.echo("  parameters: " + json.dumps(fn.get("parameters", {}), ensure_ascii=False))
        rest = {k: v for k, v in body.items() if k not in _SHOWN}
        click.echo("\n--- request fields ---")
        click.echo(json.dumps(rest, ensure_ascii=False, indent=1))


def _content(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=1)
