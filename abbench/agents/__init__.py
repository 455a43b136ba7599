"""Agent adapters: builtin (offline reference), openai (any compatible endpoint), command, python."""

from __future__ import annotations

from abbench.agents._base import Agent, AgentFactory, Task, agent_names, make_agent, register_agent
from abbench.agents._builtin import builtin
from abbench.agents._rules import Rule, SkillRules, extract_rules

__all__ = [
    "Agent",
    "AgentFactory",
    "Rule",
    "SkillRules",
    "Task",
    "agent_names",
    "builtin",
    "extract_rules",
    "make_agent",
    "register_agent",
]
