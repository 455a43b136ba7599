"""Markdown headings as stable references: ``path#heading``, resolvable back to their text."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from abbench.types import Section

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _clean_heading(text: str) -> str:
    text = re.sub(r"\s+", " ", text.strip())
    # drop emphasis and code markers that do not belong to the words
    return re.sub(r"(\*\*|__|`)", "", text).strip()


def front_matter_end(lines: list[str]) -> int:
    """Index of the first line after a leading YAML front matter block (0 when there is none)."""
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                return i + 1
    return 0


def parse_sections(path: str, text: str) -> list[Section]:
    """Split one Markdown file into sections, one per heading (plus the preamble, if it has text).

    Headings inside fenced code blocks and YAML front matter are ignored; ATX (``## x``) and setext
    (underlined) headings are recognised. A heading that repeats within the file gets ``-2``, ``-3``
    ... in document order, as GitHub anchors do. CJK headings are kept exactly as written.
    """
    lines = text.splitlines()
    start = front_matter_end(lines)
    heads: list[tuple[int, int, str]] = []  # (line index, level, heading)
    fence: str | None = None
    for i in range(start, len(lines)):
        line = lines[i]
        m = _FENCE.match(line)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
            continue
        if fence is not None:
            continue
        m = _ATX.match(line)
        if m:
            heading = _clean_heading(m.group(2) or "")
            if heading:
                heads.append((i, len(m.group(1)), heading))
            continue
        m = _SETEXT.match(line)
        if m and i > start and lines[i - 1].strip() and not (heads and heads[-1][0] == i - 1):
            prev = lines[i - 1]
            if (
                not _ATX.match(prev)
                and not _FENCE.match(prev)
                and not prev.lstrip().startswith(("-", "*", ">"))
            ):
                heads.append((i - 1, 1 if m.group(1)[0] == "=" else 2, _clean_heading(prev)))

    sections: list[Section] = []
    first = heads[0][0] if heads else len(lines)
    preamble = "\n".join(lines[start:first]).strip()
    if preamble:
        sections.append(Section(path, path, "", 0, preamble, start + 1, first))

    seen: dict[str, int] = {}
    taken: set[str] = set()
    stack: list[tuple[int, str]] = []
    for n, (i, level, heading) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        anchor = heading
        if anchor in taken:
            count = seen.get(heading, 1)
            while anchor in taken:
                count += 1
                anchor = f"{heading}-{count}"
            seen[heading] = count
        taken.add(anchor)
        while stack and stack[-1][0] >= level:
            stack.pop()
        body = "\n".join(lines[i:end]).rstrip()
        sections.append(
            Section(
                f"{path}#{anchor}",
                path,
                heading,
                level,
                body,
                i + 1,
                max(i + 1, end),
                tuple(h for _, h in stack),
            )
        )
        stack.append((level, heading))
    return sections


def normalize_path(path: str) -> str:
    """A file path as references spell it: forward slashes, no leading ``./`` (``.github`` stays)."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def slug(text: str) -> str:
    """A forgiving form of a heading for matching citations: case-folded, NFKC, punctuation dropped."""
    text = unicodedata.normalize("NFKC", text).casefold().strip()
    text = re.sub(r"[\s_]+", "-", text)
    return re.sub(r"[^\w\-]", "", text)


def resolve_ref(sections: Iterable[Section], ref: str) -> Section | None:
    """The section a citation points at, or None.

    Exact references win; then, within the same file, a heading that matches case-insensitively or by
    its slug (so ``SKILL.md#fast-system`` finds ``SKILL.md#Fast system``). A bare file path resolves
    to that file's first section.
    """
    sections = list(sections)
    ref = ref.strip()
    for s in sections:
        if s.ref == ref:
            return s
    ref = normalize_path(ref)
    # A file name may itself hold '#': split after the longest known path rather than at the first '#'.
    paths = sorted({s.path for s in sections}, key=len, reverse=True)
    path = next((p for p in paths if ref == p or ref.startswith(p + "#")), None)
    if path is None:
        path = ref.partition("#")[0]
    anchor = ref[len(path) + 1 :]
    in_file = [s for s in sections if s.path == path]
    if not in_file:
        return None
    if not anchor:
        return in_file[0]
    wanted = slug(anchor)
    for s in in_file:
        if s.level and slug(s.ref.partition("#")[2]) == wanted:
            return s
    for s in in_file:
        if s.level and slug(s.heading) == wanted:
            return s
    return None
