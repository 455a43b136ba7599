"""Work a server's runner pool accepted for an experiment and no process has started yet.

A caller that asks a server to start, resume, retry or re-grade an experiment gets 202 at once; the
work may wait in the pool's queue behind others. What was accepted is recorded with the experiment
(``experiments.queued``) before the answer, so a server killed before its pool got to it starts it
at its next start instead of losing it without a word. The pass that does the work clears it when it
claims the experiment (`store.experiments.claim_runner`); from then on its halt says what became of
it. A server that does not start it (a person paused or cancelled it meanwhile, the server no longer
allows its agent) says why in ``not_started``, which every status view shows.
"""

from __future__ import annotations

import os
import socket
from dataclasses import asdict, dataclass
from typing import Any

from abbench import _actions as do
from abbench.errors import Said
from abbench.store import now_iso


@dataclass(frozen=True)
class QueuedWork:
    """What a server's pool accepted to do for an experiment, as recorded until a pass claims it.

    Attributes:
        at: When it was accepted (UTC, ISO 8601).
        owner: Who it runs for (the key's owner).
        actor: The person or job who asked (recorded on its runs).
        regrade: A re-grade from stored executions rather than the remaining runs.
        graders: With `regrade`, only these graders (empty: all).
        failed: With `regrade`, only runs that failed.
        regrade_ids: Grading failures a retry asked to grade again (never executed again).
        pid: The server process that accepted it.
        host: Its machine.
        not_started: Why a server did not start it (None while it waits for a runner).
    """

    at: str
    owner: str
    actor: str
    regrade: bool = False
    graders: tuple[str, ...] = ()
    failed: bool = False
    regrade_ids: tuple[int, ...] = ()
    pid: int | None = None
    host: str | None = None
    not_started: str | None = None

    @classmethod
    def here(cls, owner: str, actor: str, **job: Any) -> QueuedWork:
        """Work this process accepts now (`job`: `regrade`, `graders`, `failed`, `regrade_ids`)."""
        return cls(at=now_iso(), owner=owner, actor=actor, pid=os.getpid(), host=socket.gethostname(), **job)

    @property
    def what(self) -> str:
        """``a re-grade`` or ``its remaining runs``."""
        return "a re-grade" if self.regrade else "its remaining runs"

    @property
    def text(self) -> str:
        """``queued on a server (asked by ci/job-42, pid 4242 on host, 2026-11-03 12:04 UTC) for its
        remaining runs: waiting for a free runner``, or ``...; not started: <why>``."""
        where = f"asked by {self.actor}"
        if self.pid:
            where += f", pid {self.pid}" + (f" on {self.host}" if self.host else "")
        when = f", {self.at[:16].replace('T', ' ')} UTC" if self.at else ""
        said = f"queued on a server ({where}{when}) for {self.what}"
        if self.not_started:
            return f"{said}; not started: {self.not_started}"
        return f"{said}: waiting for a free runner"

    def hint(self, handle: str) -> Said:
        """What a person does to go on once a server did not start it (parts: `abbench.errors.worded`)."""
        return ("ask the server to start it again, or run it here: ", do.run_experiment(handle))

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (what the store keeps), with the text."""
        return {**asdict(self), "by": "server", "text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> QueuedWork | None:
        """The work stored by `as_dict` (None stays None)."""
        if not data:
            return None
        names = cls.__dataclass_fields__
        values = {k: v for k, v in data.items() if k in names}
        values["graders"] = tuple(values.get("graders") or ())
        values["regrade_ids"] = tuple(values.get("regrade_ids") or ())
        return cls(**values)
