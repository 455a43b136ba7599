"""Format adherence in the report: how each arm's replies were read, and the paired difference."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from abbench.metrics import READINGS
from abbench.report import _display as d
from abbench.report._sections._parts import Part, estimate_text

if TYPE_CHECKING:
    from abbench.compare import Comparison
    from abbench.metrics import ArmMetrics

_NOTE = (
    "Format adherence: the share of read replies that were the JSON answer asked for — the whole reply "
    "(strict) or asked with a response_format (structured). The rest the tolerant reader found in prose "
    "or key: value lines (fallback), could not read (unreadable) or were cut at max_tokens (truncated)."
)


def format_parts(arms: tuple[ArmMetrics, ...]) -> list[Part]:
    """A table of each arm's format adherence, when any arm's replies were read; else nothing."""
    read = [a for a in arms if a.format_adherence is not None]
    if not read:
        return []
    rows = []
    for a in read:
        f = a.format_adherence
        assert f is not None
        rows.append({"arm": a.label, "adherence": estimate_text(f.adherence), "read": f.runs, **f.counts})
    columns: list[tuple[str, str] | tuple[str, str, Any]] = [
        ("arm", "arm"),
        ("adherence", "format adherence", str),
        ("read", "read replies"),
        *((r, r) for r in READINGS),
    ]
    return [d.table_html(rows, columns, caption="Format adherence"), d.note_html(_NOTE)]


def format_comparison_parts(c: Comparison) -> list[Part]:
    """The paired difference in format adherence, when either arm's replies were read."""
    if c.format_adherence is None:
        return []
    return [d.kv_html([("format adherence (B − A)", c.format_adherence.text)])]
