"""Report sections comparing arms: the paired comparison, every arm against the baseline, pairwise judges."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from abbench import formatting as fm
from abbench.report import _display as d
from abbench.report._sections._format import format_comparison_parts
from abbench.report._sections._parts import Part, estimate_text

if TYPE_CHECKING:
    from abbench.compare import Comparison, MultiComparison, PairwiseSummary
    from abbench.graders import PositionBias, VerbosityBias
    from abbench.stats import Interval


def _bounds_points(iv: Interval | None, unit: str) -> str:
    if iv is None:
        return fm.MISSING
    return fm.interval(iv.low, iv.high, lambda v: fm.difference(v, unit))


def _exported(value: Any) -> bool:
    """Whether `value` survives ``as_dict()``: not None, and not a NaN or infinite float (exported as None)."""
    return value is not None and (not isinstance(value, float) or math.isfinite(value))


def comparison_section(c: Comparison | None, *, reason: str | None = None) -> list[Part]:
    """Fixed and regressed cases, McNemar, the paired difference with its interval, whether it differs across
    domains, the minimum detectable effect in plain words, cost/latency/token differences, domains and
    pairwise judges."""
    if c is None:
        return [d.note_html(reason or "There is no second arm or experiment to compare with.")]
    unit = c.unit
    share = unit == "points"
    a, b = c.a.arm, c.b.arm
    parts: list[Part] = [d.show_text(c.verdict.text)]
    if c.verdict.outcome_text:
        # better / not worse / worse / inconclusive against the margin, with what would settle it
        parts.append(d.show_text("Outcome — " + c.verdict.outcome_text))
    o = c.outcomes
    parts.append(d.kv_html(_figures(c, unit, share)))
    if o:
        parts.append(d.outcome_figure(o, a, b))
    parts.extend(_usage_table(c, a, b))
    parts.extend(format_comparison_parts(c))
    parts.extend(_domain_table(c, a, b))
    for note in c.notes:
        parts.append(d.note_html(note))
    return parts


def _figures(c: Comparison, unit: str, share: bool) -> list[tuple[str, Any]]:
    """The comparison in figures: who against whom, A and B, the difference, cases moved, McNemar, the MDE."""
    a, b = c.a.arm, c.b.arm
    main = c.clustered or c.difference
    pairs: list[tuple[str, Any]] = [
        (
            "compared",
            f"{b} (B) against {a} (A), {fm.plural(c.n_cases, 'paired case')}, differences are B − A",
        ),
        ("A", estimate_text(c.value_a, share=share)),
        ("B", estimate_text(c.value_b, share=share)),
    ]
    if main:
        pairs.append(
            (
                "difference",
                f"{fm.difference(main.difference, unit)} "
                + (
                    _bounds_points(c.interval, unit)
                    if c.interval
                    else "(no interval: one case, or no spread between cases)"
                )
                + f" ({c.verdict.test}, {fm.pvalue(c.verdict.p_value)})",
            )
        )
    o = c.outcomes
    if o:
        pairs.append(
            (
                "cases",
                f"{o.fixed:,} fixed · {o.regressed:,} regressed · {o.both_pass:,} right in both · "
                f"{o.both_fail:,} wrong in both",
            )
        )
    m = c.mcnemar
    if m:
        if m.n_discordant:
            pairs.append(
                (
                    "exact McNemar",
                    f"{fm.pvalue(m.p_value)} on {m.n_discordant:,} discordant cases ({m.b} vs {m.c})",
                )
            )
        else:
            pairs.append(
                ("exact McNemar", "no discordant case: every case has the same outcome in both arms (p = 1)")
            )
    if c.heterogeneity is not None:
        pairs.append(("across domains", c.heterogeneity.text))
    pairs += _mde(c, unit)
    pairs += _evidence_status(c)
    excluded = c.excluded
    for why, ids in excluded.items():
        pairs.append(("left out", f"{len(ids):,} cases: {why}"))
    return pairs


def _usage_table(c: Comparison, a: str, b: str) -> list[Part]:
    """Cost, latency and tokens per case, paired: means with their interval, medians beside them."""
    usage = [u for u in c.usage if _exported(u.difference) or u.reason]
    if not usage:
        return []
    rows = []
    for u in usage:
        f: Callable[[Any], str] = partial(fm.usage, u.metric, bare_zero=True)
        iv = u.interval
        diff = u.difference
        rows.append(
            {
                "metric": fm.USAGE_NAMES.get(u.metric, u.metric),
                "a": f(u.value_a),
                "b": f(u.value_b),
                "diff": (("+" if (diff or 0) > 0 else "") + f(diff))
                if fm.is_number(diff)
                else (u.reason or fm.MISSING),
                "interval": fm.interval(iv.low, iv.high, f) if iv else fm.MISSING,
                "relative": fm.pct(u.relative, 1, signed=True),
                # Beside the means, so a few slow or dear runs neither alarm nor reassure.
                "median": (
                    f"{f(u.median_a)} → {f(u.median_b)}"
                    + (
                        f" ({fm.pct(u.median_relative, 1, signed=True)})"
                        if fm.is_number(u.median_relative)
                        else ""
                    )
                )
                if fm.is_number(u.median_a) and fm.is_number(u.median_b)
                else fm.MISSING,
                "p": fm.pvalue(u.p_value),
            }
        )
    return [
        d.table_html(
            rows,
            [
                ("metric", "per case"),
                ("a", f"{a} (mean)", str),
                ("b", f"{b} (mean)", str),
                ("diff", "B − A", str),
                ("interval", "interval", str),
                ("relative", "relative", str),
                ("median", "median A → B", str),
                ("p", "p", str),
            ],
            caption=f"Cost, latency and tokens per case ({usage[0].method}): means, "
            "with the medians beside them",
        )
    ]


def _mde(c: Comparison, unit: str) -> list[tuple[str, Any]]:
    """The smallest detectable difference, said for what it rests on — and plainly not informative when no
    case changed (no discordant case: nothing shows how far cases differ between the arms)."""
    mde, (up, down) = c.mde, c.moved
    label = "smallest detectable difference"
    if mde and fm.is_number(mde.delta):
        size = fm.difference(mde.delta, unit).lstrip("+")
        m = c.mcnemar
        basis = (
            f", estimated from the {fm.plural(up + down, 'case')} whose per-case pass rate moved (none changed "
            "its majority outcome: no discordant case)"
            if m is not None and not m.n_discordant
            else ""
        )
        return [
            (
                label,
                f"{size} with {mde.n:,} cases ({mde.power:.0%} power, {mde.alpha:g} level){basis}: a true "
                f'difference smaller than this would usually go unnoticed, so "no significant difference" '
                f'here does not mean "no difference".',
            )
        ]
    if not c.n_cases:
        return []
    if not up and not down:
        return [
            (
                label,
                "not informative: no case changed between the arms (no discordant case), so there is no spread "
                "of per-case differences to say how small a difference these cases would detect",
            )
        ]
    return [(label, "not computable from these data (every case moved by the same amount)")]


LISTED = 10
"""Case ids listed beside a count of cases whose evidence changed (the count is always whole)."""


def _evidence_status(c: Comparison) -> list[tuple[str, Any]]:
    """The cases that became or stopped being "no evidence" (an answer citing no skill reference)."""
    t = c.text
    if t is None:
        return []
    if t.no_evidence_reason is not None:
        return [("no evidence", f"not compared: {t.no_evidence_reason}")]

    def listed(ids: tuple[str, ...]) -> str:
        more = f", … ({len(ids) - LISTED:,} more)" if len(ids) > LISTED else ""
        return f" ({', '.join(ids[:LISTED])}{more})" if ids else ""

    became, stopped = t.became_no_evidence, t.stopped_no_evidence
    return [
        (
            "no evidence",
            f"{fm.plural(len(became), 'case')} became no evidence{listed(became)} · "
            f"{fm.plural(len(stopped), 'case')} stopped being no evidence{listed(stopped)} "
            "(an answered run citing no skill reference)",
        )
    ]


def _domain_table(c: Comparison, a: str, b: str) -> list[Part]:
    """Per domain, paired (with two domains or more), the significant moves marked."""
    unit = c.unit
    share = unit == "points"
    if not c.has_domain_breakdown:
        return []
    rows = [
        {
            "domain": r.domain,
            "n": r.n_cases,
            "a": fm.pct(r.value_a) if share else fm.num(r.value_a),
            "b": fm.pct(r.value_b) if share else fm.num(r.value_b),
            "diff": f"{fm.difference(r.difference, unit)} {_bounds_points(r.interval, unit)}",
            "moved": r.moved_text,
            "p": fm.pvalue(r.p_adjusted),
            "flag": "significantly worse"
            if r.significant_regression
            else ("significantly better" if r.significant_improvement else ""),
            "_tone": "block" if r.significant_regression else ("pass" if r.significant_improvement else None),
        }
        for r in c.by_domain
    ]
    first = c.by_domain[0]
    level = f"{c.confidence:.0%}"
    test = first.test if first.test.endswith(" test") else f"{first.test} test"
    return [
        d.table_html(
            rows,
            [
                ("domain", "domain"),
                ("n", "cases"),
                ("a", a, str),
                ("b", b, str),
                ("diff", f"B − A [{level} {first.interval_method} interval]", str),
                ("moved", "cases moved"),
                ("p", f"p ({first.test}, Holm-adjusted)", str),
                ("flag", ""),
            ],
            caption=f"Per domain, paired: B − A with its {level} {first.interval_method} interval; each domain "
            f"tested by the {test} on the cases that moved, p Holm-adjusted over "
            f"{fm.plural(len(c.by_domain), 'domain')}"
            + (
                ""
                if first.test == "exact McNemar"
                else " (cases moved: whose per-case pass rate or mean score rose or fell, the counts of the "
                "exact sign test beside them)"
            ),
            row_class=lambda r: r["_tone"],
        )
    ]


def multi_section(multi: MultiComparison | None) -> list[Part]:
    """Every arm against the baseline, Holm-adjusted, with Cochran's Q over all arms."""
    if multi is None:
        return []
    rows = [
        {
            "pair": f"{p.b} vs {p.a}",
            "n": p.n_cases,
            "diff": f"{fm.difference(p.difference)} {_bounds_points(p.interval, 'points')}",
            "moved": f"{p.fixed:,} fixed, {p.regressed:,} regressed",
            "p": fm.pvalue(p.p_value),
            "adj": fm.pvalue(p.p_adjusted),
            "sig": "yes" if p.significant else "no",
        }
        for p in multi.pairs
    ]
    parts: list[Part] = [
        d.table_html(
            rows,
            [
                ("pair", "arm vs baseline"),
                ("n", "cases"),
                ("diff", "difference", str),
                ("moved", "cases moved"),
                ("p", "p", str),
                ("adj", "p (Holm)", str),
                ("sig", "significant"),
            ],
            caption="Every arm against the baseline",
        )
    ]
    q = multi.cochran
    if q:
        parts.append(
            d.note_html(
                f"Cochran's Q over all {q.n_arms} arms and {q.n_cases:,} cases: Q = {q.statistic:.2f}, "
                f"{fm.pvalue(q.p_value)} (whether the arms are right equally often)."
            )
        )
    for note in multi.notes:
        parts.append(d.note_html(note))
    return parts


