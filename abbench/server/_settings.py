"""What a server is set up with: its store, runner pool, limits and the agents callers may use."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8750

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST = re.compile(r"^(\*|(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*|[0-9a-f:.]+)$")


@dataclass(frozen=True)
class EndpointRule:
    """A model endpoint callers may name (an arm's or a judge's ``base_url``), with the key it may carry.

    The pattern is ``scheme://host[:port][/path]``: the scheme and port must be the same (``:*``: any
    port), the host the same or, written ``*.example.com``, any name under it (``*``: any host), and the
    endpoint's path the pattern's or below it (no path: any). An endpoint with credentials in it, a
    query, a fragment or a ``..`` is never allowed.

    Attributes:
        url: The URL pattern, e.g. ``https://api.openai.com/v1`` or ``http://*.llm.internal:8000``.
        key_env: The environment variable whose value requests to these endpoints may carry as their
            key (``abbench serve --key-env NAME=URL``); None: the endpoint is allowed without a key of
            the server's (``abbench serve --endpoint URL``).
    """

    url: str
    key_env: str | None = None

    def __post_init__(self) -> None:
        parts = urlsplit(self.url.strip())
        scheme, host, port, _ = _url_parts(self.url)
        if scheme not in _DEFAULT_PORTS or parts.query or parts.fragment or "@" in parts.netloc:
            raise ValueError(
                f"endpoint pattern {self.url!r}: write it as scheme://host[:port][/path] with http or https, "
                "e.g. https://api.openai.com/v1 or http://*.llm.internal:8000"
            )
        if not _HOST.match(host) or port == -1:
            raise ValueError(
                f"endpoint pattern {self.url!r}: a host is a name or address, *.name (any name under it) or *; "
                "a port is a number or *"
            )
        if self.key_env is not None and not _ENV_NAME.match(self.key_env):
            raise ValueError(f"{self.key_env!r} is not an environment variable name (letters, digits, _)")

    @classmethod
    def parse(cls, text: str) -> EndpointRule:
        """A rule from ``NAME=URL`` (a key variable for these endpoints) or a bare ``URL`` (no key).

        Raises:
            ValueError: the text is neither (the message says how to write it).
        """
        name, sep, url = text.partition("=")
        if sep and _ENV_NAME.match(name.strip()):
            return cls(url.strip(), name.strip())
        return cls(text.strip())

    def matches(self, url: str) -> bool:
        """Whether the endpoint `url` (an API root) is one this rule allows."""
        parts = urlsplit(url)
        if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
            return False
        segments = parts.path.split("/")
        if any(s in (".", "..") or "%2e" in s.casefold() or "%2f" in s.casefold() for s in segments):
            return False
        scheme, host, port, path = _url_parts(self.url)
        try:
            url_port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
        except ValueError:
            return False
        url_host = (parts.hostname or "").rstrip(".")
        if parts.scheme != scheme or (port is not None and url_port != port):
            return False
        if host != "*" and url_host != host and not (host.startswith("*.") and url_host.endswith(host[1:])):
            return False
        url_path = parts.path.rstrip("/")
        return not path or url_path == path or url_path.startswith(path + "/")

    def __str__(self) -> str:
        return f"{self.key_env}={self.url}" if self.key_env else self.url


def _url_parts(pattern: str) -> tuple[str, str, int | None, str]:
    """A pattern's scheme, host (lower case), port (None: any) and path (no trailing slash)."""
    parts = urlsplit(pattern.strip())
    host, _, port_text = parts.netloc.rpartition("@")[2].partition(":")
    if host.startswith("["):  # an IPv6 address: [::1]:8000
        host, _, rest = parts.netloc.partition("]")
        host, port_text = host.lstrip("["), rest.lstrip(":")
    scheme = parts.scheme.lower()
    if port_text == "*":
        port = None
    elif port_text:
        port = int(port_text) if port_text.isdigit() else -1
    else:
        port = _DEFAULT_PORTS.get(scheme)
    return scheme, host.lower().rstrip("."), port, parts.path.rstrip("/")


