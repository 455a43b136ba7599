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
    from abbench.graders._anonymise import DEFAULT_IDENTITIES, Anonymised, Anonymiser, context_terms
    from abbench.graders._base import (
        KINDS,
        FunctionGrader,
        GradeContext,
        Grader,
        GradeResult,
        PairContext,
        as_result,
        grader_names,
        label_match,
        make_grader,
        normalise_label,
        register_grader,
    )
    from abbench.graders._bias import (
        Judgement,
        PairJudgement,
        PositionBias,
        describe_bias,
        measure_position_bias,
    )
    from abbench.graders._judge import JudgeScores, LLMJudge, llm_judge, parse_scores
    from abbench.graders._judge_settings import JUDGE_OPTIONS, JudgeOptions, JudgeSettings, JudgeSpend
    from abbench.graders._pairwise import (
        VERDICTS,
        PairReply,
        PairwiseJudge,
        pair_seed,
        pairwise_judge,
        parse_pair,
        read_winner,
        slot_order,
    )
    from abbench.graders._recorded import VERDICT_ROLE, recorded
    from abbench.graders._rubric import DEFAULT_RUBRIC, Dimension, Rubric
    from abbench.graders._rules import (
        TEXT_FIELDS,
        answer_number,
        cited_evidence,
        contains,
        exact,
        json_schema,
        max_tokens,
        max_tool_calls,
        numeric,
        parse_number,
        read_skill,
        regex,
        tool_calls_in,
    )
    from abbench.graders._schema import validate_json

__all__ = [
    "DEFAULT_IDENTITIES",
    "DEFAULT_RUBRIC",
    "JUDGE_OPTIONS",
    "KINDS",
    "TEXT_FIELDS",
    "VERDICTS",
    "VERDICT_ROLE",
    "Anonymised",
    "Anonymiser",
    "Dimension",
    "FunctionGrader",
    "GradeContext",
    "GradeResult",
    "Grader",
    "JudgeOptions",
    "JudgeScores",
    "JudgeSettings",
    "JudgeSpend",
    "Judgement",
    "LLMJudge",
    "PairContext",
    "PairJudgement",
    "PairReply",
    "PairwiseJudge",
    "PositionBias",
    "Rubric",
    "answer_number",
    "as_result",
    "cited_evidence",
    "contains",
    "context_terms",
    "describe_bias",
    "exact",
    "grader_names",
    "json_schema",
    "label_match",
    "llm_judge",
    "make_grader",
    "max_tokens",
    "max_tool_calls",
    "measure_position_bias",
    "normalise_label",
    "numeric",
    "pair_seed",
    "pairwise_judge",
    "parse_number",
    "parse_pair",
    "parse_scores",
    "read_skill",
    "read_winner",
    "recorded",
    "regex",
    "register_grader",
    "slot_order",
    "tool_calls_in",
    "validate_json",
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
    },
)