# -- pairwise judges and position bias ----------------------------------------------------------------------


def _dimensions_table(p: PairwiseSummary) -> Part:
    """Each arm's rubric scores of one pairwise judge, over every pair it judged."""
    return d.table_html(
        [
            {
                "dimension": t.dimension,
                "pairs": t.pairs,
                "total_a": f"{t.total_a:,.1f}",
                "total_b": f"{t.total_b:,.1f}",
                "mean_a": "–" if t.mean_a is None else f"{t.mean_a:.2f}",
                "mean_b": "–" if t.mean_b is None else f"{t.mean_b:.2f}",
            }
            for t in p.dimensions
        ],
        [
            ("dimension", "rubric dimension"),
            ("pairs", "pairs"),
            ("total_a", "A's total"),
            ("total_b", "B's total"),
            ("mean_a", "A's mean"),
            ("mean_b", "B's mean"),
        ],
        caption=f"Rubric scores of {p.grader}, over every pair judged",
    )


def pairwise_section(
    pairwise: Sequence[PairwiseSummary],
    bias: Sequence[PositionBias],
    verbosity: Sequence[VerbosityBias] = (),
) -> list[Part]:
    """Blind pairwise judges' verdicts between the arms, how much each judge favours a slot or the
    longer answer, and each arm's rubric scores over every pair judged."""
    parts: list[Part] = []
    if pairwise:
        rows = [
            {
                "grader": p.grader,
                "n": p.n,
                "wins_a": p.wins_a,
                "wins_b": p.wins_b,
                "ties": p.ties,
                "rate": fm.pct(p.b_win_rate),
                "p": fm.pvalue(p.p_value),
            }
            for p in pairwise
        ]
        parts.append(
            d.table_html(
                rows,
                [
                    ("grader", "pairwise judge"),
                    ("n", "pairs"),
                    ("wins_a", "A preferred"),
                    ("wins_b", "B preferred"),
                    ("ties", "ties"),
                    ("rate", "B's win rate"),
                    ("p", "sign test"),
                ],
            )
        )
    parts += [_dimensions_table(p) for p in pairwise if p.dimensions]
    if bias:
        rows = [_bias_row(b) for b in bias]
        parts.append(
            d.table_html(
                rows,
                [
                    ("grader", "pairwise judge"),
                    ("judgements", "judgements"),
                    ("first", "first slot wins (unbiased: 50%)"),
                    ("flips", "verdict flipped with the order"),
                    ("verdict", ""),
                ],
                caption="Position bias",
                row_class=lambda r: r["_tone"],
            )
        )
    if verbosity:
        parts.append(
            d.table_html(
                [_verbosity_row(v) for v in verbosity],
                [
                    ("grader", "pairwise judge"),
                    ("pairs", "pairs (lengths differ ≥ 20%)"),
                    ("longer", "longer answer wins (unbiased: 50%)"),
                    ("slots", "longer wins in slot 1 · slot 2"),
                    ("verdict", ""),
                ],
                caption="Verbosity bias",
                row_class=lambda r: r["_tone"],
            )
        )
    if not parts:
        return [d.note_html("No pairwise judge compared the arms.")]
    return parts


