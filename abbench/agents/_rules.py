"""The rule convention the builtin agent reads in a skill: which headings and bullets name which label.

A skill is a set of Markdown files; the builtin agent turns it into *rules*, each a piece of text that
points at one label. The convention (documented for skill authors in the README and in `_builtin`):

* **Labels and aliases.** The labels are the dataset's label set (``task.label_set``). A skill may give
  each label aliases in the SKILL.md front matter, so its prose can use its own words::

      labels:
        fast: [快系统, 快速通道]
        slow: 慢系统

  A label always matches its own name, case-insensitively, with ``_``/``-`` read as spaces
  (``card_arrival`` matches "Card arrival"). Without a label set, the front matter's labels are used,
  and failing that the targets of explicit arrows in the skill.
* **Explicit rules.** A bullet, table row or line that names a label after an arrow or a marker is a rule
  for that label: ``- 打开/关闭空调 → fast``, ``-> slow``, ``=> 快系统``, ``label: slow``,
  ``路由：慢系统``, or a trailing ``(fast)``/``（快系统）``. A table row with one cell that is a label is a
  rule for it, the other cells being its text.
* **Sections under a label.** A heading *about* a label (``## fast``, ``## 快系统能做``,
  ``### 交给慢系统的请求``, ``### card_arrival``: it opens with the label, or says little else besides
  words like 能做/不支持/的请求/can do/cases) makes every bullet and paragraph below it, down to the next
  heading of the same or a higher level, a rule for that label. A title that merely contains a label
  (``# 车载助手快慢系统路由``) labels nothing. A heading that says the label *cannot* do something
  (``## 快系统不能做``, ``### Not supported``, ``### 不能做`` under ``## fast``) makes them rules *against*
  it: with two labels they point at the other one; with more they count against it.
* **Exceptions.** Rules in a "cannot do" section (also ``## 快系统不能做（→ slow）``) narrow a "can do"
  list: when one matches about as well as a "can do" rule, the exception wins.
* **Trigger phrases.** A phrase quoted in a rule (``"为什么"``, ``“到机场要多久”``, ``「哪个好」``) is a
  trigger: a case whose input contains it matches the rule strongly, whatever else it says. ``……`` or
  ``...`` inside a quoted phrase stands for any words (``"如果……就……"``).
* **Priority.** Rules under a heading that says 优先/例外/override/exception/always, or a bullet that
  opens with 优先/例外/Exception, are read first: when the input contains one of their trigger phrases,
  they decide and ordinary rules are not consulted. Without a trigger in the input they vote like any rule.
* **Default.** A rule whose text says 默认/不确定/其他情况/default/otherwise/when in doubt (``- 不确定时
  → slow``) is the default: it decides when no rule matches the case; it is never matched by words.

A rule votes only when it shares enough with what was said (about one distinctive word or character
pair; the vehicle state or other context refines a match but never makes one). Anything else (prose
without a label, examples in code blocks) is context: it still counts when sections are ranked, but it
does not vote for a label. `extract_rules` shows how a skill is read.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from abbench.agents._lexical import cjk_share, normalize
from abbench.snapshot import Snapshot
from abbench.types import Section

log = logging.getLogger(__name__)

_ARROW = r"(?:→|->|=>|⇒|➜|➔|⟶|⇨)"
_MARKER = r"(?:label|route|intent|category|class|标签|路由|意图|类别|分类|判为|归为|归入|交给|转给)"
_NEGATION = re.compile(
    r"不能|不可以|不支持|无法|不会|不处理|不属于|不包括|不归|做不了|处理不了|办不到|超出|之外|以外|"
    r"\bcannot\b|\bcan't\b|\bcan not\b|\bnot\b|\bunsupported\b|\bout of scope\b|\bnever\b|\bexclud",
    re.IGNORECASE,
)
_PRIORITY = re.compile(
    r"优先|例外|特例|先看|最高|\boverride|\bexception|\bpriority\b|\balways\b", re.IGNORECASE
)
_DEFAULT = re.compile(
    r"默认|兜底|不确定|拿不准|无法判断|判断不了|其余|其他情况|其它情况|"
    r"\bdefault\b|\botherwise\b|\bfallback\b|\bwhen in doubt\b|\bunsure\b|\buncertain\b",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*\S)\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_QUOTED = re.compile(
    r'"([^"\n]{1,40})"|“([^”\n]{1,40})”|「([^」\n]{1,40})」|『([^』\n]{1,40})』|‘([^’\n]{1,40})’'
)
_TARGET_WORD = re.compile(r"[`'\"「『*_\s]*([A-Za-z0-9][\w\-]*|[\u3400-\u9fff]+)")


@dataclass(frozen=True, slots=True)
class Rule:
    """One piece of skill text that points at (or away from) a label.

    Attributes:
        ref: The section the rule sits in (a snapshot reference, ``path#heading``).
        text: The rule's words, label markers removed; what a case is matched against.
        label: The label it points at.
        negated: True for "cannot do" rules: the case is *not* this label.
        priority: True when the rule overrides ordinary rules (see the convention).
        default: True for the default rule (used when nothing matches; never matched by words).
        line: 1-based line of the rule in its file.
        kind: ``bullet``, ``table``, ``line`` or ``paragraph``.
        phrases: Trigger phrases quoted in the rule, normalised (``……`` kept as written).
        exception: True for "cannot do" rules and rules under a heading that says what a label cannot do
            (``## 快系统不能做（→ slow）``): they narrow a "can do" list, so they win close calls.
    """

    ref: str
    text: str
    label: str
    negated: bool = False
    priority: bool = False
    default: bool = False
    line: int = 0
    kind: str = "bullet"
    phrases: tuple[str, ...] = ()
    exception: bool = False

    def triggered_by(self, text: str) -> str | None:
        """The first trigger phrase found in `text` (already normalised with `normalize`), or None."""
        for phrase in self.phrases:
            if _phrase_pattern(phrase).search(text):
                return phrase
        return None


@lru_cache(maxsize=4096)
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """A trigger phrase as a pattern: ``……`` (NFKC ``......``) stands for any words."""
    parts = [p.strip() for p in re.split(r"…+|\.{3,}", phrase) if p.strip()]
    if not parts:
        return re.compile(r"(?!)")  # never matches
    return re.compile(".*?".join(re.escape(p) for p in parts))


@dataclass(frozen=True)
class SkillRules:
    """The rules of one skill for one label set.

    Attributes:
        labels: The labels, in the label set's order.
        aliases: Each label's names as written in the skill (its own name first).
        rules: Every rule that can be matched, in document order.
        default: The default rule, if the skill declares one.
        language: ``zh`` when the skill is mostly written in Chinese, else ``en``.
    """

    labels: tuple[str, ...]
    aliases: dict[str, tuple[str, ...]]
    rules: tuple[Rule, ...]
    default: Rule | None
    language: str

    def alias(self, label: str) -> str:
        """The name the skill itself uses for `label` (its first alias, else the label)."""
        names = self.aliases.get(label, ())
        return names[1] if len(names) > 1 else label


def _front_matter_labels(front: dict[str, Any]) -> dict[str, list[str]]:
    raw = front.get("labels") if isinstance(front, dict) else None
    out: dict[str, list[str]] = {}
    if isinstance(raw, dict):
        for name, aliases in raw.items():
            if isinstance(aliases, str):
                aliases = [a.strip() for a in re.split(r"[,，、/]", aliases) if a.strip()]
            out[str(name)] = [str(a) for a in (aliases or [])]
    elif isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict):
                name = item.get("name") or item.get("label")
                if name is not None:
                    out[str(name)] = [str(a) for a in item.get("aliases") or []]
            elif item is not None:
                out[str(item)] = []
    return out


def _name_pattern(name: str) -> re.Pattern[str] | None:
    norm = normalize(name).strip()
    if not norm:
        return None
    parts = [re.escape(p) for p in re.split(r"[\s_\-]+", norm) if p]
    body = r"[\s_\-]+".join(parts)
    # Latin names must stand as words; CJK names are found inside text, as Chinese has no spaces.
    if re.match(r"[a-z0-9]", norm[0]):
        body = rf"(?<![a-z0-9]){body}"
    if re.match(r"[a-z0-9]", norm[-1]):
        body = rf"{body}(?![a-z0-9])"
    return re.compile(body)


class _Namer:
    """Finds label names and aliases in text."""

    def __init__(self, aliases: dict[str, tuple[str, ...]]):
        pairs = [(name, label) for label, names in aliases.items() for name in names]
        pairs.sort(key=lambda p: -len(p[0]))  # longest first, so "快系统" wins over "快"
        self._patterns = [(p, label) for name, label in pairs if (p := _name_pattern(name)) is not None]

    def mentions(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, label) of every non-overlapping mention in normalised `text`, in order."""
        norm = normalize(text)
        taken: list[tuple[int, int, str]] = []
        for pattern, label in self._patterns:
            for m in pattern.finditer(norm):
                if not any(m.start() < e and s < m.end() for s, e, _ in taken):
                    taken.append((m.start(), m.end(), label))
        return sorted(taken)

    def at(self, text: str) -> str | None:
        """The label named at the very start of `text` (after quotes/emphasis), if any."""
        norm = normalize(text)
        m = re.match(r"[`'\"「『*_\s]*", norm)
        offset = m.end() if m else 0
        for start, _end, label in self.mentions(norm):
            if start == offset:
                return label
        return None


def _explicit(text: str, namer: _Namer) -> tuple[str, str] | None:
    """(label, text without the marker) when `text` names its label explicitly."""
    for m in re.finditer(rf"{_ARROW}|{_MARKER}\s*[:：=]", text, re.IGNORECASE):
        label = namer.at(text[m.end() :])
        if label is not None:
            return label, _strip_marker(text, m.start())
    paren = re.search(r"[(（]\s*([^()（）]{1,40}?)\s*[)）][\s。.!！]*$", text)
    if paren:
        label = namer.at(paren.group(1))
        mentions = namer.mentions(paren.group(1))
        if label is not None and len(mentions) == 1 and mentions[0][1] >= len(paren.group(1).strip()) - 1:
            return label, text[: paren.start()].strip()
    return None


def _strip_marker(text: str, start: int) -> str:
    """`text` without the arrow and the label after it; words after the label are kept."""
    head = text[:start].rstrip(" ：:，,;；")
    tail = text[start:]
    m = re.match(rf"(?:{_ARROW}|{_MARKER}\s*[:：=])[`'\"「『*_\s]*[\w\-]+[`'\"」』*_]*", tail, re.IGNORECASE)
    rest = text[start + (m.end() if m else 0) :].strip(" ：:，,;；。")
    return f"{head} {rest}".strip() if rest else head


# Words a heading may add to a label without being about something else: what kind of list follows.
_LIST_WORDS = re.compile(
    r"不能做|不能处理|不支持|做不了|处理不了|不可以|不会|能做|能处理|可以做|可以处理|负责|支持|处理|交给|路由到|走|"
    r"的|请求|情况|场景|能力|清单|列表|范围|例子|示例|系统|"
    r"\b(?:can|cannot|can't|do|does|not|doesn't|handles?|supports?|supported|unsupported|route[ds]?|to|"
    r"when|the|a|system|requests?|cases?|examples?|list|capabilit(?:y|ies)|scope|out|of|in|label|intent|class)\b",
    re.IGNORECASE,
)


def _about_label(norm: str, found: list[tuple[int, int, str]]) -> bool:
    """Whether a heading that mentions a label is *about* it, not a title that happens to contain it.

    True when the heading opens with the label, or when, with the labels and the words that say what
    kind of list follows (能做, 不支持, 的请求, can do, cases ...) removed, at most four CJK characters
    or two words remain: ``## 快系统能做``, ``### 交给慢系统的请求``, ``## Card arrival`` are about a
    label; ``# 车载助手快慢系统路由`` is a title.
    """
    lead = re.match(r"[\s`'\"「『*_#\d.、)）(（]*", norm)
    if found[0][0] == (lead.end() if lead else 0):
        return True
    rest = norm
    for start, end, _ in reversed(found):
        rest = rest[:start] + " " + rest[end:]
    rest = _LIST_WORDS.sub(" ", rest)
    cjk = len(re.findall(r"[\u3400-\u9fff]", rest))
    words = len(re.findall(r"[a-z0-9]+", rest))
    return cjk <= 4 and words <= 2


def _heading_label(heading: str, namer: _Namer) -> tuple[str, bool] | bool | None:
    """What a heading says about labels: (label, negated); None when silent; False when ambiguous."""
    explicit = _explicit(heading, namer)
    if explicit:
        return explicit[0], False
    found = namer.mentions(heading)
    norm = normalize(heading)
    if not found or not _about_label(norm, found):
        return None
    verdicts: dict[str, bool] = {}
    for start, end, label in found:
        window = norm[max(0, start - 4) : end + 8]
        negated = bool(_NEGATION.search(window))
        verdicts[label] = verdicts.get(label, True) and negated
    positive = [label for label, neg in verdicts.items() if not neg]
    if len(verdicts) == 1:
        label, negated = next(iter(verdicts.items()))
        return label, negated
    if len(positive) == 1:
        return positive[0], False  # "快系统做不了、交给慢系统": the one not negated
    return False


def _section_labels(
    sections: Sequence[Section], namer: _Namer
) -> dict[str, tuple[str | None, bool, bool, bool]]:
    """Per section ref: (label, negated, priority, default) inherited down the heading tree."""
    out: dict[str, tuple[str | None, bool, bool, bool]] = {}
    stack: list[tuple[int, str | None, bool, bool, bool]] = []  # level, label, negated, priority, default
    for s in sections:
        if s.level == 0:
            out[s.ref] = (None, False, False, False)
            continue
        while stack and stack[-1][0] >= s.level:
            stack.pop()
        label, negated, priority, default = stack[-1][1:] if stack else (None, False, False, False)
        said = _heading_label(s.heading, namer)
        if said is False:
            label, negated = None, False
        elif isinstance(said, tuple):
            label, negated = said
        elif _NEGATION.search(normalize(s.heading)) and label is not None:
            negated = not negated  # "### 不能做" under "## fast"
        priority = priority or bool(_PRIORITY.search(s.heading))
        default = default or bool(_DEFAULT.search(s.heading))
        stack.append((s.level, label, negated, priority, default))
        out[s.ref] = (label, negated, priority, default)
    return out


def _clean(text: str) -> str:
    text = re.sub(r"(\*\*|__|`)", "", text)
    return re.sub(r"\s+", " ", text).strip(" -—:：")


def _section_rules(
    s: Section, inherited: tuple[str | None, bool, bool, bool], namer: _Namer
) -> Iterable[Rule]:
    label, negated, priority, default = inherited
    under_negation = any(_NEGATION.search(normalize(h)) for h in (*s.parents, s.heading))
    lines = s.text.splitlines()[1:] if s.level else s.text.splitlines()
    first_line = s.start_line + (1 if s.level else 0)
    bullets: list[tuple[int, str | None, bool]] = []  # indent, label, negated of enclosing bullets
    paragraph: list[str] = []
    fence = False
    for offset, raw in enumerate(lines):
        line_no = first_line + offset
        if _FENCE.match(raw):
            fence = not fence
            continue
        if fence or _HEADING.match(raw) or not raw.strip():
            continue
        stripped = raw.strip()
        if stripped.startswith("|"):
            rule = _table_rule(s, stripped, namer, priority, line_no)
            if rule is not None:
                yield replace(rule, exception=under_negation)
            continue
        m = _BULLET.match(raw)
        if m is None:
            explicit = _explicit(stripped, namer)
            if explicit:
                rule = _make(s, explicit[1], explicit[0], False, priority, default, line_no, "line", stripped)
                yield replace(rule, exception=under_negation)
            elif label is not None:
                paragraph.append(stripped)
            continue
        indent, body = len(m.group(1).replace("\t", "    ")), m.group(2)
        while bullets and bullets[-1][0] >= indent:
            bullets.pop()
        own_priority = priority or bool(re.match(r"[*_\s（(【\[]*(优先|例外|exception|override)", body, re.I))
        explicit = _explicit(body, namer)
        rule_label: str | None
        if explicit:
            rule_label, rule_negated, text = explicit[0], False, explicit[1]
        elif bullets and bullets[-1][1] is not None:
            rule_label, rule_negated, text = bullets[-1][1], bullets[-1][2], body
        else:
            rule_label, rule_negated, text = label, negated, body
        bullets.append((indent, rule_label, rule_negated))
        if rule_label is not None:
            rule = _make(s, text, rule_label, rule_negated, own_priority, default, line_no, "bullet", body)
            yield replace(rule, exception=rule_negated or (under_negation and not explicit))
    if paragraph and label is not None:
        text = " ".join(paragraph)
        rule = _make(s, text, label, negated, priority, default, first_line, "paragraph", text)
        yield replace(rule, exception=negated or under_negation)


def _table_rule(s: Section, row: str, namer: _Namer, priority: bool, line_no: int) -> Rule | None:
    cells = [c.strip() for c in row.strip("|").split("|")]
    if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
        return None
    hits = [(i, namer.at(c)) for i, c in enumerate(cells)]
    labelled = [(i, lab) for i, lab in hits if lab is not None and len(namer.mentions(cells[i])) == 1]
    labelled = [(i, lab) for i, lab in labelled if len(normalize(cells[i])) <= 24]
    if len(labelled) != 1:
        return None
    i, lab = labelled[0]
    text = " ".join(c for j, c in enumerate(cells) if j != i)
    return _make(s, text, lab, False, priority, False, line_no, "table", text)


def _make(
    s: Section,
    text: str,
    label: str,
    negated: bool,
    priority: bool,
    default: bool,
    line: int,
    kind: str,
    source: str,
) -> Rule:
    is_default = default or bool(_DEFAULT.search(source))
    phrases = tuple(
        dict.fromkeys(normalize(next(g for g in m.groups() if g)).strip() for m in _QUOTED.finditer(source))
    )
    return Rule(s.ref, _clean(text), label, negated, priority, is_default, line, kind, phrases)


def extract_rules(snapshot: Snapshot, label_set: Sequence[str] | None = None) -> SkillRules:
    """The rules a skill states for `label_set`, following the convention in this module's docstring.

    Args:
        snapshot: The skill.
        label_set: The dataset's labels; None to take them from the skill.

    Returns:
        The labels, their aliases, the rules and the default rule, if any.
    """
    sections = snapshot.sections
    declared = _front_matter_labels(snapshot.front_matter)
    if label_set:
        labels = tuple(label_set)
        by_fold = {normalize(k): v for k, v in declared.items()}
        unknown = [k for k in declared if normalize(k) not in {normalize(x) for x in labels}]
        if unknown:
            log.warning(
                "skill %s declares labels %s that are not in the label set %s; their aliases are ignored",
                snapshot.label,
                unknown,
                list(labels),
            )
        aliases = {lab: (lab, *by_fold.get(normalize(lab), [])) for lab in labels}
    elif declared:
        labels = tuple(declared)
        aliases = {lab: (lab, *declared[lab]) for lab in labels}
    else:
        labels = _arrow_targets(sections)
        aliases = {lab: (lab,) for lab in labels}
    namer = _Namer(aliases)
    inherited = _section_labels(sections, namer)
    rules: list[Rule] = []
    default: Rule | None = None
    for s in sections:
        for rule in _section_rules(s, inherited[s.ref], namer):
            if rule.default and not rule.negated:
                default = default or rule
            elif rule.text:
                rules.append(rule)
    text = "\n".join(s.text for s in sections)
    language = "zh" if cjk_share(text) >= 0.2 else "en"
    return SkillRules(labels, aliases, tuple(rules), default, language)


def _arrow_targets(sections: Sequence[Section]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for s in sections:
        for m in re.finditer(rf"{_ARROW}|{_MARKER}\s*[:：=]", s.text, re.IGNORECASE):
            w = _TARGET_WORD.match(s.text[m.end() :])
            if w:
                seen.setdefault(w.group(1).strip("*_`"), None)
    return tuple(seen)
