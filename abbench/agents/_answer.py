"""Tolerant reading of an agent's final answer into prediction, reason, confidence and evidence.

Models wrap the JSON they were asked for in prose, code fences or ``<think>`` blocks, use other key
names, or fall back to ``key: value`` lines; `parse_answer` accepts all of these, and matches the
prediction against the declared labels ignoring case, spaces and punctuation. When nothing can be
read it raises `AgentError` with ``failure_type="bad_output"`` holding the raw text — never an empty
prediction that would silently count as wrong.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abbench._text import clip
from abbench.errors import AgentError
from abbench.llm import FailureType
from abbench.snapshot import Snapshot
from abbench.types import AgentOutput, Usage

_ALIASES = {
    "prediction": (
        "prediction",
        "predicted",
        "predictedlabel",
        "label",
        "answer",
        "finalanswer",
        "intent",
        "category",
        "class",
        "classification",
        "decision",
        "verdict",
        "预测",
        "预测结果",
        "标签",
        "答案",
        "意图",
        "分类",
        "类别",
        "结论",
    ),
    "reason": ("reason", "reasoning", "rationale", "explanation", "why", "理由", "原因", "解释"),
    "confidence": ("confidence", "probability", "certainty", "置信度", "信心"),
    "evidence_refs": (
        "evidencerefs",
        "evidenceref",
        "evidence",
        "refs",
        "references",
        "citations",
        "sources",
        "依据",
        "证据",
        "引用",
    ),
}
_FIELD_OF = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)```", re.S)
_KV = re.compile(
    r"^[ \t>]*(?:[-*•]|\d+[.)])?[ \t]*[*_`\"']*([^\s:：=*_`\"'][^:：=\n]{0,30}?)[*_`\"']*[ \t]*[:：=][ \t]*(.*)$"
)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_REF_SPLIT = re.compile(r"[,;，；、\n]+")


@dataclass(frozen=True, slots=True)
class Answer:
    """A final answer, read from whatever the agent wrote.

    Attributes:
        prediction: The label (as declared, when it matched one) or the answer text.
        reason: The stated reason, if any.
        confidence: 0..1, or None when absent or unreadable (80% and 80 are read as 0.8).
        evidence_refs: Cited references, as written (deduplicated, order kept).
        method: How it was read: ``json`` (the whole reply), ``lenient_json`` (the whole reply, a
            Python-style dict or with a trailing comma), ``fenced_json``, ``embedded_json``, ``key_value``,
            ``label`` (the whole reply is a label), ``label_mention`` (exactly one label is named),
            ``plain_text`` (no label set: the reply is the answer), or ``object``.
        in_label_set: Whether the prediction is one of the declared labels (None when none are declared).
    """

    prediction: str
    reason: str | None = None
    confidence: float | None = None
    evidence_refs: tuple[str, ...] = ()
    method: str = "json"
    in_label_set: bool | None = None


def _key(name: Any) -> str:
    return re.sub(r"[\s_\-]+", "", unicodedata.normalize("NFKC", str(name)).casefold())


def _folded(text: str) -> str:
    """Case, width, spaces and punctuation removed: ``"Fast-System."`` and ``"fast system"`` agree."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if unicodedata.category(ch)[0] in "LN")


@functools.lru_cache(maxsize=64)
def _exact_labels(label_set: tuple[str, ...]) -> dict[str, str]:
    # built once per label set: matching runs for every answer of every run
    return {_folded(label): label for label in label_set}


