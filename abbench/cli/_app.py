"""The command group, its global options, and the boundary where errors become exit codes."""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, TypeVar

import click

from abbench import __version__
from abbench.cli._commands import COMMANDS, ON_A_SERVER
from abbench.errors import AbbenchError

if TYPE_CHECKING:
    from abbench.cli._backend import Backend
    from abbench.client import Client
    from abbench.store import Store

F = TypeVar("F", bound=Callable[..., Any])


class Context:
    """What every command receives: the store path (opened on first use) and output preferences."""

    def __init__(self, store_path: str | None, verbose: int, server: str | None = None):
        self.store_path = store_path
        self.verbose = verbose
        self.server = server
        self._store: Store | None = None
        self._client: Client | None = None

    @property
    def store(self) -> Store:
        """The open store (created when missing)."""
        if self._store is None:
            from abbench.runner import set_origin
            from abbench.store import open_store

            set_origin("cli")  # what an experiment this process runs records as its runner's kind
            self._store = open_store(self.store_path)
        return self._store

    @property
    def backend(self) -> Backend:
        """What the command works on: the server of ``--server`` (its client), else the local store."""
        from abbench.cli._backend import LocalBackend, remote_client  # what commands work on, loaded for them

        if self.server is None:
            return LocalBackend(self.store)
        if self._client is None:
            self._client = remote_client(self.server)
        return self._client

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._client is not None:
            self._client.close()
            self._client = None


pass_ctx = click.make_pass_decorator(Context)


def stop_on_termination() -> None:
    """Make SIGTERM, SIGHUP and Ctrl-C stop the command as Ctrl-C always did, instead of killing it
    mid-write: a run records its runs in flight as interrupted and why it stopped (`abbench.runner.
    stop_on_signals`), also when SIGINT is ignored (a script's background job), and exits 128 + the
    signal's number.

    Signals a parent set to be ignored (``nohup`` ignores SIGHUP, a non-interactive shell SIGINT in
    its background jobs) stay ignored. Nothing is imported until a signal comes (``--help`` stays light).
    """

    def stop(signum: int, frame: Any) -> None:
        from abbench.runner import stop_for_signal

        stop_for_signal(signum)

    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        current = signal.getsignal(sig)
        if current is signal.SIG_DFL or (sig == signal.SIGINT and current is signal.default_int_handler):
            signal.signal(sig, stop)


