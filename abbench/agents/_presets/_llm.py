"""The ``llm`` preset: Simon Willison's ``llm`` CLI (PyPI ``llm``), one prompt per run.

``llm prompt -m MODEL --usage --json PROMPT`` prints the logged response as a JSON array, in the
format of ``llm logs --json``: per response its ``response`` text, ``conversation_id``, ``model``
and ``resolved_model``, ``input_tokens`` and ``output_tokens``, and ``tool_calls``. ``--usage``
also prints ``Token usage: 1,234 input, 56 output`` on stderr, one line per response: read when
the JSON is missing (a run that failed part way). An OpenAI-compatible ``base_url`` is declared in
``extra-openai-models.yaml`` in llm's user folder (``LLM_USER_PATH``, inside the workspace); the key
reaches llm as ``OPENAI_API_KEY`` in its environment (taken from the arm's ``api_key_env``), never
in its ``keys.json``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from abbench.agents._presets._base import Preset, Reading, Setup, home_env, number

_USAGE = re.compile(r"Token usage: (?:([\d,]+) input)?(?:, )?(?:([\d,]+) output)?")
_STATUS = re.compile(r"Error code: (\d{3})")


class Llm(Preset):
    """``llm prompt -m MODEL --usage --json PROMPT`` with its user folder in the workspace."""

    name = "llm"
    program = "llm"
    flags = ("prompt", "-m", "{model}", "--usage", "--json")

    def prepare(self, setup: Setup) -> dict[str, str]:
        env = home_env(setup.workspace)
        folder = setup.workspace / ".llm"
        folder.mkdir(exist_ok=True)
        env["LLM_USER_PATH"] = str(folder)
        if setup.base_url:
            entry = {"model_id": setup.model, "model_name": setup.model, "api_base": setup.base_url}
            if setup.api_key_env:
                entry["api_key_name"] = "abbench"  # not in keys.json: llm falls back to $OPENAI_API_KEY
            # JSON is YAML: no YAML writer needed, and every string is quoted
            (folder / "extra-openai-models.yaml").write_text(json.dumps([entry], indent=1), encoding="utf-8")
        if setup.api_key_env:
            env["OPENAI_API_KEY"] = "${" + setup.api_key_env + "}"
        return env

    def read(self, stdout: str, stderr: str, setup: Setup) -> Reading:
        reading = Reading()
        records = _records(stdout)
        if records is None:  # not the JSON it prints on success: take stdout as the text
            reading.text = stdout.strip() or None
        for record in records or []:
            if isinstance(record.get("response"), str):
                reading.text = record["response"]
            reading.session_id = record.get("conversation_id") or reading.session_id
            reading.model = record.get("resolved_model") or record.get("model") or reading.model
            inp, out = number(record.get("input_tokens")), number(record.get("output_tokens"))
            if inp is not None or out is not None:
                reading.add_usage(int(inp or 0), int(out or 0))
            reading.steps += 1
            for call in record.get("tool_calls") or []:
                if isinstance(call, dict):
                    reading.tool_calls.append(
                        {"name": call.get("name"), "input": call.get("arguments"), "status": None}
                    )
        if reading.usage is None:
            for m in _USAGE.finditer(stderr):
                if m.group(1) or m.group(2):
                    reading.add_usage(_n(m.group(1)), _n(m.group(2)))
        line = next((ln for ln in reversed(stderr.splitlines()) if ln.startswith("Error")), None)
        if line:
            status = _STATUS.search(line)
            reading.error = {"message": line, "status": int(status.group(1)) if status else None}
        return reading


def _records(stdout: str) -> list[dict[str, Any]] | None:
    text = stdout.strip()
    if not text.startswith("["):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else None


def _n(text: str | None) -> int:
    return int(text.replace(",", "")) if text else 0
