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

import dataclasses
import json
import logging
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from abbench._text import clip
from abbench.errors import AgentError, GradingError, UsageError
from abbench.graders._anonymise import Anonymiser
from abbench.graders._base import GradeContext, GradeResult, register_grader
from abbench.graders._rules import parse_number

log = logging.getLogger(__name__)

OUTPUT_FORMATS = ("json", "tagged")
"""The reply formats a judge prompt can ask for."""

INCLUDE = ("reference", "reason", "evidence", "context", "history")
"""What a judge may be shown besides the input and the answer."""

DEFAULT_RUBRIC = {
    "correctness": "Is the answer correct for the input? When a reference answer is given, it is the standard."
}
"""The rubric `llm_judge` uses when none is given."""

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


def _key(text: Any) -> str:
    return re.sub(r"[\s_\-]+", "", unicodedata.normalize("NFKC", str(text)).casefold())


# -- the rubric ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dimension:
    """One named dimension of a rubric, scored on a numeric scale.

    Attributes:
        name: The name the judge must use (``correctness``, ``准确性`` ...).
        description: What the dimension asks, shown to the judge.
        low: The worst score on the scale.
        high: The best score.
        weight: Its weight in the overall score.
        min: A score below this fails the run (on the dimension's own scale); None: no such limit.
    """

    name: str
    description: str = ""
    low: float = 1.0
    high: float = 5.0
    weight: float = 1.0
    min: float | None = None

    def normalise(self, value: float) -> float:
        """`value` on a 0..1 scale (low → 0, high → 1)."""
        return (value - self.low) / (self.high - self.low)

    @property
    def scale(self) -> str:
        """``1-5``, as the prompt shows it."""
        return f"{self.low:g}-{self.high:g}"


