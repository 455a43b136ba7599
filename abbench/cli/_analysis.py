"""How the analysis commands (compare, metrics, gate, the review commands) write figures and cells."""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING

import click

from abbench._text import fit
from abbench.formatting import NA, pct

if TYPE_CHECKING:
    from abbench.metrics import Estimate


def _pad(text: object, width: int, align: str = "<") -> str:
    """`text` cut (at a word boundary) and padded to `width` terminal columns."""
    return fit(text, width, align=align)


def _cut(text: object, width: int, *, pad: bool = True) -> str:
    """`text` in at most `width` columns, marked with … when cut (and padded unless `pad` is False)."""
    return fit(text, width, pad=pad)


_pct = partial(pct, missing=NA)


def _num(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.{digits}g}"


def _estimate(e: Estimate | None, unit: str = "points") -> str:
    """``66.0% [52.2–77.6]`` for a pass rate, ``3.42 [3.1–3.7]`` for a score."""
    if e is None or e.value is None:
        return "n/a" + (f" ({e.reason})" if e is not None and e.reason else "")
    if unit == "points":
        text = _pct(e.value)
        if e.interval is not None:
            text += f" [{e.interval.low * 100:.1f}–{e.interval.high * 100:.1f}]"
        return text
    text = _num(e.value)
    if e.interval is not None:
        text += f" [{_num(e.interval.low)}–{_num(e.interval.high)}]"
    return text


grader_option = click.option(
    "--grader",
    metavar="NAME",
    help="The figures as this grader alone graded the runs (e.g. label_match, or the judge), not by the "
    "runs' verdicts; runs it did not grade, or failed to, are not assessed and counted.",
)
"""``--grader NAME`` of metrics, compare and report."""


def grader_header(grader: str, what: str = "every verdict below") -> str:
    """The line that says whose grades the figures (`what`) are."""
    return f"grader: {grader} alone — {what} is its grade, not the run's combined verdict"
