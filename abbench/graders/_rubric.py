"""A judge's rubric: named dimensions with scales and weights, and when a run passes.

`Rubric.parse` reads what an experiment definition says (a text, a mapping, a list,
``{dimensions, pass_threshold}``, or a template by name: ``{template: code}``) and says what is wrong
with it, naming the dimension. The templates (`RUBRIC_TEMPLATES`) are the double-blind workflow's
rubrics per task type, each dimension on /10.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abbench.errors import UsageError

DEFAULT_RUBRIC = {
    "correctness": "Is the answer correct for the input? When a reference answer is given, it is the standard."
}
"""The rubric `llm_judge` uses when none is given."""


def judge_key(text: Any) -> str:
    """`text` as a key a judge's reply is matched on: NFKC, case-folded, without spaces, ``_`` or ``-``."""
    return re.sub(r"[\s_\-]+", "", unicodedata.normalize("NFKC", str(text)).casefold())


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
        aliases: Other names a judge may use for it (``准确性`` for ``accuracy``).
        functional: Whether it is a functional criterion (the answer works, is right), as opposed to
            polish: a pairwise judge's ``tie_when_both_correct`` ties two answers that both meet every
            functional criterion (its ``min``, else the top of its scale).
    """

    name: str
    description: str = ""
    low: float = 1.0
    high: float = 5.0
    weight: float = 1.0
    min: float | None = None
    aliases: tuple[str, ...] = ()
    functional: bool = False

    def met(self, value: float) -> bool:
        """Whether `value` meets this dimension as a functional criterion: its ``min``, else its top."""
        return value >= (self.min if self.min is not None else self.high)

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
        name: The template it was made from (``writing``, ``code`` ...), if any.
    """

    dimensions: tuple[Dimension, ...]
    pass_threshold: float | None = None
    name: str | None = None

    @classmethod
    def template(cls, name: Any, *, where: str = "rubric") -> Rubric:
        """The rubric template called `name` (`RUBRIC_TEMPLATES`: writing, code, reasoning, qa, creative).

        Raises:
            UsageError: no template has that name (the message lists them).
        """
        key = judge_key(name)
        if key not in RUBRIC_TEMPLATES:
            raise UsageError(
                f"{where}: no rubric template {name!r}; choose one of {', '.join(RUBRIC_TEMPLATES)}",
                kind="rubric template",
                name=str(name),
                choices=tuple(RUBRIC_TEMPLATES),
            )
        return cls(RUBRIC_TEMPLATES[key], None, key)

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
            and "template" in value
            and set(value) <= {"template", "pass_threshold"}
        ):
            rubric = cls.template(value["template"], where=where)
            threshold = pass_threshold if pass_threshold is not None else value.get("pass_threshold")
            return cls(rubric.dimensions, _threshold(threshold, where), rubric.name)
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
        keys = [judge_key(d.name) for d in dims]
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
            also = f" / {' / '.join(d.aliases)}" if d.aliases else ""
            text = f"- {d.name}{also} ({d.scale}, {d.high:g} is best)"
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
                    **({"aliases": list(d.aliases)} if d.aliases else {}),
                    **({"functional": True} if d.functional else {}),
                }
                for d in self.dimensions
            ],
            "pass_threshold": self.pass_threshold,
            **({"template": self.name} if self.name else {}),
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
    elif isinstance(value, Sequence) and len(value) == 2 and all(is_number(v) for v in value):
        low, high = float(value[0]), float(value[1])
    else:
        raise UsageError(f"{where}: scale must be [low, high] or 'low-high', not {value!r}")
    if not low < high:
        raise UsageError(f"{where}: scale [{low:g}, {high:g}] must go from low to high")
    return low, high


def is_number(v: Any) -> bool:
    """`v` is an int or float (not a bool)."""
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
    unknown = sorted(
        set(spec) - {"description", "scale", "weight", "min", "low", "high", "aliases", "functional"}
    )
    if unknown:
        raise UsageError(
            f"{where}: unknown key(s) {', '.join(unknown)}; use description, scale, weight, min, aliases, functional"
        )
    low, high = _scale(spec["scale"], where) if "scale" in spec else (spec.get("low", 1), spec.get("high", 5))
    if not (is_number(low) and is_number(high)) or not low < high:
        raise UsageError(f"{where}: low and high must be numbers with low < high")
    weight = spec.get("weight", 1.0)
    if not is_number(weight) or weight <= 0:
        raise UsageError(f"{where}: weight must be a positive number, not {weight!r}")
    minimum = spec.get("min")
    if minimum is not None and (not is_number(minimum) or not low <= minimum <= high):
        raise UsageError(f"{where}: min {minimum!r} must be a number on the scale {low:g}-{high:g}")
    aliases = spec.get("aliases") or ()
    if isinstance(aliases, str):
        aliases = (aliases,)
    if not isinstance(aliases, Sequence) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise UsageError(f"{where}: aliases must be a list of names, not {aliases!r}")
    return Dimension(
        name,
        str(spec.get("description") or ""),
        float(low),
        float(high),
        float(weight),
        minimum,
        tuple(aliases),
        bool(spec.get("functional", False)),
    )


def _ten(name: str, alias: str, description: str, *, functional: bool = False) -> Dimension:
    return Dimension(name, description, 0.0, 10.0, aliases=(alias,), functional=functional)


RUBRIC_TEMPLATES: dict[str, tuple[Dimension, ...]] = {
    "writing": (
        _ten(
            "accuracy",
            "准确性",
            "Are the facts and claims right, and is the task's request met?",
            functional=True,
        ),
        _ten("completeness", "完整性", "Does it cover everything the task asks for?"),
        _ten("expression", "表达", "Is it clear, well organised and fluent for its reader?"),
        _ten("depth", "深度", "Does it go beyond the obvious: insight, reasons, examples?"),
    ),
    "code": (
        _ten(
            "correctness", "正确性", "Does the code do what was asked, edge cases included?", functional=True
        ),
        _ten("completeness", "完整性", "Is every part of the request implemented, nothing left as a stub?"),
        _ten("readability", "可读性", "Is it clear, idiomatic and easy to maintain?"),
        _ten("efficiency", "效率", "Are its time and memory use reasonable for the task?"),
    ),
    "reasoning": (
        _ten("correctness", "正确性", "Is the conclusion right?", functional=True),
        _ten("rigor", "严谨性", "Does every step follow, with no gap or unfounded leap?"),
        _ten("completeness", "完整性", "Are all the cases and conditions of the problem considered?"),
        _ten("clarity", "清晰度", "Can a reader follow the reasoning?"),
    ),
    "qa": (
        _ten(
            "accuracy",
            "准确性",
            "Is the answer right? A reference answer, when given, is the standard.",
            functional=True,
        ),
        _ten("completeness", "完整性", "Does it answer every part of the question?"),
        _ten("relevance", "相关性", "Does it stay on the question, without padding?"),
        _ten("expression", "表达", "Is it clear and concise?"),
    ),
    "creative": (
        _ten("originality", "创意", "Is it fresh, not a cliché?"),
        _ten("expression", "表达", "Is the language vivid and well controlled?"),
        _ten("coherence", "连贯性", "Does it hang together: structure, voice, consistency?"),
        _ten("depth", "深度", "Does it carry feeling or meaning beyond the surface?"),
    ),
}
"""The double-blind workflow's rubric per task type (``rubric: {template: code}``), each dimension
scored 0-10 and named in English with its Chinese name as an alias; the dimension that says whether
the answer is right is marked functional (``creative`` has none)."""
