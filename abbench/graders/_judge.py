"""The pointwise LLM judge: a rubric of named dimensions with scales, a fixed reply format, tolerant reading.

`llm_judge` asks an OpenAI-compatible model (through `abbench.llm.ChatClient`, like the agents) to
score one run on each dimension of a `Rubric`. The reply is read in the format the prompt asked for
first (a JSON object, or ``<score name="…">`` tags), then tolerantly (JSON in a code fence or in
prose, the other format, ``dimension: 4/5`` lines). When no score can be read for every dimension,
or a score is off its scale, grading fails with the raw reply kept — never a silent zero or pass.

Transport trouble is bounded and visible: a judge that does not answer within ``timeout_s`` is asked
again on a fresh request up to ``retries`` times (429 and 5xx too, honouring Retry-After); what is
left after that is a retryable `GradingError`, which the runner may try again later.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from abbench._text import clip
from abbench.agents import json_readings, load_object, strip_thinking
from abbench.errors import GradingError
from abbench.graders._anonymise import Anonymiser
from abbench.graders._base import GradeContext, GradeResult, register_grader
from abbench.graders._judge_prompt import (
    answer_text,
    case_block,
    check_include,
    check_output_format,
    system_prompt,
)
from abbench.graders._judge_settings import JudgeOptions, JudgeSettings, JudgeSpend
from abbench.graders._rubric import DEFAULT_RUBRIC, Dimension, Rubric, judge_key
from abbench.graders._rules import parse_number
from abbench.graders._trajectory_prompt import check_budget, trajectory_block
from abbench.transcript import BUDGET

_SINGLE_KEYS = ("score", "rating", "grade", "overall", "评分", "分数", "得分", "打分")
_COMMENT_KEYS = (
    "comment",
    "comments",
    "explanation",
    "reason",
    "reasoning",
    "rationale",
    "justification",
    "feedback",
    "评语",
    "理由",
    "解释",
    "说明",
    "原因",
)
_SCORES_KEYS = ("scores", "score", "ratings", "dimensions", "rubric", "评分", "分数", "得分")
_KV_LINE = re.compile(
    r"^[ \t>]*(?:[-*•]|\d+[.)])?[ \t]*[*_`\"']*([^:：=\n*_`\"']{1,40}?)[*_`\"']*[ \t]*[:：=][ \t]*(.+)$"
)
_SCORE_TAG = re.compile(
    r"<score\b[^>]*?\b(?:name|dimension|dim)\s*=\s*[\"']?([^\"'>]+?)[\"']?\s*>(.*?)</score\s*>", re.S | re.I
)
_ANY_TAG = re.compile(r"<([^\s<>/=\"']{1,40})>\s*([^<]{0,40}?)\s*</\1\s*>", re.S)
_COMMENT_TAG = re.compile(r"<(comment|explanation|reasoning|rationale|评语|理由)>(.*?)</\1\s*>", re.S | re.I)


# -- reading a judge's reply ------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeScores:
    """Scores read from a judge's reply.

    Attributes:
        scores: Dimension name -> score, one for every dimension of the rubric.
        comment: The judge's explanation, if it gave one.
        method: How the reply was read: ``json``, ``tagged``, ``fenced_json``, ``embedded_json``,
            ``key_value``.
    """

    scores: dict[str, float]
    comment: str | None
    method: str


def _score_value(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return parse_number(value)
    if isinstance(value, Mapping):
        for k, v in value.items():
            if judge_key(k) in ("score", "value", "rating", "评分", "分数", "得分"):
                return _score_value(v)
    return None


def _comment_of(obj: Mapping[str, Any]) -> str | None:
    for k, v in obj.items():
        if judge_key(k) in _COMMENT_KEYS and isinstance(v, str) and v.strip():
            return v.strip()
    return None


def _scores_mapping(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The part of a reply object that holds the scores: ``scores: {...}``, a list of ``{name, score}``, or the object."""
    for k, v in obj.items():
        if judge_key(k) in _SCORES_KEYS:
            if isinstance(v, Mapping):
                return v
            if isinstance(v, list) and all(isinstance(e, Mapping) for e in v):
                out = {}
                for e in v:
                    label = e.get("name") or e.get("dimension") or e.get("criterion")
                    if label is not None:
                        out[str(label)] = e
                return out
    return obj


