"""The ``llm`` preset: Simon Willison's ``llm`` CLI (PyPI ``llm``), one prompt per run.

The answer is what it prints on stdout. ``--usage`` prints ``Token usage: 1,234 input, 56 output``
(with a JSON of details after it, sometimes) on stderr, one line per response; the run's
conversation id and the model that answered come from the ``responses`` table of the ``logs.db``
it writes in its user folder (``LLM_USER_PATH``, inside the workspace) — the same records
``llm logs --json`` prints. An OpenAI-compatible ``base_url`` is declared in that folder's
``extra-openai-models.yaml``; the key reaches llm as ``OPENAI_API_KEY`` in its environment (taken
from the arm's ``api_key_env``), never in its ``keys.json``.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3

from abbench.agents._presets._base import Preset, Reading, Setup, home_env

_USAGE = re.compile(r"Token usage: (?:([\d,]+) input)?(?:, )?(?:([\d,]+) output)?")
_STATUS = re.compile(r"Error code: (\d{3})")


class Llm(Preset):
    """``llm -m MODEL --usage PROMPT`` with its user folder in the workspace."""

    name = "llm"
    program = "llm"

    def argv(self, program: str, args: list[str]) -> list[str]:
        return [program, "prompt", "-m", "{model}", "--usage", *args, "{prompt}"]

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
        reading = Reading(text=stdout.strip() or None)
        for m in _USAGE.finditer(stderr):
            if m.group(1) or m.group(2):
                reading.add_usage(_n(m.group(1)), _n(m.group(2)))
                reading.steps += 1
        db = setup.workspace / ".llm" / "logs.db"
        if db.exists():
            with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(db)) as conn:
                cols = {r[1] for r in conn.execute("PRAGMA table_info(responses)")}
                model = "coalesce(resolved_model, model)" if "resolved_model" in cols else "model"
                rows = conn.execute(
                    f"SELECT conversation_id, {model}, input_tokens, output_tokens FROM responses ORDER BY rowid"
                ).fetchall()
                if rows:
                    reading.session_id, reading.model = rows[-1][0], rows[-1][1]
                    if reading.usage is None and any(r[2] is not None or r[3] is not None for r in rows):
                        for r in rows:
                            reading.add_usage(int(r[2] or 0), int(r[3] or 0))
                        reading.steps = len(rows)
        if "Error" in stderr:
            line = next((ln for ln in reversed(stderr.splitlines()) if ln.startswith("Error")), None)
            if line:
                status = _STATUS.search(line)
                reading.error = {"message": line, "status": int(status.group(1)) if status else None}
        return reading


def _n(text: str | None) -> int:
    return int(text.replace(",", "")) if text else 0
