"""Report sections on single cases: regressed cases, disagreements with the gold, and human review."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from abbench import formatting as fm
from abbench.report import _display as d
from abbench.report._sections._parts import Part

if TYPE_CHECKING:
    from abbench.compare import CaseChange, Comparison
    from abbench.metrics import ExperimentMetrics
    from abbench.review import CaseDetail, CaseView, CorrectedAccuracy, Disagreement, JudgeAgreement, RunView
    from abbench.store import Review

_MARKS: dict[Any, str] = {True: "✓", False: "✗"}
"""A round's mark: right or wrong (a run without a verdict shows ``·``)."""


def _round_names(rounds: Sequence[int]) -> str:
    """``round 2``, ``rounds 1–3`` (consecutive), ``rounds 1, 3``."""
    shown = [r + 1 for r in rounds]
    if len(shown) == 1:
        return f"round {shown[0]}"
    if shown == list(range(shown[0], shown[-1] + 1)):
        return f"rounds {shown[0]}–{shown[-1]}"
    return "rounds " + ", ".join(map(str, shown))


def _answers(runs: Sequence[RunView], arm: str) -> str:
    """The answers of one arm's runs of a case: ``fast ✓ / slow ✗`` with reasons and cited evidence.

    Rounds that answered alike (same answer, verdict, reason and evidence) are shown once, as
    ``rounds 1–3``: a stable case reads in three lines instead of nine, and a flaky one stands out.
    """
    groups: list[tuple[tuple[Any, ...], list[int], RunView]] = []
    for r in runs:
        if r.arm != arm:
            continue
        refs = tuple(e.ref for e in r.evidence if e.ref)
        key = (r.prediction, r.passed, r.failure_type, r.reason, refs)
        for k, rounds, _ in groups:
            if k == key:
                rounds.append(r.round)
                break
        else:
            groups.append((key, [r.round], r))
    lines = []
    for (_, _, _, _, refs), rounds, r in groups:
        mark = _MARKS.get(r.passed, "·")
        head = f"{_round_names(rounds)}: {d.esc(r.prediction)} {mark}"
        if r.failure_type:
            head = f"{_round_names(rounds)}: execution failed ({d.esc(r.failure_type)})"
        body = f"<div>{d.esc(r.reason)}</div>" if r.reason else ""
        if refs:
            body += f'<div class="abb-muted">cites {d.esc(", ".join(refs[:6]))}</div>'
        lines.append(f"<div><b>{head}</b>{body}</div>")
    return "".join(lines) or fm.MISSING


def _runs(details: Mapping[str, CaseDetail], case_id: str) -> Sequence[RunView]:
    detail = details.get(case_id)
    return detail.runs if detail is not None else ()


_CASE_COLUMNS: list[tuple[str, str] | tuple[str, str, Any]] = [
    ("case", "case", "html"),
    ("input", "input", "html text"),
    ("gold", "gold"),
]
"""The columns every table of cases opens with: the case (its domain under it), its input (its earlier
turns folded above it), its gold."""

TURNS_SHOWN = 10
"""Earlier turns of a case a table shows (the latest); the others are counted."""
TURN_CHARS = 1_000
"""Characters of an earlier turn a table shows; the rest is counted."""


def history_html(case: CaseView) -> str:
    """A case's earlier turns folded above its input (``<details>``: the table stays short, and a reader
    opens the conversation the verdict rests on), each labelled by role; the latest `TURNS_SHOWN`, each
    cut at `TURN_CHARS` characters, with what was left out counted. Empty for a single-turn case."""
    excerpt = case.history_excerpt(TURNS_SHOWN, TURN_CHARS)
    if not excerpt.total:
        return ""
    lines = []
    if excerpt.hidden:
        lines.append(
            f'<div class="abb-muted">… {d.esc(fm.plural(excerpt.hidden, "earlier turn"))} not shown</div>'
        )
    for t in excerpt.turns:
        more = f' <span class="abb-muted">(+{t.left_out:,} characters)</span>' if t.left_out else ""
        lines.append(f'<div class="abb-turn"><b>{d.esc(t.role)}:</b> {d.esc(t.text)}{more}</div>')
    return (
        f'<details class="abb-history"><summary>after {d.esc(fm.plural(excerpt.total, "earlier turn"))}'
        f"</summary>{''.join(lines)}</details>"
    )


def _case_cells(case_id: str, domain: str | None, case: CaseView | None) -> dict[str, Any]:
    """The cells of `_CASE_COLUMNS` for one case (`case` None when its detail was not read)."""
    return {
        "case": f'{d.esc(case_id)}<div class="abb-muted">{d.esc(domain)}</div>',
        "input": history_html(case) + d.esc(case.input) if case else None,
        "gold": case.expected if case else None,
    }