def match_scores(raw: Mapping[str, Any], dimensions: Sequence[Dimension]) -> dict[str, float]:
    """Scores for the rubric's dimensions found in a mapping, keys matched forgivingly.

    ``Correctness``, ``correctness_score`` and ``correctness`` all name ``correctness``; with one
    dimension, ``score`` / ``rating`` / ``overall`` / ``评分`` name it too. Dimensions without a
    readable number are left out.
    """
    keyed: dict[str, Any] = {}
    for k, v in raw.items():
        keyed.setdefault(judge_key(k), v)
    out: dict[str, float] = {}
    for d in dimensions:
        names = [judge_key(n) for n in (d.name, *d.aliases)]  # a template's 准确性 names its accuracy
        candidates = [c for k in names for c in (k, k + "score", "score" + k, k + "rating")]
        if len(dimensions) == 1:
            candidates += list(_SINGLE_KEYS)
        for c in candidates:
            if c in keyed:
                value = _score_value(keyed[c])
                if value is not None:
                    out[d.name] = value
                    break
    return out


def _tagged(body: str) -> tuple[dict[str, Any], str | None]:
    found: dict[str, Any] = {m.group(1).strip(): m.group(2).strip() for m in _SCORE_TAG.finditer(body)}
    for m in _ANY_TAG.finditer(body):
        found.setdefault(m.group(1), m.group(2))
    comment = _COMMENT_TAG.search(body)
    return found, (comment.group(2).strip() or None) if comment else None


