"""The blind pairwise judge: two arms' answers to the same case and round, anonymised, in a seeded random order.

Judges prefer answers by their position (often the first), their length and the name behind them.
`pairwise_judge` removes what it can: both answers are anonymised (`Anonymiser`), the slot order is
drawn per pair from a recorded seed (derived from the experiment's seed, the case and the round, so
a re-grade shows the judge the same order), and with ``both_orders`` the pair is judged twice, once
in each order — a verdict that flips with the order is a tie. What it cannot remove it records:
every single judgement's slot order and winner go into the grade's ``details``, from which
`abbench.metrics.position_bias` measures how often the first slot wins.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Unpack

from abbench._regex import PatternError, compile_pattern
from abbench.agents import strip_thinking
from abbench.errors import GradingError, UsageError
from abbench.graders._anonymise import DEFAULT_IDENTITIES, Anonymiser, context_terms
from abbench.graders._base import GradeResult, PairContext, normalise_label, register_grader
from abbench.graders._judge import match_scores, reply_candidates
from abbench.graders._judge_prompt import (
    answer_text,
    case_block,
    check_include,
    check_output_format,
    system_prompt,
)
from abbench.graders._judge_settings import JudgeOptions, JudgeSettings, JudgeSpend
from abbench.graders._pair_reply import free_text_winner, plan_scores, winner_tag
from abbench.graders._rubric import Rubric, judge_key

if TYPE_CHECKING:
    from abbench.llm import ChatResponse

VERDICTS = ("a", "b", "tie")
"""A pairwise verdict, in arm terms: the grader's first arm won, its second, or neither."""

_WINNER_KEYS = (
    "winner",
    "better",
    "betterresponse",
    "preferred",
    "preference",
    "choice",
    "verdict",
    "result",
    "decision",
    "胜者",
    "获胜者",
    "更好",
    "更好的回答",
    "结果",
    "判定",
    "结论",
    "选择",
)
_FIRST = {"1", "one", "first", "a", "一", "第一", "第一个", "1号", "①"}
_SECOND = {"2", "two", "second", "b", "二", "第二", "第二个", "2号", "②"}
_TIE = {
    "tie",
    "draw",
    "equal",
    "same",
    "both",
    "neither",
    "none",
    "0",
    "平局",
    "平手",
    "相同",
    "一样",
    "持平",
    "不分上下",
    "均等",
    "都好",
    "都不好",
}
LABEL_GOLD_CHARS = 40
"""A case's gold value reads as a label (for ``tie_when_both_correct``) when the dataset declares its
labels, or when it is one line of at most this many characters (the dataset's own label rule, per case)."""

_BRACKETED = re.compile(r"\[\[\s*(1|2|a|b|tie|c)\s*\]\]", re.I)
_PAIR_SCORE_TAG = re.compile(r"<score\b([^>]*)>(.*?)</score\s*>", re.S | re.I)
_ATTR = re.compile(r"(\w+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))")


