"""How numbers read to people, in every view: percentages, points, intervals, p-values, money, durations, times.

The CLI, the widgets and the report all format through this module (as click keeps ``formatting.py``), so a
pass rate, a cost or a latency reads the same wherever it shows. The conventions:

- **Missing values.** A value that is missing — None, NaN, ±infinity, or a bool where a number is meant —
  shows as `missing`, which defaults to `MISSING` (an em dash, the report's and the widgets' table dash).
  The CLI and the library's sentences say `NA` (``n/a``); the demo's summary says `DASH` (an en dash);
  the budget says ``unknown``. Bools are never numbers here, except in `in_unit`, which says yes/no.
- **Shares and differences.** A share is a percentage (``87.3%``); a relative change is a signed
  percentage (``+3.5%``); a difference of two shares is in percentage points (``+17.5 pts``; the library's
  sentences spell it ``points``); a difference of scores keeps three significant digits (``+0.12``).
- **Intervals** are ``[low, high]`` with the value's own format, and missing when either end is.
- **Money** is US dollars. `money` keeps enough digits for a per-run cost (``$0.0012``, ``$0.000051``:
  a fraction of a cent must not read as $0.0000); `money_sig` keeps two significant digits below a dollar
  (``$0.00020``: the gate's evidence); `money_trimmed` is `money_sig` without trailing zeros (``$0.05``:
  the budget's figures); `money_fixed` has four decimals below $100 (the judge-cost listing).
- **Durations.** `ms` takes milliseconds (``850 ms``, ``2.4 s``); `duration` takes seconds in words of the
  largest unit (``42.0 s``, ``3.5 min``, ``1.2 h``); `elapsed` takes seconds as a clock (``3m05s``).
- **Times** are UTC to the minute (``2026-11-29 20:49 UTC``).
- **Counts** are grouped by thousands (``1,204 cases``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

__all__ = [
    "DASH",
    "MISSING",
    "NA",
    "Bounds",
    "difference",
    "duration",
    "elapsed",
    "in_unit",
    "interval",
    "is_number",
    "judge_cost",
    "money",
    "money_fixed",
    "money_sig",
    "money_trimmed",
    "ms",
    "num",
    "partly_known",
    "pct",
    "pct_span",
    "plural",
    "points",
    "pvalue",
    "rate_interval",
    "when",
]

MISSING = "—"
"""What a missing number shows as in tables and pages (an em dash)."""

NA = "n/a"
"""What a missing number shows as in the CLI's lines and the library's sentences."""

DASH = "–"
"""What a missing number shows as in the demo's summary (an en dash)."""

NO_DOMAINS = "no per-domain breakdown: the cases have no domains (or only one)"
"""What a view shows instead of a per-domain table when there is nothing to break down."""


class Bounds(Protocol):
    """Anything with a `low` and a `high` end (`abbench.stats.Interval`)."""

    @property
    def low(self) -> float:
        """The lower end."""
        ...

    @property
    def high(self) -> float:
        """The upper end."""
        ...


def is_number(value: Any) -> bool:
    """Whether `value` is a finite number (not None, NaN, infinity or a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def pct(value: Any, digits: int = 1, *, signed: bool = False, missing: str = MISSING) -> str:
    """A share as a percentage (``0.873`` → ``87.3%``; `signed`, for a relative change: ``+3.5%``, ``+1,394%``)."""
    if not is_number(value):
        return missing
    return f"{value * 100:+,.{digits}f}%" if signed else f"{value * 100:,.{digits}f}%"


def pct_span(bounds: Bounds | None, digits: int = 1, *, missing: str = DASH) -> str:
    """An interval of shares as a range (``61.3–82.7%``)."""
    if bounds is None:
        return missing
    return f"{100 * bounds.low:.{digits}f}–{100 * bounds.high:.{digits}f}%"


def num(
    value: Any, digits: int = 2, *, signed: bool = False, grouped: bool = True, missing: str = MISSING
) -> str:
    """A number with `digits` decimals, thousands grouped (an int unsigned shows whole: ``1,204``);
    `grouped=False` leaves the thousands ungrouped for floats (``1234.500``)."""
    if not is_number(value):
        return missing
    if isinstance(value, int) and not signed:
        return f"{value:,}"
    sep = "," if grouped else ""
    return f"{value:+{sep}.{digits}f}" if signed else f"{value:{sep}.{digits}f}"


def difference(
    value: Any,
    unit: str = "points",
    *,
    digits: int = 1,
    word: str = "pts",
    precision: int = 3,
    missing: str = MISSING,
    zero_sign: bool = True,
) -> str:
    """A signed difference in a comparison's unit: shares in percentage points (``+4.0 pts``; `word` names
    them), scores with `precision` significant digits (``+0.12``). `zero_sign=False` shows a difference that
    rounds to zero as ``+0.0``, never ``-0.0``."""
    if not is_number(value):
        return missing
    if unit == "points":
        shown = (
            round(value * 100, digits) + 0.0 if not zero_sign else value * 100
        )  # + 0.0 turns -0.0 into 0.0
        return f"{shown:+.{digits}f} {word}"
    return f"{value:+.{precision}g}"


def points(value: Any, digits: int = 1, *, missing: str = MISSING) -> str:
    """A difference of shares in percentage points (``0.175`` → ``+17.5 pts``)."""
    return difference(value, "points", digits=digits, missing=missing)


USAGE_NAMES = {"cost": "cost per run", "latency_ms": "latency", "tokens": "tokens per run"}
"""What a comparison's usage metrics (`abbench.compare.USAGE_METRICS`) are called in every view."""