class Group(click.Group):
    """Turns library errors into a one-line message and the exit code docs/ARCHITECTURE.md promises."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AbbenchError as exc:
            click.secho(f"error: {exc.worded('cli')}", fg="red", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt as exc:
            signum = getattr(exc, "signum", signal.SIGINT)  # `abbench.runner.Terminated` says which
            if signum == signal.SIGINT:
                click.secho("interrupted; what was done is kept", fg="yellow", err=True)
            else:
                name = signal.Signals(signum).name
                click.secho(f"terminated ({name}); what was done is kept", fg="yellow", err=True)
            sys.exit(128 + signum)
        except BrokenPipeError:
            # the reader of our output went away (| head): nothing to say, and nobody to say it to
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit flush quiet
            sys.exit(1)
        except OSError as exc:
            # The machine, not abbench or its input: a full disk, a permission, a vanished folder.
            import logging

            logging.getLogger("abbench").debug("stopped by an OS error", exc_info=True)
            where = f": {exc.filename}" if exc.filename else ""
            click.secho(
                f"error: {exc.strerror or exc}{where}; check that path's permissions and the free disk space "
                "(-vv shows where it happened)",
                fg="red",
                err=True,
            )
            sys.exit(2)
        except Exception as exc:
            # sqlite3 is not imported for this: `--help` needs no database, and no database error
            # happens before something imported sqlite3
            sqlite = sys.modules.get("sqlite3")
            if sqlite is None or not isinstance(exc, sqlite.OperationalError):
                raise
            import logging

            logging.getLogger("abbench").debug("stopped by a database error", exc_info=True)
            click.secho(
                f"error: the store database failed: {exc}; check the store folder's permissions and the free "
                "disk space (-vv shows where it happened)",
                fg="red",
                err=True,
            )
            sys.exit(2)

    # -- commands load lazily: `--help` imports none of them, `abbench run` only the module of `run` ---

    @property  # click's attribute, read through a property that loads them all
    def commands(self) -> MutableMapping[str, click.Command]:
        """Every command, each module that defines one imported (what introspection and tests see)."""
        for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
            importlib.import_module(f"abbench.cli.{module}")
        # in the order of the flow, whichever module was imported first
        ordered = {name: self._commands[name] for name in COMMANDS if name in self._commands}
        ordered.update(self._commands)
        self._commands.clear()
        self._commands.update(ordered)
        return self._commands

    @commands.setter
    def commands(self, value: MutableMapping[str, click.Command]) -> None:
        self._commands = value

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Register a command (its module calls this when imported)."""
        name = name or cmd.name
        if name is None:
            raise TypeError("Command has no name.")
        self._commands[name] = cmd

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command called `cmd_name`, its module imported on first use."""
        if cmd_name not in self._commands and cmd_name in COMMANDS:
            importlib.import_module(f"abbench.cli.{COMMANDS[cmd_name][0]}")
        return self._commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """With ``--server``, only the commands written once over `abbench.cli._backend.Backend` (they ask
        `Context.backend`); the others work on a local store and are refused, naming those that work."""
        if ctx.params.get("server") and args and args[0] in COMMANDS and args[0] not in ON_A_SERVER:
            names = sorted(ON_A_SERVER, key=list(COMMANDS).index)
            raise click.UsageError(
                f"{args[0]!r} works on a local store only; with --server use one of: {', '.join(names)}"
            )
        return super().resolve_command(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)  # the order of the flow

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list of commands in ``--help``, from their first help paragraphs (no command imported)."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [
            (name, click.Command(name, help=summary).get_short_help_str(limit))
            for name, (_, summary) in COMMANDS.items()
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--store",
    "store_path",
    envvar="ABBENCH_STORE",
    metavar="DIR",
    help="Store folder (default ./.abbench, or $ABBENCH_STORE).",
)
@click.option(
    "--server",
    envvar="ABBENCH_SERVER",
    metavar="URL",
    help="Work on an abbench server instead of a local store (key from $ABBENCH_KEY).",
)
@click.option("-v", "--verbose", count=True, help="Log more (-v info, -vv debug) to stderr.")
@click.version_option(__version__, prog_name="abbench")
@click.pass_context
def cli(ctx: click.Context, store_path: str | None, server: str | None, verbose: int) -> None:
    """abbench: A/B test agent skills, with statistics a sceptic accepts.

    \b
    The flow:  import → snapshot → run → compare → gate → review → report
    Exit codes: 0 success · 1 gate blocked or comparison refused · 2 usage or input error
    """
    import logging  # here, not at the top: `--help` never configures logging

    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    ctx.obj = Context(store_path, verbose, server)
    ctx.call_on_close(ctx.obj.close)


def json_option(fn: F) -> F:
    """Add ``--json`` to a command: machine-readable output instead of the human one."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


def read_options(fn: F) -> F:
    """Add the import's read options (``--sheet`` ... ``--split``), passed to the command as keyword
    arguments named as the library's (`abbench.dataset.ReadOptions`, ``recipe``, ``splits``)."""
    options = [
        click.option(
            "--sheet",
            help="Excel sheet: name, or index from 0 (default: the first, unless it reads as notes and a later one holds a table).",
        ),
        click.option(
            "--header-row",
            type=click.IntRange(min=0),
            help="Line (CSV/TSV) or row (Excel) holding the column names, from 1; 0 for none "
            "(default: the first non-blank one, after any '#' comment lines).",
        ),
        click.option("--encoding", help="Text encoding, e.g. gb18030, gbk, utf-8-sig (default: detected)."),
        click.option("--delimiter", help="CSV delimiter, e.g. ',' ';' or '\\t' (default: sniffed)."),
        click.option(
            "--quoting",
            type=click.Choice(["csv", "none"]),
            help="CSV quotes: 'csv' quotes cells (\"\" inside is one quote), 'none' keeps them as text "
            "(default: csv, unless the file's quotes only read as text).",
        ),
        click.option(
            "--format",
            "format",
            type=click.Choice(["csv", "xlsx", "jsonl", "json"]),
            help="Read the file as this format (default: from its suffix).",
        ),
        click.option(
            "--recipe",
            help="Recipe for layouts that are not one row per case (see 'abbench profiles --recipes').",
        ),
        click.option(
            "--split", "splits", multiple=True, metavar="S", help="JSON split to import (repeat for several)."
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def emit(as_json: bool, data: Any, human: Callable[[], None] | str | None = None) -> None:
    """Print `data` as JSON, or the human rendering (a string, or a function that echoes)."""
    if as_json or human is None:
        # plain(): NaN and inf as null (bare NaN is not JSON), numpy scalars as plain numbers
        import json

        from abbench._result import plain

        click.echo(json.dumps(plain(data), ensure_ascii=False, indent=2, default=str, allow_nan=False))
    elif callable(human):
        human()
    else:
        click.echo(human)


def no_color() -> bool:
    """Whether colour is off ($NO_COLOR or not a terminal)."""
    return bool(os.environ.get("NO_COLOR")) or not sys.stdout.isatty()
