"""What a report section returns and how it is shown, and the estimate and difference texts sections share."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from abbench import formatting as fm
from abbench.report import _display as d

Part = Any
"""HTML text, or a plotly figure."""


def show_parts(parts: Sequence[Part]) -> None:
    """Display parts in order (HTML through IPython, figures through the report renderer)."""
    for part in parts:
        if isinstance(part, str):
            d.show(part)
        else:
            d.show_figure(part)


def estimate_text(e: Mapping[str, Any] | None, *, share: bool = True) -> str:
    """``72.0% [61.3%, 82.7%]`` (or the score); the reason in words when there is no value."""
    if not e or not fm.is_number(e.get("value")):
        return (e or {}).get("reason") or fm.MISSING
    fmt: Callable[[Any], str] = fm.pct if share else (lambda v: fm.num(v, 2))
    iv = e.get("interval") or {}
    spread = fm.interval(iv.get("low"), iv.get("high"), fmt)
    return fmt(e["value"]) + ("" if spread == fm.MISSING else f" {spread}")
