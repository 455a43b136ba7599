"""How the builtin agent decides a case: rules ranked by BM25, their votes, the reason; the no-skill baseline.

What it does is described for users in `abbench.agents._builtin`'s docstring; this module turns a task
and a prepared skill (`_Index`) into a `_Decision`.
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from abbench._text import clip
from abbench.agents._base import Task
from abbench.agents._lexical import Bm25, cjk_share, count_cjk, normalize, query_terms, tokens
from abbench.agents._prompt import history_turns
from abbench.agents._rules import Rule, SkillRules, extract_rules
from abbench.snapshot import Snapshot

log = logging.getLogger(__name__)

# Weights of the parts of a case in the query: the input decides; history and context only help.
_W_INPUT = 1.0
_W_LAST_USER = 0.5
_W_HISTORY = 0.25
_W_CONTEXT = 0.4
# A rule's score is its own BM25 match plus this share of its section's (headings carry the topic).
_SECTION_SHARE = 0.3
# "Cannot do" rules are exceptions to what a label can do: when one matches about as well as a "can do"
# rule, the exception wins, as a narrower rule should.
_EXCEPTION_BOOST = 1.5
# A quoted trigger phrase found in the input adds its own information (weight × idf) once more, and
# counts as a match whatever its length.
_PHRASE_SHARE = 1.0
# A rule matches when it shares at least this much information (weight × idf) with the case, in units of
# the idf of a word found in a single rule: about one distinctive bigram or word, or a few characters.
# Below it, the default rule decides.
_MIN_MATCH = 0.67
# Temperature noise is relative to the best label score: scale × temperature × Gumbel.
_NOISE_SCALE = 0.2

_SIMPLE_NAMES = frozenset(
    [
        "fast",
        "quick",
        "simple",
        "easy",
        "short",
        "low",
        "basic",
        "shallow",
        "快",
        "快速",
        "快系统",
        "简单",
        "低",
    ]
)
_COMPLEX_NAMES = frozenset(
    [
        "slow",
        "complex",
        "hard",
        "difficult",
        "long",
        "high",
        "advanced",
        "reasoning",
        "deep",
        "慢",
        "慢速",
        "慢系统",
        "复杂",
        "困难",
        "高",
    ]
)
# Generic signs that a request needs reasoning or several steps (the baseline's only knowledge).
_MARKERS = re.compile(
    r"如果|假如|要是|并且|而且|同时|然后|再帮|顺便|比较|对比|还是|为什么|为啥|怎么办|建议|规划|计划|安排|"
    r"分析|推荐|哪个|哪家|哪里|是否|(.)不\1|"
    r"\b(?:if|and then|compare|why|plan|whether|should|which|recommend|explain)\b",
    re.IGNORECASE,
)
_BASELINE_UNITS = 16  # an input this long (CJK characters + words) counts as one complexity point


@dataclass(frozen=True)
class _Index:
    """A skill prepared for one label set: its rules and the two BM25 indexes."""

    skill: SkillRules
    sections: tuple[Any, ...]
    section_bm25: Bm25
    rule_bm25: Bm25
    section_pos: dict[str, int]
    _phrase_info: dict[str, float] = field(default_factory=dict)

    def phrase_information(self, phrase: str) -> float:
        """The information of a trigger phrase in the rule index (cached: phrases repeat across cases)."""
        found = self._phrase_info.get(phrase)
        if found is None:
            found = self._phrase_info[phrase] = self.rule_bm25.information(phrase.replace(".", " "))
        return found


@dataclass(frozen=True)
class _Decision:
    label: str
    reason: str
    confidence: float
    evidence: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    scores: dict[str, float] = field(default_factory=dict)


def _build_index(skill: Snapshot, labels: tuple[str, ...] | None) -> _Index:
    rules = extract_rules(skill, labels)
    sections = skill.sections
    section_texts = [" ".join([*s.parents, s.text]) for s in sections]
    index = _Index(
        skill=rules,
        sections=sections,
        section_bm25=Bm25.build(section_texts),
        rule_bm25=Bm25.build([r.text for r in rules.rules], b=0.5),
        section_pos={s.ref: i for i, s in enumerate(sections)},
    )
    log.debug(
        "builtin: %s gives %d rules for labels %s (default: %s)",
        skill.label,
        len(rules.rules),
        list(rules.labels),
        rules.default.text if rules.default else None,
    )
    return index


def _context_text(context: Any) -> str:
    """Context as words: JSON objects become ``key value`` pairs so rules can name state keys."""
    if context is None or context == "":
        return ""
    if isinstance(context, str):
        text = context
        try:
            context = json.loads(text)
        except ValueError:
            return text
    if isinstance(context, dict):
        parts = []
        for key, value in context.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            parts.append(f"{key} {_context_text(value) if isinstance(value, dict | list) else value}")
        return " ; ".join(parts)
    if isinstance(context, list):
        return " ; ".join(_context_text(v) for v in context)
    return str(context)


def _query(task: Task, with_context: bool = True) -> dict[str, float]:
    """The case as weighted terms: the input fully, the history and the context less."""
    case = task.case
    parts: list[tuple[str, float]] = [(case.input or "", _W_INPUT)]
    turns = history_turns(case.history, case_id=case.case_id)
    last_user = next((i for i in range(len(turns) - 1, -1, -1) if turns[i]["role"] == "user"), None)
    for i, turn in enumerate(turns):
        parts.append((turn["content"], _W_LAST_USER if i == last_user else _W_HISTORY))
    if with_context:
        parts.append((_context_text(case.context), _W_CONTEXT))
    return query_terms(parts)


def _decide(task: Task, index: _Index, rng: random.Random, temperature: float, top: int) -> _Decision:
    skill = index.skill
    query = _query(task)
    # the context refines a match but never makes one: a rule must share words with what was said
    spoken = _query(task, with_context=False)
    section_scores = index.section_bm25.scores(query)
    by_rule = index.rule_bm25.match(query)
    said = index.rule_bm25.match(spoken)
    text = normalize(task.case.input or "")
    min_match = _MIN_MATCH * index.rule_bm25.idf_single
    scored: list[tuple[float, Rule, int, bool]] = []
    for i, rule in enumerate(skill.rules):
        own = by_rule.scores[i]
        phrase = rule.triggered_by(text) if rule.phrases else None
        if phrase is not None:
            own += _PHRASE_SHARE * index.phrase_information(phrase)
        # a rule that shares too little with what was said does not vote (the context alone never will)
        if own <= 0 or (phrase is None and said.shared[i] < min_match):
            continue
        score = own + _SECTION_SHARE * section_scores[index.section_pos[rule.ref]]
        if rule.exception:
            score *= _EXCEPTION_BOOST
        scored.append((score, rule, i, rule.priority and phrase is not None))
    scored.sort(key=lambda x: (-x[0], x[2]))
    # a priority rule whose trigger phrase is in the input decides before any ordinary rule
    scored = [x for x in scored if x[3]] or scored
    ranked_sections = sorted(range(len(section_scores)), key=lambda i: (-section_scores[i], i))
    read_refs = [index.sections[i].ref for i in ranked_sections[:top] if section_scores[i] > 0]

    best = scored[0] if scored else None
    if best is None:
        if skill.default is not None:
            return _default_decision(task, skill, read_refs, rng, temperature)
        fallback = _baseline(
            task, skill.labels, rng, temperature, skill_language=skill.language, fallback=True
        )
        return _Decision(
            fallback.label,
            _say(skill.language, "no_match", base=fallback.reason),
            fallback.confidence,
            (),
            tuple(read_refs),
            fallback.scores,
        )

    label_scores, support = _label_scores(skill.labels, scored)
    noisy = dict(label_scores)
    if temperature > 0:
        scale = _NOISE_SCALE * temperature * max(0.0, *label_scores.values())
        for label in skill.labels:
            noisy[label] += scale * _gumbel(rng)
    order = sorted(skill.labels, key=lambda lab: (-noisy[lab], skill.labels.index(lab)))
    chosen, runner_up = order[0], (order[1] if len(order) > 1 else None)
    top_rule = support.get(chosen)
    if top_rule is None:  # noise lifted a label no rule supports: answer it, citing nothing new
        top_rule = scored[0][1]
    margin = _margin(noisy, chosen, runner_up)
    coverage = by_rule.coverage(best[2])
    confidence = _confidence(len(skill.labels), margin, coverage)
    evidence = _evidence(scored, chosen, top_rule, skill.labels)
    reason = _rule_reason(skill, top_rule, chosen, runner_up, support.get(runner_up) if runner_up else None)
    read = tuple(dict.fromkeys([*evidence, *read_refs]))
    return _Decision(chosen, reason, confidence, evidence, read, {k: round(v, 4) for k, v in noisy.items()})


def _label_scores(
    labels: Sequence[str], scored: list[tuple[float, Rule, int, bool]]
) -> tuple[dict[str, float], dict[str, Rule]]:
    """Each label's score (best rule + a quarter of the second) and the rule that gives it."""
    per_label: dict[str, list[tuple[float, Rule]]] = {lab: [] for lab in labels}
    against: dict[str, float] = dict.fromkeys(labels, 0.0)
    for score, rule, *_ in scored:
        if rule.label not in per_label:
            continue
        if not rule.negated:
            per_label[rule.label].append((score, rule))
        elif len(labels) == 2:  # "fast cannot do this" is "slow" when there are two labels
            other = labels[1] if rule.label == labels[0] else labels[0]
            per_label[other].append((score, rule))
        else:
            against[rule.label] = max(against[rule.label], score)
    totals: dict[str, float] = {}
    support: dict[str, Rule] = {}
    for lab, items in per_label.items():
        if items:
            second = items[1][0] if len(items) > 1 else 0.0
            totals[lab] = items[0][0] + 0.25 * second - against[lab]
            support[lab] = items[0][1]
        else:
            totals[lab] = -against[lab]
    return totals, support


