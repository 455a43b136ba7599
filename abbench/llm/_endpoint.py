"""Where a model client's requests go and which environment variables they read: the one place that decides.

`ChatClient` (agents and judges) and the server's policy (what an HTTP caller may name) both ask
`resolve_endpoint`, so the URL a server checks is the URL its runs will call, and the variables it
checks are the ones whose values will be sent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from abbench.errors import UsageError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when neither the arm nor ``$OPENAI_BASE_URL`` names an endpoint."""

OPENAI_KEY_ENV = "OPENAI_API_KEY"
"""The key variable used, unless another is named, for the OpenAI API and for ``$OPENAI_BASE_URL``."""

ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${VAR}`` in a header value: that environment variable's value is sent."""


def expand_env(value: str, unset: Callable[[str], Exception], used: list[str] | None = None) -> str:
    """`value` with each ``${VAR}`` replaced by that environment variable (how an arm's settings
    name a key without holding it); the values put in are added to `used` (to redact them later).

    Raises:
        Exception: ``unset(VAR)`` for a variable that is not set.
    """

    def put(match: re.Match[str]) -> str:
        var = match.group(1)
        if var not in os.environ:
            raise unset(var)
        if used is not None:
            used.append(os.environ[var])
        return os.environ[var]

    return ENV_REF.sub(put, value)


def normalize_base_url(base_url: str) -> str:
    """The API root for `base_url`: ``http://host:port`` gains ``/v1``; a trailing
    ``/chat/completions`` or ``/`` is dropped.

    Raises:
        UsageError: it is not an http(s) URL.
    """
    url = base_url.strip().rstrip("/")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"base_url {base_url!r} is not an http(s) URL; write it like http://127.0.0.1:8000/v1 "
            "or https://api.openai.com/v1"
        )
    if parts.path in ("", "/"):
        url += "/v1"
    return url


@dataclass(frozen=True)
class Endpoint:
    """Where a client's requests go, and the environment variables whose values they carry.

    Attributes:
        base_url: The API root, normalised (`normalize_base_url`).
        key_env: The variable whose value is sent as ``Authorization: Bearer`` (None: no key).
        header_env: The variables named as ``${VAR}`` in extra headers (their values are sent too).
    """

    base_url: str
    key_env: str | None
    header_env: tuple[str, ...] = ()

    @property
    def env(self) -> tuple[str, ...]:
        """Every variable whose value requests to this endpoint carry."""
        return tuple(dict.fromkeys(([self.key_env] if self.key_env else []) + list(self.header_env)))


def resolve_endpoint(
    base_url: str | None = None,
    api_key_env: str | None = None,
    headers: Mapping[str, object] | None = None,
) -> Endpoint:
    """The endpoint a client with these settings calls, and the variables it reads.

    The URL is `base_url`, else ``$OPENAI_BASE_URL``, else the OpenAI API. The key is `api_key_env`
    (``""``: none); unnamed, it is ``OPENAI_API_KEY`` for the OpenAI API and for ``$OPENAI_BASE_URL``,
    and no key elsewhere, so a key is never sent to a server the settings did not say to send it to.

    Raises:
        UsageError: the URL is not an http(s) URL.
    """
    env_base = os.environ.get("OPENAI_BASE_URL")
    url = normalize_base_url(base_url or env_base or DEFAULT_BASE_URL)
    key = api_key_env
    if key is None and (urlsplit(url).hostname == "api.openai.com" or (base_url is None and env_base)):
        key = OPENAI_KEY_ENV
    named = [name for value in (headers or {}).values() for name in ENV_REF.findall(str(value))]
    return Endpoint(url, key or None, tuple(dict.fromkeys(named)))
