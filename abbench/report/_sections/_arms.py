"""Per-arm report sections: accuracy, domains, stability, usage and judge scores (confusion: `_confusion`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from abbench import formatting as fm
from abbench.metrics import NO_RUN_EXECUTED
from abbench.report import _display as d
from abbench.report._sections._format import format_parts
from abbench.report._sections._parts import Part, estimate_text

if TYPE_CHECKING:
    from abbench.metrics import ArmMetrics, Estimate, ExperimentMetrics, GroupAccuracy
    from abbench.stats import Interval

# -- per-arm metrics -----------------------------------------------------------------------------------


def _main(a: ArmMetrics, by_score: bool) -> Estimate | None:
    """The arm's headline estimate: its mean score, or its accuracy."""
    return a.score if by_score else a.accuracy


def arms_section(metrics: ExperimentMetrics) -> list[Part]:
    """Per-arm accuracy (or score) with intervals, strict accuracy, counts, and a dot plot."""
    arms = metrics.arms
    if not arms:
        return [d.note_html("The experiment has no arm to report on.")]
    by_score = metrics.outcome == "score"
    rows = []
    for a in arms:
        c = a.counts
        rows.append(
            {
                "arm": a.label,
                "main": estimate_text(_main(a, by_score), share=not by_score),
                "strict": estimate_text(a.strict_accuracy) if not by_score else fm.MISSING,
                "graded": f"{c.passed + c.failed + (c.scored if by_score else 0):,} of {c.runs:,}",
                "failures": c.execution_failed + c.grading_failed,
                "cancelled": c.cancelled + c.unfinished,
                "per_correct": fm.money(a.usage.cost_per_correct),
            }
        )
    level = f"{metrics.confidence:.0%}"
    main = "mean score" if by_score else "accuracy"
    columns: list[tuple[str, str] | tuple[str, str, Any]] = [
        ("arm", "arm"),
        ("main", f"{main} [{level} interval]", str),
        *([] if by_score else [("strict", "strict accuracy", str)]),
        ("graded", "graded runs", str),
        ("failures", "execution or grading failed"),
        ("cancelled", "cancelled, unfinished"),
        ("per_correct", "cost per right answer"),
    ]
    methods = sorted({(e.method if (e := _main(a, by_score)) else "") or "" for a in arms} - {"", "none"})
    parts = [d.table_html(rows, columns)]
    parts.append(
        d.note_html(
            (
                "Strict accuracy counts runs whose execution or grading failed as wrong. "
                if not by_score
                else ""
            )
            + f"Intervals: {', '.join(methods) or 'none'}; "
            + (
                "every case counts once (per-case means over rounds, Miller 2024)."
                if metrics.rounds > 1
                else "one answer per case."
            )
            + "".join(f" {a.arm}: {a.usage.cost_gap}." for a in arms if a.usage.cost_gap)
        )
    )
    estimates = [_main(a, by_score) for a in arms]
    if any(e is not None and fm.is_number(e.value) for e in estimates):
        parts.append(d.estimate_figure([a.arm for a in arms], estimates, share=not by_score, title=main))
    return parts + format_parts(arms)


def _judging_note(metrics: ExperimentMetrics) -> list[Part]:
    """Grading cost per judge, apart from the arms' execution cost (a pairwise judge is charged to no arm)."""
    judging = [j for j in metrics.judging if j.grades]
    if not judging:
        return []
    parts = []
    for j in judging:
        what = "comparing " + " and ".join(j.arms) if j.kind == "pairwise" else "grading " + ", ".join(j.arms)
        parts.append(f"{j.grader} {fm.judge_cost(j)} ({j.grades:,} grades {what})")
    return [
        d.note_html(
            "Grading cost is the judges', apart from the arms' execution cost above: "
            + "; ".join(parts)
            + "."
        )
    ]


# -- per domain ------------------------------------------------------------------------------------------


def domain_section(metrics: ExperimentMetrics) -> list[Part]:
    """Accuracy per domain and arm with intervals: a table and a chart."""
    if not metrics.has_domain_breakdown:
        return [d.note_html(fm.NO_DOMAINS.capitalize() + ".")]
    rows = metrics.by_domain
    arms = [a.arm for a in metrics.arms]
    domains: list[Any] = list(dict.fromkeys(r.group for r in rows))
    share = metrics.outcome != "score"
    cell: dict[tuple[str, str | int], GroupAccuracy] = {(r.arm, r.group): r for r in rows}
    table = []
    for dom in domains:
        row: dict[str, Any] = {"domain": dom}
        for arm in arms:
            r = cell.get((arm, dom))
            row[arm] = estimate_text(r.accuracy, share=share) if r else fm.MISSING
            row[arm + "#n"] = r.accuracy.n_cases if r else 0
        row["cases"] = max((row[a + "#n"] for a in arms), default=0)
        table.append(row)
    columns: list[tuple[str, str] | tuple[str, str, Any]] = [
        ("domain", "domain"),
        ("cases", "cases"),
        *[(a, a, str) for a in arms],
    ]
    series = {arm: [_accuracy(cell.get((arm, dom))) for dom in domains] for arm in arms}
    return [
        d.table_html(table, columns),
        d.grouped_figure(
            domains,
            series,
            share=share,
            title="accuracy" if share else "mean score",
            name=f"{'accuracy' if share else 'mean score'} of each arm by domain, with 95% intervals",
        ),
        d.note_html(
            "Small domains have wide intervals: a difference inside them is not evidence. "
            "Intervals here are per domain, without a correction for looking at many domains at once."
        ),
    ]


