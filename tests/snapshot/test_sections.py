"""Markdown headings become stable references."""

from __future__ import annotations

from abbench.snapshot import parse_sections, resolve_ref

DOC = """---
name: demo
description: a skill
---
Intro text before any heading.

# 快系统能力

## 车控
- 打开空调

## Media Control
Play music.

```
# not a heading
```

## 车控
duplicate heading

Setext Heading
--------------
under it
"""


def test_sections_refs_levels_and_text():
    sections = parse_sections("SKILL.md", DOC)
    refs = [s.ref for s in sections]
    assert refs == [
        "SKILL.md",
        "SKILL.md#快系统能力",
        "SKILL.md#车控",
        "SKILL.md#Media Control",
        "SKILL.md#车控-2",
        "SKILL.md#Setext Heading",
    ]
    by_ref = {s.ref: s for s in sections}
    assert by_ref["SKILL.md"].text == "Intro text before any heading."
    assert "打开空调" in by_ref["SKILL.md#车控"].text
    assert "# not a heading" in by_ref["SKILL.md#Media Control"].text
    assert by_ref["SKILL.md#车控-2"].parents == ("快系统能力",)
    assert by_ref["SKILL.md#Setext Heading"].level == 2
    assert by_ref["SKILL.md#快系统能力"].start_line == 7


def test_resolve_is_forgiving_but_exact_first():
    sections = parse_sections("SKILL.md", DOC)
    assert resolve_ref(sections, "SKILL.md#Media Control").heading == "Media Control"
    assert resolve_ref(sections, "SKILL.md#media-control").heading == "Media Control"
    assert resolve_ref(sections, "./SKILL.md#车控-2").text.endswith("duplicate heading")
    assert resolve_ref(sections, "SKILL.md#nothing") is None
    assert resolve_ref(sections, "other.md#车控") is None


def test_paths_keep_leading_dots_and_may_hold_hashes():
    from abbench.snapshot import normalize_path

    assert normalize_path("./.github/x.md") == ".github/x.md"
    assert normalize_path("././a\\b.md") == "a/b.md"
    sections = parse_sections(".hidden/C#-notes.md", "# Intro\ntext\n\n## Setup\nmore\n")
    assert resolve_ref(sections, ".hidden/C#-notes.md#setup").heading == "Setup"
    assert resolve_ref(sections, "./.hidden/C#-notes.md").heading == "Intro"
