"""Test doubles that ship with abbench: a scripted OpenAI-compatible server for agents and judges."""

from __future__ import annotations

from abbench.testing._openai_server import RecordedRequest, Reply, ScriptedOpenAIServer

__all__ = [
    "RecordedRequest",
    "Reply",
    "ScriptedOpenAIServer",
]