def usage(
    metric: str, value: Any, *, signed: bool = False, bare_zero: bool = False, missing: str = MISSING
) -> str:
    """A usage figure in its unit: ``cost`` in dollars, ``latency_ms`` as a duration, ``tokens`` whole and
    grouped, anything else (``score``) with two decimals. `bare_zero`: see `ms`."""
    if metric == "cost":
        return money(value, signed=signed, missing=missing)
    if metric == "latency_ms":
        return ms(value, signed=signed, bare_zero=bare_zero, missing=missing)
    return num(value, 0 if metric == "tokens" else 2, signed=signed, missing=missing)


def interval(low: Any, high: Any, fmt: Callable[[Any], str] = pct, *, missing: str = MISSING) -> str:
    """``[low, high]`` with `fmt`; missing when either end is."""
    if not (is_number(low) and is_number(high)):
        return missing
    return f"[{fmt(low)}, {fmt(high)}]"


def rate_interval(rate: float | None, bounds: Bounds | None, digits: int = 2, *, missing: str = NA) -> str:
    """A rate with its interval as plain decimals (``0.62 [0.51, 0.72]``)."""
    if rate is None or bounds is None:
        return missing
    return f"{rate:.{digits}f} [{bounds.low:.{digits}f}, {bounds.high:.{digits}f}]"


def pvalue(value: Any, *, missing: str = MISSING) -> str:
    """A p-value as people read it (``p = 0.031``, ``p < 0.001``)."""
    if not is_number(value):
        return missing
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def money(value: Any, *, signed: bool = False, missing: str = MISSING) -> str:
    """US dollars with the digits a per-run cost needs (``$12.40``, ``$0.0615``, ``$0.000051``; zero: ``$0``).

    Agent runs often cost a fraction of a cent: fixed four decimals would show them all as $0.0000, so
    below a cent two significant digits are kept however small (at most ten decimals).
    """
    if not is_number(value):
        return missing
    size = abs(value)
    if size == 0:
        return "$0"
    sign = ("+" if value > 0 else "-") if signed else ("-" if value < 0 else "")
    digits = 2 if size >= 1 else 4 if size >= 0.01 else min(10, max(6, 1 - math.floor(math.log10(size))))
    return f"{sign}${size:,.{digits}f}"


def judge_cost(cost: Any, *, cash: Callable[[Any], str] | None = None) -> str:
    """What a judge's calls cost (`abbench.metrics.JudgeCost`): its known cost, and the calls whose model
    had no price — all of them: ``unknown (20 calls without a price)``, never ``$0``. `cash` formats the
    known cost (default `money`)."""
    return partly_known(
        cost.cost, int(getattr(cost, "unknown_cost", 0) or 0), "calls without a price", cash=cash
    )


def partly_known(
    known: float | None, unknown: int, what: str, *, cash: Callable[[Any], str] | None = None
) -> str:
    """A cost summed over what had one, beside how many had none: ``$0.03 + 3 calls without a price``;
    ``unknown (3 calls without a price)`` when nothing had one — never a bare ``$0`` for unknowns."""
    cash = cash or money
    if not unknown:
        return cash(known or 0.0)
    if not known:
        return f"unknown ({unknown:,} {what})"
    return f"{cash(known)} + {unknown:,} {what}"


