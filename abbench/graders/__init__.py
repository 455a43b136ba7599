"""Graders: rule graders, LLM judges and blind pairwise judges, behind one small interface.

Every factory here is registered by name, so an experiment definition can say::

    graders:
      - label_match
      - read_skill
      - {type: regex, pattern: "抱歉|sorry", negate: true, flags: i, name: no_apology}
      - {type: llm_judge, model: gpt-4o-mini, rubric: {correctness: Is it right?}}
      - {type: pairwise_judge, model: gpt-4o-mini, both_orders: true}
"""

from __future__ import annotations

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.graders._anonymise import (
        DEFAULT_IDENTITIES as DEFAULT_IDENTITIES,
        Anonymised as Anonymised,
        Anonymiser as Anonymiser,
        context_terms as context_terms,
    )
    from abbench.graders._base import (
        KINDS,
        FunctionGrader,
        GradeContext,
        Grader,
        GradeResult,
        PairContext,
        as_result as as_result,
        grader_names,
        label_match,
        make_grader,
        normalise_label as normalise_label,
        register_grader,
    )
    from abbench.graders._bias import (
        Judgement,
        PairJudgement,
        PositionBias,
        describe_bias as describe_bias,
        measure_position_bias,
    )
    from abbench.graders._judge import (
        JudgeScores as JudgeScores,
        LLMJudge,
        llm_judge,
        parse_scores as parse_scores,
    )
    from abbench.graders._judge_settings import (
        JUDGE_OPTIONS,
        JudgeOptions,
        JudgeSettings,
        JudgeSpend as JudgeSpend,
    )
    from abbench.graders._pairwise import (
        VERDICTS,
        PairReply as PairReply,
        PairwiseJudge,
        pair_seed as pair_seed,
        pairwise_judge,
        parse_pair as parse_pair,
        read_winner as read_winner,
        slot_order as slot_order,
    )
    from abbench.graders._recorded import VERDICT_ROLE as VERDICT_ROLE, recorded
    from abbench.graders._rubric import DEFAULT_RUBRIC, Dimension, Rubric
    from abbench.graders._rules import (
        TEXT_FIELDS as TEXT_FIELDS,
        answer_number,
        cited_evidence,
        contains,
        exact,
        json_schema,
        max_tokens,
        max_tool_calls,
        numeric,
        parse_number as parse_number,
        read_skill,
        regex,
        tool_calls_in as tool_calls_in,
    )
    from abbench.graders._schema import validate_json as validate_json
    from abbench.graders._self_judge import (
        MODEL_FAMILIES,
        SelfJudging,
        experiment_self_judging,
        judge_models as judge_models,
        model_family,
        self_judging,
    )

__all__ = [
    "DEFAULT_RUBRIC",
    "JUDGE_OPTIONS",
    "KINDS",
    "MODEL_FAMILIES",
    "VERDICTS",
    "Dimension",
    "FunctionGrader",
    "GradeContext",
    "GradeResult",
    "Grader",
    "JudgeOptions",
    "JudgeSettings",
    "Judgement",
    "LLMJudge",
    "PairContext",
    "PairJudgement",
    "PairwiseJudge",
    "PositionBias",
    "Rubric",
    "SelfJudging",
    "answer_number",
    "cited_evidence",
    "contains",
    "exact",
    "experiment_self_judging",
    "grader_names",
    "json_schema",
    "label_match",
    "llm_judge",
    "make_grader",
    "max_tokens",
    "max_tool_calls",
    "measure_position_bias",
    "model_family",
    "numeric",
    "pairwise_judge",
    "read_skill",
    "recorded",
    "regex",
    "register_grader",
    "self_judging",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.graders._anonymise": (
            "DEFAULT_IDENTITIES",
            "Anonymised",
            "Anonymiser",
            "context_terms",
        ),
        "abbench.graders._base": (
            "KINDS",
            "FunctionGrader",
            "GradeContext",
            "Grader",
            "GradeResult",
            "PairContext",
            "as_result",
            "grader_names",
            "label_match",
            "make_grader",
            "normalise_label",
            "register_grader",
        ),
        "abbench.graders._bias": (
            "Judgement",
            "PairJudgement",
            "PositionBias",
            "describe_bias",
            "measure_position_bias",
        ),
        "abbench.graders._judge": (
            "JudgeScores",
            "LLMJudge",
            "llm_judge",
            "parse_scores",
        ),
        "abbench.graders._judge_settings": (
            "JUDGE_OPTIONS",
            "JudgeOptions",
            "JudgeSettings",
            "JudgeSpend",
        ),
        "abbench.graders._pairwise": (
            "VERDICTS",
            "PairReply",
            "PairwiseJudge",
            "pair_seed",
            "pairwise_judge",
            "parse_pair",
            "read_winner",
            "slot_order",
        ),
        "abbench.graders._recorded": ("VERDICT_ROLE", "recorded"),
        "abbench.graders._rubric": (
            "DEFAULT_RUBRIC",
            "Dimension",
            "Rubric",
        ),
        "abbench.graders._rules": (
            "TEXT_FIELDS",
            "answer_number",
            "cited_evidence",
            "contains",
            "exact",
            "json_schema",
            "max_tokens",
            "max_tool_calls",
            "numeric",
            "parse_number",
            "read_skill",
            "regex",
            "tool_calls_in",
        ),
        "abbench.graders._schema": ("validate_json",),
        "abbench.graders._self_judge": (
            "MODEL_FAMILIES",
            "SelfJudging",
            "experiment_self_judging",
            "judge_models",
            "model_family",
            "self_judging",
        ),
    },
    public=__all__,
)
