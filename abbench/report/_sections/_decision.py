"""The report's decision section: the verdict banner, the three dimensions, and every gate rule."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from abbench import formatting as fm
from abbench.compare import ARMS_GIVEN, DEFAULT_MARGIN
from abbench.gate import (
    Conclusion,
    GateOutcome,
    RuleStatus,
    Severity,
    metric_label,
    metric_unit,
    speaks_of_cost,
)
from abbench.report import _display as d
from abbench.report._sections._parts import Part

if TYPE_CHECKING:
    from abbench.compare import Side
    from abbench.errors import Action
    from abbench.gate import Coverage, Dimension, GateResult, RuleOutcome


def _side_name(side: Side | None) -> str:
    if side is None:
        return fm.MISSING
    return side.label or side.arm or fm.MISSING


def _dimension_figures(name: str, dim: Dimension) -> tuple[str, str]:
    """The headline figure of a dimension and a short line of evidence (the summary when not assessed)."""
    # The evidence is a free-form record of figures: read as exported (numbers plain, NaN as None).
    ev: Mapping[str, Any] = dim.as_dict()["evidence"] or {}
    if not dim.assessed or not ev:
        return fm.MISSING, dim.summary
    if name == "capability" and ev.get("policy") == "votes":
        return f"{ev.get('wins', 0):,} – {ev.get('losses', 0):,}", dim.summary
    if name == "capability":
        parts = []
        if "fixed" in ev:
            parts.append(f"{ev['fixed']:,} fixed, {ev['regressed']:,} regressed")
        if fm.is_number(ev.get("ci_low")) and fm.is_number(ev.get("ci_high")):
            parts.append(f"interval {fm.points(ev['ci_low'])} to {fm.points(ev['ci_high'])}")
        if fm.is_number(ev.get("mde")):
            parts.append(f"detects {fm.points(ev['mde']).lstrip('+')} or more")
        worse = ev.get("domains_significantly_worse") or []
        if worse:
            parts.append("worse in " + ", ".join(map(str, worse[:3])))
        if dim.conclusion != Conclusion.PASS:
            parts.append(dim.summary)
        return fm.points(ev.get("difference")), "; ".join(parts) or dim.summary
    if name == "cost":
        # The mean is what the bill adds up to; the median beside it shows whether a few dear runs made it.
        big = fm.pct(ev.get("relative"), 0, signed=True) + " mean"
        if fm.is_number(ev.get("median_relative")):
            big += " · " + fm.pct(ev["median_relative"], 0, signed=True) + " median"
        a: Any = ev.get("cost_a")
        b: Any = ev.get("cost_b")

        def thousand(v: float) -> str:
            return f"${v * 1000:,.2f}" if v * 1000 >= 0.01 else fm.money(v * 1000)

        scale = (
            f" ({thousand(a)} → {thousand(b)} per 1,000 cases)"
            if fm.is_number(a) and fm.is_number(b) and a < 0.01 and b < 0.01
            else ""
        )
        median = ""
        if fm.is_number(ev.get("median_a")) and fm.is_number(ev.get("median_b")):
            median = f"; median {fm.money(ev['median_a'])} → {fm.money(ev['median_b'])}"
        return big, f"mean per case {fm.money(a)} → {fm.money(b)}{scale}{median}. " + dim.summary
    fb, fa = ev.get("flip_rate_b"), ev.get("flip_rate_a")
    big = f"{fm.pct(fb, 0)} flip" if fm.is_number(fb) else fm.MISSING
    if fm.is_number(fb) and fm.is_number(fa):
        big += f" (was {fm.pct(fa, 0)})"
    return big, dim.summary


_OP_WORDS = {">=": "≥", "<=": "≤", ">": ">", "<": "<", "==": "=", "!=": "≠"}

_STABILITY_METRICS = ("flip_rate", "agreement_rate", "flaky_rate", "flaky_cases")


def _rule_card(metric: str) -> str | None:
    name = metric.split(".")[-1].split("[")[0]
    if name in _STABILITY_METRICS:
        return "stability"
    if speaks_of_cost(metric):
        return "cost"
    return None


def _rule_texts(r: RuleOutcome) -> tuple[str, str, str]:
    """A gate rule's name, its condition and its value, each number in the metric's unit."""
    rule = r.rule
    unit = metric_unit(rule.metric)
    name = rule.name or rule.metric
    condition = f"{rule.metric} {_OP_WORDS.get(rule.op, rule.op)} {fm.in_unit(rule.value, unit, whole=True)}"
    if rule.metric == "non_inferior":
        margin = rule.margin if rule.margin is not None else DEFAULT_MARGIN
        condition = f"not worse by more than {margin * 100:g} points (lower bound above −{margin * 100:g})"
    return name, condition, fm.in_unit(r.value, unit, whole=True)


def _rule_sentence(r: RuleOutcome, pair: str) -> str:
    """``cost up at most 25% — relative cost change: +35.4% on v2 vs v1 (the rule asks for ≤ +25.0%)``:
    the metric by its label (`metric_label`), never its id; the figure is always the pair's, and a rule whose
    name speaks of another arm says so."""
    _, _, value = _rule_texts(r)
    rule = r.rule
    label = metric_label(rule.metric)
    opening = f"{rule.name} — {label}" if rule.name else label[:1].upper() + label[1:]
    wanted = (
        f"{_OP_WORDS.get(rule.op, rule.op)} {fm.in_unit(rule.value, metric_unit(rule.metric), whole=True)}"
    )
    named = f" [its name speaks of {', '.join(r.speaks_of)}]" if r.speaks_of else ""
    if r.value is None or (isinstance(r.value, float) and not math.isfinite(r.value)):
        return f"{opening}: could not be measured on {pair} (the rule asks for {wanted}){named}"
    return f"{opening}: {value} on {pair} (the rule asks for {wanted}){named}"


_CARD_TONES = {
    Conclusion.PASS: "good",
    Conclusion.WARN: "warn",
    Conclusion.INCONCLUSIVE: "warn",
    Conclusion.BLOCK: "bad",
}
"""A dimension card's colour: an inconclusive dimension is neither a pass nor a loss shown, and a warning one
(a candidate that pays for a cost rise by being better) is not shown as a plain pass."""

_TONES = {
    GateOutcome.PASS: "pass",
    GateOutcome.PASS_WITH_WARNINGS: "warn",
    GateOutcome.BLOCK: "block",
    GateOutcome.INCOMPLETE: "incomplete",
    GateOutcome.INCONCLUSIVE: "inconclusive",
}


def _pair_text(a: Side | None, b: Side | None) -> str | None:
    if b is None:
        return None
    return f"{b.arm} vs {a.arm}" if a else str(b.arm)


def decision_section(
    gate: GateResult | None,
    *,
    reason: str | None = None,
    refused: bool = False,
    nothing_ran: bool = False,
    shown_notes: Sequence[str] = (),
) -> list[Part]:
    """The verdict banner, the three dimensions at a glance, and every gate rule with its value.

    The banner opens with the pair and says on how many planned runs the decision rests before anything
    else; it names what blocks or warns, so the verdict reads in one look; a card whose dimension passes
    while a gate rule about it warns or blocks says so instead of showing a plain pass. Without a gate it
    says why (`reason`): a pair nobody named (`refused`), nothing run yet (`nothing_ran`), an error. `shown_notes` are
    notes another section shows (the comparison's), left out here.
    """
    if gate is None:
        if refused:
            return [
                d.decision_html(
                    "refused",
                    "No decision: the pair it would be about is not named.",
                    f"<p>{d.esc(reason)}</p>",
                )
            ]
        if nothing_ran:
            return [d.decision_html("empty", reason or "Nothing has run yet, so there is no verdict.")]
        return [d.decision_html(None, reason or "No gate could be evaluated for this experiment.")]
    a, b = gate.a, gate.b
    banner = d.decision_html(
        _TONES.get(gate.outcome, "none"), _headline(gate), _details(gate), pair=_pair_text(a, b)
    )
    parts: list[Part] = [banner, d.cards_html(_cards(gate)), _rules_table(gate)]
    for note in gate.notes:
        if note not in shown_notes:
            parts.append(d.note_html(note))
    if a:
        parts.append(d.note_html(HOW_TO_READ))
    return parts


def _headline(gate: GateResult) -> str:
    """Who against whom, and on how many planned runs the decision rests."""
    a, b = gate.a, gate.b
    cov = gate.coverage
    pair = gate.pair
    # A stakeholder reads the page, not its notebook: arms chosen in a widget or a call are said as a choice.
    named_by = (
        f"the analyst's choice: baseline {pair.given[0]}, candidate {pair.given[1]}"
        if pair.named_by == ARMS_GIVEN and pair.given is not None
        else pair.named_in("python")
    )
    headline = (
        f"Candidate {_side_name(b)} against baseline {_side_name(a)}"
        if a
        else f"{_side_name(b)} alone: there is no baseline to compare it with"
    )
    headline += f"; {cov.text}" + (f" (pair named by {named_by})." if named_by else ".")
    return headline


def _calls(steps: Sequence[Action]) -> str:
    """What to do, as the Python calls of the notebook the report is (a reader of the page may run them)."""
    return ", ".join(f"<code>{d.esc(step.python)}</code>" for step in steps)


def _details(gate: GateResult) -> str:
    """The banner's body: why incomplete or inconclusive, the verdict, the votes, what blocks and warns."""
    outcome = gate.outcome
    cov = gate.coverage
    warnings = gate.warnings
    blocking = [r for r in gate.rules if r.blocks]
    details = ""
    if outcome == GateOutcome.INCOMPLETE:
        details += (
            f"<p><b>Incomplete:</b> the decision needs {d.esc(_required(cov))} of each arm graded and rests on "
            f"{fm.pct(cov.share, 0)} ({d.esc(cov.gap or 'nothing planned')}). The figures below are "
            f"from the runs that did finish: finish the others ({_calls(gate.next_steps)}) or allow less with "
            "min_coverage in the gate file.</p>"
        )
    elif outcome == GateOutcome.INCONCLUSIVE:
        unsettled = gate.unsettled
        if unsettled:
            details += (
                "<p><b>Inconclusive:</b> the evidence does not decide (nothing blocks, nothing is shown "
                "either):</p><ul>"
                + "".join(
                    f"<li>{d.esc(r.rule.name or metric_label(r.rule.metric))}: {d.esc(r.explanation)}</li>"
                    for r in unsettled
                )
                + "</ul>"
            )
        else:
            details += (
                "<p><b>Inconclusive:</b> no rule could be assessed on these data (see the rules below).</p>"
            )
    if gate.verdict:
        details += f"<p>{d.esc(gate.verdict)}</p>"
    if gate.verdict_outcome:
        details += f"<p><b>Outcome</b> — {d.esc(gate.verdict_outcome)}</p>"
    if gate.votes:
        details += f"<p>{d.esc(gate.votes.text)}</p>"
    if blocking:
        details += (
            "<p><b>Blocked by:</b></p><ul>"
            + "".join(f"<li>{d.esc(_rule_sentence(r, gate.pair_text))}</li>" for r in blocking)
            + "</ul>"
        )
    if warnings:
        details += (
            "<p><b>Warnings</b> (they do not block):</p><ul>"
            + "".join(f"<li>{d.esc(_rule_sentence(r, gate.pair_text))}</li>" for r in warnings)
            + "</ul>"
        )
    return details


def _cards(gate: GateResult) -> list[str]:
    """The three dimensions at a glance; a passing card whose gate rule warns or blocks says so."""
    flagged: dict[str, list[RuleOutcome]] = {}
    for r in gate.rules:
        card = _rule_card(r.rule.metric) if r.status != RuleStatus.PASS else None
        if card is not None:
            flagged.setdefault(card, []).append(r)
    cards = []
    decision = gate.decision
    for name in ("capability", "cost", "stability"):
        dim: Dimension = getattr(decision, name)
        big, text = _dimension_figures(name, dim)
        assessed = dim.assessed
        tone_card = "flat" if not assessed else _CARD_TONES.get(dim.conclusion, "bad")
        word = "not assessed" if not assessed else dim.conclusion
        rules = [
            r
            for r in flagged.get(name) or []
            if not (r.status == RuleStatus.MISSING and r.rule.allow_missing)
        ]
        if rules and tone_card != "bad":
            blocks = any(r.blocks for r in rules)
            tone_card = "bad" if blocks else "warn"
            if blocks or dim.conclusion != Conclusion.WARN:  # "warn · gate warns" says it twice
                word += " · gate " + ("blocks" if blocks else "warns")
            names = "; ".join(r.rule.name or metric_label(r.rule.metric) for r in rules)
            text += f" The gate {'blocks' if blocks else 'warns'}: {names}."
        cards.append(d.card_html(f"{name} · {word}", big, text, tone_card))
    return cards


def _rules_table(gate: GateResult) -> str:
    """Every gate rule with its value, outcome, condition and severity."""
    rows = []
    for r in gate.rules:
        name, condition, value = _rule_texts(r)
        if r.blocks:
            said, tone_row = "BLOCKS", "block"
        elif r.status == RuleStatus.PASS:
            said, tone_row = "pass", "pass"
        elif r.status == RuleStatus.INCONCLUSIVE and r.rule.severity == Severity.BLOCK:
            said, tone_row = "INCONCLUSIVE", "warn"
        elif r.status == RuleStatus.MISSING and r.rule.allow_missing:
            said, tone_row = "not assessed (allowed)", None
        elif r.status == RuleStatus.MISSING:
            said, tone_row = "not assessed (warning)", "warn"
        else:
            said, tone_row = f"{r.status} (warning)", "warn"
        rows.append(
            {
                "rule": name,
                "condition": condition,
                "value": value,
                "severity": r.rule.severity,
                "outcome": said,
                "_tone": tone_row,
            }
        )
    return d.table_html(
        rows,
        [
            ("rule", "rule"),
            ("value", "value", str),
            ("outcome", "outcome"),
            ("condition", "condition"),
            ("severity", "severity"),
        ],
        caption=f"Gate rules ({gate.source})",
        row_class=lambda r: r["_tone"],
    )


def _required(cov: Coverage) -> str:
    required = cov.required
    return (
        "every planned run"
        if not fm.is_number(required) or required >= 1
        else f"{required:.0%} of the planned runs"
    )


HOW_TO_READ = (
    "How to read this report: B is the candidate, A the baseline, and every difference is B − A "
    '(for pass rates in percentage points, pts). Brackets are 95% intervals. "No difference detectable" '
    "means these cases cannot tell the arms apart, not that they are equal: the smallest difference they "
    "can detect is given with the comparison."
)
