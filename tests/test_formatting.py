"""abbench.formatting: how numbers read in every view, missing and odd values included."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from abbench import formatting as fm
from abbench.formatting import DASH, MISSING, NA

NOT_NUMBERS = [None, math.nan, math.inf, -math.inf, True, False]


@dataclass(frozen=True)
class Iv:
    low: float
    high: float


@pytest.mark.parametrize("value", NOT_NUMBERS)
@pytest.mark.parametrize(
    "fn",
    [fm.pct, fm.num, fm.points, fm.difference, fm.pvalue, fm.money, fm.money_sig, fm.money_fixed, fm.ms],
)
def test_a_missing_value_shows_as_the_dash(fn, value):
    assert fn(value) == MISSING
    assert fn(value, missing=NA) == NA


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda: fm.pct(0.8734), "87.3%"),
        (lambda: fm.pct(0.05), "5.0%"),
        (lambda: fm.pct(1), "100.0%"),
        (lambda: fm.pct(0.031, signed=True), "+3.1%"),
        (lambda: fm.pct(-0.031, 0, signed=True), "-3%"),
        (lambda: fm.pct(0.0, signed=True), "+0.0%"),
        (lambda: fm.pct(-0.0, signed=True), "-0.0%"),
        (lambda: fm.pct(None, missing=DASH), "–"),
        (lambda: fm.pct_span(Iv(0.613, 0.827)), "61.3–82.7%"),
        (lambda: fm.pct_span(None), "–"),
        (lambda: fm.num(1234567), "1,234,567"),
        (lambda: fm.num(2.5), "2.50"),
        (lambda: fm.num(1234.5, 3), "1,234.500"),
        (lambda: fm.num(1234.5, 3, grouped=False), "1234.500"),
        (lambda: fm.num(3, signed=True), "+3.00"),
        (lambda: fm.num(-0.0), "-0.00"),
        (lambda: fm.points(0.175), "+17.5 pts"),
        (lambda: fm.points(-0.04, 2), "-4.00 pts"),
        (lambda: fm.points(0.0), "+0.0 pts"),
        (lambda: fm.points(-0.0), "-0.0 pts"),
        (lambda: fm.difference(0.04, "points", word="points"), "+4.0 points"),
        (lambda: fm.difference(0.1234, "score"), "+0.123"),
        (lambda: fm.difference(-0.1234, "score", precision=4), "-0.1234"),
        (lambda: fm.interval(0.5, 0.75), "[50.0%, 75.0%]"),
        (lambda: fm.interval(None, 0.75), MISSING),
        (lambda: fm.interval(0.5, math.nan), MISSING),
        (lambda: fm.interval(1.0, 2.0, fm.num), "[1.00, 2.00]"),
        (lambda: fm.interval(-0.01, 0.02, fm.points), "[-1.0 pts, +2.0 pts]"),
        (lambda: fm.rate_interval(0.625, Iv(0.51, 0.724)), "0.62 [0.51, 0.72]"),
        (lambda: fm.rate_interval(None, Iv(0.5, 0.7)), "n/a"),
        (lambda: fm.rate_interval(0.6, None), "n/a"),
        (lambda: fm.pvalue(0.0004), "p < 0.001"),
        (lambda: fm.pvalue(0.0312), "p = 0.031"),
        (lambda: fm.pvalue(0.0), "p < 0.001"),
        (lambda: fm.pvalue(1), "p = 1.000"),
    ],
)
def test_shares_differences_intervals_and_p_values(call, expected):
    assert call() == expected


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda: fm.money(12.5), "$12.50"),
        (lambda: fm.money(1234.5), "$1,234.50"),
        (lambda: fm.money(0.0615), "$0.0615"),
        (lambda: fm.money(0.00123), "$0.001230"),
        (lambda: fm.money(0.000051), "$0.000051"),
        (lambda: fm.money(1.234e-9), "$0.0000000012"),  # at most ten decimals
        (lambda: fm.money(0), "$0"),
        (lambda: fm.money(-0.0), "$0"),
        (lambda: fm.money(0.0, signed=True), "$0"),
        (lambda: fm.money(-0.25), "-$0.2500"),
        (lambda: fm.money(0.25, signed=True), "+$0.2500"),
        (lambda: fm.money(-0.25, signed=True), "-$0.2500"),
        (lambda: fm.money_sig(0.0002), "$0.00020"),
        (lambda: fm.money_sig(0.5), "$0.50"),
        (lambda: fm.money_sig(-1.25), "-$1.25"),
        (lambda: fm.money_sig(0.054, signed=True), "+$0.054"),
        (lambda: fm.money_sig(0.0, signed=True), "+$0"),
        (lambda: fm.money_sig(-0.0, signed=True), "+$0"),
        (lambda: fm.money_sig(0.0), "$0"),
        (lambda: fm.money_trimmed(5.023), "$5.02"),
        (lambda: fm.money_trimmed(0.054), "$0.054"),
        (lambda: fm.money_trimmed(0.05), "$0.05"),
        (lambda: fm.money_trimmed(0.0035), "$0.0035"),
        (lambda: fm.money_trimmed(0), "$0.00"),
        (lambda: fm.money_trimmed(-5.0), "$-5.00"),
        (lambda: fm.money_trimmed(None), "unknown"),
        (lambda: fm.money_trimmed(math.nan), "unknown"),
        (lambda: fm.money_fixed(0.0123), "$0.0123"),
        (lambda: fm.money_fixed(1234.5), "$1,234.50"),
        (lambda: fm.money_fixed(0), "$0.0000"),
    ],
)
def test_money(call, expected):
    assert call() == expected


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda: fm.ms(850.0), "850 ms"),
        (lambda: fm.ms(2400.0), "2.4 s"),
        (lambda: fm.ms(-2400.0), "-2.4 s"),
        (lambda: fm.ms(1.24), "1.2 ms"),
        (lambda: fm.ms(0), "0.0 ms"),
        (lambda: fm.ms(0.0123), "0.012 ms"),
        (lambda: fm.ms(-0.0061, signed=True), "-0.0061 ms"),
        (lambda: fm.ms(0.0123, signed=True), "+0.012 ms"),
        (lambda: fm.ms(0, bare_zero=True), "0 ms"),
        (lambda: fm.ms(-0.0, bare_zero=True), "-0 ms"),
        (lambda: fm.ms(1.24, bare_zero=True), "1.2 ms"),
        (lambda: fm.ms(120, signed=True), "+120 ms"),
        (lambda: fm.ms(-120, signed=True), "-120 ms"),
        (lambda: fm.ms(0.0, signed=True), "0.0 ms"),
        (lambda: fm.duration(42), "42.0 s"),
        (lambda: fm.duration(210), "3.5 min"),
        (lambda: fm.duration(4320), "1.2 h"),
        (lambda: fm.elapsed(42.4), "42s"),
        (lambda: fm.elapsed(185), "3m05s"),
        (lambda: fm.elapsed(3720), "1h02m"),
        (lambda: fm.elapsed(0), "0s"),
        (lambda: fm.elapsed(None), MISSING),
        (lambda: fm.when("2026-11-29T20:49:51+00:00"), "2026-11-29 20:49 UTC"),
        (lambda: fm.when("2026-11-29T21:49:51+01:00"), "2026-11-29 20:49 UTC"),
        (lambda: fm.when("2026-11-29T20:49:51"), "2026-11-29 20:49 UTC"),
        (lambda: fm.when("yesterday"), "yesterday"),
        (lambda: fm.when(None), MISSING),
        (lambda: fm.when(""), MISSING),
        (lambda: fm.plural(1, "case"), "1 case"),
        (lambda: fm.plural(0, "case"), "0 cases"),
        (lambda: fm.plural(1204, "case"), "1,204 cases"),
        (lambda: fm.plural(2, "analysis", "analyses"), "2 analyses"),
    ],
)
def test_durations_times_and_counts(call, expected):
    assert call() == expected


@pytest.mark.parametrize(
    ("value", "unit", "widgets", "report"),
    [
        (0.904, "share", "90.4%", "90.4%"),
        (0.132, "points", "+13.2 pts", "+13.2 pts"),
        (0.354, "relative", "+35.4%", "+35.4%"),
        (0.000764, "usd", "$0.000764", "$0.000764"),
        (7.8, "ms", "7.8 ms", "7.8 ms"),
        (0, "ms", "0.0 ms", "0 ms"),
        (1204.4, "tokens", "1,204", "1,204"),
        (3, "score", "3.00", "3"),
        (1234.5, "score", "1234.50", "1,234.50"),
        (0.0004, "p", "< 0.001", "< 0.001"),
        (0.0312, "p", "0.0312", "0.0312"),
        (12345.678, "furlongs", "1.235e+04", "1.235e+04"),
        (True, "share", "yes", "yes"),
        (False, "count", "no", "no"),
        (None, "share", MISSING, MISSING),
        (math.nan, "usd", MISSING, MISSING),
        ("gold", "share", "gold", "gold"),
    ],
)
def test_a_metric_reads_in_its_unit(value, unit, widgets, report):
    assert fm.in_unit(value, unit) == widgets
    assert fm.in_unit(value, unit, whole=True) == report


def test_is_number():
    assert [fm.is_number(v) for v in (0, -0.0, 1.5, 10**20)] == [True] * 4
    assert not any(fm.is_number(v) for v in [*NOT_NUMBERS, "1", [1]])


def test_all_is_sorted_and_documented():
    key = lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)  # noqa: E731
    assert fm.__all__ == sorted(fm.__all__, key=key)
    for name in fm.__all__:
        value = getattr(fm, name)
        assert isinstance(value, str) or value.__doc__, name
