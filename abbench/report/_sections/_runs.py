"""Report sections on the runs behind a result and where it came from (run overview, provenance)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from abbench.report import _display as d
from abbench.report._sections._parts import Part
from abbench.types import outcome_word

_OUTCOMES = (
    "pass",
    "fail",
    "execution_failed",
    "grading_failed",
    "cancelled",
    "pending",
    "running",
    "executed",
    "evaluating",
)
"""Columns of the runs table: outcome keys (`abbench.types.run_outcome`), then the open states."""


def _outcomes(overview: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Arm -> outcome -> runs: the store's ``fail`` split into wrong answers and runs without a verdict."""
    out = {}
    for arm, counts in overview["states"].items():
        execution = sum((overview["execution_failures"].get(arm) or {}).values())
        grading = overview["grading_failures"].get(arm, 0)
        row = {k: v for k, v in counts.items() if k != "fail"}
        row.update(
            fail=counts.get("fail", 0) - execution - grading,
            execution_failed=execution,
            grading_failed=grading,
        )
        out[arm] = row
    return out


def _imported(text: str | None) -> str:
    if not text:
        return d.MISSING
    when, _, who = text.partition(" by ")
    return f"{d.when(when) if when != '?' else d.MISSING} by {who or d.MISSING}"


def runs_section(overview: Mapping[str, Any]) -> list[Part]:
    """Runs per arm and state, what did not count and why, and the failed runs."""
    states = _outcomes(overview)
    rows = [{"arm": arm, **counts, "total": sum(counts.values())} for arm, counts in states.items()]
    shown = [s for s in _OUTCOMES if any(r.get(s) for r in rows)]
    parts: list[Part] = [
        d.table_html(rows, [("arm", "arm"), *[(s, outcome_word(s)) for s in shown], ("total", "total")]),
        d.states_figure(states),
    ]
    if overview["complete"] and overview["total"]:
        parts.append(d.note_html(f"All {overview['total']:,} runs finished and were graded."))
    elif not overview["total"]:
        parts.append(d.note_html("The experiment has no run."))
    else:
        n_exec = sum(sum(c.values()) for c in overview["execution_failures"].values())
        n_grade = sum(overview["grading_failures"].values())
        n_cancel = sum(overview["cancelled"].values())
        n_left = overview["total"] - overview["finished"] - n_cancel
        said = []
        if n_exec:
            said.append(f"{n_exec:,} execution failed (re-run them: abbench retry EXPERIMENT --failed)")
        if n_grade:
            said.append(f"{n_grade:,} grading failed (abbench regrade EXPERIMENT --failed)")
        if n_cancel:
            said.append(f"{n_cancel:,} were cancelled")
        if n_left > 0:
            said.append(f"{n_left:,} have not finished")
        parts.append(
            d.note_html(
                "Not every run counts: " + "; ".join(said) + ". Accuracy uses graded runs only; "
                "strict accuracy counts the runs without a verdict as wrong.",
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
                caption=f"Runs whose execution or grading failed (first {len(failures)})",
            )
        )
    return parts


def provenance_section(prov: Mapping[str, Any]) -> list[Part]:
    """Where the result came from: dataset, mapping, skills (drafts marked), agents, models, dates, people."""
    cases = prov["dataset_cases"]
    pairs = [
        (
            "experiment",
            f"{prov['experiment']} · owner {prov['owner']} · status {prov['status']}"
            + (f": {prov['paused_because']}" if prov.get("paused_because") else ""),
        ),
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
        *(
            ("gold answer", f"arm {a['name']} sees the gold answer: a test double")
            for a in prov["arms"]
            if a.get("sees_gold")
        ),
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
