"""`CaseDetailView`: everything about one case of an experiment — input, gold, every run, evidence, transcript."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w

from abbench.dataset import unpack_source_row
from abbench.review import CaseDetail, RunView, case_detail
from abbench.store import Store
from abbench.store._experiments import Experiment
from abbench.types import outcome_word
from abbench.widgets._base import NONE, escape, html_table, note

TRANSCRIPT_CHARS = 200_000
"""A transcript longer than this is cut when shown (the file keeps all of it)."""


def _json_text(value: Any) -> str:
    if value is None:
        return NONE
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1, default=str)


def _pct(value: float | None) -> str:
    return NONE if value is None else f"{value:.2f}"


def outcome_mark(run: RunView) -> str:
    """A run's outcome as a short word for tables: right, WRONG, execution failed (why), grading failed, ..."""
    if run.outcome == "fail":
        return outcome_word("fail").upper()
    if run.outcome == "execution_failed":
        return f"{outcome_word('execution_failed')} ({run.failure_type})"
    return outcome_word(run.outcome)


def _grade_word(grade: dict[str, Any]) -> str:
    passed = grade.get("passed")
    if passed is None:
        return str(grade.get("status") or NONE)
    return outcome_word("pass" if passed else "fail")


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


def read_transcript(path: str | Path | None, limit: int = TRANSCRIPT_CHARS) -> list[dict[str, Any]]:
    """The events of a run's transcript file (JSON lines; unreadable lines are kept as text)."""
    if not path or not Path(path).is_file():
        return []
    events: list[dict[str, Any]] = []
    size = 0
    with Path(path).open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            size += len(line)
            if size > limit:
                events.append({"type": "note", "content": f"… cut at {limit:,} characters (see {path})"})
                break
            try:
                event = json.loads(line)
            except ValueError:
                event = {"type": "text", "content": line.rstrip("\n")}
            events.append(event if isinstance(event, dict) else {"type": "value", "content": event})
    return events


def transcript_html(events: Sequence[dict[str, Any]]) -> str:
    """A transcript as escaped HTML: one block per message or tool call."""
    if not events:
        return note("no transcript was stored for this run")
    parts = []
    for event in events:
        kind = event.get("type") or "message"
        who = event.get("role") or event.get("name") or kind
        body = event.get("content")
        if body is None:
            body = {k: v for k, v in event.items() if k not in ("type", "role")}
        parts.append(
            f'<div style="margin:2px 0"><b>{escape(kind)} · {escape(who)}</b>'
            f'<pre style="white-space:pre-wrap;margin:0">{escape(_json_text(body))}</pre></div>'
        )
    return "".join(parts)


class CaseDetailView(w.VBox):
    """One case of an experiment (or the same case in two experiments), read with `case_detail`.

    Shows the raw row and the unified input, the gold label, every run per arm and round (prediction,
    confidence, reason, verdict), the cited evidence resolved to the skill's text, the files and
    sections read, the tool calls, and each run's full transcript, folded until opened.

    Args:
        store: The store.

    Attributes:
        details: The `CaseDetail` of each side shown (one, or two for a diff).
        case_html: The case: input, gold, history, context, the raw row.
        runs_html: The runs table.
        evidence_html: Cited references with the skill text they resolve to.
        transcripts: One folded accordion per side; a transcript is read when its run is opened.
    """

    def __init__(self, store: Store, **kwargs: Any):
        super().__init__(**kwargs)
        self.store = store
        self.details: list[CaseDetail] = []
        self.case_html = w.HTML()
        self.runs_html = w.HTML()
        self.evidence_html = w.HTML()
        self.transcripts = w.VBox()
        self._runs: list[list[RunView]] = []
        self.children = [self.case_html, self.runs_html, self.evidence_html, self.transcripts]

    @property
    def case_id(self) -> str | None:
        """The case shown, or None."""
        return self.details[0].case.case_id if self.details else None

    def clear(self, message: str = "") -> None:
        """Show nothing (with a note)."""
        self.details = []
        self.case_html.value = note(message) if message else ""
        self.runs_html.value = self.evidence_html.value = ""
        self.transcripts.children = []

    def show(
        self,
        sides: Sequence[tuple[Experiment, Sequence[str] | None]],
        case_id: str,
    ) -> None:
        """Show `case_id` as run by each (experiment, arms) side; arms None means every arm."""
        self.details = [case_detail(exp.id, case_id, store=self.store) for exp, _ in sides]
        first = self.details[0]
        self.case_html.value = self._case_html(sides[0][0], first)
        rows, evidence, self._runs = [], [], []
        self.transcripts.children = []
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
        self.evidence_html.value = "".join(evidence)
        self.transcripts.children = [w.HTML("<b>Transcripts</b> (open a run to read it)"), *accordions]

    def _case_html(self, exp: Experiment, detail: CaseDetail) -> str:
        case = detail.case
        columns = self.store.get_dataset(exp.dataset_id).read_options.get("columns")
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
        history = (
            "".join(
                f"<div><b>{escape(t.get('role', '?') if isinstance(t, dict) else '?')}</b>: "
                f"{escape(t.get('content') if isinstance(t, dict) else t)}</div>"
                for t in case.history
            )
            if isinstance(case.history, list)
            else escape(_json_text(case.history))
        )
        reviews = "".join(
            note(
                f"reviewed {r.arm or 'the case'}: {r.verdict}"
                + (f" — {r.note}" if r.note else "")
                + f" ({r.reviewer}, {r.created_at})",
                "ok",
            )
            for r in detail.reviews
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
                    panes[index].value = transcript_html(read_transcript(path))
                except OSError as exc:  # the store folder moved or lost the file
                    panes[index].value = note(f"cannot read the transcript: {exc}", "error")

        accordion.observe(opened, names="selected_index")
        return accordion


def _spent_lines(run: RunView) -> list[str]:
    """What every attempt of a run spent, when one failed or was replaced (failed attempts cost money too)."""
    attempts = run.attempts or ()
    if len(attempts) > 1 or any(a.outcome != "executed" for a in attempts):
        return [a.summary for a in attempts]
    return []
