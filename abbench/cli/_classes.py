"""How `abbench metrics` prints per-class F1: every class when few, the extremes when many."""

from __future__ import annotations

from typing import Any

CLASSES_INLINE = 12  # above this many classes, `metrics` prints the extremes and `--classes` prints all


def f1_lines(report: Any, *, full: bool) -> list[str]:
    """The F1 lines of `metrics`: every class inline when there are few (or `full`), else the extremes.

    With 77 or 151 intents one line per arm listing every class is unreadable: the averages come first,
    then the five lowest and five highest classes by F1 (ties by support), and how to see the rest.
    """
    averages = f"macro {report.macro.f1:.3f}, weighted {report.weighted.f1:.3f}, micro {report.micro.f1:.3f}"
    items = list(report.per_class.items())
    if full or len(items) <= CLASSES_INLINE:
        if not full:
            per = ", ".join(f"{k} {v.f1:.2f}" for k, v in items)
            return [f"  {'F1':<20}{averages} ({per})"]
        lines = [
            f"  {'F1':<20}{averages}",
            f"  {'':<20}{'class':<32}{'precision':>10}{'recall':>8}{'F1':>7}{'support':>9}",
        ]
        for k, v in items:
            lines.append(
                f"  {'':<20}{k[:31]:<32}{v.precision:>10.2f}{v.recall:>8.2f}{v.f1:>7.2f}{v.support:>9,}"
            )
        return lines
    ranked = sorted(items, key=lambda kv: (kv[1].f1, -kv[1].support, kv[0]))
    best = sorted(items, key=lambda kv: (-kv[1].f1, -kv[1].support, kv[0]))

    def listed(pairs: list[tuple[str, Any]]) -> str:
        return ", ".join(f"{k} {v.f1:.2f} (n={v.support})" for k, v in pairs)

    # the macro averages over the predictions outside the classes too (scikit-learn's labels=None)
    others = len(report.outside)
    count = f"over {len(items) + others:,} classes" + (
        f" ({len(items):,} labels, {others:,} other predictions)" if others else ""
    )
    return [
        f"  {'F1':<20}{averages} {count}",
        f"  {'':<20}lowest: {listed(ranked[:5])}",
        f"  {'':<20}highest: {listed(best[:5])}",
        f"  {'':<20}(--classes for every class; --json for the figures)",
    ]
