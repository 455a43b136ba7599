"""What changed in the skill between the two arms compared: the rules (sections) added, removed and rewritten."""

from __future__ import annotations

from typing import TYPE_CHECKING

from abbench.report import _display as d
from abbench.report._sections._parts import Part

if TYPE_CHECKING:
    from abbench.snapshot import SnapshotDiff

_LINE = {"+": "background:#e6ffec", "-": "background:#ffebe9", "@": "color:#6a737d"}


def _diff_pre(text: str) -> str:
    lines = []
    for line in text.splitlines():
        style = "color:#6a737d" if line.startswith(("+++", "---")) else _LINE.get(line[:1], "")
        lines.append(f'<span style="{style}">{d.esc(line)}</span>' if style else d.esc(line))
    return '<pre style="font-size:12px;line-height:1.4;overflow-x:auto">' + "\n".join(lines) + "</pre>"


def skill_section(diff: SnapshotDiff | None, *, reason: str | None = None) -> list[Part]:
    """The skill diff between the compared arms (`abbench.snapshot.SnapshotDiff`), as
    `abbench diff-skill` shows it: a table of the sections added, removed and changed (lines +/−),
    then each changed section as a unified diff; `reason` in words when there is no diff to show."""
    if diff is None:
        return [
            d.note_html(
                reason or "The two arms compared do not both use a skill: there is no skill text to diff."
            )
        ]
    head = f"{d.esc(diff.a.label)} → {d.esc(diff.b.label)}"
    if diff.identical:
        return [
            f"<p>{head}</p>",
            d.note_html("Both arms use the same skill text: any difference is not the skill's."),
        ]
    added, removed, changed = diff.sections_added, diff.sections_removed, diff.sections_changed
    rows = (
        [{"change": "added", "ref": s.ref, "lines": ""} for s in added]
        + [{"change": "removed", "ref": s.ref, "lines": ""} for s in removed]
        + [
            {"change": "changed", "ref": c.ref, "lines": f"+{c.lines_added} −{c.lines_removed}"}
            for c in changed
        ]
    )
    front = "".join(
        f"<li>{d.esc(c.key)}: {d.esc(c.old)} → {d.esc(c.new)}</li>" for c in diff.front_matter_changes
    )
    parts: list[Part] = [
        f"<p>{head}: {len(added)} sections added, {len(removed)} removed, "
        f"{len(changed)} changed; files {len(diff.files_added)} added, {len(diff.files_removed)} "
        f"removed, {len(diff.files_changed)} changed.</p>" + (f"<ul>{front}</ul>" if front else ""),
        d.table_html(rows, [("change", "change"), ("ref", "section (rule)", "text"), ("lines", "lines")]),
    ]
    for change in changed:
        parts.append(
            f"<details><summary><b>{d.esc(change.ref)}</b> (+{change.lines_added} −{change.lines_removed} "
            f"lines)</summary>{_diff_pre(change.unified_diff())}</details>"
        )
    for s in added:
        parts.append(
            f"<details><summary><b>+ {d.esc(s.ref)}</b> (added)</summary><pre>{d.esc(s.text)}</pre></details>"
        )
    return parts