def _gumbel(rng: random.Random) -> float:
    return -math.log(-math.log(rng.random() or 1e-12) or 1e-12)


def _margin(scores: dict[str, float], chosen: str, runner_up: str | None) -> float:
    top = scores[chosen]
    if runner_up is None or top <= 0:
        return 1.0
    return max(0.0, min(1.0, (top - max(scores[runner_up], 0.0)) / top))


def _confidence(n_labels: int, margin: float, coverage: float) -> float:
    floor = 1.0 / max(n_labels, 2)
    strength = min(1.0, coverage / 0.5) ** 0.5
    confidence: float = round(floor + (0.97 - floor) * (margin**0.7) * strength, 3)
    return confidence


def _evidence(
    scored: list[tuple[float, Rule, int, bool]], chosen: str, top_rule: Rule, labels: Sequence[str]
) -> tuple[str, ...]:
    refs = [top_rule.ref]
    for _, rule, *_ in scored[:8]:
        points = rule.label if not rule.negated else None
        if rule.negated and len(labels) == 2:
            points = labels[1] if rule.label == labels[0] else labels[0]
        if points == chosen and rule.ref not in refs:
            refs.append(rule.ref)
            break
    return tuple(refs)


def _default_decision(
    task: Task, skill: SkillRules, read_refs: list[str], rng: random.Random, temperature: float
) -> _Decision:
    rule = skill.default
    assert rule is not None
    label = rule.label
    confidence = round(1.0 / len(skill.labels) + 0.1, 3) if len(skill.labels) > 1 else 0.6
    if temperature > 0 and len(skill.labels) > 1 and rng.random() < 0.15 * temperature:
        # a close call by definition: nothing matched, so noise may pick another label
        label = rng.choice([lab for lab in skill.labels if lab != rule.label])
        reason = _say(skill.language, "default_overridden", ref=rule.ref, text=rule.text, label=label)
    else:
        reason = _say(skill.language, "default", ref=rule.ref, text=rule.text, label=label)
    return _Decision(label, reason, confidence, (rule.ref,), tuple(dict.fromkeys([rule.ref, *read_refs])))


