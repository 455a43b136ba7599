"""Graders: rule graders, LLM judges and blind pairwise judges, behind one small interface.

Every factory here is registered by name, so an experiment definition can say::

    graders:
      - label_match
      - read_skill
      - {type: regex, pattern: "抱歉|sorry", negate: true, flags: i, name: no_apology}
      - {type: llm_judge, model: gpt-4o-mini, rubric: {correctness: Is it right?}}
      - {type: pairwise_judge, model: gpt-4o-mini, both_orders: true}
      - {type: skill_instruction_following, model: gpt-4o-mini}   # also task_completion, trace_quality
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
        VERBOSITY_MIN_DIFFERENCE,
        Judgement,
        PairJudgement,
        PositionBias,
        VerbosityBias,
        describe_bias as describe_bias,
        describe_verbosity as describe_verbosity,
        measure_position_bias,
        measure_verbosity_bias,
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
    from abbench.graders._pair_scores import DimensionTotals, rubric_totals, swap_sides as swap_sides
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
    from abbench.graders._rubric import (
        DEFAULT_RUBRIC,
        RUBRIC_TEMPLATES as RUBRIC_TEMPLATES,
        Dimension,
        Rubric,
    )
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
    from abbench.graders._stand_in_following import STAND_IN as STAND_IN, skill_following_stand_in
    from abbench.graders._trajectory_judge import (
        SECTION_VERDICTS,
        SectionVerdicts as SectionVerdicts,
        SkillFollowingJudge,
        TrajectoryJudge,
        parse_section_verdicts as parse_section_verdicts,
        skill_instruction_following,
        task_completion,
        trace_quality,
    )

__all__ = [
    "DEFAULT_RUBRIC",
    "JUDGE_OPTIONS",
    "KINDS",
    "MODEL_FAMILIES",
    "SECTION_VERDICTS",
    "VERBOSITY_MIN_DIFFERENCE",
    "VERDICTS",
    "Dimension",
    "DimensionTotals",
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
    "SkillFollowingJudge",
    "TrajectoryJudge",
    "VerbosityBias",
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
    "measure_verbosity_bias",
    "model_family",
    "numeric",
    "pairwise_judge",
    "read_skill",
    "recorded",
    "regex",
    "register_grader",
    "rubric_totals",
    "self_judging",
    "skill_following_stand_in",
    "skill_instruction_following",
    "task_completion",
    "trace_quality",
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
            "VERBOSITY_MIN_DIFFERENCE",
            "Judgement",
            "PairJudgement",
            "PositionBias",
            "VerbosityBias",
            "describe_bias",
            "describe_verbosity",
            "measure_position_bias",
            "measure_verbosity_bias",
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
        "abbench.graders._pair_scores": ("DimensionTotals", "rubric_totals", "swap_sides"),
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
            "RUBRIC_TEMPLATES",
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
        "abbench.graders._stand_in_following": ("STAND_IN", "skill_following_stand_in"),
        "abbench.graders._trajectory_judge": (
            "SECTION_VERDICTS",
            "SectionVerdicts",
            "SkillFollowingJudge",
            "TrajectoryJudge",
            "parse_section_verdicts",
            "skill_instruction_following",
            "task_completion",
            "trace_quality",
        ),
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
