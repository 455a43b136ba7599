"""Judge ≠ agent: a judge whose model is an arm's model, or of the same family, may prefer its own answers.

LLM judges rate answers written by their own model (and its relatives) higher than a neutral judge
would (self-preference: Panickssery et al. 2024, "LLM Evaluators Recognize and Favor Their Own
Generations"). `self_judging` finds such pairs in an experiment's definition — by the model ids
alone, nothing is called — and each `SelfJudging` words the warning that ``create``, the report's
judge section and the gate show.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MODEL_FAMILIES: tuple[tuple[str, str], ...] = (
    ("OpenAI GPT", r"(gpt|chatgpt|o[134]|text-davinci|davinci)([-_.:]|$)|gpt-?\d"),
    ("Anthropic Claude", r"claude"),
    ("Google Gemini", r"(gemini|gemma|palm|bison)"),
    ("Meta Llama", r"(meta-)?(code)?llama"),
    ("Alibaba Qwen", r"(qwen|qwq|qvq)"),
    ("DeepSeek", r"deepseek"),
    ("Mistral", r"(mistral|mixtral|codestral|ministral|magistral|pixtral|devstral)"),
    ("Zhipu GLM", r"(chat)?glm|codegeex"),
    ("Moonshot Kimi", r"(kimi|moonshot)"),
    ("ByteDance Doubao", r"(doubao|seed-)"),
    ("Baidu ERNIE", r"ernie"),
    ("xAI Grok", r"grok"),
    ("01.AI Yi", r"yi-"),
    ("Microsoft Phi", r"phi-?\d"),
    ("MiniMax", r"(minimax|abab)"),
    ("Tencent Hunyuan", r"hunyuan"),
    ("Cohere Command", r"(command-|c4ai)"),
    ("Baichuan", r"baichuan"),
    ("InternLM", r"intern(lm|vl)"),
)
"""Model family -> the pattern a model id (lower case, provider prefix removed) starts with."""

_FAMILIES = tuple((name, re.compile(pattern)) for name, pattern in MODEL_FAMILIES)


def _bare(model: str) -> str:
    """A model id as its family is read from: lower case, without a provider path (``openai/``,
    ``Qwen/``, ``models/``) or an ``@`` / ``:`` deployment suffix of a router."""
    text = model.strip().lower()
    text = text.rsplit("/", 1)[-1]
    return text.split("@", 1)[0]


def model_family(model: str | None) -> str | None:
    """The family a model id belongs to (``gpt-4o-mini`` → ``OpenAI GPT``), or None when none is known."""
    if not model:
        return None
    bare = _bare(model)
    for name, pattern in _FAMILIES:
        if pattern.match(bare):
            return name
    return None


@dataclass(frozen=True)
class SelfJudging:
    """A judge whose model is an arm's model, or of its family.

    Attributes:
        judge: The judge's grader name.
        judge_model: Its model.
        arm: The arm whose answers it judges.
        arm_model: The arm's model.
        relation: ``same model`` or ``same family``.
        family: The family they share (None for the same model of no known family).
    """

    judge: str
    judge_model: str
    arm: str
    arm_model: str
    relation: str
    family: str | None

    @property
    def message(self) -> str:
        """The warning, in one line: what, which arm, the risk and what to do."""
        if self.relation == "same model":
            what = f"is arm {self.arm}'s own model"
        else:
            what = f"is of the same family ({self.family}) as arm {self.arm}'s {self.arm_model}"
        return (
            f"judge {self.judge} ({self.judge_model}) {what}: a judge tends to prefer answers of its own "
            "model (self-preference); judge with a model of another family, or add a second judge"
        )

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view, with `message`."""
        return {
            "judge": self.judge,
            "judge_model": self.judge_model,
            "arm": self.arm,
            "arm_model": self.arm_model,
            "relation": self.relation,
            "family": self.family,
            "message": self.message,
        }


def _same(a: str, b: str) -> bool:
    return _bare(a) == _bare(b)


def self_judging(
    judges: Iterable[tuple[str, str | None]], arms: Mapping[str, str | None]
) -> list[SelfJudging]:
    """The (judge, arm) pairs where the judge's model is the arm's model or of its family.

    Args:
        judges: (grader name, judge model) of each judge (rules have no model: leave them out or give None).
        arms: Arm name -> the model its agent runs (None: not known, e.g. a command agent's own default).
    """
    out = []
    for judge, judge_model in judges:
        if not judge_model:
            continue
        for arm, arm_model in arms.items():
            if not arm_model:
                continue
            if _same(judge_model, arm_model):
                relation, family = "same model", model_family(judge_model)
            else:
                family = model_family(judge_model)
                if family is None or family != model_family(arm_model):
                    continue
                relation = "same family"
            out.append(SelfJudging(judge, judge_model, arm, arm_model, relation, family))
    return out


def judge_models(specs: Sequence[Any]) -> list[tuple[str, str | None]]:
    """(grader name, model) of each judge in grader definitions (as an experiment stores them), without
    building a grader: a definition's ``model`` with its ``name`` (default: its type)."""
    out: list[tuple[str, str | None]] = []
    for spec in specs:
        if isinstance(spec, Mapping) and spec.get("model"):
            name = spec.get("name") or spec.get("type") or spec.get("grader") or "judge"
            out.append((str(name), str(spec["model"])))
    return out


def experiment_self_judging(experiment: Any) -> tuple[SelfJudging, ...]:
    """`self_judging` over an experiment's definition (an `abbench.store.Experiment`: its graders and its
    arms' models); nothing is called."""
    judges = judge_models(experiment.settings.graders)
    return tuple(self_judging(judges, {a.name: a.model for a in experiment.arms}))