def _rule_reason(
    skill: SkillRules, rule: Rule, chosen: str, runner_up: str | None, runner_rule: Rule | None
) -> str:
    lang = skill.language
    if rule.negated:
        text = _say(
            lang, "negated", ref=rule.ref, text=rule.text, other=skill.alias(rule.label), label=chosen
        )
    elif rule.label == chosen:
        text = _say(lang, "rule", ref=rule.ref, text=rule.text, label=chosen)
    else:
        text = _say(lang, "close", ref=rule.ref, text=rule.text, rule_label=rule.label, label=chosen)
    if runner_up is not None and runner_rule is not None:
        text += _say(lang, "runner_up", label=runner_up, ref=runner_rule.ref, text=_short(runner_rule.text))
    return text


def _short(text: str, limit: int = 40) -> str:
    return clip(text, limit)


_PHRASES = {
    "zh": {
        "rule": "依据 {ref} 的规则「{text}」，判为 {label}。",
        "negated": "依据 {ref}：「{text}」属于{other}不能处理的情况，因此判为 {label}。",
        "close": "最接近的规则是 {ref} 的「{text}」（{rule_label}），但综合各条规则的得分判为 {label}。",
        "runner_up": "次优是 {label}（{ref}「{text}」）。",
        "default": "没有与请求明显匹配的规则，按 {ref} 的默认规则「{text}」判为 {label}。",
        "default_overridden": "没有与请求明显匹配的规则；默认规则是「{text}」（{ref}），但这次判为 {label}。",
        "no_match": "技能中没有与请求明显匹配的规则，也没有默认规则，改用朴素基线：{base}",
    },
    "en": {
        "rule": 'Rule "{text}" in {ref} says {label}.',
        "negated": '{ref}: "{text}" is something {other} cannot do, so {label}.',
        "close": 'The closest rule is "{text}" in {ref} ({rule_label}), but the rules together favour {label}.',
        "runner_up": ' Runner-up: {label} ({ref}: "{text}").',
        "default": 'No rule matches the request; the default rule "{text}" in {ref} says {label}.',
        "default_overridden": 'No rule matches the request; the default is "{text}" ({ref}), but this time {label}.',
        "no_match": "No rule of the skill matches the request and it has no default rule, so the naive baseline decides: {base}",
    },
}


