"""Report sections on the runs behind a result and where it came from (`RunOverview`, `Provenance`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from abbench import _actions as do, formatting as fm
from abbench.report import _display as d
from abbench.report._provenance import ArmProvenance, Provenance, RunOverview
from abbench.report._sections._parts import Part
from abbench.types import OUTCOME_COLOURS, RunOutcome, RunState, outcome_word

_OUTCOMES = tuple(OUTCOME_COLOURS)  # the order the report's bars stack in
"""Columns of the runs table: outcome keys (`abbench.types.run_outcome`), then the open states."""


def _outcomes(overview: RunOverview) -> dict[str, dict[str, int]]:
    """Arm -> outcome -> runs: the store's ``fail`` split into wrong answers and runs without a verdict."""
    out = {}
    for arm, counts in overview.states.items():
        execution = sum((overview.execution_failures.get(arm) or {}).values())
        grading = overview.grading_failures.get(arm, 0)
        scored = overview.scored.get(arm, 0)
        row = {k: v for k, v in counts.items() if k != RunState.FAIL}
        row.update(
            fail=counts.get(RunState.FAIL, 0) - execution - grading,
            execution_failed=execution,
            grading_failed=grading,
        )
        row[RunState.PASS] = counts.get(RunState.PASS, 0) - scored
        row[RunOutcome.SCORED] = scored
        out[arm] = row
    return out


def _imported(text: str | None) -> str:
    if not text:
        return fm.MISSING
    when, _, who = text.partition(" by ")
    return f"{fm.when(when) if when != '?' else fm.MISSING} by {who or fm.MISSING}"


def runs_section(overview: RunOverview) -> list[Part]:
    """Runs per arm and state, what did not count and why, and the failed runs."""
    states = _outcomes(overview)
    rows = [{"arm": arm, **counts, "total": sum(counts.values())} for arm, counts in states.items()]
    shown = [s for s in _OUTCOMES if any(r.get(s) for r in rows)]
    parts: list[Part] = [
        d.table_html(rows, [("arm", "arm"), *[(s, outcome_word(s)) for s in shown], ("total", "total")]),
        d.states_figure(states),
    ]
    if overview.complete and overview.total:
        parts.append(d.note_html(f"All {overview.total:,} runs finished and were graded."))
    elif not overview.total:
        parts.append(d.note_html("The experiment has no run."))
    else:
        n_exec = sum(sum(c.values()) for c in overview.execution_failures.values())
        n_grade = sum(overview.grading_failures.values())
        n_cancel = sum(overview.cancelled.values())
        n_left = overview.total - overview.finished - n_cancel
        ref = overview.experiment_id if overview.experiment_id is not None else "EXPERIMENT"
        said = [
            f"{n:,} {what} ({verb}: {step.python})"
            for n, what, verb, step in (
                (n_exec, "execution failed", "re-run them", do.retry_runs(ref)),
                (n_grade, "grading failed", "re-grade them", do.regrade_failed(ref)),
                (n_cancel, "were cancelled", "run them again", do.retry_runs(ref, "cancelled")),
                (n_left, "have not finished", "finish them", do.run_experiment(ref)),
            )
            if n > 0
        ]
        parts.append(
            d.note_html(
                "Not every run counts: " + "; ".join(said) + ". Accuracy uses graded runs only; "
                "strict accuracy counts the runs without a verdict as wrong.",
                "warn",
            )
        )
    failures = [
        asdict(f) | {"round": f.round + 1} for f in overview.failures
    ]  # rounds from 1, as people count
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


def provenance_section(prov: Provenance) -> list[Part]:
    """Where the result came from: dataset, mapping, skills (drafts marked), agents, models, dates, people."""
    return [
        d.kv_html(_provenance_pairs(prov)),
        d.table_html(
            [_arm_row(a) for a in prov.arms],
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


def _provenance_pairs(prov: Provenance) -> list[tuple[str, str]]:
    """The experiment, its dataset, graders, runs and the report itself, label → text."""
    cases = prov.dataset_cases
    return [
        (
            "experiment",
            f"{prov.experiment} · owner {prov.owner} · status "
            + (f"interrupted: {prov.halted_because}" if prov.halted_because else prov.status)
            + (f": {prov.paused_because}" if prov.paused_because else "")
            + (f": {prov.stopped_because}" if prov.stopped_because else ""),
        ),
        (
            "dataset",
            f"{prov.dataset} ({prov.n_cases:,} of {cases if cases is not None else '?'} cases)",
        ),
        ("mapping profile", prov.mapping_profile or "none recorded"),
        ("source file", prov.dataset_file or "not recorded"),
        ("imported", _imported(prov.dataset_imported)),
        ("graders", ", ".join(prov.graders) or "no grade written yet"),
        ("judge models", ", ".join(prov.judge_models) or "no judge used"),
        ("grade batch", prov.batch_id or "no grade written yet"),
        (
            "runs",
            f"started {fm.when(prov.first_started)}, last finished {fm.when(prov.last_finished)}, "
            f"by {', '.join(prov.run_by) or fm.MISSING}",
        ),
        (
            "created",
            f"{fm.when(prov.created_at)} by {prov.created_by or fm.MISSING}"
            + (f", cloned from {prov.parent}" if prov.parent else ""),
        ),
        ("tags", ", ".join(prov.tags) or "none"),
        *(
            ("gold answer", f"arm {a.name} sees the gold answer: a test double")
            for a in prov.arms
            if a.sees_gold
        ),
        (
            "report",
            f"abbench {prov.abbench_version}, Python {prov.python}, "
            f"{fm.when(prov.generated_at)} by {prov.generated_by}",
        ),
    ]


def _arm_row(a: ArmProvenance) -> dict[str, Any]:
    """An arm's agent, models and skill, with where the skill came from (a commit, or why it is a draft)."""
    skill = (
        d.esc(a.skill) + (" " + d.tag_html("draft", "draft") if a.draft else "") if a.skill else "no skill"
    )
    if a.commit:
        source = f"commit {a.commit[:12]}" + (f" (tag {a.tag})" if a.tag else "")
        source += f" · {a.repo}" if a.repo else ""
    elif a.skill:
        source = "draft: " + (a.draft_reason or "not a clean git commit")
    else:
        source = fm.MISSING
    return {
        "arm": a.name,
        "agent": a.agent,
        "model": a.model or fm.MISSING,
        "seen": ", ".join(a.models_seen) or fm.MISSING,
        "skill": skill,
        "hash": a.snapshot_hash or fm.MISSING,
        "source": source,
    }
