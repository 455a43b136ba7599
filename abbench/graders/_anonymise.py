"""Masking what would tell a judge whose output it reads: model, provider, skill and arm names, paths, hashes, self-references.

A blind judge is only blind if the outputs do not name their source. Agents do, in many ways: "As
Claude, I…", "I'm GPT-4", "作为通义千问…", a closing "— ChatGPT", a path under the skill's snapshot
folder, a snapshot hash, the skill's name. `Anonymiser` removes these in a fixed order — whole
self-identifying phrases and signature lines first, then names, then paths and hashes — and counts
what it masked, so a grade can record that it happened without keeping the names.

Names that the case's own input contains are kept (an answer comparing "ChatGPT and Claude" because
the question asked about them is content, not a signature); self-identifying phrases are masked anyway.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from abbench._regex import compile_pattern

DEFAULT_IDENTITIES: tuple[str, ...] = (
    # Anthropic
    r"claude(?:[\s-]*(?:\d+(?:\.\d+)*|opus|sonnet|haiku|instant))*",
    r"anthropic",
    # OpenAI
    r"chat-?gpt",
    r"gpt(?:[\s-]?\d(?:\.\d+)?(?:[\s-]?(?:o|turbo|mini|nano|pro|preview))*)?",
    r"open\s?ai",
    # Google, Meta, Mistral, Microsoft, xAI
    r"gemini(?:[\s-]*(?:\d+(?:\.\d+)*|pro|flash|ultra|nano))*",
    r"bard",
    r"(?:google\s+)?deepmind",
    r"gemma[\s-]?\d*",
    r"llama[\s-]?\d*(?:\.\d+)?",
    r"meta\s+ai",
    r"mistral(?:[\s-]*(?:large|medium|small|\d+b))*",
    r"mixtral",
    r"codestral",
    r"copilot",
    r"grok[\s-]?\d*",
    # Chinese models and providers
    r"qwen[\w.:-]*",
    r"通义千问",
    r"通义",
    r"千问",
    r"tongyi(?:\s*qianwen)?",
    r"deepseek[\w.-]*",
    r"深度求索",
    r"kimi",
    r"moonshot(?:\s*ai)?",
    r"月之暗面",
    r"chatglm[\w.-]*",
    r"glm-\d[\w.-]*",
    r"智谱(?:清言|ai)?",
    r"zhipu(?:\s*ai)?",
    r"文心一言",
    r"文心",
    r"ernie(?:[\s-]*bot)?(?:[\s-]*\d+(?:\.\d+)*)?",
    r"豆包",
    r"doubao[\w.-]*",
    r"混元",
    r"hunyuan[\w.-]*",
    r"讯飞星火",
    r"星火大模型",
    r"minimax",
    r"零一万物",
    r"baichuan[\w.-]*",
    r"百川(?:大模型)?",
)
"""Names of models, assistants and providers masked by default (regular expressions, case-insensitive)."""

GENERIC_ARM_NAMES = frozenset(
    {"a", "b", "c", "base", "baseline", "candidate", "control", "treatment", "default", "new", "old", "test"}
)
"""Arm names too common to mask: masking "control" would also mask it in "车辆 control 模式"."""

PLACEHOLDER = "[redacted]"
PATH_PLACEHOLDER = "[path]"
HASH_PLACEHOLDER = "[hash]"
SELF_PLACEHOLDER = "[self-reference]"

_ID = "\x00{}\x00"  # names become numbered markers first, so phrases around them can be found
_MARK = re.compile("\x00(\\d+)\x00")
# An ASCII name stands as a word: no ASCII letter or digit right before or after it. RE2 has no
# lookaround, so the edges are matched (a non-alphanumeric character, or the text's start or end) and
# the name is group 1.
_EDGED = r"(?:\A|[^A-Za-z0-9])({})(?:[^A-Za-z0-9]|\Z)"


class _Names:
    """Finds names as one alternation of `re` would (leftmost; at one place, the first alternative that
    matches), each alternative a user's pattern on RE2 (`abbench._regex`), so none can backtrack."""

    def __init__(self, alternatives: Sequence[tuple[str, bool]]):
        self._patterns = [
            compile_pattern(_EDGED.format(p) if edged else f"({p})", re.IGNORECASE)
            for p, edged in alternatives
        ]

    def _next(self, k: int, text: str, pos: int) -> tuple[int, int] | None:
        """The span of alternative `k`'s first non-empty name starting at `pos` or later."""
        start = max(pos - 1, 0)  # the character before `pos` may be the edge in front of the name
        while start <= len(text):
            m = self._patterns[k].search(text, start)
            if m is None:
                return None
            s, e = m.span(1)
            if s >= pos and e > s:
                return s, e
            start = m.start() + 1
        return None

    def sub(self, repl: Callable[[str], str], text: str) -> str:
        """`text` with each name replaced by ``repl(name)``."""
        out: list[str] = []
        pos = 0
        ahead: list[tuple[int, int] | None] = [(-1, -1)] * len(self._patterns)
        while True:
            for k, found in enumerate(ahead):
                if found is not None and found[0] < pos:
                    ahead[k] = self._next(k, text, pos)
            spans = [(f[0], k, f[1]) for k, f in enumerate(ahead) if f is not None]
            if not spans:
                break
            s, _, e = min(spans)
            out += [text[pos:s], repl(text[s:e])]
            pos = e
        out.append(text[pos:])
        return "".join(out)