def _key_values(body: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in body.splitlines():
        m = _KV_LINE.match(line)
        if m:
            found.setdefault(m.group(1).strip(), m.group(2).strip())
    return found


def reply_candidates(text: str, output_format: str) -> list[tuple[str, dict[str, Any], str | None]]:
    """The readings of a judge's reply, best first: ``(method, mapping, comment)``.

    The format the prompt asked for comes first; then JSON in a code fence or embedded in prose,
    the other format, and ``key: value`` lines.
    """
    out: list[tuple[str, dict[str, Any], str | None]] = []
    whole = load_object(text)
    json_whole = [("json", whole, _comment_of(whole))] if isinstance(whole, dict) else []
    tags, tag_comment = _tagged(text)
    tagged = [("tagged", tags, tag_comment)] if tags else []
    out += json_whole + tagged if output_format == "json" else tagged + json_whole
    out += [(method, value, _comment_of(value)) for method, value in json_readings(text)]
    kv = _key_values(text)
    if kv:
        out.append(("key_value", kv, _comment_of(kv)))
    return out


def parse_scores(text: str | None, rubric: Rubric, output_format: str = "json") -> JudgeScores:
    """Read a pointwise judge's reply: the expected format first, then tolerantly.

    Raises:
        GradingError: the reply is empty, no reading gives a score for every dimension, or a score
            is off its dimension's scale. The raw reply goes with the error (not retryable: asking the
            same judge the same question is a re-grade, which a person decides on).
    """
    raw = text or ""
    body = strip_thinking(raw)
    if not body:
        raise GradingError("the judge's reply is empty", raw_output=raw)
    best: tuple[int, str] = (-1, "")
    for method, mapping, comment in reply_candidates(body, output_format):
        scores = match_scores(_scores_mapping(mapping), rubric.dimensions)
        if len(scores) == len(rubric.dimensions):
            off = [
                f"{d.name} {scores[d.name]:g} is off its scale {d.scale}"
                for d in rubric.dimensions
                if not d.low <= scores[d.name] <= d.high
            ]
            if off:
                raise GradingError(
                    f"the judge's scores do not fit the rubric: {'; '.join(off)}", raw_output=raw
                )
            return JudgeScores(scores, comment, method)
        if len(scores) > best[0]:
            best = (len(scores), method)
    names = ", ".join(d.name for d in rubric.dimensions)
    if best[0] > 0:
        raise GradingError(
            f"the judge's reply ({best[1]}) scores only {best[0]} of the dimensions {names}; "
            f"reply starts {_snippet(body)!r}",
            raw_output=raw,
        )
    raise GradingError(
        f"no scores for {names} in the judge's reply (expected {output_format}); reply starts {_snippet(body)!r}",
        raw_output=raw,
    )


def _snippet(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return clip(flat, limit)


# -- the pointwise judge ---------------------------------------------------------------------------------


class LLMJudge:
    """A pointwise judge: scores one run on a rubric through an OpenAI-compatible model.

    Build it with `llm_judge`. Calling it with a `GradeContext` returns an awaitable `GradeResult`:
    ``dimensions`` holds the score per dimension, ``score`` the weighted overall score (0..1),
    ``passed`` the verdict when the rubric has thresholds, plus the raw reply, judge model, cost and
    tokens.
    """

    kind = "judge"

    def __init__(
        self,
        name: str,
        rubric: Rubric,
        settings: JudgeSettings,
        *,
        output_format: str = "json",
        include: Sequence[str] = ("reference", "reason"),
        instructions: str | None = None,
        anonymiser: Anonymiser | None = None,
        trajectory_budget: int = BUDGET,
    ):
        self.name = name
        self.rubric = rubric
        self.settings = settings
        self.output_format = output_format
        self.include = tuple(include)
        self.instructions = instructions
        self.anonymiser = anonymiser
        self.trajectory_budget = trajectory_budget

    def __repr__(self) -> str:
        dims = ", ".join(d.name for d in self.rubric.dimensions)
        return f"LLMJudge(name={self.name!r}, model={self.settings.model!r}, dimensions=[{dims}])"

    def system_prompt(self) -> str:
        """What the judge is told: its role, the rubric, and the exact reply format."""
        return system_prompt(
            "You are a strict, impartial judge of one answer given by an AI assistant. Score it on every "
            "dimension of the rubric, using only what is in front of you. Do not reward length, "
            "confidence or style the rubric does not ask for.",
            "Rubric:\n" + self.rubric.describe(),
            self.include,
            self.instructions,
            self._reply_format(),
        )

    def _reply_format(self) -> str:
        names = [d.name for d in self.rubric.dimensions]
        if self.output_format == "json":
            example = json.dumps(
                {
                    "scores": {n: f"<{self.rubric.dimension(n).scale}>" for n in names},
                    "comment": "<why, in one or two sentences>",
                },
                ensure_ascii=False,
            )
            return f"Reply with one JSON object and nothing else, exactly like:\n{example}"
        tags = "\n".join(f'<score name="{n}">{self.rubric.dimension(n).scale}</score>' for n in names)
        return f"Reply with these tags and nothing else (one number per score):\n{tags}\n<comment>why, in one or two sentences</comment>"

    def messages(self, ctx: GradeContext) -> tuple[list[dict[str, str]], dict[str, int]]:
        """The chat messages for one run, and what the anonymiser masked in its answer."""
        answer, masked = answer_text(ctx, self.include, self.anonymiser, ctx.case.input)
        parts = [*case_block(ctx.case, self.include), f"<answer>\n{answer}\n</answer>"]
        if "trajectory" in self.include:
            block = trajectory_block(ctx, self.anonymiser, self.trajectory_budget)
            parts.append(block.text)
            masked = {k: masked.get(k, 0) + block.masked.get(k, 0) for k in {*masked, *block.masked}}
        user = "\n".join(parts)
        return [
            {"role": "system", "content": self.system_prompt()},
            {"role": "user", "content": user},
        ], masked

    def request_bodies(self, ctx: GradeContext) -> list[dict[str, Any]]:
        """The JSON body of the one call this judge makes about `ctx`, without calling (``abbench prompt``)."""
        return [self.settings.request_body(self.messages(ctx)[0])]

    async def __call__(self, ctx: GradeContext) -> GradeResult:
        messages, masked = self.messages(ctx)
        reply = await self.settings.ask(self.name, messages, ctx.cache)
        cost = JudgeSpend.of([reply])
        try:
            parsed = parse_scores(reply.content, self.rubric, self.output_format)
        except GradingError as exc:
            self.settings.forget(reply, ctx.cache)
            # the money was spent and the reply is kept even though it could not be read
            raise GradingError(
                f"{exc} (judge {reply.model})", raw_output=exc.raw_output, spent=cost.as_dict()
            ) from None
        passed, reasons = self.rubric.passed(parsed.scores)
        comment = parsed.comment
        if passed is False:
            comment = f"{'; '.join(reasons)}" + (f" — {comment}" if comment else "")
        return cost.result(
            passed=passed,
            score=round(self.rubric.score(parsed.scores), 6),
            dimensions=parsed.scores,
            comment=comment,
            raw_output=reply.content,
            details={
                "parsed": parsed.method,
                "cost_known": reply.cost is not None,
                "retries": len(reply.retries),
                **({"masked": masked} if masked else {}),
            },
        )


@register_grader("llm_judge")
def llm_judge(
    rubric: Any = None,
    *,
    pass_threshold: float | None = None,
    output_format: str = "json",
    include: Sequence[str] = ("reference", "reason"),
    instructions: str | None = None,
    anonymise: bool = False,
    trajectory_budget: int = BUDGET,
    name: str = "llm_judge",
    **settings: Unpack[JudgeOptions],
) -> LLMJudge:
    """A pointwise LLM judge that scores each run on a rubric.

    Example (experiment YAML)::

        graders:
          - type: llm_judge
            model: gpt-4o-mini
            rubric:
              correctness: {description: "Is the routing decision right?", scale: [1, 5], min: 3}
              evidence: Does the reason rest on the skill's rules?
            pass_threshold: 0.6

    Args:
        rubric: The dimensions and scales (see `Rubric.parse`); default `DEFAULT_RUBRIC`.
        pass_threshold: Overall score (0..1) a run needs to pass; without it (and without a
            dimension ``min``) the judge only scores.
        output_format: ``json`` (default) or ``tagged`` — what the prompt asks the judge to reply in.
        include: What the judge sees besides input and answer: any of ``reference`` (the gold
            answer), ``reason``, ``evidence``, ``context``, ``history``, ``trajectory`` (what the run
            did: its tool calls with arguments and results, files and sections read, turns, tokens —
            `abbench.transcript.Trajectory`).
        instructions: Extra guidance added to the judge's prompt.
        anonymise: Mask model, provider and path names in the answer first (see `Anonymiser`); in the
            trajectory, the skill's own paths and section references are kept.
        trajectory_budget: Characters of trajectory the judge is shown at most (default 8000; each
            tool result is cut to 400).
        name: The grader's name in the experiment.
        **settings: How the judge model is called (`JudgeSettings`): ``model`` (required),
            ``base_url`` (an OpenAI-compatible API root; default ``$OPENAI_BASE_URL`` or OpenAI),
            ``api_key_env`` (the variable holding the key; the key is never stored), ``timeout_s``
            (60), ``retries`` (2, after a timeout, 429 or 5xx), ``backoff_s`` (1), ``temperature``
            (0), ``max_tokens``, ``seed``, ``prices`` (``{input: USD/M, output: USD/M}``),
            ``json_mode`` (send ``response_format: json_object``), ``stream`` and ``cache`` (on,
            off, read-only or refresh).

    Raises:
        UsageError: an option is invalid (said when the experiment is defined).
    """
    check_output_format(name, output_format)
    parsed = Rubric.parse(
        DEFAULT_RUBRIC if rubric is None else rubric, pass_threshold=pass_threshold, where=f"{name}.rubric"
    )
    return LLMJudge(
        name,
        parsed,
        JudgeSettings.build(name, **settings),
        output_format=output_format,
        include=check_include(name, include),
        instructions=instructions,
        anonymiser=Anonymiser() if anonymise else None,
        trajectory_budget=check_budget(name, "trajectory_budget", trajectory_budget),
    )
