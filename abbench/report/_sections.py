"""The report's sections: each turns plain results (``.as_dict()`` of analysis values) into HTML and figures.

A section returns a list of parts — HTML text or plotly figures — that `show_parts` displays in order.
Sections never compute statistics; they choose what to show and say so in a sentence when there is
nothing to show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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
    if not e or not d.is_number(e.get("value")):
        return (e or {}).get("reason") or d.MISSING
    fmt = d.pct if share else (lambda v: d.num(v, 2))
    iv = e.get("interval") or {}
    spread = d.interval(iv.get("low"), iv.get("high"), fmt)
    return fmt(e["value"]) + ("" if spread == d.MISSING else f" {spread}")


# -- per-arm metrics -----------------------------------------------------------------------------------


def arms_section(metrics: Mapping[str, Any]) -> list[Part]:
    """Per-arm accuracy (or score) with intervals, strict accuracy, counts, and a dot plot."""
    arms = metrics.get("arms") or []
    if not arms:
        return [d.note_html("The experiment has no arm to report on.")]
    by_score = metrics.get("outcome") == "score"
    rows = []
    for a in arms:
        c = a["counts"]
        rows.append(
            {
                "arm": a["label"],
                "main": estimate_text(a["score"] if by_score else a["accuracy"], share=not by_score),
                "strict": estimate_text(a["strict_accuracy"]) if not by_score else d.MISSING,
                "graded": f"{c['passed'] + c['failed']:,} of {c['runs']:,}",
                "failures": c["execution_failed"] + c["grading_failed"],
                "cancelled": c["cancelled"] + c["unfinished"],
                "per_correct": d.money((a.get("usage") or {}).get("cost_per_correct")),
            }
        )
    level = f"{metrics.get('confidence', 0.95):.0%}"
    main = "mean score" if by_score else "accuracy"
    columns = [
        ("arm", "arm"),
        ("main", f"{main} [{level} interval]", str),
        *([] if by_score else [("strict", "strict accuracy", str)]),
        ("graded", "graded runs", str),
        ("failures", "failed runs"),
        ("cancelled", "cancelled, unfinished"),
        ("per_correct", "cost per right answer"),
    ]
    methods = sorted(
        {(a["score"] if by_score else a["accuracy"] or {}).get("method") or "" for a in arms} - {"", "none"}
    )
    parts = [d.table_html(rows, columns)]
    parts.append(
        d.note_html(
            ("Strict accuracy counts failed runs as wrong. " if not by_score else "")
            + f"Intervals: {', '.join(methods) or 'none'}; "
            + (
                "every case counts once (per-case means over rounds, Miller 2024)."
                if metrics.get("rounds", 1) > 1
                else "one answer per case."
            )
        )
    )
    estimates = [a["score"] if by_score else a["accuracy"] for a in arms]
    if any(d.is_number((e or {}).get("value")) for e in estimates):
        parts.append(d.estimate_figure([a["arm"] for a in arms], estimates, share=not by_score, title=main))
    return parts


# -- confusion matrices ----------------------------------------------------------------------------------


def confusion_section(metrics: Mapping[str, Any]) -> list[Part]:
    """One confusion matrix per arm (rows gold, columns predicted), with per-class precision and recall."""
    parts: list[Part] = []
    reasons = set()
    for a in metrics.get("arms") or []:
        classes = a.get("classes")
        if not classes:
            if a.get("classes_reason"):
                reasons.add(a["classes_reason"])
            continue
        conf = classes["confusion"]
        parts.append(d.confusion_figure(conf, title=f"{a['arm']} ({classes['n']:,} graded runs)"))
        rows = [
            {
                "class": name,
                "precision": s["precision"],
                "recall": s["recall"],
                "f1": s["f1"],
                "support": s["support"],
            }
            for name, s in classes["per_class"].items()
        ]
        parts.append(
            d.table_html(
                rows,
                [
                    ("class", "class"),
                    ("precision", "precision", d.pct),
                    ("recall", "recall", d.pct),
                    ("f1", "F1", d.pct),
                    ("support", "gold runs"),
                ],
                caption=f"{a['arm']}: per class (macro F1 {d.pct(classes['macro']['f1'])})",
            )
        )
        unknown = conf.get("unknown_predictions") or {}
        if unknown:
            listed = ", ".join(f"{k} ×{v}" for k, v in list(unknown.items())[:8])
            parts.append(
                d.note_html(f"{a['arm']}: predictions outside the labels (column (other)): {listed}.")
            )
    if not parts:
        return [
            d.note_html(
                "No confusion matrix: "
                + ("; ".join(sorted(reasons)) or "no graded run with a gold label")
                + "."
            )
        ]
    return parts


# -- per domain ------------------------------------------------------------------------------------------


def domain_section(metrics: Mapping[str, Any]) -> list[Part]:
    """Accuracy per domain and arm with intervals: a table and a chart."""
    rows = metrics.get("by_domain") or []
    arms = [a["arm"] for a in metrics.get("arms") or []]
    domains = list(dict.fromkeys(r["group"] for r in rows))
    if len(domains) < 2:
        return [d.note_html("The cases have no domains (or only one), so there is no per-domain breakdown.")]
    share = metrics.get("outcome") != "score"
    cell = {(r["arm"], r["group"]): r for r in rows}
    table = []
    for dom in domains:
        row: dict[str, Any] = {"domain": dom}
        for arm in arms:
            r = cell.get((arm, dom))
            row[arm] = estimate_text(r["accuracy"], share=share) if r else d.MISSING
            row[arm + "#n"] = r["accuracy"]["n_cases"] if r else 0
        row["cases"] = max((row[a + "#n"] for a in arms), default=0)
        table.append(row)
    columns = [("domain", "domain"), ("cases", "cases"), *[(a, a, str) for a in arms]]
    series = {arm: [cell.get((arm, dom), {}).get("accuracy") for dom in domains] for arm in arms}
    return [
        d.table_html(table, columns),
        d.grouped_figure(domains, series, share=share, title="accuracy" if share else "mean score"),
        d.note_html(
            "Small domains have wide intervals: a difference inside them is not evidence. "
            "Intervals here are per domain, without a correction for looking at many domains at once."
        ),
    ]


# -- stability -------------------------------------------------------------------------------------------


def stability_section(metrics: Mapping[str, Any]) -> list[Part]:
    """Agreement, flip and flaky rates per arm, and accuracy round by round."""
    arms = metrics.get("arms") or []
    if (metrics.get("rounds") or 1) < 2:
        return [
            d.note_html("Each case ran once, so stability across rounds cannot be measured (run 2+ rounds).")
        ]
    rows = []
    for a in arms:
        s = a["stability"]
        rows.append(
            {
                "arm": a["arm"],
                "agreement": s.get("agreement"),
                "flip": s.get("flip_rate"),
                "flaky": s.get("flaky_rate"),
                "cases": s.get("n_cases"),
                "examples": ", ".join((s.get("flaky") or [])[:8])
                or ("none" if s.get("flaky_rate") is not None else d.MISSING),
            }
        )
    parts = [
        d.table_html(
            rows,
            [
                ("arm", "arm"),
                ("agreement", "agreement", d.pct),
                ("flip", "answer changed", d.pct),
                ("flaky", "flaky", d.pct),
                ("cases", "cases"),
                ("examples", "flaky cases", "text"),
            ],
        ),
        d.note_html(
            "Agreement: share of runs giving the case's usual answer. Answer changed: cases answered "
            "differently across rounds. Flaky: cases passing in some rounds and failing in others. "
            "Cases: those answered twice or more."
        ),
    ]
    by_round = metrics.get("by_round") or []
    rounds = sorted({r["group"] for r in by_round})
    if len(rounds) >= 2:
        cell = {(r["arm"], r["group"]): r["accuracy"] for r in by_round}
        series = {a["arm"]: [cell.get((a["arm"], rnd)) for rnd in rounds] for a in arms}
        share = metrics.get("outcome") != "score"
        parts.append(
            d.grouped_figure(
                [f"round {r + 1}" for r in rounds], series, share=share, title="accuracy by round", lines=True
            )
        )
    return parts


# -- cost, tokens, latency -------------------------------------------------------------------------------


def usage_section(metrics: Mapping[str, Any]) -> list[Part]:
    """Cost, tokens and latency per arm (mean, median, p95, totals), and a latency chart."""
    arms = metrics.get("arms") or []
    rows = []
    for a in arms:
        u = a["usage"]
        if not u.get("executed"):
            rows.append({"arm": a["arm"], "executed": 0})
            continue
        rows.append(
            {
                "arm": a["arm"],
                "executed": u["executed"],
                "cost_mean": d.money(u["cost"].get("mean")),
                "cost_total": d.money(u.get("total_cost")),
                "per_correct": d.money(u.get("cost_per_correct"))
                if u.get("cost_per_correct") is not None
                else (u.get("reason") or d.MISSING),
                "tokens": d.num(u["tokens"].get("mean"), 0),
                "tokens_p95": d.num(u["tokens"].get("p95"), 0),
                "lat_p50": d.ms(u["latency_ms"].get("p50")),
                "lat_p95": d.ms(u["latency_ms"].get("p95")),
                "judge": d.money(u.get("judge_cost")),
            }
        )
    if not any(r.get("executed") for r in rows):
        return [d.note_html("No run has executed yet, so there is no cost, token or latency figure.")]
    parts = [
        d.table_html(
            rows,
            [
                ("arm", "arm"),
                ("executed", "executed runs"),
                ("cost_mean", "cost per run", str),
                ("cost_total", "total cost", str),
                ("per_correct", "cost per right answer", str),
                ("tokens", "tokens per run", str),
                ("tokens_p95", "tokens p95", str),
                ("lat_p50", "latency p50", str),
                ("lat_p95", "latency p95", str),
                ("judge", "judge cost", str),
            ],
        ),
        d.bars_figure(
            [a["arm"] for a in arms],
            {
                "p50": [a["usage"]["latency_ms"].get("p50") for a in arms],
                "p95": [a["usage"]["latency_ms"].get("p95") for a in arms],
            },
            title="latency",
            suffix=" ms",
        ),
    ]
    return parts


# -- judges ----------------------------------------------------------------------------------------------


def judges_section(metrics: Mapping[str, Any]) -> list[Part]:
    """Judge scores per arm, grader and rubric dimension, with intervals."""
    scores = [j for a in metrics.get("arms") or [] for j in a.get("judges") or []]
    if not scores:
        return [
            d.note_html("No judge graded this experiment (only rule graders), so there are no judge scores.")
        ]
    graders = list(dict.fromkeys(j["grader"] for j in scores))
    dims = list(dict.fromkeys(j["dimension"] for j in scores))
    arms = list(dict.fromkeys(j["arm"] for j in scores))
    cell = {(j["arm"], j["grader"], j["dimension"]): j["estimate"] for j in scores}
    rows = []
    for g in graders:
        for dim in dims:
            if not any((arm, g, dim) in cell for arm in arms):
                continue
            row = {"grader": g, "dimension": dim}
            for arm in arms:
                row[arm] = estimate_text(cell.get((arm, g, dim)), share=False)
            rows.append(row)
    return [d.table_html(rows, [("grader", "judge"), ("dimension", "dimension"), *[(a, a) for a in arms]])]


# -- runs and provenance (from the store: `run_overview`, `experiment_provenance`) --------------------------

_STATES = ("pass", "fail", "cancelled", "pending", "running", "executed", "evaluating")


def _imported(text: str | None) -> str:
    if not text:
        return d.MISSING
    when, _, who = text.partition(" by ")
    return f"{d.when(when) if when != '?' else d.MISSING} by {who or d.MISSING}"


def runs_section(overview: Mapping[str, Any]) -> list[Part]:
    """Runs per arm and state, what did not count and why, and the failed runs."""
    states = overview["states"]
    rows = [{"arm": arm, **counts, "total": sum(counts.values())} for arm, counts in states.items()]
    shown = [s for s in _STATES if any(r.get(s) for r in rows)]
    parts: list[Part] = [
        d.table_html(rows, [("arm", "arm"), *[(s, s) for s in shown], ("total", "total")]),
        d.states_figure(states),
    ]
    if overview["complete"]:
        parts.append(d.note_html(f"All {overview['total']:,} runs finished and were graded."))
    else:
        n_exec = sum(sum(c.values()) for c in overview["execution_failures"].values())
        n_grade = sum(overview["grading_failures"].values())
        n_cancel = sum(overview["cancelled"].values())
        n_left = overview["total"] - overview["finished"] - n_cancel
        said = []
        if n_exec:
            said.append(f"{n_exec:,} failed to execute (re-run them: abbench retry EXPERIMENT --failed)")
        if n_grade:
            said.append(f"{n_grade:,} could not be graded (abbench regrade EXPERIMENT --failed)")
        if n_cancel:
            said.append(f"{n_cancel:,} were cancelled")
        if n_left > 0:
            said.append(f"{n_left:,} have not finished")
        parts.append(
            d.note_html(
                "Not every run counts: " + "; ".join(said) + ". Accuracy uses graded runs only; "
                "strict accuracy counts the failures as wrong.",
                "warn",
            )
        )
    failures = overview.get("failures") or []
    if failures:
        parts.append(
            d.table_html(
                failures,
                [
                    ("case_id", "case"),
                    ("arm", "arm"),
                    ("round", "round"),
                    ("kind", "failure"),
                    ("failure_type", "type"),
                    ("error", "error", "text"),
                ],
                caption=f"Failed runs (first {len(failures)})",
            )
        )
    return parts


def provenance_section(prov: Mapping[str, Any]) -> list[Part]:
    """Where the result came from: dataset, mapping, skills (drafts marked), agents, models, dates, people."""
    cases = prov["dataset_cases"]
    pairs = [
        ("experiment", f"{prov['experiment']} · owner {prov['owner']} · status {prov['status']}"),
        (
            "dataset",
            f"{prov['dataset']} ({prov['n_cases']:,} of {cases if cases is not None else '?'} cases)",
        ),
        ("mapping profile", prov["mapping_profile"] or "none recorded"),
        ("source file", prov["dataset_file"] or "not recorded"),
        ("imported", _imported(prov.get("dataset_imported"))),
        ("graders", ", ".join(prov["graders"]) or "no grade written yet"),
        ("judge models", ", ".join(prov["judge_models"]) or "no judge used"),
        ("grade batch", prov["batch_id"] or "no grade written yet"),
        (
            "runs",
            f"started {d.when(prov['first_started'])}, last finished {d.when(prov['last_finished'])}, "
            f"by {', '.join(prov['run_by']) or d.MISSING}",
        ),
        (
            "created",
            f"{d.when(prov['created_at'])} by {prov['created_by'] or d.MISSING}"
            + (f", cloned from {prov['parent']}" if prov["parent"] else ""),
        ),
        ("tags", ", ".join(prov["tags"]) or "none"),
        (
            "report",
            f"abbench {prov['abbench_version']}, Python {prov['python']}, "
            f"{d.when(prov['generated_at'])} by {prov['generated_by']}",
        ),
    ]
    rows = []
    for a in prov["arms"]:
        skill = (
            d.esc(a["skill"]) + (" " + d.tag_html("draft", "draft") if a["draft"] else "")
            if a["skill"]
            else "no skill"
        )
        if a["commit"]:
            source = f"commit {a['commit'][:12]}" + (f" (tag {a['tag']})" if a["tag"] else "")
            source += f" · {a['repo']}" if a["repo"] else ""
        elif a["skill"]:
            source = "draft: " + (a["draft_reason"] or "not a clean git commit")
        else:
            source = d.MISSING
        rows.append(
            {
                "arm": a["name"],
                "agent": a["agent"],
                "model": a["model"] or d.MISSING,
                "seen": ", ".join(a["models_seen"]) or d.MISSING,
                "skill": skill,
                "hash": a["snapshot_hash"] or d.MISSING,
                "source": source,
            }
        )
    return [
        d.kv_html(pairs),
        d.table_html(
            rows,
            [
                ("arm", "arm"),
                ("agent", "agent"),
                ("model", "model"),
                ("seen", "models the runs reported"),
                ("skill", "skill", "html"),
                ("hash", "snapshot hash", "text"),
                ("source", "skill source", "text"),
            ],
            caption="Arms",
        ),
    ]


# -- the decision ----------------------------------------------------------------------------------------


def _side_name(side: Mapping[str, Any] | None) -> str:
    if not side:
        return d.MISSING
    return side.get("label") or side.get("arm") or d.MISSING


def _points(value: Any, unit: str = "points", digits: int = 1) -> str:
    if not d.is_number(value):
        return d.MISSING
    return f"{value * 100:+.{digits}f} pts" if unit == "points" else f"{value:+.3g}"


def _dimension_figures(name: str, dim: Mapping[str, Any]) -> tuple[str, str]:
    """The headline figure of a dimension and a short line of evidence (the summary when not assessed)."""
    ev = dim.get("evidence") or {}
    if not dim.get("assessed", True) or not ev:
        return d.MISSING, dim["summary"]
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
        big = d.pct(ev.get("relative"), 0, signed=True).replace("pp", "%")
        a, b = ev.get("cost_a"), ev.get("cost_b")
        thousand = lambda v: f"${v * 1000:,.2f}" if v * 1000 >= 0.01 else d.money(v * 1000)  # noqa: E731
        scale = (
            f" ({thousand(a)} → {thousand(b)} per 1,000 cases)"
            if d.is_number(a) and d.is_number(b) and max(a, b) < 0.01
            else ""
        )
        return big, f"per case {d.money(a)} → {d.money(b)}{scale}. " + dim["summary"]
    fb, fa = ev.get("flip_rate_b"), ev.get("flip_rate_a")
    big = f"{d.pct(fb, 0)} flip" if d.is_number(fb) else d.MISSING
    if d.is_number(fb) and d.is_number(fa):
        big += f" (was {d.pct(fa, 0)})"
    return big, dim["summary"]


_OP_WORDS = {">=": "≥", "<=": "≤", ">": ">", "<": "<", "==": "=", "!=": "≠"}

# Which at-a-glance card a rule's metric speaks to (the others have no card of their own).
_CARD_OF_UNIT = {"usd": "cost"}
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


def decision_section(
    gate: Mapping[str, Any] | None, *, reason: str | None = None, shown_notes: Sequence[str] = ()
) -> list[Part]:
    """The verdict banner, the three dimensions at a glance, and every gate rule with its value.

    The banner names what blocks or warns, so the verdict reads in one look; a card whose dimension
    passes while a gate rule about it warns or blocks says so instead of showing a plain pass.
    `shown_notes` are notes another section shows (the comparison's), left out here.
    """
    if gate is None:
        return [d.decision_html(None, reason or "No gate could be evaluated for this experiment.")]
    warnings = [r for r in gate["rules"] if r["rule"]["severity"] == "warn" and r["status"] != "pass"]
    tone = gate["outcome"] if gate["outcome"] == "block" or not warnings else "warn"
    a, b = gate.get("a"), gate.get("b")
    headline = (
        f"Candidate {_side_name(b)} against baseline {_side_name(a)}."
        if a
        else f"{_side_name(b)} alone: there is no baseline to compare it with."
    )
    blocking = [r for r in gate["rules"] if r["blocks"]]
    details = ""
    if gate.get("verdict"):
        details += f"<p>{d.esc(gate['verdict'])}</p>"
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
    parts: list[Part] = [d.decision_html(tone, headline, details)]
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
        rules = flagged.get(name) or []
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
        rows.append(
            {
                "rule": name,
                "condition": condition,
                "value": value,
                "severity": r["rule"]["severity"],
                "outcome": "BLOCKS"
                if r["blocks"]
                else ("pass" if r["status"] == "pass" else f"{r['status']} (warning)"),
                "_tone": "block" if r["blocks"] else ("pass" if r["status"] == "pass" else "warn"),
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


HOW_TO_READ = (
    "How to read this report: B is the candidate, A the baseline, and every difference is B − A "
    '(for pass rates in percentage points, pts). Brackets are 95% intervals. "No difference detectable" '
    "means these cases cannot tell the arms apart, not that they are equal: the smallest difference they "
    "can detect is given with the comparison."
)


def _plain(value: Any) -> str:
    if value is None:
        return d.MISSING
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


# -- the paired comparison -------------------------------------------------------------------------------


def _interval_points(iv: Mapping[str, Any] | None, unit: str) -> str:
    if not iv or not (d.is_number(iv.get("low")) and d.is_number(iv.get("high"))):
        return d.MISSING
    return f"[{_points(iv['low'], unit)}, {_points(iv['high'], unit)}]"


def comparison_section(c: Mapping[str, Any] | None, *, reason: str | None = None) -> list[Part]:
    """Fixed and regressed cases, exact McNemar, the paired difference with its interval, the minimum
    detectable effect in plain words, cost/latency/token differences, domains and pairwise judges."""
    if c is None:
        return [d.note_html(reason or "There is no second arm or experiment to compare with.")]
    unit = c["unit"]
    share = unit == "points"
    a, b = c["a"]["arm"], c["b"]["arm"]
    parts: list[Part] = [d.show_text(c["verdict"]["text"])]
    main = c.get("clustered") or c.get("difference")
    pairs: list[tuple[str, Any]] = [
        (
            "compared",
            f"{b} (B) against {a} (A), {d.plural(c['n_cases'], 'paired case')}, differences are B − A",
        ),
        ("A", estimate_text(c["value_a"], share=share)),
        ("B", estimate_text(c["value_b"], share=share)),
    ]
    if main:
        pairs.append(
            (
                "difference",
                f"{_points(main['difference'], unit)} "
                + (
                    _interval_points(c.get("interval"), unit)
                    if c.get("interval")
                    else "(no interval: one case, or no spread between cases)"
                )
                + f" ({c['verdict']['test']}, {d.pvalue(c['verdict']['p_value'])})",
            )
        )
    o = c.get("outcomes")
    if o:
        pairs.append(
            (
                "cases",
                f"{o['fixed']:,} fixed · {o['regressed']:,} regressed · {o['both_pass']:,} right in both · "
                f"{o['both_fail']:,} wrong in both",
            )
        )
    m = c.get("mcnemar")
    if m:
        if m["n_discordant"]:
            pairs.append(
                (
                    "exact McNemar",
                    f"{d.pvalue(m['p_value'])} on {m['n_discordant']:,} discordant cases ({m['b']} vs {m['c']})",
                )
            )
        else:
            pairs.append(
                ("exact McNemar", "no discordant case: every case has the same outcome in both arms (p = 1)")
            )
    mde = c.get("mde")
    if mde and d.is_number(mde.get("delta")):
        size = _points(mde["delta"], unit).lstrip("+")
        pairs.append(
            (
                "smallest detectable difference",
                f"{size} with {mde['n']:,} cases ({mde['power']:.0%} power, {mde['alpha']:g} level): a true "
                f'difference smaller than this would usually go unnoticed, so "no significant difference" '
                f'here does not mean "no difference".',
            )
        )
    elif c["n_cases"]:
        pairs.append(
            ("smallest detectable difference", "not computable from these data (no spread between cases)")
        )
    excluded = c.get("excluded") or {}
    for why, ids in excluded.items():
        pairs.append(("left out", f"{len(ids):,} cases: {why}"))
    parts.append(d.kv_html(pairs))
    if o:
        parts.append(d.outcome_figure(o, a, b))
    usage = [u for u in c.get("usage") or [] if u.get("difference") is not None or u.get("reason")]
    if usage:
        fmt = {
            "cost": d.money,
            "latency_ms": d.ms,
            "tokens": lambda v: d.num(v, 0),
            "score": lambda v: d.num(v, 2),
        }
        rows = []
        for u in usage:
            f = fmt.get(u["metric"], d.num)
            iv = u.get("interval") or {}
            diff = u.get("difference")
            rows.append(
                {
                    "metric": {
                        "latency_ms": "latency",
                        "tokens": "tokens per run",
                        "cost": "cost per run",
                    }.get(u["metric"], u["metric"]),
                    "a": f(u.get("value_a")),
                    "b": f(u.get("value_b")),
                    "diff": (("+" if d.is_number(diff) and diff > 0 else "") + f(diff))
                    if d.is_number(diff)
                    else (u.get("reason") or d.MISSING),
                    "interval": d.interval(iv.get("low"), iv.get("high"), f),
                    "relative": d.pct(u.get("relative"), 1, signed=True).replace("pp", "%"),
                    "p": d.pvalue(u.get("p_value")),
                }
            )
        parts.append(
            d.table_html(
                rows,
                [
                    ("metric", "per case"),
                    ("a", a, str),
                    ("b", b, str),
                    ("diff", "B − A", str),
                    ("interval", "interval", str),
                    ("relative", "relative", str),
                    ("p", "p", str),
                ],
                caption=f"Cost, latency and tokens per case ({usage[0].get('method', 'paired')})",
            )
        )
    domains = c.get("by_domain") or []
    if len(domains) >= 2:
        rows = [
            {
                "domain": r["domain"],
                "n": r["n_cases"],
                "a": d.pct(r["value_a"]) if share else d.num(r["value_a"]),
                "b": d.pct(r["value_b"]) if share else d.num(r["value_b"]),
                "diff": f"{_points(r['difference'], unit)} {_interval_points(r.get('interval'), unit)}",
                "moved": f"{r['fixed']} fixed, {r['regressed']} regressed",
                "p": d.pvalue(r.get("p_adjusted")),
                "flag": "significantly worse"
                if r["significant_regression"]
                else ("significantly better" if r["significant_improvement"] else ""),
                "_tone": "block"
                if r["significant_regression"]
                else ("pass" if r["significant_improvement"] else None),
            }
            for r in domains
        ]
        parts.append(
            d.table_html(
                rows,
                [
                    ("domain", "domain"),
                    ("n", "cases"),
                    ("a", a, str),
                    ("b", b, str),
                    ("diff", "B − A", str),
                    ("moved", "cases moved"),
                    ("p", "p (Holm-adjusted)", str),
                    ("flag", ""),
                ],
                caption="Per domain, paired",
                row_class=lambda r: r["_tone"],
            )
        )
    for note in c.get("notes") or ():
        parts.append(d.note_html(note))
    return parts


def multi_section(multi: Mapping[str, Any] | None) -> list[Part]:
    """Every arm against the baseline, Holm-adjusted, with Cochran's Q over all arms."""
    if not multi:
        return []
    rows = [
        {
            "pair": f"{p['b']} vs {p['a']}",
            "n": p["n_cases"],
            "diff": f"{_points(p['difference'])} {_interval_points(p.get('interval'), 'points')}",
            "moved": f"{p['fixed']} fixed, {p['regressed']} regressed",
            "p": d.pvalue(p.get("p_value")),
            "adj": d.pvalue(p.get("p_adjusted")),
            "sig": "yes" if p["significant"] else "no",
        }
        for p in multi.get("pairs") or []
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
    q = multi.get("cochran")
    if q:
        parts.append(
            d.note_html(
                f"Cochran's Q over all {q['n_arms']} arms and {q['n_cases']:,} cases: Q = {q['statistic']:.2f}, "
                f"{d.pvalue(q['p_value'])} (whether the arms pass equally often)."
            )
        )
    for note in multi.get("notes") or ():
        parts.append(d.note_html(note))
    return parts


# -- cases: regressed and disagreements --------------------------------------------------------------------


def _round_names(rounds: Sequence[int]) -> str:
    """``round 2``, ``rounds 1–3`` (consecutive), ``rounds 1, 3``."""
    shown = [r + 1 for r in rounds]
    if len(shown) == 1:
        return f"round {shown[0]}"
    if shown == list(range(shown[0], shown[-1] + 1)):
        return f"rounds {shown[0]}–{shown[-1]}"
    return "rounds " + ", ".join(map(str, shown))


def _answers(runs: Sequence[Mapping[str, Any]], arm: str) -> str:
    """The answers of one arm's runs of a case: ``fast ✓ / slow ✗`` with reasons and cited evidence.

    Rounds that answered alike (same answer, verdict, reason and evidence) are shown once, as
    ``rounds 1–3``: a stable case reads in three lines instead of nine, and a flaky one stands out.
    """
    groups: list[tuple[tuple[Any, ...], list[int], Mapping[str, Any]]] = []
    for r in runs:
        if r.get("arm") != arm:
            continue
        refs = tuple(e.get("ref") for e in r.get("evidence") or [] if e.get("ref"))
        key = (r.get("prediction"), r.get("passed"), r.get("failure_type"), r.get("reason"), refs)
        for k, rounds, _ in groups:
            if k == key:
                rounds.append(r["round"])
                break
        else:
            groups.append((key, [r["round"]], r))
    lines = []
    for (_, _, _, _, refs), rounds, r in groups:
        mark = {True: "✓", False: "✗"}.get(r.get("passed"), "·")
        head = f"{_round_names(rounds)}: {d.esc(r.get('prediction'))} {mark}"
        if r.get("failure_type"):
            head = f"{_round_names(rounds)}: failed ({d.esc(r['failure_type'])})"
        body = f"<div>{d.esc(r.get('reason'))}</div>" if r.get("reason") else ""
        if refs:
            body += f'<div class="abb-muted">cites {d.esc(", ".join(refs[:6]))}</div>'
        lines.append(f"<div><b>{head}</b>{body}</div>")
    return "".join(lines) or d.MISSING


def cases_section(
    changes: Sequence[Mapping[str, Any]],
    details: Mapping[str, Mapping[str, Any]],
    arm_a: str,
    arm_b: str,
    *,
    total: int,
    empty: str,
    other_details: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Part]:
    """A table of cases (case, domain, input, gold, each arm's answers with reasons and evidence).

    `details` maps a case id to its `case_detail(...).as_dict()`; `other_details` gives arm A's runs
    when A is in another experiment.
    """
    if not changes:
        return [d.note_html(empty)]
    rows = []
    for ch in changes:
        det = details.get(ch["case_id"]) or {}
        case = det.get("case") or {}
        runs_a = (other_details or details).get(ch["case_id"], {}).get("runs") or []
        runs_b = det.get("runs") or []
        rows.append(
            {
                "case": f'{d.esc(ch["case_id"])}<div class="abb-muted">{d.esc(ch.get("domain"))}</div>',
                "input": case.get("input"),
                "gold": case.get("expected"),
                "rates": ch.get("rates")
                or f"{ch.get('a_passed', '?')}/{ch.get('a_graded', '?')} → {ch.get('b_passed', '?')}/{ch.get('b_graded', '?')}",
                "a": _answers(runs_a, arm_a),
                "b": _answers(runs_b, arm_b),
            }
        )
    parts: list[Part] = [
        d.table_html(
            rows,
            [
                ("case", "case", "html"),
                ("input", "input", "text"),
                ("gold", "gold"),
                ("rates", "passed A → B"),
                ("a", arm_a, "html"),
                ("b", arm_b, "html"),
            ],
        )
    ]
    if total > len(changes):
        parts.append(d.note_html(f"Showing {len(changes)} of {total:,}; the runs export lists them all."))
    return parts


def disagreements_section(items: Sequence[Mapping[str, Any]], arm: str, *, empty: str) -> list[Part]:
    """A sample of cases whose answer disagrees with the gold (or a judge), with reasons and evidence."""
    if not items:
        return [d.note_html(empty)]
    rows = []
    for it in items:
        case = it["case"]
        reviews = ", ".join(
            f"{r['verdict']}" + (f" ({r['note']})" if r.get("note") else "") for r in it.get("reviews") or []
        )
        rows.append(
            {
                "case": f'{d.esc(case["case_id"])}<div class="abb-muted">{d.esc(case.get("domain"))}</div>',
                "input": case.get("input"),
                "gold": case.get("expected"),
                "why": ", ".join(it.get("kinds") or []),
                "answers": _answers(it.get("runs") or [], arm),
                "review": reviews or "not reviewed",
            }
        )
    return [
        d.table_html(
            rows,
            [
                ("case", "case", "html"),
                ("input", "input", "text"),
                ("gold", "gold"),
                ("why", "listed for"),
                ("answers", arm, "html"),
                ("review", "review", "text"),
            ],
        )
    ]


# -- human review ----------------------------------------------------------------------------------------


def reviews_section(items: Sequence[Mapping[str, Any]], agreement: Mapping[str, Any] | None) -> list[Part]:
    """Review outcomes per verdict and arm, judge-versus-human agreement, and the reviewers' notes."""
    if not items:
        return [
            d.note_html(
                "No one has reviewed a case of this experiment yet (abbench review, or the review widget)."
            )
        ]
    arms = list(dict.fromkeys(r.get("arm") or "(whole case)" for r in items))
    verdicts = list(dict.fromkeys(r["verdict"] for r in items))
    table = []
    for v in verdicts:
        row: dict[str, Any] = {"verdict": v.replace("_", " ")}
        for arm in arms:
            row[arm] = sum(1 for r in items if r["verdict"] == v and (r.get("arm") or "(whole case)") == arm)
        table.append(row)
    parts: list[Part] = [
        d.table_html(
            table,
            [("verdict", "verdict"), *[(a, a) for a in arms]],
            caption=f"{len(items):,} reviewed cases (latest verdict per case and arm)",
        )
    ]
    if agreement:
        if agreement.get("kappa"):
            k = agreement["kappa"]
            parts.append(
                d.note_html(
                    f"Graders and reviewers agree on {d.pct(agreement['agreement'])} of {agreement['n']:,} reviewed runs "
                    f"(Cohen's kappa {d.num(k.get('kappa'), 2)})."
                )
            )
        elif agreement.get("reason"):
            parts.append(d.note_html(f"Judge-versus-human agreement: {agreement['reason']}."))
    notes = [r for r in items if r.get("note")][:20]
    if notes:
        parts.append(
            d.table_html(
                [
                    {
                        "case": r["case_id"],
                        "arm": r.get("arm") or "(whole case)",
                        "verdict": r["verdict"],
                        "note": r["note"],
                        "who": r.get("reviewer"),
                        "when": d.when(r.get("created_at")),
                    }
                    for r in notes
                ],
                [
                    ("case", "case"),
                    ("arm", "arm"),
                    ("verdict", "verdict"),
                    ("note", "note", "text"),
                    ("who", "reviewer"),
                    ("when", "when"),
                ],
                caption="Reviewers' notes",
            )
        )
    return parts


# -- pairwise judges and position bias ----------------------------------------------------------------------


def pairwise_section(pairwise: Sequence[Mapping[str, Any]], bias: Sequence[Mapping[str, Any]]) -> list[Part]:
    """Blind pairwise judges' verdicts between the arms, and how much each judge favours a slot."""
    parts: list[Part] = []
    if pairwise:
        rows = [
            {
                "grader": p["grader"],
                "n": p["n"],
                "wins_a": p["wins_a"],
                "wins_b": p["wins_b"],
                "ties": p["ties"],
                "rate": d.pct(p.get("b_win_rate")),
                "p": d.pvalue(p.get("p_value")),
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
    if bias:
        rows = []
        for b in bias:
            iv = b.get("first_win_interval") or {}
            verdict = {
                True: "favours a slot",
                False: "no position bias shown",
                None: "no decisive judgement",
            }[b.get("biased")]
            rows.append(
                {
                    "grader": b["grader"],
                    "judgements": b["judgements"],
                    "first": d.pct(b.get("first_win_rate"))
                    + (f" {d.interval(iv.get('low'), iv.get('high'))}" if iv else ""),
                    "flips": d.pct(b.get("flip_rate"))
                    if b.get("both_orders")
                    else "not judged in both orders",
                    "verdict": verdict,
                    "_tone": "warn" if b.get("biased") else None,
                }
            )
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
    if not parts:
        return [d.note_html("No pairwise judge compared the arms.")]
    return parts