_EN_INTRO = (
    r"(?:\bas|\bi\s+am|\bi['’]m|\bim|\bthis\s+is|\bspeaking\s+as|\bmy\s+name\s+is|\bi\s+was\s+"
    r"(?:created|trained|developed|built|made)\s+by|\b(?:created|trained|developed|built|made|powered|"
    r"generated|written|answered|provided)\s+(?:by|with))"
)
_EN_FILLER = (
    r"(?:\s+(?:an?|the|your))?(?:\s+(?:ai|helpful|large|language|model|assistant|chatbot|llm|called|named))*"
)
_ZH_INTRO = r"(?:作为|我是|我叫|本人是|这里是|由)"
_ZH_FILLER = r"(?:一个|一款|一名|一位|您的|你的)?(?:由)?"
_ZH_TAIL = r"(?:开发|训练|打造|推出|研发|生成|提供|回答|撰写)?(?:的)?(?:AI|人工智能|智能|语言|大)?(?:模型|助手|大模型)?"
# who made "me", whether or not the maker is a known name: "I was trained by Acme AI", "我是由某公司开发的助手"
_EN_ORIGIN = (  # the maker is the capitalised words after "by"
    r"(?i:\b(?:i\s+was|i\s+am|i['’]m|i\s+have\s+been)\s+(?:an?\s+)?(?:[\w-]+\s+){0,3}?"
    r"(?:created|trained|developed|built|made)\s+by\s+(?:the\s+)?)[A-Z][\w&-]*(?:\s+[A-Z][\w&-]*)*"
)
_ZH_ORIGIN = (
    r"(?:我是由|我是|我由|本模型由|(?<=\[self-reference\])[，,]?\s*由)[^，。,.!！？?\n]{0,16}?"
    r"(?:开发|训练|打造|推出|研发)(?:的)?(?:AI|人工智能|智能|语言)?(?:模型|助手|大模型)?"
)
_SIGN_PREFIX = r"(?:[-—–~_*]+\s*|(?:signed|regards|best|cheers|sincerely|yours)[,:]?\s*|署名[:：]?\s*)"

_PATH_CHARS = r"[^\s/\\\"'`()\[\]<>{},;，；、。：:]"
_ANCHOR = (
    r"(?:#[^\s,;，；、)\]\"'`]*[^\s,;，；、)\]\"'`.。!?！？:：])?"  # a trailing full stop is not part of it
)
_PATTERNS_PATHS = (
    re.compile(r"\b[A-Za-z]:\\(?:[^\\\s\"'`<>]+\\)*[^\\\s\"'`<>]*"),  # C:\Users\me\skill\x.md
    re.compile(r"(?<![\w.~/:])~?(?:/" + _PATH_CHARS + r"+){2,}/?"),  # /home/me/skills/x, ~/a/b
    re.compile(r"(?<![\w/])(?:" + _PATH_CHARS + r"+/)+" + _PATH_CHARS + r"+\.[A-Za-z]{1,8}\b" + _ANCHOR),
    re.compile(
        r"(?<![\w/.])[\w\-\u4e00-\u9fff]+\.(?:md|markdown|mdx|txt|json|jsonl|ya?ml|py|csv|tsv|xlsx|ipynb)\b"
        + _ANCHOR,
        re.I,
    ),
)
_ORIGINS_EN = re.compile(_EN_ORIGIN)
_ORIGINS_ZH = re.compile(_ZH_ORIGIN, re.I)
_HASH = re.compile(r"(?<![0-9A-Za-z])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{12,64}(?![0-9A-Za-z])", re.I)


@dataclass(frozen=True)
class Anonymised:
    """Text with its source masked, and what was masked.

    Attributes:
        text: The masked text.
        masked: How many of each kind were masked: ``self_references``, ``signatures``, ``names``,
            ``paths``, ``hashes`` (kinds with none are left out).
    """

    text: str
    masked: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """How many things were masked in all."""
        return sum(self.masked.values())