@dataclass(frozen=True)
class Rubric:
    """Named dimensions with scales, and when a run passes.

    The overall score is the weighted mean of the dimension scores, each normalised to 0..1. A run
    passes when every dimension meets its ``min`` and the overall score meets ``pass_threshold``;
    with neither set, the judge only scores (``passed`` is None).

    Attributes:
        dimensions: The dimensions, in the order the prompt lists them.
        pass_threshold: The overall score (0..1) a run needs to pass; None: no overall threshold.
    """

    dimensions: tuple[Dimension, ...]
    pass_threshold: float | None = None

    @classmethod
    def parse(cls, value: Any, *, pass_threshold: float | None = None, where: str = "rubric") -> Rubric:
        """A rubric from what an experiment definition says.

        Accepted: a text (one ``overall`` dimension); a mapping of name → description, name → scale
        (``[1, 5]`` or ``"1-10"``), or name → ``{description, scale, weight, min}``; a list of
        ``{name, description, scale, weight, min}``; or ``{dimensions: ..., pass_threshold: ...}``.

        Raises:
            UsageError: the rubric is empty, a scale or weight is invalid, or names repeat (the
                message names the dimension and the accepted forms).
        """
        if isinstance(value, Rubric):
            return (
                value if pass_threshold is None else cls(value.dimensions, _threshold(pass_threshold, where))
            )
        if (
            isinstance(value, Mapping)
            and "dimensions" in value
            and set(value) <= {"dimensions", "pass_threshold"}
        ):
            if pass_threshold is None:
                pass_threshold = value.get("pass_threshold")
            value = value["dimensions"]
        if isinstance(value, str):
            value = {"overall": value}
        items: list[tuple[str, Any]]
        if isinstance(value, Mapping):
            items = [(str(k), v) for k, v in value.items()]
        elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
            items = []
            for i, entry in enumerate(value):
                if not isinstance(entry, Mapping) or not entry.get("name"):
                    raise UsageError(f"{where}[{i}]: each dimension of a list needs a `name`, got {entry!r}")
                rest = {k: v for k, v in entry.items() if k != "name"}
                items.append((str(entry["name"]), rest))
        else:
            raise UsageError(
                f"{where}: expected a mapping of dimension -> description (or {{description, scale, weight, min}}), "
                f"got {type(value).__name__}"
            )
        if not items:
            raise UsageError(
                f"{where}: a rubric needs at least one dimension, e.g. {{correctness: 'Is it right?'}}"
            )
        dims = [_dimension(name, spec, f"{where}.{name}") for name, spec in items]
        keys = [_key(d.name) for d in dims]
        dupes = sorted({d.name for d, k in zip(dims, keys, strict=True) if keys.count(k) > 1})
        if dupes:
            raise UsageError(
                f"{where}: dimension names must differ (ignoring case and spaces): {', '.join(dupes)}"
            )
        return cls(tuple(dims), _threshold(pass_threshold, where))

    def dimension(self, name: str) -> Dimension:
        """The dimension called `name`."""
        for d in self.dimensions:
            if d.name == name:
                return d
        raise KeyError(name)

    def score(self, scores: Mapping[str, float]) -> float:
        """The overall score, 0..1: the weighted mean of the normalised dimension scores."""
        total = sum(d.weight for d in self.dimensions)
        return sum(d.weight * d.normalise(scores[d.name]) for d in self.dimensions) / total

    def passed(self, scores: Mapping[str, float]) -> tuple[bool | None, list[str]]:
        """Whether the scores pass (None when the rubric sets no threshold), and why not."""
        reasons = [
            f"{d.name} {scores[d.name]:g} < {d.min:g}"
            for d in self.dimensions
            if d.min is not None and scores[d.name] < d.min
        ]
        overall = self.score(scores)
        if self.pass_threshold is not None and overall < self.pass_threshold:
            reasons.append(f"overall {overall:.2f} < {self.pass_threshold:g}")
        if self.pass_threshold is None and all(d.min is None for d in self.dimensions):
            return None, []
        return not reasons, reasons

    def describe(self) -> str:
        """The rubric as the prompt lists it."""
        lines = []
        for d in self.dimensions:
            text = f"- {d.name} ({d.scale}, {d.high:g} is best)"
            lines.append(text + (f": {d.description}" if d.description else ""))
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "dimensions": [
                {
                    "name": d.name,
                    "description": d.description,
                    "scale": [d.low, d.high],
                    "weight": d.weight,
                    "min": d.min,
                }
                for d in self.dimensions
            ],
            "pass_threshold": self.pass_threshold,
        }


def _threshold(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise UsageError(
            f"{where}: pass_threshold is the overall score (0 to 1) a run needs, not {value!r}; "
            "put limits on a dimension's own scale in its `min`"
        )
    return float(value)


def _scale(value: Any, where: str) -> tuple[float, float]:
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*(?:-|–|to|~|～|\.\.)\s*(-?\d+(?:\.\d+)?)\s*", value)
        if not m:
            raise UsageError(f"{where}: scale {value!r} should look like '1-5' or [1, 5]")
        low, high = float(m.group(1)), float(m.group(2))
    elif isinstance(value, Sequence) and len(value) == 2 and all(_is_number(v) for v in value):
        low, high = float(value[0]), float(value[1])
    else:
        raise UsageError(f"{where}: scale must be [low, high] or 'low-high', not {value!r}")
    if not low < high:
        raise UsageError(f"{where}: scale [{low:g}, {high:g}] must go from low to high")
    return low, high


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _dimension(name: str, spec: Any, where: str) -> Dimension:
    if not name.strip():
        raise UsageError(f"{where}: a dimension needs a name")
    if spec is None or isinstance(spec, str):
        return Dimension(name, spec or "")
    if isinstance(spec, Sequence):
        low, high = _scale(spec, where)
        return Dimension(name, "", low, high)
    if not isinstance(spec, Mapping):
        raise UsageError(f"{where}: expected a description, a scale or {{description, scale, weight, min}}")
    unknown = sorted(set(spec) - {"description", "scale", "weight", "min", "low", "high"})
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(unknown)}; use description, scale, weight, min")
    low, high = _scale(spec["scale"], where) if "scale" in spec else (spec.get("low", 1), spec.get("high", 5))
    if not (_is_number(low) and _is_number(high)) or not low < high:
        raise UsageError(f"{where}: low and high must be numbers with low < high")
    weight = spec.get("weight", 1.0)
    if not _is_number(weight) or weight <= 0:
        raise UsageError(f"{where}: weight must be a positive number, not {weight!r}")
    minimum = spec.get("min")
    if minimum is not None and (not _is_number(minimum) or not low <= minimum <= high):
        raise UsageError(f"{where}: min {minimum!r} must be a number on the scale {low:g}-{high:g}")
    return Dimension(
        name, str(spec.get("description") or ""), float(low), float(high), float(weight), minimum
    )


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
            if _key(k) in ("score", "value", "rating", "评分", "分数", "得分"):
                return _score_value(v)
    return None


