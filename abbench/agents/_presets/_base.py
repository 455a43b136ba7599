"""What a preset is: the argv of a one-shot run, the CLI's config in the run's workspace, a reader."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abbench.types import Usage


@dataclass(frozen=True)
class Setup:
    """What a preset is told about one run.

    Attributes:
        workspace: The run's fresh folder (the CLI's config goes here, never into the store).
        model: The model the arm names, passed through to the CLI.
        base_url: The OpenAI-compatible API root the CLI's provider points at (None: the CLI's default).
        api_key_env: The environment variable holding the key; the CLI is told to read it from its
            environment (or is given it in its environment under the name it reads), never a file.
        skill_dir: Where the skill was copied in the workspace (None for a no-skill arm).
        options: The preset's own settings from the arm (``paths`` for generic-jsonl ...).
    """

    workspace: Path
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    skill_dir: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reading:
    """What a preset read from a CLI's output.

    Attributes:
        text: The final answer text (then read as abbench's answer JSON, or by the arm's pattern).
        usage: Tokens over the whole run; None when the CLI reported none.
        cost: Money the CLI reported (None: unknown; a CLI that prices an unknown model at 0 is unknown).
        tool_calls: ``{"name", "input", "status"}`` per tool call, in order.
        files_read: Files the CLI opened, as given (made relative to the skill by the adapter).
        session_id: The CLI's own session or conversation id.
        model: The model the CLI says answered.
        error: ``{"message", "status", "retryable", "retry_after"}`` when the CLI reported a failure.
        steps: Model calls (steps, turns) the CLI reported.
        unreported: Steps the CLI counted 0 tokens for: their server sent no usage, so the run's tokens
            are unknown, never 0.
    """

    text: str | None = None
    usage: Usage | None = None
    cost: float | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    session_id: str | None = None
    model: str | None = None
    error: dict[str, Any] | None = None
    steps: int = 0
    unreported: int = 0

    def add_usage(self, input_tokens: int, output_tokens: int) -> None:
        """Count tokens of one step (nothing once a step's were unknown: the sum is unknown too)."""
        if self.unreported:
            return
        old = self.usage or Usage()
        self.usage = Usage(old.input_tokens + input_tokens, old.output_tokens + output_tokens)

    def unknown_usage(self) -> None:
        """A step whose tokens nobody reported: the run's tokens are unknown, never the others' sum."""
        self.unreported += 1
        self.usage = None


class Preset:
    """A known agent CLI. Subclasses set `name`, `program`, `flags` and `options`, and define `read`.

    Attributes:
        name: What ``preset:`` names.
        program: The executable looked up on PATH when the arm gives no ``program:``.
        flags: The CLI's arguments of a one-shot run, before the arm's ``args:`` and the prompt.
        options: Settings of the arm this preset reads (besides base_url, api_key_env, model).
        needs_model: The CLI needs ``model:`` from the arm.
        skills_dir: Where, inside the run's workspace, the CLI discovers skills: an offered arm's
            snapshots go to ``<skills_dir>/<name>/`` (the arm's ``skills_dir`` wins).
    """

    name = ""
    program = ""
    options: tuple[str, ...] = ()
    needs_model = True
    skills_dir = "skills"
    call_marker: bytes | None = None
    """What one model call prints on stdout as it happens (None: the CLI prints nothing per call), so an
    attempt can be stopped at the arm's ``max_model_calls``."""

    def check(self, options: dict[str, Any]) -> None:
        """Refuse settings that cannot work (raises `UsageError`), when the arm is defined."""

    flags: tuple[str, ...] = ()
    """The CLI's arguments of a one-shot run, between the program and the arm's ``args:`` (with
    `abbench.agents._command.PLACEHOLDERS`)."""

    def argv(self, program: str, args: list[str]) -> list[str]:
        """The argv template of a one-shot run: the program, `flags`, the arm's `args`, the prompt."""
        return [program, *self.flags, *args, "{prompt}"]

    def cli_model(self, setup: Setup) -> str:
        """The model as the CLI names it (what ``{model}`` becomes)."""
        return setup.model

    def prepare(self, setup: Setup) -> dict[str, str]:
        """Write the CLI's config into the workspace; return environment variables to set for it
        (values may be ``${VAR}`` references to the parent's environment, redacted like keys)."""
        return {}

    def read(self, stdout: str, stderr: str, setup: Setup) -> Reading:
        """What the CLI's output says (it may have failed: read what there is)."""
        raise NotImplementedError


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a stream of JSON lines (other lines — logs, banners — are skipped)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def mapping(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (a field a CLI left out or wrote otherwise)."""
    return value if isinstance(value, dict) else {}


def number(value: Any) -> float | None:
    """`value` as a number, or None (booleans and text are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def home_env(workspace: Path) -> dict[str, str]:
    """HOME and the XDG folders inside the workspace, so a CLI reads no user config and leaves
    nothing behind: each run is a fresh session."""
    root = workspace / ".home"
    env = {"HOME": str(root)}
    for var, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        env[var] = str(root / sub)
        os.makedirs(root / sub, exist_ok=True)
    return env
