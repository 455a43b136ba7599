"""The command that runs the HTTP service: abbench serve [--host] [--port] [--workers] ..."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from abbench.cli._app import Context, cli, pass_ctx
from abbench.server import EndpointRule

F = TypeVar("F", bound=Callable[..., Any])


def _rules(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[EndpointRule, ...]:
    """``--key-env NAME=URL`` / ``--endpoint URL`` as endpoint rules (a bad pattern is a usage error)."""
    rules = []
    for text in values:
        if param.name == "key_env" and "=" not in text:
            raise click.BadParameter(
                f"{text!r}: write NAME=URL, e.g. OPENAI_API_KEY=https://api.openai.com/v1"
            )
        try:
            rule = EndpointRule.parse(text)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
        if param.name == "endpoints" and rule.key_env is not None:
            raise click.BadParameter(f"{text!r}: a key variable goes with --key-env {text}")
        rules.append(rule)
    return tuple(rules)


def _limit(flag: str, default: Any, kind: Any, text: str, field: str | None = None) -> Callable[[F], F]:
    """One of the service's limits: an option with its default shown in ``--help``, passed to the
    `ServerSettings` field of its name (`field` when the flag's words differ)."""
    names = (flag,) if field is None else (flag, field)
    return click.option(*names, default=default, show_default=True, type=kind, help=text)


@cli.command("serve")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (0.0.0.0: every interface)."
)
@click.option("--port", default=8750, show_default=True, type=int)
@_limit("--workers", 2, click.IntRange(1, 64), "Experiments run at once.")
@_limit(
    "--max-request-mb",
    200,
    click.IntRange(1),
    "Largest upload (a data file, a skill archive) or body of recorded outcomes.",
)
@_limit(
    "--max-document-mb",
    1,
    click.IntRange(1),
    "Largest body of any other request (a definition, a gate, a review ...).",
)
@_limit("--rate", 600, click.IntRange(1), "Requests per key per minute.", "rate_per_minute")
@click.option(
    "--agent",
    "agents",
    multiple=True,
    default=("builtin",),
    show_default=True,
    help="An agent adapter callers may use (repeat). command/python run code here; openai reads this "
    "machine's environment for keys: allow them only for callers you trust.",
)
@click.option("--allow-judges", is_flag=True, help="Let callers use graders that call a model.")
@click.option(
    "--key-env",
    "key_env",
    multiple=True,
    metavar="NAME=URL",
    callback=_rules,
    help="Let callers' openai arms and judges send this environment variable's value as their key, to "
    "endpoints matching URL only (repeat). URL: scheme://host[:port][/path]; *.example.com is any name "
    "under it, :* any port, a path covers what is below it. Nothing else of this machine's "
    "environment ever leaves.",
)
@click.option(
    "--endpoint",
    "endpoints",
    multiple=True,
    metavar="URL",
    callback=_rules,
    help="Let callers' openai arms and judges call endpoints matching URL without a key of this "
    "machine's (repeat; same patterns as --key-env). Endpoints neither option names are refused.",
)
@_limit("--per-owner", 4, click.IntRange(1), "Running experiments per owner.", "per_owner_running")
@_limit(
    "--runner-nice",
    5,
    click.IntRange(0, 19),
    "Lower CPU priority of the runner processes than of the server (0: the same).",
)
@click.option(
    "--git-scheme",
    "git_schemes",
    multiple=True,
    type=click.Choice(["https", "ssh", "http", "git", "file"]),
    default=("https", "ssh"),
    show_default=True,
    help="A URL scheme POST /skill-snapshots may clone from (repeat). file reads this machine's "
    "repositories; http and git are unauthenticated.",
)
@_limit("--git-timeout", 120.0, click.FloatRange(min=1), "Seconds the clone of one git snapshot may take.")
@click.option(
    "--git-credentials",
    "git_credentials",
    multiple=True,
    metavar="HOST[/PATH]",
    help="Let git snapshots of repositories under HOST[/PATH] (*.host: any name under it) use this "
    "machine's git credentials: its SSH keys and agent, ~/.netrc (repeat). Every other URL is cloned "
    "anonymously.",
)
@_limit(
    "--request-workers",
    2,
    click.IntRange(1, 64),
    "Requests read in a process of their own at once (imports, previews, snapshots, definitions, "
    "outcomes); one at a time per key.",
)
@_limit(
    "--request-cpu",
    120.0,
    click.FloatRange(min=1),
    "CPU seconds one such request may take (a 200 MB CSV imports in about 30).",
    "request_cpu_s",
)
@_limit("--request-memory-mb", 4096, click.IntRange(256), "Megabytes of memory one such request may take.")
@_limit(
    "--request-timeout",
    600.0,
    click.FloatRange(min=1),
    "Seconds one such request may take in all.",
    "request_timeout_s",
)
@_limit(
    "--max-runs",
    1_000_000,
    click.IntRange(1),
    "The most runs (cases × rounds × arms) an experiment created over HTTP may have.",
)
@_limit(
    "--max-inflight",
    8,
    click.IntRange(1),
    "Requests one key may have in flight at once (event streams aside); more answer 429.",
)
@pass_ctx
def serve_cmd(
    ctx: Context,
    host: str,
    port: int,
    max_request_mb: int,
    max_document_mb: int,
    agents: tuple[str, ...],
    key_env: tuple[EndpointRule, ...],
    endpoints: tuple[EndpointRule, ...],
    git_schemes: tuple[str, ...],
    git_credentials: tuple[str, ...],
    **fields: Any,
) -> None:
    """Serve the store over HTTP (FastAPI): keys from `abbench keys create`, docs at /docs.

    The server is the store's single writer: experiments started over HTTP run in child processes of
    its own pool, and a restart resumes what the last one left running.
    """
    from abbench.server import ServerSettings, serve  # fastapi loads only when serving, not for --help

    settings = ServerSettings(
        store=ctx.store.path,
        max_request_bytes=max_request_mb * 1024 * 1024,
        max_document_bytes=max_document_mb * 1024 * 1024,
        agents=frozenset(agents) | {"external"},  # recorded runs: never executed here
        endpoints=endpoints + key_env,
        git_schemes=frozenset(git_schemes),
        git_credentials=tuple(git_credentials),
        **fields,  # the options named as its fields: --workers, --allow-judges, the limits
    )
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.secho(
            f"serving on {host}: reachable from other machines; put TLS in front of it", fg="yellow", err=True
        )
    click.echo(f"abbench serving {settings.store} on http://{host}:{port} (docs at /docs)", err=True)
    _signals_to_uvicorn()
    serve(settings, host=host, port=port)


def _signals_to_uvicorn() -> None:
    """Leave SIGTERM and Ctrl-C to uvicorn, which shuts the server down (its runners first, recorded as
    stopped by their server) and then re-raises them; a SIGHUP does what a SIGTERM does. The CLI's own
    handler (`stop_on_termination`) would stop the server's loop under it instead."""
    import signal

    for sig, default in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler)):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, default)
    hup = getattr(signal, "SIGHUP", None)
    if hup is not None and signal.getsignal(hup) is not signal.SIG_IGN:
        signal.signal(hup, lambda signum, frame: signal.raise_signal(signal.SIGTERM))