def _accuracy(group: GroupAccuracy | None) -> Estimate | None:
    return group.accuracy if group is not None else None


# -- stability -------------------------------------------------------------------------------------------


def stability_section(metrics: ExperimentMetrics) -> list[Part]:
    """Agreement, flip and flaky rates per arm, and accuracy round by round."""
    arms = metrics.arms
    if (metrics.rounds or 1) < 2:
        return [
            d.note_html("Each case ran once, so stability across rounds cannot be measured (run 2+ rounds).")
        ]
    rows = []
    for a in arms:
        s = a.stability
        rows.append(
            {
                "arm": a.arm,
                "agreement": s.agreement,
                "flip": s.flip_rate,
                "flaky": s.flaky_rate,
                "cases": s.n_cases,
                "examples": ", ".join(s.flaky[:8]) or ("none" if fm.is_number(s.flaky_rate) else fm.MISSING),
            }
        )
    parts = [
        d.table_html(
            rows,
            [
                ("arm", "arm"),
                ("agreement", "agreement", fm.pct),
                ("flip", "answer changed", fm.pct),
                ("flaky", "flaky", fm.pct),
                ("cases", "cases"),
                ("examples", "flaky cases", "ids"),
            ],
        ),
        d.note_html(
            "Agreement: share of runs giving the case's usual answer. Answer changed: cases answered "
            "differently across rounds. Flaky: cases right in some rounds and wrong in others. "
            "Cases: those answered twice or more."
        ),
    ]
    parts += pass_k_parts(arms)
    parts += _by_round(metrics)
    return parts


def _by_round(metrics: ExperimentMetrics) -> list[Part]:
    """Accuracy round by round, a line per arm (nothing with fewer than two rounds graded)."""
    by_round = metrics.by_round
    rounds = sorted({int(r.group) for r in by_round})
    if len(rounds) < 2:
        return []
    cell = {(r.arm, r.group): r.accuracy for r in by_round}
    series = {a.arm: [cell.get((a.arm, rnd)) for rnd in rounds] for a in metrics.arms}
    share = metrics.outcome != "score"
    return [
        d.grouped_figure(
            [f"round {r}" for r in rounds],
            series,
            share=share,
            title="accuracy by round",
            lines=True,
            name=f"{'accuracy' if share else 'mean score'} of each arm by round, with 95% intervals",
        )
    ]


class _Point(NamedTuple):
    """A pass@k (or pass^k) figure with its interval, drawn as `Estimate`s are."""

    value: float | None
    interval: Interval | None


def pass_k_parts(arms: Sequence[ArmMetrics]) -> list[Part]:
    """A curve per arm over k for pass@k and for pass^k, and how they were estimated (none: one round)."""
    curves = {a.arm: a.stability.pass_k for a in arms}
    top = max((len(c) for c in curves.values()), default=0)
    if top < 2:
        return []
    ks = [f"k = {k}" for k in range(1, top + 1)]
    parts: list[Part] = []
    for field, title in (
        ("pass_at_k", "pass@k: one of k attempts right"),
        ("pass_hat_k", "pass^k: all k right"),
    ):
        series: dict[str, list[_Point | None]] = {
            arm: [_Point(getattr(p, field), getattr(p, f"{field}_interval")) for p in curve]
            + [None] * (top - len(curve))
            for arm, curve in curves.items()
        }
        name = f"{title}: each arm by k, with 95% intervals"
        parts.append(d.grouped_figure(ks, series, share=True, title=title, lines=True, name=name))
    short = sorted({p.n_short for c in curves.values() for p in c} - {0})
    fewer = [
        f"{arm}'s k = {p.k} on {p.n_cases:,} case{'s' if p.n_cases != 1 else ''}"
        for arm, curve in curves.items()
        for p in curve
        if curve and p.n_cases < max(q.n_cases for q in curve)
    ]
    parts.append(
        d.note_html(
            "pass@k: the chance that at least one of k attempts at a case is right; pass^k: that all k are "
            "(the reliability an agent needs when one wrong answer costs). Unbiased per-case estimators "
            "(Chen et al. 2021; τ-bench, Yao et al. 2024) averaged over cases, with t-intervals over cases "
            "(Wilson's over the cases when they do not differ, never a point). "
            "A run that failed to execute is an attempt that was not right; a grading failure is no attempt"
            + (", and a case with fewer attempts than k is left out of that k" if short else "")
            + (f"; figures on fewer cases: {', '.join(fewer)}." if fewer else ".")
        )
    )
    return parts


# -- cost, tokens, latency -------------------------------------------------------------------------------