_BIAS_WORDS = {True: "favours a slot", False: "no position bias shown", None: "no decisive judgement"}


def _verbosity_row(v: VerbosityBias) -> dict[str, Any]:
    """A judge's longer-answer win rate with its interval, by slot, and whether it favours length."""
    iv = v.longer_win_interval

    def share(wins: int, n: int) -> str:
        return f"{wins}/{n}" if n else "–"

    words: dict[bool | None, str] = {
        True: f"prefers the {v.prefers} answer",
        False: "no verbosity bias shown",
        None: "no decisive judgement",
    }
    verdict = words[v.biased]
    return {
        "grader": v.grader,
        "pairs": v.pairs if v.min_difference == 0.2 else f"{v.pairs} (≥ {v.min_difference:.0%})",
        "longer": fm.pct(v.longer_win_rate) + (f" {fm.interval(iv.low, iv.high)}" if iv else ""),
        "slots": f"{share(v.longer_first_wins, v.longer_first_decisive)} · "
        f"{share(v.longer_second_wins, v.longer_second_decisive)}",
        "verdict": verdict,
        "_tone": "warn" if v.biased else None,
    }


def _bias_row(b: PositionBias) -> dict[str, Any]:
    """A judge's first-slot win rate with its interval, its flip rate, and whether it favours a slot."""
    iv = b.first_win_interval
    return {
        "grader": b.grader,
        "judgements": b.judgements,
        "first": fm.pct(b.first_win_rate) + (f" {fm.interval(iv.low, iv.high)}" if iv else ""),
        "flips": fm.pct(b.flip_rate) if b.both_orders else "not judged in both orders",
        "verdict": _BIAS_WORDS[b.biased],
        "_tone": "warn" if b.biased else None,
    }
