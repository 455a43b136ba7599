"""What a report section returns and how it is shown, and the estimate text sections share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from abbench import formatting as fm
from abbench.report import _display as d

if TYPE_CHECKING:
    from abbench.metrics import Estimate

Part = Any
"""HTML text, or a plotly figure."""


def show_parts(parts: Sequence[Part]) -> None:
    """Display parts in order (HTML through IPython, figures through the report renderer)."""
    for part in parts:
        if isinstance(part, str):
            d.show(part)
        else:
            d.show_figure(part)


def estimate_text(e: Estimate | None, *, share: bool = True) -> str:
    """``72.0% [61.3%, 82.7%]`` (or the score); the reason in words when there is no value."""
    if e is None or not fm.is_number(e.value):
        return (e.reason if e is not None else None) or fm.MISSING
    fmt: Callable[[Any], str] = fm.pct if share else (lambda v: fm.num(v, 2))
    iv = e.interval
    spread = fm.interval(iv.low, iv.high, fmt) if iv else fm.MISSING
    return fmt(e.value) + ("" if spread == fm.MISSING else f" {spread}")
