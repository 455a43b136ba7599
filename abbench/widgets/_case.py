"""`CaseDetailView`: everything about one case of an experiment — input, gold, every run, evidence, transcript."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

import ipywidgets as w

from abbench._text import clip
from abbench.dataset import unpack_source_row
from abbench.formatting import in_unit, plural
from abbench.review import CaseDetail, CaseView, GradeView, RunView, case_detail
from abbench.store import Experiment, Store
from abbench.transcript import Event, OtherEvent, Transcript, Unreadable, VerdictEvent, read_transcript
from abbench.types import AttemptOutcome, RunOutcome, RunState, outcome_word
from abbench.widgets._base import NONE, escape, html_table, note

TRANSCRIPT_CHARS = 200_000
"""A transcript longer than this is cut when shown (the file keeps all of it)."""


def _json_text(value: Any) -> str:
    if value is None:
        return NONE
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1, default=str)


_pct = partial(in_unit, unit="score")  # a confidence: two decimals


def outcome_mark(run: RunView) -> str:
    """A run's outcome as a short word for tables: right, WRONG, execution failed (why), grading failed, ..."""
    if run.outcome == RunState.FAIL:
        return outcome_word(RunState.FAIL).upper()
    if run.outcome == RunOutcome.EXECUTION_FAILED:
        return f"{outcome_word(RunOutcome.EXECUTION_FAILED)} ({run.failure_type})"
    return outcome_word(run.outcome)


_MARKS: dict[str, tuple[str, str]] = {
    RunState.PASS: ("✓", "color:#1a6b1a"),
    RunState.FAIL: ("✗", "color:#a40000;background:#fde8e8;font-weight:600"),
    RunOutcome.EXECUTION_FAILED: ("⚠", "color:#8a5a00;background:#fff4dc"),
    RunOutcome.GRADING_FAILED: ("⚠", "color:#8a5a00;background:#fff4dc"),
    RunState.CANCELLED: ("–", "color:#777"),
}


def _answer_cell(run: RunView) -> str:
    """One run's answer for the summary (escaped HTML): ✓ right, ✗ wrong (marked red), failures named."""
    mark, style = _MARKS.get(run.outcome, ("?", "color:#777"))
    if run.outcome in (RunState.PASS, RunState.FAIL):
        text = NONE if run.prediction is None else str(run.prediction)
        if run.confidence is not None:
            text += f" ({_pct(run.confidence)})"
    else:
        text = outcome_mark(run)
    css = "abbench-wrong" if run.outcome == RunState.FAIL else f"abbench-{run.outcome}"
    return f'<span class="{css}" style="{style};padding:0 3px">{mark} {escape(text)}</span>'


def _grade_word(grade: GradeView) -> str:
    if grade.passed is None:
        return grade.status or NONE
    return outcome_word(RunState.PASS if grade.passed else RunState.FAIL)


def _reading_html(run: RunView) -> str:
    """What a run cited and read, one kind per line (escaped): the evidence first, then files,
    sections and tool calls counted by name (the transcript holds their arguments)."""
    lines = []
    if run.evidence:
        lines.append("cites " + ", ".join(("✓ " if e.found else "✗ ") + e.ref for e in run.evidence))
    if run.files_read:
        lines.append("files: " + ", ".join(run.files_read))
    if run.sections_read:
        lines.append("sections: " + ", ".join(run.sections_read))
    calls: dict[str, int] = {}
    for call in run.calls or ():
        calls[call.name] = calls.get(call.name, 0) + 1
    if calls:
        lines.append("tool calls: " + ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in calls.items()))
    elif run.tool_calls:
        lines.append(f"tool calls: {run.tool_calls}")
    return "<br>".join(escape(line) for line in lines) or NONE


def _event_block(event: Event) -> tuple[str, str, Any]:
    """What a transcript view shows of one event: its kind, who (role, tool or kind), and its body."""
    if isinstance(event, Unreadable):
        return "unreadable", f"line {event.line}", f"{event.problem}\n{event.text}"
    data = event.to_dict()
    if not isinstance(data, dict):
        return "value", "value", data
    kind = "verdict" if isinstance(event, VerdictEvent) else str(data.get("type") or "message")
    if isinstance(event, OtherEvent) and event.kind is not None:
        kind += " (a kind abbench does not write)"
    who = data.get("role") or data.get("name") or kind
    body = data.get("content")
    if body is None:
        body = {k: v for k, v in data.items() if k not in ("type", "role")}
    return kind, str(who), body


