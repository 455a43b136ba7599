"""The command group, its global options, and the boundary where errors become exit codes."""

from __future__ import annotations

import _thread
import contextlib
import json
import logging
import os
import signal
import sqlite3
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from abbench import __version__
from abbench._result import plain
from abbench.errors import AbbenchError

if TYPE_CHECKING:
    from abbench.store import Store

F = TypeVar("F", bound=Callable[..., Any])


class Context:
    """What every command receives: the store path (opened on first use) and output preferences."""

    def __init__(self, store_path: str | None, verbose: int):
        self.store_path = store_path
        self.verbose = verbose
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        """The open store (created when missing)."""
        if self._store is None:
            from abbench.store import open_store

            self._store = open_store(self.store_path)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


pass_ctx = click.make_pass_decorator(Context)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process is asked to stop (SIGTERM, SIGHUP).

    A KeyboardInterrupt, so a run stops exactly as on Ctrl-C: runs in flight are recorded as
    interrupted, what was done is committed, and the runner's claim is released.
    """

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_TERMINATED: list[int] = []
"""Signals that asked a running event loop to stop (reported by `Group.invoke` with their exit code)."""


def stop_on_termination() -> None:
    """Make SIGTERM and SIGHUP stop the command as Ctrl-C does, instead of killing it mid-write.

    Signals a parent set to be ignored (``nohup`` ignores SIGHUP) stay ignored.
    """

    def stop(signum: int, frame: Any) -> None:
        aio = sys.modules.get("asyncio")  # not imported: no loop runs (and --help need not load it)
        try:
            if aio is None:
                raise RuntimeError("no running event loop")
            aio.get_running_loop()
        except RuntimeError:
            raise Terminated(signum) from None
        # Inside asyncio.run an exception raised here lands in whatever task is running (an agent's
        # coroutine), which dies with it and is logged with a traceback as never retrieved. Stop as
        # asyncio.run stops on Ctrl-C instead: its SIGINT handler cancels the main task cleanly, and
        # the exit code still names this signal.
        _TERMINATED.append(signum)
        _thread.interrupt_main()

    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, stop)


class Group(click.Group):
    """Turns library errors into a one-line message and the exit code docs/ARCHITECTURE.md promises."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AbbenchError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(exc.exit_code)
        except Terminated as exc:
            name = signal.Signals(exc.signum).name
            click.secho(f"terminated ({name}); what was done is kept", fg="yellow", err=True)
            sys.exit(128 + exc.signum)
        except KeyboardInterrupt:
            if _TERMINATED:  # a SIGTERM/SIGHUP that stopped a running loop the way Ctrl-C does
                name = signal.Signals(_TERMINATED[-1]).name
                click.secho(f"terminated ({name}); what was done is kept", fg="yellow", err=True)
                sys.exit(128 + _TERMINATED[-1])
            click.secho("interrupted; what was done is kept", fg="yellow", err=True)
            sys.exit(130)
        except BrokenPipeError:
            # the reader of our output went away (| head): nothing to say, and nobody to say it to
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit flush quiet
            sys.exit(1)
        except OSError as exc:
            # The machine, not abbench or its input: a full disk, a permission, a vanished folder.
            logging.getLogger("abbench").debug("stopped by an OS error", exc_info=True)
            where = f": {exc.filename}" if exc.filename else ""
            click.secho(
                f"error: {exc.strerror or exc}{where}; check that path's permissions and the free disk space "
                "(-vv shows where it happened)",
                fg="red",
                err=True,
            )
            sys.exit(2)
        except sqlite3.OperationalError as exc:
            logging.getLogger("abbench").debug("stopped by a database error", exc_info=True)
            click.secho(
                f"error: the store database failed: {exc}; check the store folder's permissions and the free "
                "disk space (-vv shows where it happened)",
                fg="red",
                err=True,
            )
            sys.exit(2)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # in the order they were registered: the order of the flow


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--store",
    "store_path",
    envvar="ABBENCH_STORE",
    metavar="DIR",
    help="Store folder (default ./.abbench, or $ABBENCH_STORE).",
)
@click.option("-v", "--verbose", count=True, help="Log more (-v info, -vv debug) to stderr.")
@click.version_option(__version__, prog_name="abbench")
@click.pass_context
def cli(ctx: click.Context, store_path: str | None, verbose: int) -> None:
    """abbench: A/B test agent skills, with statistics a sceptic accepts.

    \b
    The flow:  import → snapshot → run → compare → gate → review → report
    Exit codes: 0 success · 1 gate blocked or comparison refused · 2 usage or input error
    """
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    ctx.obj = Context(store_path, verbose)
    ctx.call_on_close(ctx.obj.close)


def json_option(fn: F) -> F:
    """Add ``--json`` to a command: machine-readable output instead of the human one."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


def emit(as_json: bool, data: Any, human: Callable[[], None] | str | None = None) -> None:
    """Print `data` as JSON, or the human rendering (a string, or a function that echoes)."""
    if as_json or human is None:
        # plain(): NaN and inf as null (bare NaN is not JSON), numpy scalars as plain numbers
        click.echo(json.dumps(plain(data), ensure_ascii=False, indent=2, default=str, allow_nan=False))
    elif callable(human):
        human()
    else:
        click.echo(human)


def no_color() -> bool:
    """Whether colour is off ($NO_COLOR or not a terminal)."""
    return bool(os.environ.get("NO_COLOR")) or not sys.stdout.isatty()
