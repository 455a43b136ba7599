"""Agent CLIs the ``command`` adapter knows: how to run each one once, configure it inside the run's
workspace, and read what it prints (answer text, tokens, cost, tool calls, files read, session)."""

from __future__ import annotations

from abbench.agents._presets._base import Preset, Reading, Setup, json_lines
from abbench.agents._presets._jsonl import ClaudeCode, Codex, GenericJsonl, PathReader, compile_path, walk
from abbench.agents._presets._llm import Llm
from abbench.agents._presets._opencode import OpenCode
from abbench.errors import UnknownName

PRESETS: dict[str, Preset] = {p.name: p for p in (OpenCode(), Llm(), GenericJsonl(), ClaudeCode(), Codex())}
"""The presets by name (``preset:`` of a command arm)."""


def get_preset(name: str) -> Preset:
    """The preset called `name`.

    Raises:
        UsageError: there is none (the message lists them).
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownName("preset", name, PRESETS) from None


__all__ = [
    "PRESETS",
    "ClaudeCode",
    "Codex",
    "GenericJsonl",
    "Llm",
    "OpenCode",
    "PathReader",
    "Preset",
    "Reading",
    "Setup",
    "compile_path",
    "get_preset",
    "json_lines",
    "walk",
]
