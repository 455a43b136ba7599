"""What a server is set up with: its store, runner pool, limits and the agents callers may use."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8750


@dataclass(frozen=True)
class ServerSettings:
    """A server's settings (`abbench serve` options).

    Attributes:
        store: The store folder the server owns (it is its single writer).
        workers: Experiments run at once by the server's runner pool, each in a child process of the
            server; more wait in its queue.
        max_request_bytes: Largest request body (uploads are streamed to disk, never held whole).
        rate_per_minute: Requests one key may make per minute (a burst of as many); then 429.
        agents: Agent adapters an experiment created over HTTP may use. ``command`` and ``python``
            run code on the server, and ``openai`` reads the server's environment for keys: each must
            be allowed by whoever runs the server. ``external`` (runs recorded with
            ``POST /experiments/{id}/runs``, never executed here) is allowed with ``builtin``.
        allow_judges: Whether graders that call a model (judges) may be used over HTTP.
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
    """

    store: Path
    workers: int = 2
    max_request_bytes: int = 200 * 1024 * 1024
    rate_per_minute: int = 600
    agents: frozenset[str] = field(default_factory=lambda: frozenset({"builtin", "external"}))
    allow_judges: bool = False
    per_owner_running: int = 4
    runner_nice: int = 5
    upload_dir: Path | None = None
    git_schemes: frozenset[str] = frozenset({"https", "ssh"})
    git_timeout: float = 120.0

    @property
    def spool(self) -> Path:
        """The folder request uploads are written to while they are checked."""
        return self.upload_dir or (self.store.parent / f"{self.store.name}.incoming")