def _comment_of(obj: Mapping[str, Any]) -> str | None:
    for k, v in obj.items():
        if _key(k) in _COMMENT_KEYS and isinstance(v, str) and v.strip():
            return v.strip()
    return None


def _scores_mapping(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The part of a reply object that holds the scores: ``scores: {...}``, a list of ``{name, score}``, or the object."""
    for k, v in obj.items():
        if _key(k) in _SCORES_KEYS:
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
        keyed.setdefault(_key(k), v)
    out: dict[str, float] = {}
    for d in dimensions:
        k = _key(d.name)
        candidates = [k, k + "score", "score" + k, k + "rating"]
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
    from abbench.agents import json_readings, load_object

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
    from abbench.agents import strip_thinking

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


# -- calling the judge -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeSettings:
    """How a judge model is called (shared by `llm_judge` and `pairwise_judge`).

    Attributes:
        model: The judge model id.
        base_url: The API root; default ``$OPENAI_BASE_URL`` or the OpenAI API.
        api_key_env: The environment variable holding the key (never the key itself).
        timeout_s: Limit for one request.
        retries: Fresh requests after a timeout, a 429 or a 5xx (Retry-After honoured).
        backoff_s: The first wait before a retry (doubling, with jitter).
        temperature: Sampling temperature (0 by default: judging should not be creative).
        max_tokens: Output limit per request.
        seed: Sent to endpoints that support reproducible sampling.
        prices: Price overrides (see `abbench.llm.price_table`), e.g. ``{input: 0.15, output: 0.6}``.
        json_mode: Ask the endpoint for a JSON object (``response_format``), where it supports it.
        stream: Ask for streamed replies (``stream: true``) and assemble them; a stream cut in the
            middle is a retryable grading failure that keeps the tokens that were reported.
        cache: The response cache for this judge: on (the default: a judge at temperature 0 is a
            fixed function of what it judges, so a re-grade need not pay again), off, read-only or
            refresh; None takes the experiment's ``cache:``, else on.
    """

    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 60.0
    retries: int = 2
    backoff_s: float = 1.0
    temperature: float | None = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    prices: Any = None
    json_mode: bool = False
    stream: bool = False
    cache: str | None = None
    client: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def build(cls, grader: str, **settings: Any) -> JudgeSettings:
        """Validate the settings and make the client (its URL, prices and key variable are checked now).

        Raises:
            UsageError: a setting is missing or invalid (the message names the grader).
        """
        from abbench.llm import ChatClient, RetryPolicy, check_cache_mode

        if not settings.get("model"):
            raise UsageError(
                f"{grader}: a judge needs a model (model: gpt-4o-mini, or any model your endpoint serves)"
            )
        retries = settings.get("retries", 2)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise UsageError(f"{grader}: retries must be a whole number ≥ 0, not {retries!r}")
        backoff = settings.get("backoff_s", 1.0)
        if not _is_number(backoff) or backoff < 0:
            raise UsageError(f"{grader}: backoff_s must be a number of seconds ≥ 0, not {backoff!r}")
        settings["cache"] = check_cache_mode(settings.get("cache"), f"{grader}: cache")
        try:
            client = ChatClient(
                settings["model"],
                base_url=settings.get("base_url"),
                api_key_env=settings.get("api_key_env"),
                timeout_s=settings.get("timeout_s", 60.0),
                retry=RetryPolicy(max_retries=retries, base_delay_s=float(backoff), retry_timeouts=True),
                prices=settings.get("prices"),
                stream=bool(settings.get("stream", False)),
            )
        except UsageError as exc:
            raise UsageError(f"{grader}: {exc}") from None
        return cls(**settings, client=client)

    def call_cache(self, cache: Any) -> Any:
        """`cache` (a run's `abbench.llm.CallCache`) with this judge's mode: its own ``cache``, else the
        experiment's, else on."""
        if cache is None:
            return None
        return dataclasses.replace(cache, mode=self.cache or cache.mode or "on")

    def forget(self, reply: Any, cache: Any) -> None:
        """Drop `reply` from the cache (a reply that could not be read is asked again next time)."""
        if cache is not None and getattr(reply, "cache_key", None):
            cache.cache.forget(reply.cache_key)

    async def ask(self, grader: str, messages: list[dict[str, str]], cache: Any = None) -> Any:
        """One judge request (with the client's bounded retries); returns the `ChatResponse`.

        `cache` is the run's response cache (`abbench.llm.CallCache`), used with `call_cache`'s mode.

        Raises:
            GradingError: the endpoint failed for good; retryable when the failure was (timeouts,
                429, 5xx, dropped connections), with the server's raw reply when there was one.
        """
        log.debug("%s: asking %s at %s", grader, self.model, self.client.base_url)
        try:
            return await self.client.chat(
                messages,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                seed=self.seed,
                response_format={"type": "json_object"} if self.json_mode else None,
                cache=self.call_cache(cache),
            )
        except AgentError as exc:
            partial = getattr(exc, "partial", None)  # a broken stream: the tokens it reported count
            spent = (
                {
                    "judge_model": partial.model,
                    "input_tokens": partial.usage.input_tokens,
                    "output_tokens": partial.usage.output_tokens,
                }
                if partial is not None and partial.usage_reported
                else None
            )
            raise GradingError(
                f"the judge call failed ({exc.failure_type}): {exc}",
                raw_output=exc.raw_output,
                retryable=exc.retryable,
                spent=spent,
            ) from exc


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False, indent=1)


def _check_include(grader: str, include: Any) -> tuple[str, ...]:
    items = (include,) if isinstance(include, str) else tuple(include or ())
    unknown = sorted(set(items) - set(INCLUDE))
    if unknown:
        raise UsageError(
            f"{grader}: include has {', '.join(map(repr, unknown))}; choose from {', '.join(INCLUDE)}"
        )
    return items


def case_block(ctx_case: Any, include: Sequence[str]) -> list[str]:
    """The case as a judge sees it: input, and context / history / reference when included."""
    parts = []
    if "history" in include and ctx_case.history:
        parts.append(f"<history>\n{_text(ctx_case.history)}\n</history>")
    if "context" in include and ctx_case.context not in (None, "", [], {}):
        parts.append(f"<context>\n{_text(ctx_case.context)}\n</context>")
    parts.append(f"<input>\n{ctx_case.input}\n</input>")
    if "reference" in include and ctx_case.expected not in (None, ""):
        parts.append(f"<reference_answer>\n{_text(ctx_case.expected)}\n</reference_answer>")
    return parts


def answer_text(
    ctx: GradeContext, include: Sequence[str], anonymiser: Anonymiser | None, keep: str
) -> tuple[str, dict[str, int]]:
    """One run's answer as a judge sees it (masked when an anonymiser is given), and what was masked."""
    out = ctx.output
    parts = [f"Answer: {out.prediction if out.prediction not in (None, '') else '(no answer)'}"]
    if "reason" in include and out.reason:
        parts.append(f"Reasoning: {out.reason}")
    if "evidence" in include and out.evidence_refs:
        parts.append("Cited evidence: " + ", ".join(out.evidence_refs))
    text = "\n".join(parts)
    if anonymiser is None:
        return text, {}
    masked = anonymiser.anonymise(text, keep=keep)
    return masked.text, masked.masked


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
    ):
        self.name = name
        self.rubric = rubric
        self.settings = settings
        self.output_format = output_format
        self.include = tuple(include)
        self.instructions = instructions
        self.anonymiser = anonymiser

    def __repr__(self) -> str:
        dims = ", ".join(d.name for d in self.rubric.dimensions)
        return f"LLMJudge(name={self.name!r}, model={self.settings.model!r}, dimensions=[{dims}])"

    def system_prompt(self) -> str:
        """What the judge is told: its role, the rubric, and the exact reply format."""
        names = [d.name for d in self.rubric.dimensions]
        if self.output_format == "json":
            example = json.dumps(
                {
                    "scores": {n: f"<{self.rubric.dimension(n).scale}>" for n in names},
                    "comment": "<why, in one or two sentences>",
                },
                ensure_ascii=False,
            )
            fmt = f"Reply with one JSON object and nothing else, exactly like:\n{example}"
        else:
            tags = "\n".join(f'<score name="{n}">{self.rubric.dimension(n).scale}</score>' for n in names)
            fmt = f"Reply with these tags and nothing else (one number per score):\n{tags}\n<comment>why, in one or two sentences</comment>"
        parts = [
            "You are a strict, impartial judge of one answer given by an AI assistant. Score it on every "
            "dimension of the rubric, using only what is in front of you. Do not reward length, "
            "confidence or style the rubric does not ask for.",
            "Rubric:\n" + self.rubric.describe(),
        ]
        if "reference" in self.include:
            parts.append("When a reference answer is given, it is the standard of correctness.")
        if self.instructions:
            parts.append(self.instructions.strip())
        parts.append(fmt)
        return "\n\n".join(parts)

    def messages(self, ctx: GradeContext) -> tuple[list[dict[str, str]], dict[str, int]]:
        """The chat messages for one run, and what the anonymiser masked in its answer."""
        answer, masked = answer_text(ctx, self.include, self.anonymiser, ctx.case.input)
        user = "\n".join([*case_block(ctx.case, self.include), f"<answer>\n{answer}\n</answer>"])
        return [
            {"role": "system", "content": self.system_prompt()},
            {"role": "user", "content": user},
        ], masked

    async def __call__(self, ctx: GradeContext) -> GradeResult:
        messages, masked = self.messages(ctx)
        reply = await self.settings.ask(self.name, messages, ctx.cache)
        cost = spent(reply)
        try:
            parsed = parse_scores(reply.content, self.rubric, self.output_format)
        except GradingError as exc:
            self.settings.forget(reply, ctx.cache)
            # the money was spent and the reply is kept even though it could not be read
            raise GradingError(
                f"{exc} (judge {reply.model})", raw_output=exc.raw_output, spent=spent(reply)
            ) from None
        passed, reasons = self.rubric.passed(parsed.scores)
        comment = parsed.comment
        if passed is False:
            comment = f"{'; '.join(reasons)}" + (f" — {comment}" if comment else "")
        return GradeResult(
            passed=passed,
            score=round(self.rubric.score(parsed.scores), 6),
            dimensions=parsed.scores,
            comment=comment,
            raw_output=reply.content,
            judge_model=reply.model,
            judge_cost=cost["judge_cost"],
            input_tokens=cost["input_tokens"],
            output_tokens=cost["output_tokens"],
            cached=cost.get("cached", False),
            cost_saved=cost.get("cost_saved"),
            details={
                "parsed": parsed.method,
                "cost_known": reply.cost is not None,
                "retries": len(reply.retries),
                **({"masked": masked} if masked else {}),
            },
        )