def pair_seed(experiment_seed: int, case_id: str, round: int) -> int:
    """The seed of one pair's slot order: the same on every machine and in every process.

    Derived from the experiment's seed, the case and the round with SHA-256 (Python's own `hash`
    of a string changes from process to process, which would make a re-grade reshuffle).
    """
    digest = hashlib.sha256(f"{experiment_seed}\0{case_id}\0{round}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def slot_order(seed: int) -> tuple[str, str]:
    """Which arm ("a" or "b") sits in slot 1 and which in slot 2, drawn from `seed`."""
    return ("b", "a") if random.Random(seed).random() < 0.5 else ("a", "b")


@dataclass(frozen=True)
class PairReply:
    """One pairwise judgement read from a judge's reply, in slot terms.

    Attributes:
        winner_slot: 1 or 2, or None for a tie.
        scores: Slot (1, 2) -> dimension -> score (empty without a rubric).
        comment: The judge's explanation.
        method: How the reply was read (``json``, ``tagged``, ``embedded_json``, ``winner_tag``,
            ``key_value``, ``bracketed``, or ``free_text`` — prose such as "plan2 更好", read only when
            nothing else names a winner).
    """

    winner_slot: int | None
    scores: dict[int, dict[str, float]]
    comment: str | None
    method: str


def read_winner(value: Any) -> str | None:
    """``"1"``, ``"2"`` or ``"tie"`` from what a judge wrote (``Response 1``, ``[[2]]``, ``平局`` ...), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return {1: "1", 2: "2", 0: "tie"}.get(int(value)) if float(value).is_integer() else None
    text = unicodedata.normalize("NFKC", str(value)).casefold().strip()
    m = _BRACKETED.search(text)
    if m:
        text = m.group(1)
    text = re.sub(
        r"^(?:the\s+)?(?:response|answer|assistant|output|option|candidate|plan|proposal|"
        r"回答|答案|回复|选项|候选|方案)\s*",
        "",
        text,
    )
    lead = re.match(r"(?:no\.?\s*)?([12])(?![0-9.])", text)  # "1 is better", "No. 2"
    cleaned = re.sub(r"[\s\"'`*_.,:;!。，：；！#()\[\]（）【】]+", "", text)
    for candidate in (cleaned, cleaned.removeprefix("no")):
        if candidate in _FIRST:
            return "1"
        if candidate in _SECOND:
            return "2"
        if candidate in _TIE or candidate == "c":
            return "tie"
    return lead.group(1) if lead else None


def _slot_key(text: Any) -> int | None:
    k = judge_key(text)
    k = re.sub(r"^(?:response|answer|assistant|output|plan|回答|答案|回复|方案)", "", k)
    return {"1": 1, "2": 2, "a": 1, "b": 2, "first": 1, "second": 2}.get(k)


def _pair_scores(mapping: Mapping[str, Any], rubric: Rubric | None) -> dict[int, dict[str, float]]:
    if rubric is None:
        return {}
    holder: Any = mapping
    for k, v in mapping.items():
        if judge_key(k) in ("scores", "score", "ratings", "评分", "分数", "得分") and isinstance(v, Mapping):
            holder = v
    out: dict[int, dict[str, float]] = {}
    for k, v in holder.items():
        slot = _slot_key(k)
        if slot is not None and isinstance(v, Mapping):
            out[slot] = match_scores(v, rubric.dimensions)
    return out


def _tagged_pair_scores(body: str, rubric: Rubric | None) -> dict[int, dict[str, float]]:
    if rubric is None:
        return {}
    raw: dict[int, dict[str, Any]] = {}
    for m in _PAIR_SCORE_TAG.finditer(body):
        attrs = {judge_key(a): (d or q or bare).strip() for a, d, q, bare in _ATTR.findall(m.group(1))}
        slot = _slot_key(attrs.get("response") or attrs.get("answer") or attrs.get("id") or "")
        name = attrs.get("name") or attrs.get("dimension")
        if slot is not None and name:
            raw.setdefault(slot, {})[name] = m.group(2).strip()
    return {slot: match_scores(values, rubric.dimensions) for slot, values in raw.items()}


def parse_pair(text: str | None, rubric: Rubric | None = None, output_format: str = "json") -> PairReply:
    """Read a pairwise judge's reply: the winner slot and, with a rubric, both responses' scores.

    Readings, best first: the format asked for (JSON or tags), JSON in a fence or in prose, a
    ``[WINNER]plan1[/WINNER]`` tag, ``winner: plan2`` / ``胜者：方案2`` lines, ``[[1]]``; and, when none
    names a winner, prose such as "plan2 更好" (method ``free_text``). Scores may also be written a line
    per plan and dimension (``plan1-准确性: 9/10``).

    Raises:
        GradingError: the reply is empty, names no winner, lacks a score, or has one off its scale
            (with the raw reply; not retryable).
    """
    raw = text or ""
    body = strip_thinking(raw)
    if not body:
        raise GradingError("the judge's reply is empty", raw_output=raw)
    tag_scores = _tagged_pair_scores(body, rubric)
    line_scores = _plan_scores(body, rubric)
    problems: list[str] = []
    for method, mapping, comment in _candidates(body, output_format):
        winner = next(
            (read_winner(v) for k, v in mapping.items() if judge_key(k) in _WINNER_KEYS and read_winner(v)),
            None,
        )
        if winner is None:
            continue
        scores = tag_scores if method == "tagged" else _pair_scores(mapping, rubric)
        if rubric is not None and method != "tagged" and not scores:
            scores = tag_scores or line_scores
        missing = _missing(scores, rubric)
        if missing:
            problems.append(f"{method}: no score for {', '.join(missing)}")
            continue
        _check_scale(scores, rubric, raw)
        return PairReply(None if winner == "tie" else int(winner), scores, comment, method)
    for method, winner in (("bracketed", _bracketed(body)), ("free_text", free_text_winner(body))):
        if winner is None:
            continue
        scores = tag_scores or line_scores
        if _missing(scores, rubric):
            problems.append(f"{method}: no score for {', '.join(_missing(scores, rubric))}")
            continue
        _check_scale(scores, rubric, raw)
        return PairReply(None if winner == "tie" else int(winner), scores if rubric else {}, None, method)
    why = "; ".join(problems) if problems else "no winner (1, 2 or tie) could be read"
    start = " ".join(body.split())[:160]
    raise GradingError(
        f"the pairwise judge's reply cannot be read: {why}; reply starts {start!r}", raw_output=raw
    )


def _bracketed(body: str) -> str | None:
    m = _BRACKETED.search(body)
    return read_winner(m.group(0)) if m else None


def _candidates(body: str, output_format: str) -> list[tuple[str, dict[str, Any], str | None]]:
    """The judge readers' candidates, with a ``[WINNER]…[/WINNER]`` tag read before ``key: value`` lines."""
    out = reply_candidates(body, output_format)
    tagged = winner_tag(body)
    if tagged is not None:
        at = next((i for i, (method, _, _) in enumerate(out) if method == "key_value"), len(out))
        comment = out[at][2] if at < len(out) else None
        out.insert(at, ("winner_tag", {"winner": tagged}, comment))
    return out


def _plan_scores(body: str, rubric: Rubric | None) -> dict[int, dict[str, float]]:
    if rubric is None:
        return {}
    return {slot: match_scores(values, rubric.dimensions) for slot, values in plan_scores(body).items()}


def _missing(scores: dict[int, dict[str, float]], rubric: Rubric | None) -> list[str]:
    if rubric is None:
        return []
    return [
        f"response {slot} {d.name}"
        for slot in (1, 2)
        for d in rubric.dimensions
        if d.name not in scores.get(slot, {})
    ]


def _check_scale(scores: dict[int, dict[str, float]], rubric: Rubric | None, raw: str) -> None:
    if rubric is None:
        return
    off = [
        f"response {slot} {d.name} {scores[slot][d.name]:g} is off its scale {d.scale}"
        for slot in (1, 2)
        for d in rubric.dimensions
        if not d.low <= scores[slot][d.name] <= d.high
    ]
    if off:
        raise GradingError(f"the judge's scores do not fit the rubric: {'; '.join(off)}", raw_output=raw)


class PairwiseJudge:
    """A blind pairwise judge. Build it with `pairwise_judge`.

    Calling it with a `PairContext` returns an awaitable `GradeResult` whose ``verdict`` is ``a``,
    ``b`` or ``tie`` in arm terms (``a`` is the first of `arms`), ``score`` 1 / 0.5 / 0 from a's side,
    ``dimensions`` both arms' scores (``a.correctness``, ``b.correctness``; averaged over both orders),
    and ``details`` the seed, the slot order of every judgement, its winner, and whether the two
    orders agreed.
    """

    kind = "pairwise"

    def __init__(
        self,
        name: str,
        settings: JudgeSettings,
        *,
        rubric: Rubric | None = None,
        arms: Sequence[str] | None = None,
        both_orders: bool = False,
        anonymiser: Anonymiser | None = None,
        output_format: str = "json",
        include: Sequence[str] = ("reference", "reason"),
        instructions: str | None = None,
        tie_when_both_correct: bool | None = None,
    ):
        self.name = name
        self.tie_when_both_correct = tie_when_both_correct
        self.settings = settings
        self.rubric = rubric
        self.arms = tuple(arms) if arms else None
        self.both_orders = both_orders
        self.anonymiser = anonymiser
        self.output_format = output_format
        self.include = tuple(include)
        self.instructions = instructions

    def __repr__(self) -> str:
        return (
            f"PairwiseJudge(name={self.name!r}, model={self.settings.model!r}, arms={self.arms}, "
            f"both_orders={self.both_orders})"
        )

    def system_prompt(self) -> str:
        """What the judge is told: its role, the criteria, and the exact reply format."""
        criteria = (
            self.rubric.describe() if self.rubric else "- overall: which answer serves the input better"
        )
        return system_prompt(
            "You are a strict, impartial judge comparing two answers to the same input, given by two "
            "anonymous AI assistants. The answers are shown in random order: their position, length and "
            "style must not sway you. Decide which answer is better by the criteria below, or say tie "
            "when neither is better.",
            "Criteria:\n" + criteria,
            self.include,
            self.instructions,
            self._reply_format(),
        )

    def _reply_format(self) -> str:
        if self.output_format == "json":
            example: dict[str, Any] = {"winner": "1 | 2 | tie"}
            if self.rubric:
                dims = {d.name: f"<{d.scale}>" for d in self.rubric.dimensions}
                example["scores"] = {"1": dims, "2": dims}
            example["comment"] = "<why, in one or two sentences>"
            return "Reply with one JSON object and nothing else, exactly like:\n" + json.dumps(
                example, ensure_ascii=False
            )
        lines = ["<winner>1, 2 or tie</winner>"]
        for slot in (1, 2):
            for d in self.rubric.dimensions if self.rubric else ():
                lines.append(f'<score response="{slot}" name="{d.name}">{d.scale}</score>')
        lines.append("<comment>why, in one or two sentences</comment>")
        return "Reply with these tags and nothing else:\n" + "\n".join(lines)

    def _answers(self, ctx: PairContext) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
        anonymiser = None
        if self.anonymiser is not None:
            sides = (ctx.a, ctx.b)
            anonymiser = self.anonymiser.with_terms(
                context_terms(
                    arms=[s.arm for s in sides],
                    models=[m for s in sides for m in (s.model, s.output.model)],
                    skills=[s.skill for s in sides],
                )
            )
        texts, masked = {}, {}
        for letter, side in (("a", ctx.a), ("b", ctx.b)):
            texts[letter], masked[letter] = answer_text(side, self.include, anonymiser, ctx.case.input)
        return texts, {k: v for k, v in masked.items() if v}

    def messages(
        self, ctx: PairContext, slots: tuple[str, str], texts: dict[str, str]
    ) -> list[dict[str, str]]:
        """The chat messages for one judgement with `slots` (arm letters in slot 1 and 2)."""
        blocks = [f'<response id="{i}">\n{texts[letter]}\n</response>' for i, letter in enumerate(slots, 1)]
        user = "\n".join([*case_block(ctx.case, self.include), *blocks])
        return [{"role": "system", "content": self.system_prompt()}, {"role": "user", "content": user}]

    def orders(self, ctx: PairContext) -> list[tuple[str, str]]:
        """The slot orders the pair is judged in: the seeded one, and its reverse with ``both_orders``."""
        first = slot_order(ctx.seed)
        return [first, (first[1], first[0])] if self.both_orders else [first]

    def request_bodies(self, ctx: PairContext) -> list[dict[str, Any]]:
        """The JSON bodies of the calls this judge makes about the pair, one per slot order, without
        calling (``abbench prompt``)."""
        texts, _ = self._answers(ctx)
        return [self.settings.request_body(self.messages(ctx, order, texts)) for order in self.orders(ctx)]

    async def __call__(self, ctx: PairContext) -> GradeResult:
        orders = self.orders(ctx)
        first = orders[0]
        texts, masked = self._answers(ctx)
        replies = await self._ask(ctx, orders, texts)
        judgements = self._read(ctx, orders, replies)
        verdicts = [j.winner for j in judgements]
        consistent = len(set(verdicts)) == 1
        judged = verdicts[0] if consistent else "tie"
        dimensions = self._dimensions(judgements)
        tie_rule = self.both_correct(ctx, dimensions)
        verdict = "tie" if tie_rule else judged
        comment = _comment(ctx, judgements, consistent)
        if tie_rule:
            comment = f"{tie_rule}: a tie whatever their polish (the judge said {judged})" + (
                f" | {comment}" if comment else ""
            )
        cost = JudgeSpend.of(replies)
        return cost.result(
            passed=None,
            score={"a": 1.0, "b": 0.0, "tie": 0.5}[verdict],
            verdict=verdict,
            dimensions=dimensions,
            comment=comment,
            raw_output=_joined(orders, replies) if len(orders) > 1 else replies[0].content,
            details={
                "seed": ctx.seed,
                "arms": [ctx.a.arm, ctx.b.arm],
                "runs": [ctx.a.run_id, ctx.b.run_id],
                "slots": list(first),
                "both_orders": self.both_orders,
                "judgements": [
                    {
                        "slots": list(j.order),
                        "winner_slot": j.reply.winner_slot,
                        "winner": j.winner,
                        "parsed": j.reply.method,
                    }
                    for j in judgements
                ],
                "consistent": consistent,
                "flipped": set(verdicts) == {"a", "b"},
                **({"free_text": True} if any(j.reply.method == "free_text" for j in judgements) else {}),
                "cost_known": cost.judge_cost is not None,
                "lengths": {letter: len(text) for letter, text in texts.items()},
                **({"tie_rule": tie_rule, "judge_verdict": judged} if tie_rule else {}),
                **({"masked": masked} if masked else {}),
            },
        )

    def both_correct(self, ctx: PairContext, dimensions: Mapping[str, float] | None = None) -> str | None:
        """Why the pair is a tie under ``tie_when_both_correct``, or None when the rule does not apply.

        On a label case (the default on): both predictions equal the gold label, compared as
        `label_match` compares. When the option is set on any case: both arms' scores (averaged over
        the orders) meet every functional dimension of the rubric.
        """
        if self.tie_when_both_correct is False:
            return None
        gold = ctx.case.expected
        if gold is not None and str(gold).strip() and _is_label(ctx):
            labels = ctx.a.label_map
            right = normalise_label(gold, labels)
            if all(normalise_label(s.output.prediction, labels) == right for s in (ctx.a, ctx.b)):
                return "both answers equal the gold label"
            return None
        functional = [d for d in self.rubric.dimensions if d.functional] if self.rubric else []
        if not self.tie_when_both_correct or not functional or not dimensions:
            return None
        if all(
            f"{letter}.{d.name}" in dimensions and d.met(dimensions[f"{letter}.{d.name}"])
            for letter in ("a", "b")
            for d in functional
        ):
            return f"both answers meet every functional criterion ({', '.join(d.name for d in functional)})"
        return None

    async def _ask(
        self, ctx: PairContext, orders: list[tuple[str, str]], texts: dict[str, str]
    ) -> list[ChatResponse]:
        """One judge request per slot order, together; a failure carries what the others spent."""
        replies = await asyncio.gather(
            *(
                self.settings.ask(self.name, self.messages(ctx, order, texts), ctx.a.cache)
                for order in orders
            ),
            return_exceptions=True,
        )
        answered = [r for r in replies if not isinstance(r, BaseException)]
        for r in replies:
            if isinstance(r, BaseException):
                if isinstance(r, GradingError) and answered:
                    r.spent = JudgeSpend.of(answered).as_dict()
                raise r
        return answered

    def _read(
        self, ctx: PairContext, orders: list[tuple[str, str]], replies: list[ChatResponse]
    ) -> list[_Judgement]:
        """Each reply read, its winner in arm terms; a reply that cannot be read fails the grade."""
        judgements = []
        for order, reply in zip(orders, replies, strict=True):
            try:
                parsed = parse_pair(reply.content, self.rubric, self.output_format)
            except GradingError as exc:
                self.settings.forget(reply, ctx.a.cache)
                raw = _joined(orders, replies) if len(orders) > 1 else exc.raw_output
                raise GradingError(str(exc), raw_output=raw, spent=JudgeSpend.of(replies).as_dict()) from None
            winner = "tie" if parsed.winner_slot is None else order[parsed.winner_slot - 1]
            judgements.append(_Judgement(order, parsed, winner))
        return judgements

    def _dimensions(self, judgements: list[_Judgement]) -> dict[str, float] | None:
        if self.rubric is None:
            return None
        sums: dict[str, list[float]] = {}
        for j in judgements:
            for slot, letter in enumerate(j.order, 1):
                for dim, value in j.reply.scores.get(slot, {}).items():
                    sums.setdefault(f"{letter}.{dim}", []).append(value)
        return {k: sum(v) / len(v) for k, v in sorted(sums.items())}


def _is_label(ctx: PairContext) -> bool:
    """Whether the case's gold value is a label: declared labels, or one short line."""
    gold = str(ctx.case.expected)
    return bool(ctx.a.label_set) or ("\n" not in gold.strip() and len(gold.strip()) <= LABEL_GOLD_CHARS)


class _Judgement(NamedTuple):
    """One judgement of a pair: the slot order shown, the reply read, the winner in arm terms."""

    order: tuple[str, str]
    reply: PairReply
    winner: str


def _comment(ctx: PairContext, judgements: list[_Judgement], consistent: bool) -> str | None:
    names = {"a": ctx.a.arm, "b": ctx.b.arm}
    comments = [
        f"[1={names[j.order[0]]}, 2={names[j.order[1]]}] {j.reply.comment}"
        for j in judgements
        if j.reply.comment
    ]
    if any(j.reply.method == "free_text" for j in judgements):
        comments.insert(0, "the winner was read from the judge's prose, as a last resort (no winner format)")
    if not consistent:
        verdicts = " vs ".join(j.winner for j in judgements)
        comments.insert(0, f"the verdict changed with the order ({verdicts}): counted as a tie")
    return " | ".join(comments) or None


def _joined(orders: list[tuple[str, str]], replies: Sequence[Any]) -> str:
    return "\n".join(
        f"--- order 1={o[0]}, 2={o[1]} ---\n{getattr(r, 'content', None) or ''}"
        for o, r in zip(orders, replies, strict=True)
    )


def _anonymiser(
    name: str,
    *,
    mask: Sequence[str],
    mask_patterns: Sequence[str],
    identities: Sequence[str] | None,
    mask_paths: bool,
) -> Anonymiser:
    """The pair's anonymiser; each mask pattern (and identity) must be a regular expression RE2 can run."""
    for kind, patterns in (("mask pattern", mask_patterns), ("identity", identities or ())):
        for pattern in patterns:
            try:
                compile_pattern(pattern, re.IGNORECASE)
            except PatternError as exc:
                raise UsageError(f"{name}: {kind} {exc}") from None
    return Anonymiser(
        terms=tuple(str(t) for t in mask),
        patterns=tuple(mask_patterns),
        mask_paths=mask_paths,
        identities=tuple(identities) if identities is not None else DEFAULT_IDENTITIES,
    )


@register_grader("pairwise_judge")
def pairwise_judge(
    *,
    rubric: Any = None,
    arms: Sequence[str] | None = None,
    both_orders: bool = False,
    anonymise: bool = True,
    mask: Sequence[str] = (),
    mask_patterns: Sequence[str] = (),
    identities: Sequence[str] | None = None,
    mask_paths: bool = True,
    output_format: str = "json",
    include: Sequence[str] = ("reference", "reason"),
    instructions: str | None = None,
    tie_when_both_correct: bool | None = None,
    name: str = "pairwise_judge",
    **settings: Unpack[JudgeOptions],
) -> PairwiseJudge:
    """A blind pairwise judge comparing two arms' answers on the same case and round.

    Example (experiment YAML)::

        graders:
          - type: pairwise_judge
            model: gpt-4o-mini
            arms: [control, treatment]     # default: the experiment's first two arms
            both_orders: true              # judge twice; a verdict that flips is a tie
            rubric: {correctness: Is the routing right?, evidence: Is the reason grounded?}
            mask: [acme-router]            # more names to hide from the judge

        A rubric template by name: ``rubric: {template: writing}`` (``code``, ``reasoning``, ``qa``,
        ``creative``; `Rubric.template`).

    Args:
        rubric: Criteria to score both answers on (see `Rubric.parse`); None asks only for a winner.
        arms: The two arm names to compare, in order (verdict ``a`` is the first); default the
            experiment's first two arms.
        both_orders: Judge each pair in both slot orders; an order-dependent verdict becomes a tie.
        anonymise: Mask model, provider, skill and arm names, paths, hashes and self-references.
        mask: More names to mask.
        mask_patterns: More regular expressions to mask.
        identities: Replace the built-in list of model and provider names (regular expressions).
        mask_paths: Mask file paths (and skill references such as ``SKILL.md#Rules``).
        output_format: ``json`` (default) or ``tagged``.
        include: What the judge sees besides input and answers: ``reference``, ``reason``,
            ``evidence``, ``context``, ``history``.
        instructions: Extra guidance added to the judge's prompt.
        tie_when_both_correct: Two answers that are both correct are a tie, whatever their polish.
            None (default): on for label cases (both predictions equal the gold label); True: also on
            other cases, when both meet every ``functional`` dimension of the rubric; False: off. The
            judge is still asked (its scores and the bias audits keep the pair); its own verdict is
            kept in the grade's ``details.judge_verdict``.
        name: The grader's name in the experiment.
        **settings: How the judge model is called (`JudgeSettings`), as for `llm_judge`: ``model``
            (required), ``base_url``, ``api_key_env``, ``timeout_s``, ``retries``, ``backoff_s``,
            ``temperature``, ``max_tokens``, ``seed``, ``prices``, ``json_mode``, ``stream``, ``cache``.

    Raises:
        UsageError: an option is invalid (said when the experiment is defined).
    """
    check_output_format(name, output_format)
    if arms is not None and (isinstance(arms, str) or len(arms) != 2 or len(set(arms)) != 2):
        raise UsageError(
            f"{name}: arms must name two different arms, e.g. [control, treatment]; got {arms!r}"
        )
    # the mask patterns are checked even when anonymise is off (a typo is said at once)
    anonymiser = _anonymiser(
        name, mask=mask, mask_patterns=mask_patterns, identities=identities, mask_paths=mask_paths
    )
    return PairwiseJudge(
        name,
        JudgeSettings.build(name, **settings),
        rubric=Rubric.parse(rubric, where=f"{name}.rubric") if rubric is not None else None,
        arms=list(arms) if arms else None,
        both_orders=bool(both_orders),
        anonymiser=anonymiser if anonymise else None,
        output_format=output_format,
        include=check_include(name, include),
        instructions=instructions,
        tie_when_both_correct=_tie_option(name, tie_when_both_correct),
    )


def _tie_option(name: str, value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise UsageError(
        f"{name}: tie_when_both_correct is true, false or left out (on for label tasks), not {value!r}"
    )
