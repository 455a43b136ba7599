"""`FollowingView`: the results widget's Skill-following tab — each arm's share of applicable skill sections
followed, where each skill was ignored, and the decision pair's paired difference."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from abbench import formatting as fm
from abbench.compare import Comparison
from abbench.metrics import Estimate, ExperimentMetrics
from abbench.widgets._base import NONE, html_table, note

NOT_JUDGED = (
    "no run was judged section by section against its skill: add a skill-following judge "
    "(skill_instruction_following) to the experiment's graders"
)


def _est(e: Estimate) -> str:
    if e.value is None:
        return f"{NONE} ({e.reason})" if e.reason else NONE
    spread = "" if e.interval is None else f" [{fm.pct(e.interval.low)}–{fm.pct(e.interval.high)}]"
    return f"{fm.pct(e.value)}{spread} · {e.n_cases} cases"


class FollowingView(w.VBox):  # type: ignore[misc, unused-ignore]  # ipywidgets is untyped
    """The Skill-following tab.

    Attributes:
        table_html: Each arm's share of applicable sections followed (or why there is none).
        skipped_html: The sections each arm's runs skipped most.
        pair_html: The decision pair's paired difference (empty without one).
    """

    def __init__(self, **kwargs: Any) -> None:
        self.table_html = w.HTML()
        self.skipped_html = w.HTML()
        self.pair_html = w.HTML()
        super().__init__([self.table_html, self.skipped_html, self.pair_html], **kwargs)

    def show(self, m: ExperimentMetrics) -> None:
        """Show the experiment's skill-following figures (read with its metrics)."""
        self.pair_html.value = ""
        if not any(a.skill_following is not None for a in m.arms):
            self.table_html.value = note(NOT_JUDGED)
            self.skipped_html.value = ""
            return
        rows, skipped = [], []
        for a in m.arms:
            f = a.skill_following
            if f is None:
                rows.append((a.arm, NONE, "not assessed (no run judged)", NONE, NONE))
                continue
            rows.append((a.arm, ", ".join(f.skills) or NONE, _est(f.following), f"{f.runs:,}", f.judged_by))
            skipped += [
                (a.arm, s.ref, f"{s.skipped:,} of {s.applicable:,}", fm.pct(s.skipped / s.applicable))
                for s in f.most_skipped
            ]
        stand_in = [
            a.arm
            for a in m.arms
            if a.skill_following and any("stand-in" in j for j in a.skill_following.judge_models)
        ]
        self.table_html.value = (
            note("share of the skill's applicable SKILL.md sections each run followed, as the judge saw it")
            + html_table(["arm", "skill judged", "share followed", "runs judged", "judge"], rows)
            + (
                note(f"{', '.join(stand_in)}: judged by the offline stand-in judge, not a model", "warn")
                if stand_in
                else ""
            )
        )
        self.skipped_html.value = (
            "<b>Where each skill was ignored</b>"
            + html_table(["arm", "section", "skipped, of the runs it applied to", "skip rate"], skipped)
            if skipped
            else note("no section was skipped in any judged run")
        )

    def show_pair(self, comparison: Comparison | None) -> None:
        """The decision pair's paired difference in the share followed (nothing when neither was judged)."""
        d = comparison.skill_following if comparison is not None else None
        self.pair_html.value = (
            ""
            if d is None or comparison is None
            else note(f"{comparison.b.name} − {comparison.a.name}: {d.text}")
        )