def spent(*replies: Any) -> dict[str, Any]:
    """What judge replies cost, as the GradeResult fields that record it: a reply from the response
    cache spent nothing (no cost, no tokens) and saved its cost."""
    paid = [r for r in replies if not getattr(r, "cached", False)]
    saved = [r for r in replies if getattr(r, "cached", False)]
    costs = [r.cost for r in paid]
    return {
        "judge_model": replies[0].model if replies else None,
        "judge_cost": None if any(c is None for c in costs) else sum(costs),
        "input_tokens": sum(r.usage.input_tokens for r in paid),
        "output_tokens": sum(r.usage.output_tokens for r in paid),
        # only when the cache answered: a grade that paid for every reply records what it always did
        **({"cached": not paid, "cost_saved": sum(r.cost or 0.0 for r in saved)} if saved else {}),
    }


@register_grader("llm_judge")
def llm_judge(
    rubric: Any = None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    pass_threshold: float | None = None,
    output_format: str = "json",
    include: Sequence[str] = ("reference", "reason"),
    instructions: str | None = None,
    anonymise: bool = False,
    timeout_s: float = 60.0,
    retries: int = 2,
    backoff_s: float = 1.0,
    temperature: float | None = 0.0,
    max_tokens: int | None = None,
    seed: int | None = None,
    prices: Any = None,
    json_mode: bool = False,
    stream: bool = False,
    cache: str | None = None,
    name: str = "llm_judge",
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
        model: The judge model (required).
        base_url: An OpenAI-compatible API root; default ``$OPENAI_BASE_URL`` or OpenAI.
        api_key_env: The environment variable holding the key (the key is never stored).
        pass_threshold: Overall score (0..1) a run needs to pass; without it (and without a
            dimension ``min``) the judge only scores.
        output_format: ``json`` (default) or ``tagged`` — what the prompt asks the judge to reply in.
        include: What the judge sees besides input and answer: any of ``reference`` (the gold
            answer), ``reason``, ``evidence``, ``context``, ``history``.
        instructions: Extra guidance added to the judge's prompt.
        anonymise: Mask model, provider and path names in the answer first (see `Anonymiser`).
        timeout_s: Limit for one judge request.
        retries: Fresh requests after a timeout, 429 or 5xx.
        backoff_s: First wait before a retry.
        temperature: Judge sampling temperature (default 0).
        max_tokens: Output limit of the judge.
        seed: For endpoints that support reproducible sampling.
        prices: Judge price override, ``{input: USD/M, output: USD/M}``.
        json_mode: Send ``response_format: json_object`` (for endpoints that support it).
        stream: Ask the judge for a streamed reply (``stream: true``).
        cache: The response cache: on (default), off, read-only or refresh (see `JudgeSettings`).
        name: The grader's name in the experiment.

    Raises:
        UsageError: an option is invalid (said when the experiment is defined).
    """
    if output_format not in OUTPUT_FORMATS:
        raise UsageError(
            f"{name}: output_format must be one of {', '.join(OUTPUT_FORMATS)}, not {output_format!r}"
        )
    parsed = Rubric.parse(
        DEFAULT_RUBRIC if rubric is None else rubric, pass_threshold=pass_threshold, where=f"{name}.rubric"
    )
    settings = JudgeSettings.build(
        name,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        timeout_s=timeout_s,
        retries=retries,
        backoff_s=backoff_s,
        temperature=temperature,
        max_tokens=max_tokens,
        seed=seed,
        prices=prices,
        json_mode=json_mode,
        stream=stream,
        cache=cache,
    )
    return LLMJudge(
        name,
        parsed,
        settings,
        output_format=output_format,
        include=_check_include(name, include),
        instructions=instructions,
        anonymiser=Anonymiser() if anonymise else None,
    )