def transcript_html(transcript: Transcript | Sequence[Event] | None) -> str:
    """A transcript (`abbench.transcript.read_transcript`) as escaped HTML: one block per message,
    model call or tool call; a line that is not JSON is shown where it stands, marked unreadable."""
    if not transcript:
        return note("no transcript was stored for this run")
    parts = []
    for event in transcript:
        kind, who, body = _event_block(event)
        parts.append(
            f'<div style="margin:2px 0"><b>{escape(kind)} · {escape(who)}</b>'
            f'<pre style="white-space:pre-wrap;margin:0">{escape(_json_text(body))}</pre></div>'
        )
    if isinstance(transcript, Transcript) and transcript.cut_at is not None:
        parts.append(note(f"… cut at {transcript.cut_at:,} characters (see {transcript.path})"))
    return "".join(parts)


SUMMARY_TURNS = 10
"""Earlier turns the summary shows (the latest); "the case in full" shows every one."""
SUMMARY_TURN_CHARS = 1_000
"""Characters of an earlier turn the summary shows; "the case in full" shows all of it."""
OPEN_HISTORY_CHARS = 600
"""A history this short shows unfolded in the summary; a longer one is folded (one click opens it)."""


def _turn_html(turn: dict[str, str], limit: int | None = None) -> str:
    """One earlier turn, labelled by its role (escaped); cut at `limit` characters, saying how many more."""
    text, more = turn["content"], ""
    if limit is not None and len(text) > limit:
        kept = clip(text, limit)[:-1]
        text, more = (
            kept + "…",
            f' <span class="abbench-muted">(+{len(turn["content"]) - len(kept):,} characters)</span>',
        )
    return (
        f'<div style="margin:2px 0 2px 12px;white-space:pre-wrap"><b>{escape(turn["role"])}:</b> '
        f"{escape(text)}{more}</div>"
    )


def history_html(case: CaseView) -> str:
    """A case's earlier turns, oldest first, above its input: unfolded when short, folded (``<details>``)
    when long, the latest `SUMMARY_TURNS` each cut at `SUMMARY_TURN_CHARS`; empty for a single turn."""
    turns = case.turns
    if not turns:
        return ""
    shown = turns[-SUMMARY_TURNS:]
    hidden = len(turns) - len(shown)
    body = (
        note(f"… {plural(hidden, 'earlier turn')} not shown here (the case in full, below)") if hidden else ""
    ) + "".join(_turn_html(t, SUMMARY_TURN_CHARS) for t in shown)
    unfold = " open" if not hidden and sum(len(t["content"]) for t in turns) <= OPEN_HISTORY_CHARS else ""
    return (
        f'<details class="abbench-history"{unfold} style="font-size:14px;margin:4px 0">'
        f"<summary><b>after {escape(plural(len(turns), 'earlier turn'))}</b></summary>{body}</details>"
    )