@dataclass(frozen=True)
class ServerSettings:
    """A server's settings (`abbench serve` options).

    Attributes:
        store: The store folder the server owns (it is its single writer).
        workers: Experiments run at once by the server's runner pool, each in a child process of the
            server; more wait in its queue.
        max_request_bytes: Largest request body of an upload (a data file, a skill archive) or of
            outcomes recorded from elsewhere (uploads are streamed to disk, never held whole).
        max_document_bytes: Largest body of any other request (a definition, a gate, a review ...):
            what the server parses as it answers, so small enough to parse at once.
        rate_per_minute: Requests one key may make per minute (a burst of as many); then 429.
        agents: Agent adapters an experiment created over HTTP may use. ``command`` and ``python``
            run code on the server, and ``openai`` reads the server's environment for keys: each must
            be allowed by whoever runs the server. ``external`` (runs recorded with
            ``POST /experiments/{id}/runs``, never executed here) is allowed with ``builtin``.
        allow_judges: Whether graders that call a model (judges) may be used over HTTP.
        endpoints: The model endpoints callers may name (an ``openai`` arm's, a judge's ``base_url``,
            and the default endpoint when they name none), each with the key variable its requests
            may carry (`EndpointRule`). Anything else is refused before a request leaves: a caller
            can never have the server send one of its environment variables to a URL of the
            caller's choosing.
        per_owner_running: Experiments one owner may have running (or queued) at once.
        runner_nice: How much lower the runner processes' CPU priority is than the server's (Linux
            nice; 0: the same). It keeps requests quick on a busy machine, at the cost of evaluation
            throughput when other processes contend for the CPUs too.
        upload_dir: Where request bodies are spooled (default: ``<store>.incoming`` beside the store:
            never inside it, where a snapshot of an uploaded folder would skip every file). Clones
            of ``POST /skill-snapshots`` with a git URL go there too, and are removed after.
        git_schemes: URL schemes a git snapshot may use (``https`` and ``ssh``; ``file`` reads this
            machine's repositories, ``http`` and ``git`` are unauthenticated: allow them knowingly).
            ``ext::`` and ``fd::`` URLs are never accepted.
        git_timeout: Seconds the git calls of one snapshot may take together.
        git_credentials: Repositories (``host`` or ``host/path``; ``*.host``) a git snapshot may clone
            with this machine's own credentials (its SSH keys and agent, ``~/.netrc``). Every other
            URL is cloned anonymously: a caller never borrows the server's identity for a host of
            its choosing.
        request_workers: Requests whose bodies are read in a process of their own (imports, previews,
            snapshots, definitions, recorded outcomes) that run at once; one at a time per key.
        request_cpu_s: CPU seconds one such request may take (a 200 MB CSV, the largest upload by
            default, imports in about 30 s of CPU).
        request_memory_mb: Megabytes of address space one such request may take.
        request_timeout_s: Seconds one such request may take in all.
        max_runs: The most runs an experiment created over HTTP may have (cases × rounds × arms).
        max_inflight: Requests one key may have in flight at once (event streams aside); more
            answer 429, so that no caller holds every worker thread.
    """

    store: Path
    workers: int = 2
    max_request_bytes: int = 200 * 1024 * 1024
    max_document_bytes: int = 1024 * 1024
    rate_per_minute: int = 600
    agents: frozenset[str] = field(default_factory=lambda: frozenset({"builtin", "external"}))
    allow_judges: bool = False
    endpoints: tuple[EndpointRule, ...] = ()
    per_owner_running: int = 4
    runner_nice: int = 5
    upload_dir: Path | None = None
    git_schemes: frozenset[str] = frozenset({"https", "ssh"})
    git_timeout: float = 120.0
    git_credentials: tuple[str, ...] = ()
    request_workers: int = 2
    request_cpu_s: float = 120.0
    request_memory_mb: int = 4096
    request_timeout_s: float = 600.0
    max_runs: int = 1_000_000
    max_inflight: int = 8

    @property
    def spool(self) -> Path:
        """The folder request uploads are written to while they are checked."""
        return self.upload_dir or (self.store.parent / f"{self.store.name}.incoming")
