"""What changed in the skill between the two arms compared: the rules (sections) added, removed and rewritten."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from abbench.report import _display as d
from abbench.report._sections._parts import Part

_LINE = {"+": "background:#e6ffec", "-": "background:#ffebe9", "@": "color:#6a737d"}


def _diff_pre(text: str) -> str:
    lines = []
    for line in text.splitlines():
        style = "color:#6a737d" if line.startswith(("+++", "---")) else _LINE.get(line[:1], "")
        lines.append(f'<span style="{style}">{d.esc(line)}</span>' if style else d.esc(line))
    return '<pre style="font-size:12px;line-height:1.4;overflow-x:auto">' + "\n".join(lines) + "</pre>"


def skill_section(diff: Mapping[str, Any] | None, *, reason: str | None = None) -> list[Part]:
    """The skill diff between the compared arms (`abbench.snapshot.SnapshotDiff.to_dict()`), as
    `abbench diff-skill` shows it: a table of the sections added, removed and changed (lines +/−),
    then each changed section as a unified diff; `reason` in words when there is no diff to show."""
    if not diff:
        return [
            d.note_html(
                reason or "The two arms compared do not both use a skill: there is no skill text to diff."
            )
        ]
    head = f"{d.esc(diff['a']['label'])} → {d.esc(diff['b']['label'])}"
    if diff["identical"]:
        return [
            f"<p>{head}</p>",
            d.note_html("Both arms use the same skill text: any difference is not the skill's."),
        ]
    sections = diff["sections"]
    rows = (
        [{"change": "added", "ref": s["ref"], "lines": ""} for s in sections["added"]]
        + [{"change": "removed", "ref": s["ref"], "lines": ""} for s in sections["removed"]]
        + [
            {"change": "changed", "ref": c["ref"], "lines": f"+{c['lines_added']} −{c['lines_removed']}"}
            for c in sections["changed"]
        ]
    )
    files = diff["files"]
    front = "".join(
        f"<li>{d.esc(c['key'])}: {d.esc(c['old'])} → {d.esc(c['new'])}</li>" for c in diff["front_matter"]
    )
    parts: list[Part] = [
        f"<p>{head}: {len(sections['added'])} sections added, {len(sections['removed'])} removed, "
        f"{len(sections['changed'])} changed; files {len(files['added'])} added, {len(files['removed'])} "
        f"removed, {len(files['changed'])} changed.</p>" + (f"<ul>{front}</ul>" if front else ""),
        d.table_html(rows, [("change", "change"), ("ref", "section (rule)", "text"), ("lines", "lines")]),
    ]
    for change in sections["changed"]:
        parts.append(
            f"<details><summary><b>{d.esc(change['ref'])}</b> (+{change['lines_added']} −{change['lines_removed']} "
            f"lines)</summary>{_diff_pre(change.get('diff', ''))}</details>"
        )
    for s in sections["added"]:
        parts.append(
            f"<details><summary><b>+ {d.esc(s['ref'])}</b> (added)</summary><pre>{d.esc(s.get('text', ''))}</pre></details>"
        )
    return parts
