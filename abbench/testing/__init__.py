"""Test doubles that ship with abbench: a scripted OpenAI-compatible server for agents and judges, and a
real (tiny) local model behind an OpenAI-compatible server."""

from __future__ import annotations

from abbench import _lazy
from abbench.testing._local_model import LocalModelServer, ServedRequest, served_tokens
from abbench.testing._openai_server import RecordedRequest, Reply, ScriptedOpenAIServer

__all__ = [
    "LocalModelServer",
    "RecordedRequest",
    "Reply",
    "ScriptedOpenAIServer",
    "ServedRequest",
    "served_tokens",
]

__dir__ = _lazy.listing(__all__)
