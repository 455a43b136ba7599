"""Commands for the response cache: cache stats (what it holds and saved), cache clear [--older-than]."""

from __future__ import annotations

import click

from abbench.cli._app import Context, cli, emit, json_option, pass_ctx
from abbench.runner import cache_stats, clear_cache


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return str(n)


@cli.group("cache")
def cache_group() -> None:
    """The response cache of model calls (agents and judges): what it holds and saved, and clearing it.

    A resumed, retried or re-graded experiment reuses every model call it already paid for; set
    `cache: on | off | read-only | refresh` per experiment, per arm or per judge (default: on for
    judges and for arms at temperature 0, off otherwise).
    """


@cache_group.command("stats")
@json_option
@pass_ctx
def cache_stats_cmd(ctx: Context, as_json: bool) -> None:
    """Show the cache's entries, size, hits and the cost they saved, per endpoint and model."""
    s = cache_stats(store=ctx.store)

    def human() -> None:
        click.echo(
            f"{s.entries:,} entries, {_size(s.bytes)}, {s.hits:,} hits, cost saved {s.cost_saved:.4g}"
            + (f" (kept {s.oldest} … {s.newest})" if s.entries else "")
        )
        for m in s.by_model:
            click.echo(
                f"  {m.model:<24} {m.endpoint:<32} {m.entries:>7,} entries {_size(m.bytes):>10} "
                f"{m.hits:>7,} hits  saved {m.cost_saved:.4g}"
            )

    emit(as_json, s.as_dict(), human)


@cache_group.command("clear")
@click.option(
    "--older-than",
    metavar="AGE",
    help="Only replies kept longer ago than this: 90s, 30m, 12h, 7d, 2w (default: every reply).",
)
@click.option("--model", help="Only this model's replies.")
@json_option
@pass_ctx
def cache_clear_cmd(ctx: Context, older_than: str | None, model: str | None, as_json: bool) -> None:
    """Drop replies from the cache (the next call of each asks the model again)."""
    dropped = clear_cache(older_than, model=model, store=ctx.store)
    what = " ".join(x for x in (f"older than {older_than}" if older_than else "", model or "") if x)
    emit(
        as_json,
        {"dropped": dropped},
        f"dropped {dropped:,} cached replies{' (' + what + ')' if what else ''}",
    )
