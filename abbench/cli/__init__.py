"""The ``abbench`` command line: a thin mirror of the Python API (each command calls one function)."""

from __future__ import annotations

from abbench.cli import _app
from abbench.cli._app import cli

# Each module registers its commands on `cli` when one of them is first used (abbench/cli/_commands.py
# says which module defines which command): `abbench --help` imports none of them.


def main() -> None:
    """Entry point of the ``abbench`` console script."""
    _app.stop_on_termination()
    cli(prog_name="abbench")


__all__ = ["cli", "main"]


def __dir__() -> list[str]:
    return list(__all__)  # not abbench._lazy.listing: `abbench --help` loads nothing it does not need