def cases_section(
    changes: Sequence[CaseChange],
    details: Mapping[str, CaseDetail],
    arm_a: str,
    arm_b: str,
    *,
    total: int,
    empty: str,
    other_details: Mapping[str, CaseDetail] | None = None,
) -> list[Part]:
    """A table of cases (case, domain, input, gold, each arm's answers with reasons and evidence).

    `details` maps a case id to its `abbench.review.case_detail`; `other_details` gives arm A's runs
    when A is in another experiment.
    """
    if not changes:
        return [d.note_html(empty)]
    rows = []
    for ch in changes:
        det = details.get(ch.case_id)
        case = det.case if det is not None else None
        rows.append(
            {
                **_case_cells(ch.case_id, ch.domain, case),
                "rates": ch.rates,
                "a": _answers(_runs(other_details or details, ch.case_id), arm_a),
                "b": _answers(_runs(details, ch.case_id), arm_b),
            }
        )
    parts: list[Part] = [
        d.table_html(
            rows,
            [
                *_CASE_COLUMNS,
                ("rates", "right A → B"),
                ("a", arm_a, "html"),
                ("b", arm_b, "html"),
            ],
        )
    ]
    if total > len(changes):
        parts.append(d.note_html(f"Showing {len(changes)} of {total:,}; the runs export lists them all."))
    return parts


def no_regression_text(comparison: Comparison) -> str:
    """What an empty list of regressed cases says, and never more than the paired cases support."""
    a, b = comparison.a.arm_name, comparison.b.arm_name
    n = comparison.n_cases or 0
    if not n:
        return f"No case is graded in both {a} and {b}, so no case can be said to have regressed yet."
    return (
        f"No case regressed among the {fm.plural(n, 'paired case')}: {b} is right on every one of them "
        f"that {a} gets right."
    )


def agrees_text(metrics: ExperimentMetrics, arm: str, *, listed: bool = False) -> str:
    """What an empty list of disagreements with the gold says: only about runs that were graded."""
    counts = next((a.counts for a in metrics.arms if a.arm == arm), None)
    graded = (counts.passed + counts.failed) if counts is not None else 0
    if not graded:
        return f"{arm} has no graded run yet, so nothing can be said about its agreement with the gold."
    rest = " not listed above" if listed else ""
    return f"{arm} agrees with the gold on every one of its {fm.plural(graded, 'graded run')}{rest}."


def disagreements_section(items: Sequence[Disagreement], arm: str, *, empty: str) -> list[Part]:
    """A sample of cases whose answer disagrees with the gold (or a judge), with reasons and evidence."""
    if not items:
        return [d.note_html(empty)]
    rows = []
    for it in items:
        case = it.case
        reviews = ", ".join(f"{r.verdict}" + (f" ({r.note})" if r.note else "") for r in it.reviews)
        rows.append(
            {
                **_case_cells(case.case_id, case.domain, case),
                "why": ", ".join(it.kinds),
                "answers": _answers(it.runs, arm),
                "review": reviews or "not reviewed",
            }
        )
    return [
        d.table_html(
            rows,
            [
                *_CASE_COLUMNS,
                ("why", "listed for"),
                ("answers", arm, "html"),
                ("review", "review", "text"),
            ],
        )
    ]


# -- human review ----------------------------------------------------------------------------------------


def reviews_section(
    items: Sequence[Review], agreement: JudgeAgreement | None, corrected: Sequence[CorrectedAccuracy] = ()
) -> list[Part]:
    """Review outcomes per verdict and arm, judge-versus-human agreement, the judge-scored accuracy corrected
    by a random review sample (prediction-powered inference, when one was drawn), and the reviewers' notes."""
    if not items:
        return [
            d.note_html(
                "No one has reviewed a case of this experiment yet (the review widget, or abbench.review.add_review)."
            )
        ]
    arms = list(dict.fromkeys(r.arm or "(whole case)" for r in items))
    verdicts = list(dict.fromkeys(r.verdict for r in items))
    table = []
    for v in verdicts:
        row: dict[str, Any] = {"verdict": v.replace("_", " ")}
        for arm in arms:
            row[arm] = sum(1 for r in items if r.verdict == v and (r.arm or "(whole case)") == arm)
        table.append(row)
    parts: list[Part] = [
        d.table_html(
            table,
            [("verdict", "verdict"), *[(a, a) for a in arms]],
            caption=f"{len(items):,} reviewed cases (latest verdict per case and arm)",
        )
    ]
    if agreement is not None:
        if agreement.kappa is not None:
            parts.append(
                d.note_html(
                    f"Graders and reviewers agree on {fm.pct(agreement.agreement)} of {agreement.n:,} reviewed runs "
                    f"(Cohen's kappa {fm.num(agreement.kappa.kappa, 2)})."
                )
            )
        elif agreement.reason:
            parts.append(d.note_html(f"Judge-versus-human agreement: {agreement.reason}."))
    parts += [d.note_html(f"{figure.arm}: {figure.text}") for figure in corrected]
    notes = [r for r in items if r.note][:20]
    if notes:
        parts.append(
            d.table_html(
                [
                    {
                        "case": r.case_id,
                        "arm": r.arm or "(whole case)",
                        "verdict": r.verdict,
                        "note": r.note,
                        "who": r.reviewer,
                        "when": fm.when(r.created_at),
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
