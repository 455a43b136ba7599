"""The ``opencode`` preset: ``opencode run --format json`` and its JSON event stream.

Each line is an event with ``type`` and ``sessionID``: ``step_start``; ``text`` (``part.text``);
``tool_use`` (``part.tool``, ``part.state.status``, ``part.state.input`` — ``read`` takes
``filePath``); ``step_finish`` (``part.tokens.input``/``output``/``reasoning``/``cache.read``/
``cache.write``, ``part.cost``, ``part.reason``; all 0 when the server sent no usage: unknown); ``error`` (``error.data.message``,
``statusCode``, ``isRetryable``, ``responseHeaders``). The final answer is the text of the last
step that said something. The provider is written to ``opencode.json`` in the workspace: an
``@ai-sdk/openai-compatible`` provider named ``abbench`` at ``base_url``, its key read by opencode
from the environment variable the arm names (``{env:VAR}``), tools that edit, run shell commands or
fetch the web denied.
"""

from __future__ import annotations

import json
from typing import Any

from abbench.agents._presets._base import Preset, Reading, Setup, home_env, json_lines, mapping, number

PROVIDER = "abbench"
"""The provider id abbench's opencode config defines; the arm's model is ``abbench/<model>``."""

DENIED = {"edit": "deny", "bash": "deny", "webfetch": "deny"}
"""opencode permissions the preset sets: the agent reads the skill, it changes nothing."""


class OpenCode(Preset):
    """opencode (npm ``opencode-ai``), run once per task in the workspace."""

    name = "opencode"
    call_marker = b'"type":"step_start"'
    program = "opencode"
    # --title: without it opencode asks the model for a title first, a call the run does not need
    flags = ("run", "--format", "json", "-m", "{model}", "--title", "abbench")
    options = ("permission", "max_tokens")

    def prepare(self, setup: Setup) -> dict[str, str]:
        env = home_env(setup.workspace)
        env["OPENCODE_DISABLE_AUTOUPDATE"] = "1"
        env["OPENCODE_DISABLE_MODELS_FETCH"] = "1"
        config: dict[str, Any] = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "permission": {**DENIED, **(setup.options.get("permission") or {})},
        }
        if setup.base_url:
            options: dict[str, Any] = {"baseURL": setup.base_url}
            if setup.api_key_env:
                options["apiKey"] = "{env:" + setup.api_key_env + "}"
                env[setup.api_key_env] = "${" + setup.api_key_env + "}"
            config["provider"] = {
                PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": PROVIDER,
                    "options": options,
                    "models": {setup.model: _model_entry(setup)},
                }
            }
            config["model"] = config["small_model"] = f"{PROVIDER}/{setup.model}"
        (setup.workspace / "opencode.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
        return env

    def cli_model(self, setup: Setup) -> str:
        return f"{PROVIDER}/{setup.model}" if setup.base_url else setup.model

    def read(self, stdout: str, stderr: str, setup: Setup) -> Reading:
        reading = Reading()
        step_text: list[str] = []
        last_text: list[str] = []
        cost = 0.0
        for event in json_lines(stdout):
            kind = event.get("type")
            part = mapping(event.get("part"))
            if isinstance(event.get("sessionID"), str):
                reading.session_id = event["sessionID"]
            if kind == "step_start":
                step_text = []
            elif kind == "text" and isinstance(part.get("text"), str):
                step_text.append(part["text"])
                if "".join(step_text).strip():
                    last_text = list(step_text)
            elif kind == "tool_use":
                state = mapping(part.get("state"))
                args = mapping(state.get("input"))
                reading.tool_calls.append(
                    {"name": part.get("tool"), "input": args, "status": state.get("status")}
                )
                path = args.get("filePath") or args.get("path")
                if part.get("tool") == "read" and isinstance(path, str) and state.get("status") != "error":
                    reading.files_read.append(path)
            elif kind == "step_finish":
                reading.steps += 1
                tokens = mapping(part.get("tokens"))
                cache = mapping(tokens.get("cache"))
                prompt = (
                    int(number(tokens.get("input")) or 0)
                    + int(number(cache.get("read")) or 0)
                    + int(number(cache.get("write")) or 0)
                )
                if prompt > 0:
                    reading.add_usage(
                        prompt,
                        int(number(tokens.get("output")) or 0) + int(number(tokens.get("reasoning")) or 0),
                    )
                else:  # a model call always reads a prompt: opencode says 0 when its server sent no usage
                    reading.unknown_usage()
                cost += number(part.get("cost")) or 0.0
            elif kind == "error":
                reading.error = _error(event.get("error"))
        reading.text = "".join(last_text) if last_text else None
        reading.cost = cost or None  # opencode prices a model it has no price for at 0: unknown
        return reading


def _model_entry(setup: Setup) -> dict[str, Any]:
    """The arm's model in opencode's provider config: ``limit.output`` is what opencode sends as
    ``max_tokens`` (without it a server that has no default of its own generates to the end of its
    context: 1,695 tokens in 418 s for one answer from the local model)."""
    entry: dict[str, Any] = {"name": setup.model}
    if setup.options.get("max_tokens"):
        entry["limit"] = {"context": 0, "output": int(setup.options["max_tokens"])}
    return entry


def _error(error: Any) -> dict[str, Any]:
    error = error if isinstance(error, dict) else {"data": {"message": str(error)}}
    data = mapping(error.get("data"))
    headers = mapping(data.get("responseHeaders"))
    retry_after = number(_float(headers.get("retry-after")))
    return {
        "message": str(data.get("message") or error.get("name") or "opencode reported an error"),
        "status": int(data["statusCode"]) if number(data.get("statusCode")) is not None else None,
        "retryable": data.get("isRetryable") if isinstance(data.get("isRetryable"), bool) else None,
        "retry_after": retry_after,
        "name": error.get("name"),
    }


def _float(text: Any) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