def _spaced(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join("".join(ch if unicodedata.category(ch)[0] in "LN" else " " for ch in text).split())


def _is_ascii_word(text: str) -> bool:
    return any(ch.isascii() and ch.isalnum() for ch in text)


def match_label(value: str, label_set: Sequence[str] | None, *, anywhere: bool = False) -> str | None:
    """The declared label `value` stands for, or None.

    Exact after folding case, width, spaces and punctuation (``" FAST. "`` → ``fast``); otherwise the
    label the value starts with (``"fast, because …"`` → ``fast``), or with ``anywhere=True`` the single
    label it names anywhere (ASCII labels on word boundaries, CJK labels as substrings). A label inside
    a longer named label does not count (``"very slow"`` is not ``slow``); two labels named → None.
    """
    if not label_set or value is None:
        return None
    folded = _folded(value)
    exact = _exact_labels(tuple(label_set))
    if folded in exact:
        return exact[folded]
    spaced = f" {_spaced(value)} "
    hits = []
    for label in label_set:
        key = _spaced(label)
        if not key:
            continue
        if _is_ascii_word(label):
            found = f" {key} " in spaced if anywhere else spaced.startswith(f" {key} ")
        else:
            found = _folded(label) in folded if anywhere else folded.startswith(_folded(label))
        if found:
            hits.append(label)
    # "very slow" names "slow" too: keep only labels not contained in another hit
    hits = [h for h in hits if not any(h != o and _folded(h) in _folded(o) for o in hits)]
    return hits[0] if len(set(hits)) == 1 else None


def _confidence(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip().rstrip("%").strip()
        percent = value.strip().endswith("%")
        try:
            number = float(text)
        except ValueError:
            return None
        if percent:
            number /= 100
    elif isinstance(value, int | float):
        number = float(value)
    else:
        return None
    if 1 < number <= 100:
        number /= 100
    return number if 0 <= number <= 1 else None


def _refs(value: Any) -> tuple[str, ...]:
    items: list[str] = []
    if value is None:
        return ()
    if isinstance(value, str):
        items = _REF_SPLIT.split(value)
    elif isinstance(value, Mapping):
        ref = value.get("ref") or value.get("reference")
        if ref:
            items = [str(ref)]
        elif value.get("path"):
            heading = value.get("heading") or value.get("section") or ""
            items = [f"{value['path']}#{heading}" if heading else str(value["path"])]
    elif isinstance(value, Iterable):
        for item in value:
            items.extend(_refs(item))
    else:
        items = [str(value)]
    out: list[str] = []
    for item in items:
        item = item.strip().strip("[]()<>\"'`“”‘’").strip()
        if item and item.lower() not in ("none", "n/a", "null", "无") and item not in out:
            out.append(item)
    return tuple(out)


def _prediction(value: Any) -> str | None:
    if isinstance(value, list | tuple) and len(value) == 1:
        value = value[0]
    if value is None or isinstance(value, dict | list | tuple):
        return None
    text = str(value).strip()
    return text or None


def _fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = _FIELD_OF.get(_key(key))
        if name and name not in out:
            out[name] = value
    return out


def answer_from_mapping(
    obj: Mapping[str, Any], label_set: Sequence[str] | None = None, *, method: str = "object"
) -> Answer | None:
    """An `Answer` from a JSON object with answer-like keys, or None when it has no prediction key.

    Key names are matched loosely (``Prediction``, ``label``, ``answer``, ``预测`` …); an object whose
    prediction key holds another object (``{"answer": {"prediction": …}}``) is read through.

    Raises:
        AgentError: ``bad_output`` when the prediction key is there but empty, or names no declared
            label (with a label set).
    """
    fields = _fields(obj)
    if isinstance(fields.get("prediction"), Mapping):
        inner = answer_from_mapping(fields["prediction"], label_set, method=method)
        if inner is not None:
            return inner
    if "prediction" not in fields:
        return None
    prediction = _prediction(fields["prediction"])
    if prediction is None:
        raise AgentError(
            f"the agent's answer has an empty prediction: {json.dumps(obj, ensure_ascii=False)[:300]}",
            FailureType.BAD_OUTPUT,
            retryable=True,
            raw_output=json.dumps(obj, ensure_ascii=False),
        )
    matched = match_label(prediction, label_set)
    if label_set and matched is None:
        # a value outside the declared labels is not an answer: `{`, `306897524` or the prompt's own
        # instruction echoed back were once read as labels, graded wrong and never retried
        labels = ", ".join(list(label_set)[:20])
        raise AgentError(
            f"the agent's prediction {clip(prediction, 80)!r} is not one of the labels ({labels})",
            FailureType.BAD_OUTPUT,
            retryable=True,
            raw_output=json.dumps(obj, ensure_ascii=False, default=str),
        )
    reason = fields.get("reason")
    return Answer(
        prediction=matched or prediction,
        reason=None
        if reason is None
        else (reason if isinstance(reason, str) else json.dumps(reason, ensure_ascii=False)),
        confidence=_confidence(fields.get("confidence")),
        evidence_refs=_refs(fields.get("evidence_refs")),
        method=method,
        in_label_set=None if not label_set else matched is not None,
    )


def _objects(text: str) -> list[str]:
    """Every top-level ``{...}`` span of `text`, braces inside strings ignored."""
    spans: list[str] = []
    depth, start, quote, escaped = 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'" and depth:
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def _load_object(text: str) -> Any:
    text = text.strip()
    for candidate in (text, _TRAILING_COMMA.sub(r"\1", text)):
        try:
            return json.loads(candidate)
        except ValueError:
            pass
    try:  # a Python-style dict: {'prediction': 'fast'}
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def json_readings(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The JSON objects found in `text`, as ``(method, object)``: code-fenced ones, then ones embedded
    in prose (``fenced_json`` / ``embedded_json``), the last written first in each group."""
    out: list[tuple[str, dict[str, Any]]] = []
    for m in reversed(list(_FENCE.finditer(text))):
        value = _load_object(m.group(2))
        if isinstance(value, dict):
            out.append(("fenced_json", value))
    for span in reversed(_objects(text)):
        value = _load_object(span)
        if isinstance(value, dict):
            out.append(("embedded_json", value))
    return out


def load_object(text: str) -> Any:
    """`text` read as one JSON value, or None when it is not JSON."""
    return _load_object(text)


def last_json_object(text: str) -> dict[str, Any] | None:
    """The last JSON object in `text` (a whole-text object, a JSON line, or one embedded in prose)."""
    whole = _load_object(text)
    if isinstance(whole, dict):
        return whole
    for span in reversed(_objects(text)):
        value = _load_object(span)
        if isinstance(value, dict):
            return value
    return None


def _key_values(text: str) -> dict[str, str]:
    """The answer fields written as ``key: value`` lines (the first of each)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        m = _KV.match(line)
        if not m:
            continue
        name = _FIELD_OF.get(_key(m.group(1)))
        value = m.group(2).strip().strip("*_`").strip().rstrip(",").strip().strip("\"'“”")
        if name and value and name not in found:
            found[name] = value
    return found if "prediction" in found else {}


def strip_thinking(text: str) -> str:
    """`text` without ``<think>…</think>`` blocks (an unclosed leading one drops everything before ``</think>``)."""
    text = _THINK.sub("", text)
    closing = re.search(r"</(think|thinking|reasoning)>", text, re.I)
    if closing:
        text = text[closing.end() :]
    return text.strip()


def _bad_output(message: str, raw: str, retryable: bool) -> AgentError:
    return AgentError(message, FailureType.BAD_OUTPUT, retryable=retryable, raw_output=raw)


ANSWER_FORMATS = ("strict", "structured", "fallback")
"""How an answer was read, for format adherence: ``strict`` (the whole reply is the JSON object asked
for), ``structured`` (the same, asked with a ``response_format``), ``fallback`` (the tolerant reader
found it in prose, a code fence, ``key: value`` lines or a bare label)."""


def answer_format(method: str, *, structured: bool = False) -> str:
    """The format-adherence word (one of `ANSWER_FORMATS`) of an `Answer.method`."""
    if method == "json":
        return "structured" if structured else "strict"
    return "fallback"


def _candidates(body: str, strict: bool) -> Iterable[tuple[str, Any]]:
    """The objects an answer may be read from, in order of trust: the whole reply as JSON (``json``;
    a Python-style dict or trailing comma is ``lenient_json``), then — unless `strict` — JSON in code
    fences and in prose (the last written first), then ``key: value`` lines."""
    try:
        whole = json.loads(body)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        yield "json", whole
    elif not strict:
        lenient = _load_object(body)
        if isinstance(lenient, dict):
            yield "lenient_json", lenient
    if strict:
        return
    for m in reversed(list(_FENCE.finditer(body))):
        value = _load_object(m.group(2))
        if isinstance(value, dict):
            yield "fenced_json", value
    for span in reversed(_objects(body)):
        value = _load_object(span)
        if isinstance(value, dict):
            yield "embedded_json", value
    found = _key_values(body)
    if found:
        yield "key_value", found


def parse_answer(
    text: str | None, label_set: Sequence[str] | None = None, *, retryable: bool = True, strict: bool = False
) -> Answer:
    """Read an agent's final answer.

    Tried in order: the whole reply as JSON; JSON in a code fence; a JSON object embedded in prose
    (the last one with a prediction key; Python-style dicts and trailing commas accepted);
    ``key: value`` lines (``prediction: fast``, ``**Label**: fast``, ``预测：快``); the whole reply
    being a label; the reply naming exactly one label. With no label set declared, a reply that is
    not broken JSON is taken as the answer itself (``plain_text``). ``<think>`` blocks are ignored.

    With a label set, an explicit prediction wins over anything written later: the first one found
    that names a declared label is the answer, and when every explicit prediction names something else
    (``{``, a number, the prompt's instruction echoed back) the reply is ``bad_output`` — never read as
    a label, never read past to a label mentioned in passing.

    Args:
        text: The raw reply.
        label_set: The declared labels; predictions are matched to them (see `match_label`).
        retryable: The `AgentError.retryable` to raise with when nothing parses.
        strict: Accept only the whole reply as one JSON object (a reply cut at ``max_tokens`` is never
            read loosely).

    Raises:
        AgentError: ``bad_output`` holding the raw text in `raw_output`, when the reply is empty or
            no answer can be read from it.
    """
    raw = text or ""
    body = strip_thinking(raw)
    if not body:
        raise _bad_output(
            "the agent's reply is empty" + (" (only a <think> block)" if raw.strip() else ""), raw, retryable
        )
    refused: AgentError | None = None
    for method, value in _candidates(body, strict):
        try:
            answer = answer_from_mapping(value, label_set, method=method)
        except AgentError as exc:
            refused = refused or exc
            continue
        if answer is not None:
            return answer
    if refused is not None:
        raise _bad_output(f"{refused}; got {_snippet(body)!r}", raw, retryable)
    if strict:
        raise _bad_output(
            f"the reply is not one JSON object with a prediction: {_snippet(body)!r}", raw, retryable
        )
    if label_set:
        folded = _folded(body)
        for label in label_set:
            if _folded(label) == folded:
                return Answer(label, method="label", in_label_set=True)
        matched = match_label(body, label_set, anywhere=True)
        if matched is not None:
            return Answer(matched, method="label_mention", in_label_set=True)
        labels = ", ".join(label_set[:20])
        raise _bad_output(
            f"no answer in the agent's reply: expected a JSON object with a prediction (one of {labels}); "
            f"got {_snippet(body)!r}",
            raw,
            retryable,
        )
    if body.lstrip().startswith(("{", "[", "```")):
        raise _bad_output(
            f"the agent's reply looks like JSON but does not parse and has no prediction: {_snippet(body)!r}",
            raw,
            retryable,
        )
    return Answer(body, method="plain_text")


def _snippet(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return clip(flat, limit)


def canonical_refs(refs: Iterable[str], skill: Snapshot | None) -> tuple[str, ...]:
    """Citations resolved to the snapshot's own references where they resolve (``SKILL.md#fast-system``
    → ``SKILL.md#Fast system``); the others are kept as written, for graders to flag."""
    out: list[str] = []
    for ref in refs:
        section = skill.resolve(ref) if skill is not None else None
        value = section.ref if section is not None else ref
        if value not in out:
            out.append(value)
    return tuple(out)


# -- checking what an adapter returned ---------------------------------------------------------------


def _text(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _texts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if value is None or isinstance(value, Mapping) or not isinstance(value, Iterable):
        return () if value is None else (_text(value) or "",)
    return tuple(t for t in (_text(v) for v in value if v is not None) if t and t.strip())


def _amount(name: str, value: Any) -> float:
    """A non-negative finite number (cost, latency); raises ValueError naming the field otherwise."""
    number = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or number < 0:
        raise ValueError(f"{name} must be a non-negative number, not {value!r}")
    return number


def _count(name: str, value: Any) -> int:
    number = _amount(name, 0 if value is None else value)
    if not number.is_integer():
        raise ValueError(f"{name} must be a whole number of tokens, not {value!r}")
    return int(number)


def check_output(output: AgentOutput) -> AgentOutput:
    """`output` with every field of the type the store and the analysis read back.

    Adapters written by people (python functions, registered agents) may return anything: a confidence
    of ``"high"`` or a cost of ``"cheap"`` stored as is broke every later metric and case view. Values
    that can be read are converted — prediction, reason and raw output to text (objects as JSON), a
    confidence of ``"80%"`` or ``80`` to 0.8 (NaN to none), references and file lists to text — and
    numbers that cannot be read are refused.

    Raises:
        AgentError: ``bad_output``, not retryable, naming the field and the value.
    """
    o = output
    if _clean(o):  # the common case, on the runner's hot path: nothing to convert
        return o
    try:
        confidence = o.confidence
        if confidence is not None and not (type(confidence) is float and 0.0 <= confidence <= 1.0):
            if isinstance(confidence, float) and math.isnan(confidence):
                confidence = None
            else:
                read = _confidence(confidence)
                if read is None:
                    raise ValueError(
                        f"confidence must be a number from 0 to 1 (or a percentage), not {confidence!r}"
                    )
                confidence = read
        usage = o.usage
        if usage is not None and (
            not isinstance(usage, Usage)
            or type(usage.input_tokens) is not int
            or type(usage.output_tokens) is not int
        ):
            if isinstance(usage, Usage):
                usage = Usage(
                    _count("usage.input_tokens", usage.input_tokens),
                    _count("usage.output_tokens", usage.output_tokens),
                )
            elif isinstance(usage, Mapping):
                usage = Usage(
                    _count("usage.input_tokens", usage.get("input_tokens")),
                    _count("usage.output_tokens", usage.get("output_tokens")),
                )
            else:
                raise ValueError(f"usage must be a Usage or {{input_tokens, output_tokens}}, not {usage!r}")
        checked = dataclasses.replace(
            o,
            prediction=_text(o.prediction),
            reason=_text(o.reason),
            confidence=confidence,
            evidence_refs=o.evidence_refs if _all_text(o.evidence_refs) else _refs(o.evidence_refs),
            raw_output=_text(o.raw_output),
            transcript=o.transcript if type(o.transcript) is tuple else tuple(_texts_or_items(o.transcript)),
            files_read=o.files_read if _all_text(o.files_read) else _texts(o.files_read),
            sections_read=o.sections_read if _all_text(o.sections_read) else _texts(o.sections_read),
            usage=usage,
            cost=o.cost
            if o.cost is None or (type(o.cost) is float and 0 <= o.cost < math.inf)
            else _amount("cost", o.cost),
            latency_ms=o.latency_ms
            if o.latency_ms is None or (type(o.latency_ms) is float and 0 <= o.latency_ms < math.inf)
            else _amount("latency_ms", o.latency_ms or 0),
            session_id=_text(o.session_id),
            model=_text(o.model),
        )
    except ValueError as exc:
        raise AgentError(
            f"the agent returned an answer that cannot be stored: {exc}; fix the adapter (an agent returns "
            "prediction and reason as text, confidence from 0 to 1, cost and latency_ms as numbers)",
            FailureType.BAD_OUTPUT,
            retryable=False,
            raw_output=_text(o.raw_output) if isinstance(o.raw_output, str) else repr(o)[:2000],
        ) from None
    return checked


def _is_text(value: Any) -> bool:
    return value is None or type(value) is str


def _clean(o: AgentOutput) -> bool:
    c, u = o.confidence, o.usage
    return (
        _is_text(o.prediction)
        and _is_text(o.reason)
        and _is_text(o.raw_output)
        and _is_text(o.session_id)
        and _is_text(o.model)
        and (c is None or (type(c) is float and 0.0 <= c <= 1.0))
        and (o.cost is None or (type(o.cost) is float and 0.0 <= o.cost < math.inf))
        and (o.latency_ms is None or (type(o.latency_ms) is float and 0.0 <= o.latency_ms < math.inf))
        and (u is None or (type(u) is Usage and type(u.input_tokens) is int and type(u.output_tokens) is int))
        and type(o.transcript) is tuple
        and _all_text(o.evidence_refs)
        and _all_text(o.files_read)
        and _all_text(o.sections_read)
    )


def _all_text(value: Any) -> bool:
    # most answers read no file: an empty tuple makes no generator
    return type(value) is tuple and (not value or all(type(v) is str for v in value))


def _texts_or_items(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | Mapping) or not isinstance(value, Iterable):
        return [value]
    return list(value)