def _sig_digits(size: float, most: int) -> int:
    """Decimals that keep two significant digits of `size` (below a dollar), at least two, at most `most`."""
    return min(most, max(2, 1 - math.floor(math.log10(size))))


def money_sig(value: Any, *, signed: bool = False, missing: str = MISSING) -> str:
    """US dollars with two significant digits below a dollar (``$0.00020``, ``-$1.25``; `signed`: ``+$0``)."""
    if not is_number(value):
        return missing
    size = abs(value)
    sign = ("+" if value >= 0 else "-") if signed else ("-" if value < 0 else "")
    if size == 0:
        return f"{sign}$0"
    digits = 2 if size >= 1 else _sig_digits(size, 10)
    return f"{sign}${size:,.{digits}f}"


def money_trimmed(value: Any, *, missing: str = "unknown") -> str:
    """``$5.02``; below a dollar two significant digits without trailing zeros (``$0.054``, ``$0.05``)."""
    if not is_number(value):
        return missing
    if value == 0 or abs(value) >= 1:
        return f"${value:,.2f}"
    whole, _, frac = f"{value:.{_sig_digits(abs(value), 8)}f}".partition(".")
    return f"${whole}.{frac.rstrip('0').ljust(2, '0')}"


def money_fixed(value: Any, *, missing: str = MISSING) -> str:
    """US dollars with four decimals below $100 (``$0.0123``), two above (``$1,234.50``)."""
    if not is_number(value):
        return missing
    return f"${value:.4f}" if value < 100 else f"${value:,.2f}"


def ms(value: Any, *, signed: bool = False, bare_zero: bool = False, missing: str = MISSING) -> str:
    """A duration in milliseconds, in the unit people read it in (``850 ms``, ``2.4 s``, ``1.2 ms``);
    `bare_zero` shows zero without a decimal (``0 ms``, the report's tables)."""
    if not is_number(value):
        return missing
    sign = "+" if signed and value > 0 else ""
    if abs(value) >= 1000:
        return f"{sign}{value / 1000:.1f} s"
    if 0 < abs(value) < 0.05:  # an in-process agent's microseconds: "0.012 ms", never "0.0 ms" beside "-49%"
        return f"{sign}{value:.2g} ms"
    small = 0 < abs(value) < 10 if bare_zero else abs(value) < 10
    return f"{sign}{value:.1f} ms" if small else f"{sign}{value:.0f} ms"


def duration(seconds: float) -> str:
    """Seconds in the largest unit that fits (``42.0 s``, ``3.5 min``, ``1.2 h``)."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def elapsed(seconds: float | None, *, missing: str = MISSING) -> str:
    """Seconds as a clock reads them (``42s``, ``3m05s``, ``1h02m``)."""
    if seconds is None:
        return missing
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, whole = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{whole:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def in_unit(value: Any, unit: str, *, whole: bool = False, missing: str = MISSING) -> str:
    """A metric's value in its unit (`abbench.gate.metric_unit`): ``90.4%``, ``+13.2 pts``, ``7.8 ms``,
    ``+35.4%``, ``$0.000764``, ``yes``; an unknown unit shows the number plainly, text stays text.

    `whole` (the report) shows a whole score and a zero duration without decimals and groups a score's
    thousands (``1,204``, ``0 ms``); otherwise a score has two decimals (``3.00``), as the widgets show it.
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not is_number(value):
        return missing if value is None or isinstance(value, float) else str(value)
    if unit == "share":
        return pct(value)
    if unit == "points":
        return points(value)
    if unit == "relative":
        return pct(value, signed=True)
    if unit == "usd":
        return money(value)
    if unit == "ms":
        return ms(value, bare_zero=whole)
    if unit in ("tokens", "count"):
        return f"{value:,.0f}"
    if unit == "score":
        return num(value, 2) if whole else f"{value:.2f}"
    if unit == "p":
        return "< 0.001" if 0 <= value < 0.001 else f"{value:.3g}"
    return f"{value:,.4g}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 case``, ``2 cases``, ``1,204 cases`` (`many` for irregular plurals)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def when(value: Any, *, missing: str = MISSING) -> str:
    """An ISO-8601 time as people read it: ``2026-11-29 20:49 UTC`` (text that is not a time is kept)."""
    if not value:
        return missing
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M") + " UTC"