@dataclass(frozen=True)
class Anonymiser:
    """Masks the source of an output before a judge reads it.

    Args:
        terms: Plain names to mask too (arm, skill and model names of the experiment; your own list),
            matched case-insensitively; ASCII names only as whole words.
        patterns: Regular expressions to mask too (case-insensitive).
        identities: The model, assistant and provider names to mask (regular expressions); default
            `DEFAULT_IDENTITIES`. Give ``()`` to mask only `terms` and `patterns`.
        mask_paths: Mask file paths (absolute, home, Windows, and relative paths of files such as
            ``knowledge/车控.md#空调`` or ``SKILL.md#Rules``).
        mask_hashes: Mask hexadecimal hashes of 12 or more digits (snapshot hashes, commits).
        placeholder: What a masked name becomes.
    """

    terms: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    identities: tuple[str, ...] = DEFAULT_IDENTITIES
    mask_paths: bool = True
    mask_hashes: bool = True
    placeholder: str = PLACEHOLDER

    def with_terms(self, terms: Iterable[str | None]) -> Anonymiser:
        """A copy that also masks `terms` (empty and duplicate ones dropped)."""
        extra = [t.strip() for t in terms if t and t.strip() and t.strip() not in self.terms]
        return replace(self, terms=(*self.terms, *dict.fromkeys(extra)))

    @cached_property
    def _names(self) -> _Names | None:
        alternatives = [(re.escape(t), t.isascii()) for t in sorted(self.terms, key=len, reverse=True)]
        alternatives += [(f"(?:{p})", True) for p in (*self.patterns, *self.identities)]
        return _Names(alternatives) if alternatives else None

    def anonymise(self, text: str | None, *, keep: str | None = None) -> Anonymised:
        """Mask `text`.

        Args:
            text: An output (answer, reason ...).
            keep: Text whose names stay unmasked where they appear in `text` (the case's input):
                a name the question itself uses is content. Self-identifying phrases are masked anyway.
        """
        if not text:
            return Anonymised(text or "")
        counts: Counter[str] = Counter()
        found: list[str] = []
        kept = (keep or "").casefold()

        # 1. names -> numbered markers, so that the phrases around them can be recognised
        def mark(name: str) -> str:
            found.append(name)
            return _ID.format(len(found) - 1)

        out = self._names.sub(mark, text) if self._names is not None else text
        if found:
            marker = "\x00\\d+\x00(?:[\\s-]*[\\w.]*\\d[\\w.]*)?"
            # 2. signature lines: "— Claude", "-- GPT-4o", "Signed, Qwen", "(Generated by ChatGPT)"
            sign = re.compile(
                r"^[ \t]*[(\[（]?" + _SIGN_PREFIX + r"?" + marker + r"[ \t]*[)\]）.!。]?[ \t]*$", re.M | re.I
            )
            out, n = sign.subn("", out)
            counts["signatures"] += n
            # 3. self-identifying phrases, English and Chinese
            phrases = (
                re.compile(_EN_INTRO + _EN_FILLER + r"\s+" + marker, re.I),
                re.compile(_ZH_INTRO + _ZH_FILLER + r"\s*" + marker + _ZH_TAIL),
            )
            for phrase in phrases:
                out, n = phrase.subn(SELF_PLACEHOLDER, out)
                counts["self_references"] += n

            # 4. the names left: masked unless the case's input uses them
            def unmark(match: re.Match[str]) -> str:
                name = found[int(match.group(1))]
                if kept and name.casefold() in kept:
                    return name
                counts["names"] += 1
                return self.placeholder

            out = _MARK.sub(unmark, out)
        for phrase in (_ORIGINS_EN, _ORIGINS_ZH):
            out, n = phrase.subn(SELF_PLACEHOLDER, out)
            counts["self_references"] += n
        out = re.sub(r"(?:\[self-reference\][，,]?\s*){2,}", SELF_PLACEHOLDER, out)
        # 5. paths and hashes
        if self.mask_paths:
            for pattern in _PATTERNS_PATHS:
                out, n = pattern.subn(PATH_PLACEHOLDER, out)
                counts["paths"] += n
        if self.mask_hashes:
            out, n = _HASH.subn(HASH_PLACEHOLDER, out)
            counts["hashes"] += n
        return Anonymised(out, {k: v for k, v in counts.items() if v})


def context_terms(
    *,
    arms: Sequence[str] = (),
    models: Sequence[str | None] = (),
    skills: Sequence[object | None] = (),
) -> list[str]:
    """The names of an experiment that would identify an output: arm names (unless generic, see
    `GENERIC_ARM_NAMES`), model ids, and each skill's name (with and without a version suffix),
    label, hashes and folders."""
    out: list[str] = []
    for arm in arms:
        if arm and len(arm) >= 3 and arm.casefold() not in GENERIC_ARM_NAMES:
            out.append(arm)
    out.extend(m for m in models if m)
    for skill in skills:
        if skill is None:
            continue
        name = getattr(skill, "skill_name", None)
        if name:
            out.append(name)
            base = re.sub(r"[-_@ ]?v?\d+(?:\.\d+)*$", "", name)
            if base != name and len(base) >= 6:
                out.append(base)
        for attr in ("label", "hash", "short", "root", "source_path"):
            value = getattr(skill, attr, None)
            if value:
                out.append(str(value).removesuffix(" (draft)"))
    return out
