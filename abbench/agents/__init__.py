"""Agent adapters: builtin (offline reference), openai (any compatible endpoint), command, python, and
external (runs recorded from elsewhere)."""

from __future__ import annotations

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.agents._answer import (
        ANSWER_FORMATS,
        Answer,
        answer_format as answer_format,
        answer_from_mapping as answer_from_mapping,
        canonical_refs as canonical_refs,
        check_output as check_output,
        json_readings as json_readings,
        last_json_object as last_json_object,
        load_object as load_object,
        match_label as match_label,
        parse_answer,
        strip_thinking as strip_thinking,
    )
    from abbench.agents._base import (
        HIDDEN_FIELDS,
        MAX_OUTPUT_BYTES,
        Agent,
        AgentFactory,
        Spending,
        Task,
        agent_case,
        agent_names,
        agent_task as agent_task,
        make_agent,
        register_agent,
    )
    from abbench.agents._builtin import builtin, stand_in_note as stand_in_note
    from abbench.agents._command import CommandAgent
    from abbench.agents._external import NOT_RECORDED as NOT_RECORDED, ExternalAgent, external_agent
    from abbench.agents._openai import OpenAIAgent
    from abbench.agents._parameters import AgentParameter, agent_parameters
    from abbench.agents._prompt import (
        Prompt,
        answer_schema as answer_schema,
        build_prompt,
        history_turns as history_turns,
    )
    from abbench.agents._python import PythonAgent, load_callable as load_callable
    from abbench.agents._rules import Rule, SkillRules, extract_rules
    from abbench.agents._skill_tools import SKILL_TOOLS as SKILL_TOOLS, SkillTools as SkillTools

__all__ = [
    "ANSWER_FORMATS",
    "HIDDEN_FIELDS",
    "MAX_OUTPUT_BYTES",
    "Agent",
    "AgentFactory",
    "AgentParameter",
    "Answer",
    "CommandAgent",
    "ExternalAgent",
    "OpenAIAgent",
    "Prompt",
    "PythonAgent",
    "Rule",
    "SkillRules",
    "Spending",
    "Task",
    "agent_case",
    "agent_names",
    "agent_parameters",
    "build_prompt",
    "builtin",
    "external_agent",
    "extract_rules",
    "make_agent",
    "parse_answer",
    "register_agent",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.agents._answer": (
            "ANSWER_FORMATS",
            "Answer",
            "answer_format",
            "answer_from_mapping",
            "canonical_refs",
            "check_output",
            "json_readings",
            "last_json_object",
            "load_object",
            "match_label",
            "parse_answer",
            "strip_thinking",
        ),
        "abbench.agents._base": (
            "HIDDEN_FIELDS",
            "MAX_OUTPUT_BYTES",
            "Agent",
            "AgentFactory",
            "Spending",
            "Task",
            "agent_case",
            "agent_names",
            "agent_task",
            "make_agent",
            "register_agent",
        ),
        "abbench.agents._builtin": (
            "builtin",
            "stand_in_note",
        ),
        "abbench.agents._command": ("CommandAgent",),
        "abbench.agents._external": ("NOT_RECORDED", "ExternalAgent", "external_agent"),
        "abbench.agents._openai": ("OpenAIAgent",),
        "abbench.agents._parameters": (
            "AgentParameter",
            "agent_parameters",
        ),
        "abbench.agents._prompt": (
            "Prompt",
            "answer_schema",
            "build_prompt",
            "history_turns",
        ),
        "abbench.agents._python": (
            "PythonAgent",
            "load_callable",
        ),
        "abbench.agents._rules": (
            "Rule",
            "SkillRules",
            "extract_rules",
        ),
        "abbench.agents._skill_tools": ("SKILL_TOOLS", "SkillTools"),
    },
    public=__all__,
)
