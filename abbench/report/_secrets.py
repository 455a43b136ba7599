"""Refusing to write a report that holds a secret: the values of environment variables named like keys."""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Mapping

SECRET_NAME = re.compile(
    r"(?i)(api[_-]?key|secret|token|passw(or)?d|passphrase|credential|private[_-]?key|access[_-]?key"
    r"|auth|cookie|session[_-]?key|(^|_)key$|(^|_)pat$)"
)
"""Environment variable names whose values are treated as secrets (``OPENAI_API_KEY``, ``HF_TOKEN`` ...)."""

MIN_SECRET_LENGTH = 8
"""Shorter values (``1``, ``true``, a port) would match ordinary text; real keys are far longer."""


def secret_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment's secret-looking variables: name -> value (values of 8 characters or more)."""
    env = os.environ if environ is None else environ
    return {
        name: value
        for name, value in env.items()
        if SECRET_NAME.search(name) and len(value.strip()) >= MIN_SECRET_LENGTH
    }


def _forms(value: str) -> set[str]:
    # The same secret as it would appear in HTML text, an attribute, JSON, or plotly's escaped JSON.
    value = value.strip()
    as_json = json.dumps(value, ensure_ascii=False)[1:-1]
    plotly = as_json.replace("<", "\\u003c").replace(">", "\\u003e").replace("/", "\\u002f")
    return {value, html.escape(value), html.escape(value, quote=False), as_json, plotly}


def find_secrets(text: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """Names of the environment variables whose secret value appears in `text`, sorted."""
    found = []
    for name, value in secret_values(environ).items():
        if any(form and form in text for form in _forms(value)):
            found.append(name)
    return sorted(found)
