"""Agent adapters: builtin (offline reference), openai (any compatible endpoint), command, python."""

from __future__ import annotations

from abbench.agents._base import Agent, AgentFactory, Task, agent_names, make_agent, register_agent

__all__ = ["Agent", "AgentFactory", "Task", "agent_names", "make_agent", "register_agent"]
