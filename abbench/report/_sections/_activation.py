"""Skill activation: whether offered arms loaded the right skill, and the trigger-vs-help split of the effect.

Reads the typed results: `abbench.metrics.ExperimentActivation` and `abbench.compare.TriggerHelp`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from abbench import formatting as fm
from abbench.metrics import ACTIVATION_FIGURES
from abbench.report import _display as d
from abbench.report._sections._parts import Part, estimate_text

if TYPE_CHECKING:
    from abbench.compare import ArmTriggerHelp, TriggerHelp
    from abbench.metrics import ActivationComparison, ArmActivation, ExperimentActivation

NOT_OFFERED = (
    "Every arm injects its skill into the task (or has none): whether the agent would pick the skill up "
    "is not measured. An arm with skill_mode: offered shows the agent a catalogue and measures it."
)


def activation_section(report: ExperimentActivation | None, trigger: TriggerHelp | None = None) -> list[Part]:
    """Each offered arm's activation figures (a table and a chart with intervals), the paired comparisons
    of offered arms, and the trigger-vs-help split of the compared pair's effect."""
    if report is None or not report.offered:
        return [d.note_html(NOT_OFFERED)]
    offered = [a for a in report.arms if a.offered]
    parts: list[Part] = [
        "<p>Over runs whose execution finished: an execution failure is never counted as a correct "
        "non-trigger (it is left out and counted). Recall, precision and false activation need cases that "
        "say which skill should trigger (<code>expected_skill</code>).</p>",
        d.table_html([_row(a) for a in offered], _COLUMNS),
    ]
    if not report.assessed:
        parts.append(d.note_html("No case has an expected_skill: only the activation rate is measured."))
    parts.append(
        d.grouped_figure(
            [word for _, word in ACTIVATION_FIGURES],
            {a.arm: [getattr(a, f) for f, _ in ACTIVATION_FIGURES] for a in offered},
            title="share of runs",
            name="Skill activation of each arm: share of runs",
        )
    )
    skipped = [f"{a.arm}: {a.reason}" for a in report.arms if not a.offered]
    if skipped:
        parts.append(d.note_html("Not offered — " + "; ".join(skipped)))
    if report.comparisons:
        parts.append("<h3>Offered arms compared, case by case</h3>")
        parts.append(d.table_html([_comparison_row(c) for c in report.comparisons], _COMPARISON_COLUMNS))
    parts += trigger_help_parts(trigger)
    return parts


_COLUMNS: list[Any] = [
    ("arm", "arm"),
    ("offered", "skills offered", "text"),
    *[(field, word) for field, word in ACTIVATION_FIGURES],
    ("counted", "runs counted"),
    ("left", "left out", "text"),
]


def _row(a: ArmActivation) -> dict[str, Any]:
    row: dict[str, Any] = {"arm": a.arm, "offered": ", ".join(a.skills_offered), "counted": a.counted}
    for field, _ in ACTIVATION_FIGURES:
        row[field] = estimate_text(getattr(a, field))
    left = [f"{a.execution_failed} execution failed"]
    if a.not_executed:
        left.append(f"{a.not_executed} not executed")
    if a.expected_not_offered:
        left.append(f"{a.expected_not_offered} expected a skill not offered")
    row["left"] = "; ".join(left)
    return row


_COMPARISON_COLUMNS: list[Any] = [
    ("pair", "pair"),
    ("what", "compared"),
    ("rates", "A → B"),
    ("diff", "difference (B − A)"),
    ("p", "exact McNemar p"),
    ("n", "paired cases"),
]


def _comparison_row(c: ActivationComparison) -> dict[str, Any]:
    if c.diff is None:
        return {"pair": f"{c.b} vs {c.a}", "what": c.what, "rates": c.reason or fm.MISSING}
    spread = "" if c.interval is None else " " + fm.interval(c.interval.low, c.interval.high, fm.pct)
    return {
        "pair": f"{c.b} vs {c.a}",
        "what": c.what,
        "rates": f"{fm.pct(c.rate_a)} → {fm.pct(c.rate_b)}",
        "diff": f"{(c.diff or 0) * 100:+.1f} points{spread}",
        "p": fm.num(c.p_value, 3),
        "n": c.n_paired,
    }


_points = partial(fm.difference, word="points", missing=fm.MISSING, zero_sign=False)


def sibling_text(s: ArmTriggerHelp) -> str:
    """An arm's share of graded runs that loaded a sibling instead of the skill under test, and their accuracy."""
    if s.wrong_sibling is None:
        return fm.MISSING
    if not s.sibling_runs:
        return fm.pct(s.wrong_sibling)
    return f"{fm.pct(s.wrong_sibling)} ({s.sibling_runs} runs; accuracy {estimate_text(s.when_sibling)})"


def trigger_help_parts(t: TriggerHelp | None) -> list[Part]:
    """The trigger-vs-help table (intention-to-treat and per-protocol accuracy) and the split as a waterfall."""
    if t is None:
        return []
    rows = [
        {
            "arm": s.arm,
            "mode": s.mode,
            "had": fm.MISSING if s.activation is None else fm.pct(s.activation),
            "itt": estimate_text(s.intention_to_treat),
            "pp": estimate_text(s.per_protocol),
            "not": estimate_text(s.not_loaded),
            "sibling": sibling_text(s),
        }
        for s in (t.a, t.b)
    ]
    columns = [("arm", "arm"), ("mode", "skill"), ("had", "runs with the skill"),
               ("itt", "accuracy, every case"), ("pp", "when loaded"), ("not", "when not loaded"),
               ("sibling", "loaded the wrong sibling")]  # fmt: skip
    parts: list[Part] = [
        "<h3>Trigger vs help</h3>",
        f"<p>{d.esc(t.b.arm)} vs {d.esc(t.a.arm)} on {t.n_cases} paired cases: effect {_points(t.total)} = "
        f"loaded more often {_points(t.loaded_more_often)} ({_points(t.activation_difference)} activation × "
        f"{_points(t.help_when_loaded)} help when loaded) + helped more when loaded "
        f"{_points(t.helped_more_when_loaded)} + when not loaded {_points(t.when_not_loaded)}.</p>",
        d.table_html(rows, columns),
        f"<p><code>{d.esc(t.formula)}</code> — a description of these runs, not a causal estimate: the agent "
        "chooses when to load, so loaded runs are a selected set.</p>",
    ]
    if t.reason:
        parts.append(d.note_html(t.reason))
    if t.total is not None:
        parts.append(_waterfall(t))
    return parts


def _waterfall(t: TriggerHelp) -> Any:
    names = ["loaded more often", "helped more when loaded", "when not loaded", "effect"]
    values = [t.loaded_more_often, t.helped_more_when_loaded, t.when_not_loaded, t.total]
    data = [
        {
            "type": "waterfall",
            "x": names,
            "y": [None if v is None else v * 100 for v in values],
            "measure": ["relative", "relative", "relative", "total"],
            "hovertemplate": "%{x}: %{y:+.1f} points<extra></extra>",
        }
    ]
    return d.figure(data, yaxis={"title": {"text": "points (B − A)"}, "ticksuffix": ""}, height=320)