def usage_section(metrics: ExperimentMetrics) -> list[Part]:
    """Cost, tokens and latency per arm (mean, median, p95, totals), and a latency chart."""
    arms = metrics.arms
    if not any(a.usage.executed for a in arms):
        return [d.note_html("No run has executed yet, so there is no cost, token or latency figure.")]
    # failed attempts cost money too: show what every attempt spent when some failed
    cached = any(a.usage.cached_attempts for a in arms)
    spent = (
        [("spent", "spent, every attempt", str)]
        if cached or any(a.usage.failed_attempts for a in arms)
        else []
    )
    # the response cache answered some calls: what it saved is beside what was spent
    spent += [("saved", "saved by the cache", str)] if cached else []
    parts = [
        d.table_html(
            [_usage_row(a) for a in arms],
            [
                ("arm", "arm"),
                ("executed", "executed runs"),
                ("cost_mean", "cost per run", str),
                ("cost_total", "total cost", str),
                *spent,
                ("per_correct", "cost per right answer", str),
                ("tokens", "tokens per run", str),
                ("tokens_p95", "tokens p95", str),
                ("lat_p50", "latency p50", str),
                ("lat_mean", "latency mean", str),
                ("lat_p95", "latency p95", str),
                ("judge", "pointwise judge cost", str),
            ],
        ),
        *_judging_note(metrics),
        d.bars_figure(
            [a.arm for a in arms],
            {
                "p50": [_known(a.usage.latency_ms.p50) for a in arms],
                "p95": [_known(a.usage.latency_ms.p95) for a in arms],
            },
            title="latency",
            suffix=" ms",
        ),
    ]
    return parts


def _known(value: float | None) -> float | None:
    """The figure, or None when it is missing or not finite (a gap in a chart, as in the JSON export)."""
    return value if fm.is_number(value) else None


def _usage_row(a: ArmMetrics) -> dict[str, Any]:
    """One arm's cost, tokens and latency cells (an arm with no executed run says so in every cell)."""
    u = a.usage
    if not u.executed:
        # An arm with no executed run has no figure: every cell says so (not a raw None, never $0).
        return {
            "arm": a.arm,
            "executed": 0,
            **dict.fromkeys(
                (
                    "cost_mean",
                    "cost_total",
                    "per_correct",
                    "tokens",
                    "tokens_p95",
                    "lat_p50",
                    "lat_mean",
                    "lat_p95",
                ),
                NO_RUN_EXECUTED,
            ),
            "judge": NO_RUN_EXECUTED,  # judges grade executed runs only
            # what failed attempts spent is real money, known or not: said beside, never as the arm's cost
            "spent": fm.money(u.spent)
            + (f" ({u.failed_attempts:,} attempts whose execution failed)" if u.failed_attempts else ""),
            "saved": fm.money(u.saved)
            + (f" ({u.cached_attempts:,} attempts cached)" if u.cached_attempts else ""),
        }
    return {
        "arm": a.arm,
        "executed": u.executed,
        "cost_mean": fm.money(u.cost.mean),
        "cost_total": fm.money(u.total_cost),
        "per_correct": fm.money(u.cost_per_correct)
        if _known(u.cost_per_correct) is not None
        else (u.reason or fm.MISSING),
        "tokens": fm.num(u.tokens.mean, 0),
        "tokens_p95": fm.num(u.tokens.p95, 0),
        "lat_p50": fm.ms(u.latency_ms.p50, bare_zero=True),
        "lat_mean": fm.ms(u.latency_ms.mean, bare_zero=True),
        "lat_p95": fm.ms(u.latency_ms.p95, bare_zero=True),
        "judge": fm.money(u.judge_cost, missing="unknown (no price)"),
        "spent": fm.money(u.spent)
        + (f" ({u.failed_attempts:,} attempts whose execution failed)" if u.failed_attempts else ""),
        "saved": fm.money(u.saved)
        + (f" ({u.cached_attempts:,} attempts cached)" if u.cached_attempts else ""),
    }


# -- judges ----------------------------------------------------------------------------------------------


def judges_section(metrics: ExperimentMetrics) -> list[Part]:
    """Judge scores per arm, grader and rubric dimension, with intervals; first, any judge whose model is
    an arm's model or of its family (self-preference)."""
    warned = [d.note_html(f"Judge ≠ agent: {w.message}.") for w in metrics.self_judging]
    scores = [j for a in metrics.arms for j in a.judges]
    if not scores:
        return [*warned, d.note_html("No judge score: no run of this experiment has been graded by a judge.")]
    graders = list(dict.fromkeys(j.grader for j in scores))
    dims = list(dict.fromkeys(j.dimension for j in scores))
    arms = list(dict.fromkeys(j.arm for j in scores))
    cell = {(j.arm, j.grader, j.dimension): j.estimate for j in scores}
    rows = []
    for g in graders:
        for dim in dims:
            if not any((arm, g, dim) in cell for arm in arms):
                continue
            row = {"grader": g, "dimension": dim}
            for arm in arms:
                row[arm] = estimate_text(cell.get((arm, g, dim)), share=False)
            rows.append(row)
    return [
        *warned,
        d.table_html(rows, [("grader", "judge"), ("dimension", "dimension"), *[(a, a) for a in arms]]),
    ]