class CaseDetailView(w.VBox):  # type: ignore[misc, unused-ignore]  # ipywidgets is untyped
    """One case of an experiment (or the same case in two experiments), read with `case_detail`.

    On top, a compact summary a reviewer decides from: the input, the gold, and each arm's answer per
    round with the wrong ones marked. Below it, folded until opened: the case in full (the raw row,
    history, context), every run (confidence, reason, cited evidence, files and sections read, tool
    calls, grades), the cited evidence resolved to the skill's text, and each run's full transcript.
    What a person opened stays open when the same case is shown again (after a review is saved).

    Args:
        store: The store.
        with_summary: Show the summary at the top of this box; False leaves `summary_html` for the
            caller to place (the review widget puts its buttons between the summary and the rest).

    Attributes:
        details: The `CaseDetail` of each side shown (one, or two for a diff).
        summary_html: The compact summary: input, gold, answers per arm and round, wrong ones marked.
        case_html: The case: input, gold, history, context, the raw row.
        runs_html: The runs table.
        evidence_html: Cited references with the skill text they resolve to.
        sections: The folded sections (case, runs, evidence) by name, each an `Accordion`.
        transcripts: One folded accordion per side; a transcript is read when its run is opened.
        body: Everything below the summary.
    """

    def __init__(self, store: Store, *, with_summary: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.store = store
        self.blind_for: str | None = None
        """A reviewer reviewing blind (a second review assigned to them): only their own reviews show."""
        self.details: list[CaseDetail] = []
        self.summary_html = w.HTML()
        self.summary_html.add_class("abbench-case-summary")
        self.case_html = w.HTML()
        self.runs_html = w.HTML()
        self.evidence_html = w.HTML()
        self.transcripts = w.VBox()
        self._runs: list[list[RunView]] = []
        self.sections: dict[str, w.Accordion] = {}
        for name, title, pane in (
            ("case", "The case in full: raw row, history, context", self.case_html),
            ("runs", "Every run: reason, evidence cited, files and sections read, grades", self.runs_html),
            ("evidence", "Evidence cited, resolved to the skill's text", self.evidence_html),
        ):
            accordion = w.Accordion(children=[pane], selected_index=None)
            accordion.titles = (title,)
            self.sections[name] = accordion
        self.body = w.VBox([*self.sections.values(), self.transcripts])
        self.children = [self.summary_html, self.body] if with_summary else [self.body]

    @property
    def case_id(self) -> str | None:
        """The case shown, or None."""
        return self.details[0].case.case_id if self.details else None

    def clear(self, message: str = "") -> None:
        """Show nothing (with a note)."""
        self.details = []
        self.summary_html.value = note(message) if message else ""
        self.case_html.value = self.runs_html.value = self.evidence_html.value = ""
        self.transcripts.children = []

    def show(
        self,
        sides: Sequence[tuple[Experiment, Sequence[str] | None]],
        case_id: str,
    ) -> None:
        """Show `case_id` as run by each (experiment, arms) side; arms None means every arm."""
        # A transcript the person opened stays open when the same case is shown again.
        reopen = set()
        if self.case_id == case_id:
            for accordion in self.transcripts.children[1:]:
                if isinstance(accordion, w.Accordion) and accordion.selected_index is not None:
                    reopen.add(accordion.titles[accordion.selected_index])
        self.details = [case_detail(exp.id, case_id, store=self.store) for exp, _ in sides]
        first = self.details[0]
        self.case_html.value = self._case_html(sides[0][0], first)
        rows, evidence, self._runs = [], [], []
        accordions = []
        # Name the experiment only when the sides come from different ones (the arm says enough otherwise).
        several = len({exp.id for exp, _ in sides}) > 1
        for (exp, arms), detail in zip(sides, self.details, strict=True):
            runs = [r for r in detail.runs if arms is None or r.arm in arms]
            self._runs.append(runs)
            prefix = f"{exp.name} / " if several else ""
            for r in runs:
                rows.append(
                    (
                        f"{escape(prefix + r.arm)}<br>round {r.round + 1}",
                        outcome_mark(r),
                        r.prediction
                        if r.confidence is None
                        else f"{r.prediction if r.prediction is not None else NONE} ({_pct(r.confidence)})",
                        "<br>".join(escape(x) for x in [r.reason or r.error or "", *_spent_lines(r)] if x),
                        _reading_html(r),
                        "<br>".join(
                            f"{escape(name)}: {escape(_grade_word(g))}"
                            for name, g in (r.grades or {}).items()
                        )
                        or NONE,
                    )
                )
            evidence.append(self._evidence_html(prefix, runs))
            accordions.append(self._transcript_accordion(prefix, runs))
        self.runs_html.value = "<b>Runs</b>" + html_table(
            [
                "arm",
                "outcome",
                "answer (confidence)",
                "reason",
                "evidence cited, files and sections read",
                "grades",
            ],
            rows,
            raw=(0, 3, 4, 5),
            wide=(3, 4),
        )
        self.evidence_html.value = "".join(evidence) or note("no run cited evidence")
        self.summary_html.value = self._summary_html(sides)
        for accordion in accordions:
            for i, title in enumerate(accordion.titles):
                if title in reopen:
                    accordion.selected_index = i
        self.transcripts.children = [w.HTML("<b>Transcripts</b> (open a run to read it)"), *accordions]

    def _summary_html(self, sides: Sequence[tuple[Experiment, Sequence[str] | None]]) -> str:
        """Input, gold, and each arm's answer per round (wrong ones marked): what a verdict needs."""
        first = self.details[0]
        case = first.case
        several = len({exp.id for exp, _ in sides}) > 1
        rounds = max((r.round for runs in self._runs for r in runs), default=-1) + 1
        rows = []
        for (exp, _arms), runs in zip(sides, self._runs, strict=True):
            by_arm: dict[str, dict[int, RunView]] = {}
            for r in runs:
                by_arm.setdefault(r.arm, {})[r.round] = r
            for arm, by_round in by_arm.items():
                name = f"{exp.name} / {arm}" if several else arm
                cells = [escape(name)]
                for i in range(rounds):
                    shown = by_round.get(i)
                    cells.append(_answer_cell(shown) if shown is not None else NONE)
                rows.append(cells)
        kinds = ", ".join(first.kinds) or "nothing amiss"
        reviews = "".join(
            note(f"reviewed {r.arm or 'the case'}: {r.verdict}" + (f" — {r.note}" if r.note else ""), "ok")
            for r in self._shown_reviews(first.reviews)
        )
        table = html_table(
            ["arm", *(f"round {i + 1}" for i in range(rounds))], rows, raw=tuple(range(rounds + 1))
        )
        return (
            f"<b>Case {escape(case.case_id)}</b> · {escape(case.domain or NONE)} · listed for {escape(kinds)}"
            f"{history_html(case)}"
            f'<div style="font-size:15px;margin:4px 0"><b>input:</b> {escape(case.input)}</div>'
            f'<div style="font-size:15px;margin:4px 0"><b>gold:</b> <code>{escape(case.expected)}</code></div>'
            f"{table}{reviews}"
        )

    def _shown_reviews(self, reviews: Any) -> list[Any]:
        """`reviews`, without other reviewers' when a blind second review is open (`blind_for`)."""
        return [r for r in reviews if self.blind_for is None or r.reviewer == self.blind_for]

    def _case_html(self, exp: Experiment, detail: CaseDetail) -> str:
        case = detail.case
        columns = self.store.datasets.get(exp.dataset_id).source_columns
        raw = unpack_source_row(case.source_row, columns)
        if isinstance(raw, dict):
            raw_html = html_table(list(raw), [[_json_text(v) for v in raw.values()]])
        else:
            raw_html = f"<pre>{escape(_json_text(raw))}</pre>"
        kinds = ", ".join(detail.kinds) or "none"
        head = html_table(
            ["case", "domain", "gold", "request", "from", "listed for"],
            [[case.case_id, case.domain, case.expected, case.request_id, case.source_line, kinds]],
        )
        history = "".join(_turn_html(t) for t in case.turns) or NONE
        reviews = "".join(
            note(
                f"reviewed {r.arm or 'the case'}: {r.verdict}"
                + (f" — {r.note}" if r.note else "")
                + f" ({r.reviewer}, {r.created_at})",
                "ok",
            )
            for r in self._shown_reviews(detail.reviews)
        )
        return (
            f"<b>Case {escape(case.case_id)}</b>{head}"
            f'<div style="font-size:15px;margin:4px 0"><b>input:</b> {escape(case.input)}</div>'
            f"<div><b>history:</b> {history}</div>"
            f"<div><b>context:</b> <code>{escape(_json_text(case.context))}</code></div>"
            f"<details><summary>raw row ({escape(case.source_line)})</summary>{raw_html}</details>"
            f"{reviews}"
        )

    @staticmethod
    def _evidence_html(prefix: str, runs: Sequence[RunView]) -> str:
        by_arm: dict[str, dict[str, Any]] = {}
        for r in runs:
            for e in r.evidence:
                by_arm.setdefault(r.arm, {}).setdefault(e.ref, e)
        if not by_arm:
            return ""
        parts = []
        for arm, refs in by_arm.items():
            items = []
            for e in refs.values():
                if e.found:
                    items.append(
                        f"<details><summary>✓ {escape(e.resolved or e.ref)}</summary>"
                        f'<pre style="white-space:pre-wrap">{escape(e.text)}</pre></details>'
                    )
                else:
                    items.append(f"<div>✗ {escape(e.ref)} — not in the arm's skill snapshot</div>")
            parts.append(f"<b>Evidence cited by {escape(prefix + arm)}</b>" + "".join(items))
        return "".join(parts)

    def _transcript_accordion(self, prefix: str, runs: Sequence[RunView]) -> w.Accordion:
        panes = [w.HTML() for _ in runs]
        accordion = w.Accordion(children=panes, selected_index=None)
        accordion.titles = tuple(f"{prefix}{r.arm} · round {r.round + 1} · run {r.run_id}" for r in runs)

        def opened(change: dict[str, Any]) -> None:
            index = change["new"]
            if index is not None and not panes[index].value:
                try:
                    # a failed run has no transcript of its own: show its last attempt's
                    path = runs[index].transcript_path or next(
                        (
                            a.transcript_path
                            for a in reversed(runs[index].attempts or ())
                            if a.transcript_path
                        ),
                        None,
                    )
                    shown = read_transcript(path, errors="keep", max_chars=TRANSCRIPT_CHARS) if path else None
                    panes[index].value = transcript_html(shown)
                except OSError as exc:  # the store folder moved or lost the file
                    panes[index].value = note(f"cannot read the transcript: {exc}", "error")

        accordion.observe(opened, names="selected_index")
        return accordion


def _spent_lines(run: RunView) -> list[str]:
    """What every attempt of a run spent, when one failed or was replaced (failed attempts cost money too)."""
    attempts = run.attempts or ()
    if len(attempts) > 1 or any(a.outcome != AttemptOutcome.EXECUTED for a in attempts):
        return [a.summary for a in attempts]
    return []
