"""The ``abbench`` command line: a thin mirror of the Python API (each command calls one function)."""

from __future__ import annotations

from abbench.cli._app import cli

# Each module registers its commands on `cli` when imported, in the order of the flow.
from abbench.cli import _data  # noqa: F401  isort: skip
from abbench.cli import _snapshot  # noqa: F401  isort: skip
from abbench.cli import _run  # noqa: F401  isort: skip
from abbench.cli import _spend  # noqa: F401  isort: skip
from abbench.cli import _grade  # noqa: F401  isort: skip
from abbench.cli import _plan  # noqa: F401  isort: skip
from abbench.cli import _compare  # noqa: F401  isort: skip
from abbench.cli import _metrics  # noqa: F401  isort: skip
from abbench.cli import _gate  # noqa: F401  isort: skip
from abbench.cli import _review  # noqa: F401  isort: skip
from abbench.cli import _cache  # noqa: F401  isort: skip
from abbench.cli import _report  # noqa: F401  isort: skip
from abbench.cli import _demo  # noqa: F401  isort: skip


def main() -> None:
    """Entry point of the ``abbench`` console script."""
    from abbench.cli._app import stop_on_termination

    stop_on_termination()
    cli(prog_name="abbench")


__all__ = ["cli", "main"]
