"""The report's decision section: the verdict banner, the three dimensions, and every gate rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from abbench.report import _display as d
from abbench.report._sections._parts import Part, _points


def _side_name(side: Mapping[str, Any] | None) -> str:
    if not side:
        return d.MISSING
    return side.get("label") or side.get("arm") or d.MISSING


def _dimension_figures(name: str, dim: Mapping[str, Any]) -> tuple[str, str]:
    """The headline figure of a dimension and a short line of evidence (the summary when not assessed)."""
    ev = dim.get("evidence") or {}
    if not dim.get("assessed", True) or not ev:
        return d.MISSING, dim["summary"]
    if name == "capability" and ev.get("policy") == "votes":
        return f"{ev.get('wins', 0)} – {ev.get('losses', 0)}", dim["summary"]
    if name == "capability":
        parts = []
        if "fixed" in ev:
            parts.append(f"{ev['fixed']} fixed, {ev['regressed']} regressed")
        if d.is_number(ev.get("ci_low")) and d.is_number(ev.get("ci_high")):
            parts.append(f"interval {_points(ev['ci_low'])} to {_points(ev['ci_high'])}")
        if d.is_number(ev.get("mde")):
            parts.append(f"detects {_points(ev['mde']).lstrip('+')} or more")
        worse = ev.get("domains_significantly_worse") or []
        if worse:
            parts.append("worse in " + ", ".join(map(str, worse[:3])))
        if dim["conclusion"] != "pass":
            parts.append(dim["summary"])
        return _points(ev.get("difference")), "; ".join(parts) or dim["summary"]
    if name == "cost":
        # The mean is what the bill adds up to; the median beside it shows whether a few dear runs made it.
        big = d.pct(ev.get("relative"), 0, signed=True).replace("pp", "%") + " mean"
        if d.is_number(ev.get("median_relative")):
            big += " · " + d.pct(ev["median_relative"], 0, signed=True).replace("pp", "%") + " median"
        a, b = ev.get("cost_a"), ev.get("cost_b")
        thousand = lambda v: f"${v * 1000:,.2f}" if v * 1000 >= 0.01 else d.money(v * 1000)  # noqa: E731
        scale = (
            f" ({thousand(a)} → {thousand(b)} per 1,000 cases)"
            if d.is_number(a) and d.is_number(b) and max(a, b) < 0.01
            else ""
        )
        median = ""
        if d.is_number(ev.get("median_a")) and d.is_number(ev.get("median_b")):
            median = f"; median {d.money(ev['median_a'])} → {d.money(ev['median_b'])}"
        return big, f"mean per case {d.money(a)} → {d.money(b)}{scale}{median}. " + dim["summary"]
    fb, fa = ev.get("flip_rate_b"), ev.get("flip_rate_a")
    big = f"{d.pct(fb, 0)} flip" if d.is_number(fb) else d.MISSING
    if d.is_number(fb) and d.is_number(fa):
        big += f" (was {d.pct(fa, 0)})"
    return big, dim["summary"]


_OP_WORDS = {">=": "≥", "<=": "≤", ">": ">", "<": "<", "==": "=", "!=": "≠"}

_STABILITY_METRICS = ("flip_rate", "agreement_rate", "flaky_rate", "flaky_cases")


def _rule_card(metric: str) -> str | None:
    from abbench.gate import metric_unit

    name = metric.split(".")[-1].split("[")[0]
    if name in _STABILITY_METRICS:
        return "stability"
    if name.startswith("cost") or name.endswith("_cost") or metric_unit(metric) == "usd":
        return "cost"
    return None


def _rule_texts(r: Mapping[str, Any]) -> tuple[str, str, str]:
    """A gate rule's name, its condition and its value, each number in the metric's unit."""
    from abbench.gate import metric_unit

    rule = r["rule"]
    unit = metric_unit(rule["metric"])
    name = rule.get("name") or rule["metric"]
    condition = f"{rule['metric']} {_OP_WORDS.get(rule['op'], rule['op'])} {d.in_unit(rule['value'], unit)}"
    if rule["metric"] == "non_inferior":
        from abbench.compare import DEFAULT_MARGIN

        margin = rule.get("margin", DEFAULT_MARGIN)
        condition = f"not worse by more than {margin * 100:g} points (lower bound above −{margin * 100:g})"
    return name, condition, d.in_unit(r["value"], unit)


def _rule_sentence(r: Mapping[str, Any]) -> str:
    """``cost up at most 25%: cost_change is +35.4% (the rule asks for ≤ +25.0%)``."""
    name, _, value = _rule_texts(r)
    rule = r["rule"]
    from abbench.gate import metric_unit

    wanted = (
        f"{_OP_WORDS.get(rule['op'], rule['op'])} {d.in_unit(rule['value'], metric_unit(rule['metric']))}"
    )
    if r["value"] is None:
        return f"{name}: {rule['metric']} could not be measured (the rule asks for {wanted})"
    return f"{name}: {rule['metric']} is {value} (the rule asks for {wanted})"


_TONES = {
    "pass": "pass",
    "pass with warnings": "warn",
    "block": "block",
    "incomplete": "incomplete",
    "inconclusive": "inconclusive",
}


def _pair_text(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> str | None:
    if not b:
        return None
    return f"{b.get('arm')} vs {a.get('arm')}" if a else str(b.get("arm"))


def decision_section(
    gate: Mapping[str, Any] | None,
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
    outcome = gate["outcome"]
    tone = _TONES.get(outcome, "none")
    warnings = [
        r
        for r in gate["rules"]
        if r["rule"]["severity"] == "warn"
        and r["status"] != "pass"
        and not (r["status"] == "missing" and r["rule"].get("allow_missing"))
    ]
    a, b = gate.get("a"), gate.get("b")
    cov = gate.get("coverage") or {}
    named_by = (gate.get("pair") or {}).get("named_by")
    headline = (
        f"Candidate {_side_name(b)} against baseline {_side_name(a)}"
        if a
        else f"{_side_name(b)} alone: there is no baseline to compare it with"
    )
    headline += f"; {cov.get('text', 'coverage unknown')}" + (
        f" (pair named by {named_by})." if named_by else "."
    )
    blocking = [r for r in gate["rules"] if r["blocks"]]
    details = ""
    if outcome == "incomplete":
        details += (
            f"<p><b>Incomplete:</b> the decision needs {d.esc(_required(cov))} of each arm graded and rests on "
            f"{d.pct(cov.get('share'), 0)} ({d.esc(cov.get('gap') or 'nothing planned')}). The figures below are "
            "from the runs that did finish: finish the others (abbench run, retry, regrade) or allow less with "
            "min_coverage in the gate file.</p>"
        )
    elif outcome == "inconclusive":
        unsettled = [
            r for r in gate["rules"] if r["status"] == "inconclusive" and r["rule"]["severity"] == "block"
        ]
        if unsettled:
            details += (
                "<p><b>Inconclusive:</b> the evidence does not decide (nothing blocks, nothing is shown "
                "either):</p><ul>" + "".join(f"<li>{d.esc(r['message'])}</li>" for r in unsettled) + "</ul>"
            )
        else:
            details += (
                "<p><b>Inconclusive:</b> no rule could be assessed on these data (see the rules below).</p>"
            )
    if gate.get("verdict"):
        details += f"<p>{d.esc(gate['verdict'])}</p>"
    if gate.get("verdict_outcome"):
        details += f"<p><b>Outcome</b> — {d.esc(gate['verdict_outcome'])}</p>"
    if gate.get("votes"):
        details += f"<p>{d.esc(gate['votes']['text'])}</p>"
    if blocking:
        details += (
            "<p><b>Blocked by:</b></p><ul>"
            + "".join(f"<li>{d.esc(_rule_sentence(r))}</li>" for r in blocking)
            + "</ul>"
        )
    if warnings:
        details += (
            "<p><b>Warnings</b> (they do not block):</p><ul>"
            + "".join(f"<li>{d.esc(_rule_sentence(r))}</li>" for r in warnings)
            + "</ul>"
        )
    parts: list[Part] = [d.decision_html(tone, headline, details, pair=_pair_text(a, b))]
    flagged: dict[str, list[Mapping[str, Any]]] = {}
    for r in gate["rules"]:
        card = _rule_card(r["rule"]["metric"]) if r["status"] != "pass" else None
        if card is not None:
            flagged.setdefault(card, []).append(r)
    cards = []
    decision = gate["decision"]
    for name in ("capability", "cost", "stability"):
        dim = decision[name]
        big, text = _dimension_figures(name, dim)
        assessed = dim.get("assessed", True)
        tone_card = "flat" if not assessed else ("good" if dim["conclusion"] == "pass" else "bad")
        word = "not assessed" if not assessed else dim["conclusion"]
        rules = [
            r
            for r in flagged.get(name) or []
            if not (r["status"] == "missing" and r["rule"].get("allow_missing"))
        ]
        if rules and tone_card != "bad":
            blocks = any(r["blocks"] for r in rules)
            tone_card = "bad" if blocks else "warn"
            word += " · gate " + ("blocks" if blocks else "warns")
            names = "; ".join(r["rule"].get("name") or r["rule"]["metric"] for r in rules)
            text += f" The gate {'blocks' if blocks else 'warns'}: {names}."
        cards.append(d.card_html(f"{name} · {word}", big, text, tone_card))
    parts.append(d.cards_html(cards))
    rows = []
    for r in gate["rules"]:
        name, condition, value = _rule_texts(r)
        if r["blocks"]:
            said, tone_row = "BLOCKS", "block"
        elif r["status"] == "pass":
            said, tone_row = "pass", "pass"
        elif r["status"] == "inconclusive" and r["rule"]["severity"] == "block":
            said, tone_row = "INCONCLUSIVE", "warn"
        elif r["status"] == "missing" and r["rule"].get("allow_missing"):
            said, tone_row = "not assessed (allowed)", None
        elif r["status"] == "missing":
            said, tone_row = "not assessed (warning)", "warn"
        else:
            said, tone_row = f"{r['status']} (warning)", "warn"
        rows.append(
            {
                "rule": name,
                "condition": condition,
                "value": value,
                "severity": r["rule"]["severity"],
                "outcome": said,
                "_tone": tone_row,
            }
        )
    parts.append(
        d.table_html(
            rows,
            [
                ("rule", "rule"),
                ("value", "value", str),
                ("outcome", "outcome"),
                ("condition", "condition"),
                ("severity", "severity"),
            ],
            caption=f"Gate rules ({gate['source']})",
            row_class=lambda r: r["_tone"],
        )
    )
    for note in gate.get("notes") or ():
        if note not in shown_notes:
            parts.append(d.note_html(note))
    if a:
        parts.append(d.note_html(HOW_TO_READ))
    return parts


def _required(cov: Mapping[str, Any]) -> str:
    required = cov.get("required", 1.0)
    return (
        "every planned run"
        if not d.is_number(required) or required >= 1
        else f"{required:.0%} of the planned runs"
    )


HOW_TO_READ = (
    "How to read this report: B is the candidate, A the baseline, and every difference is B − A "
    '(for pass rates in percentage points, pts). Brackets are 95% intervals. "No difference detectable" '
    "means these cases cannot tell the arms apart, not that they are equal: the smallest difference they "
    "can detect is given with the comparison."
)
