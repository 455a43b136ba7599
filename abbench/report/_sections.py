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
                "failures": f"{c['execution_failed'] + c['grading_failed']:,}",
                "cancelled": f"{c['cancelled'] + c['unfinished']:,}",
                "per_correct": d.money((a.get("usage") or {}).get("cost_per_correct")),
            }
        )
    level = f"{metrics.get('confidence', 0.95):.0%}"
    main = "mean score" if by_score else "accuracy"
    columns = [
        ("arm", "arm"),
        ("main", f"{main} [{level} interval]"),
        *([] if by_score else [("strict", "strict accuracy (failures count as wrong)")]),
        ("graded", "graded runs"),
        ("failures", "failed runs"),
        ("cancelled", "cancelled or unfinished"),
        ("per_correct", "cost per correct answer"),
    ]
    methods = sorted(
        {(a["score"] if by_score else a["accuracy"] or {}).get("method") or "" for a in arms} - {"", "none"}
    )
    parts = [d.table_html(rows, columns)]
    parts.append(
        d.note_html(
            f"Intervals: {', '.join(methods) or 'none'}; "
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
    columns = [("domain", "domain"), ("cases", "cases"), *[(a, a) for a in arms]]
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
                ("agreement", "same answer as the case's usual one", d.pct),
                ("flip", "cases whose answer changed", d.pct),
                ("flaky", "cases passing in some rounds, failing in others", d.pct),
                ("cases", "cases answered twice or more"),
                ("examples", "flaky cases", "text"),
            ],
        )
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
                ("cost_mean", "cost per run"),
                ("cost_total", "total cost"),
                ("per_correct", "cost per correct answer"),
                ("tokens", "tokens per run"),
                ("tokens_p95", "tokens p95"),
                ("lat_p50", "latency p50"),
                ("lat_p95", "latency p95"),
                ("judge", "judge cost"),
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