def _say(language: str, key: str, **values: Any) -> str:
    return _PHRASES.get(language, _PHRASES["en"])[key].format(**values)


def _baseline(
    task: Task,
    labels: Sequence[str],
    rng: random.Random,
    temperature: float,
    skill_language: str | None,
    *,
    fallback: bool = False,
) -> _Decision:
    """The naive no-skill answer (see the docstring of `abbench.agents._builtin`).

    `fallback`: a skill was given but no rule of it matched; the reason then leaves out "no skill"
    (the caller says the skill had no matching rule).
    """
    text = task.case.input or ""
    language = skill_language or ("zh" if cjk_share(text) >= 0.2 else "en")
    lead = (
        "" if fallback else ("未使用技能，朴素基线：" if language == "zh" else "No skill; naive baseline: ")
    )
    pair = _simple_complex(labels)
    if pair is not None:
        simple, complex_ = pair
        units = count_cjk(text) + len(re.findall(r"[A-Za-z]+|\d+", text))
        markers = [m.group(0) for m in _MARKERS.finditer(text)]
        points = (
            units / _BASELINE_UNITS
            + 0.6 * len(markers)
            + (0.2 if history_turns(task.case.history, case_id=task.case.case_id) else 0.0)
        )
        if temperature > 0:
            points += _NOISE_SCALE * temperature * _gumbel(rng) * 0.5
        label = complex_ if points >= 1.0 else simple
        confidence = round(min(0.8, 0.5 + 0.3 * abs(points - 1.0)), 3)
        if language == "zh":
            why = f"输入 {units} 个字/词" + (
                f"，含推理或多步标志「{'、'.join(markers[:3])}」" if markers else "，无推理或多步标志"
            )
            reason = f"{lead}{why}，判为 {label}。"
        else:
            why = f"{units} characters/words" + (
                f", markers {', '.join(markers[:3])}" if markers else ", no reasoning markers"
            )
            reason = f"{lead}the input has {why}, so {label}."
        return _Decision(label, reason, confidence, scores={simple: 1.0 - points, complex_: points})
    query = {t for t, _ in tokens(text)}
    overlaps = []
    for lab in labels:
        words = {t for t, _ in tokens(re.sub(r"[_\-]+", " ", lab))}
        overlaps.append(len(words & query))
    best = max(overlaps) if overlaps else 0
    if best > 0:
        candidates = [lab for lab, n in zip(labels, overlaps, strict=True) if n == best]
        label = candidates[0] if temperature <= 0 else candidates[rng.randrange(len(candidates))]
        reason = (
            f"{lead}标签名与输入重合 {best} 个词，判为 {label}。"
            if language == "zh"
            else f"{lead}the label name shares {best} word(s) with the input, so {label}."
        )
        confidence = round(min(0.6, 1.0 / len(labels) + 0.1 * best), 3)
    else:
        label = labels[0]
        reason = (
            f"{lead}输入与任何标签名都不重合，取第一个标签 {label}。"
            if language == "zh"
            else f"{lead}no label name overlaps the input, so the first label, {label}."
        )
        confidence = round(1.0 / len(labels), 3)
    return _Decision(label, reason, confidence)


def _simple_complex(labels: Sequence[str]) -> tuple[str, str] | None:
    if len(labels) != 2:
        return None
    a, b = (normalize(x).strip() for x in labels)
    if a in _SIMPLE_NAMES and b in _COMPLEX_NAMES:
        return labels[0], labels[1]
    if b in _SIMPLE_NAMES and a in _COMPLEX_NAMES:
        return labels[1], labels[0]
    return None
