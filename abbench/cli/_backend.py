"""What a command works on: a local store, or a server (``--server URL``), behind one protocol.

A command written against `Backend` is written once: `Context.backend` hands it `LocalBackend` (the
public Python API over the local store) or an `abbench.client.Client` (the same calls over HTTP, the same
typed records back), so ``--server`` chooses where the work happens and never what the command prints.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import abbench.runner
import abbench.snapshot  # the package faces load a name's module when it is first used: every command

# goes through a backend, and `abbench import` must not load the runner (0.35 s) to read a CSV

if TYPE_CHECKING:
    from collections.abc import Sequence

    from abbench.client import Client
    from abbench.compare import Comparison, MultiComparison
    from abbench.dataset import DatasetInfo
    from abbench.export import ExportResult
    from abbench.gate import GateResult
    from abbench.report import ReportResult
    from abbench.runner import Progress, RunSummary
    from abbench.snapshot import TakenSnapshot
    from abbench.store import Experiment, Failures, Store


class Backend(Protocol):
    """The operations the commands that work both locally and on a server need (docs/ARCHITECTURE.md,
    "Interfaces"): the library's names, arguments and records. `abbench.client.Client` satisfies it."""

    def import_dataset(
        self, path: str | os.PathLike[str], mapping: str | None = None, **options: Any
    ) -> DatasetInfo:
        """Import a data file with a mapping (a profile file or a saved name; None: the suggestion).
        `options`: ``name``, ``skip_invalid`` and the read options (``sheet`` ... ``splits``)."""
        ...

    def create_experiment(self, definition: str | os.PathLike[str], *, reuse: bool = False) -> Experiment:
        """Create an experiment from a definition file (`reuse`: the stored one of that identity)."""
        ...

    def load_experiment(self, ref: int | str) -> Experiment:
        """The experiment by id, ``#id``, name or ``NAME@<skill version>``."""
        ...

    def command_handle(self, exp: Experiment) -> str:
        """The shortest text that names `exp` in a command: its name when unique, else ``#id``."""
        ...

    def experiment_status(self, ref: int | str) -> Progress:
        """Where it stands: runs per arm and state, and why it paused, stopped or waits."""
        ...

    def failures(self, ref: int | str, *, limit: int = 10) -> Failures:
        """Its runs that got no verdict, by kind and type."""
        ...

    def pause_experiment(self, ref: int | str) -> bool:
        """Ask it to pause; True if a process is running it."""
        ...

    def resume_experiment(self, ref: int | str, *, budget: float | None = None) -> bool:
        """Ask it to go on (with a new cost limit); True if a process goes on with it."""
        ...

    def cancel_experiment(self, ref: int | str) -> int | None:
        """Cancel it: the pending runs cancelled, None when a process running it does that."""
        ...

    def snapshot_skill(self, folder: str | os.PathLike[str], **options: Any) -> TakenSnapshot:
        """Snapshot a skill folder of this machine (a server is sent its files). `options`: a local
        store's ``git_ref``, ``repo`` and limits (``max_file_bytes`` ...)."""
        ...

    def snapshot_git(
        self, url: str, ref: str = "HEAD", path: str | None = None, **limits: Any
    ) -> TakenSnapshot:
        """Snapshot the folder `path` of a git repository at `ref` (cloned where the work happens)."""
        ...

    def run_experiment(self, ref: int | str, *, observers: Sequence[Any] = (), **options: Any) -> RunSummary:
        """Run what is left of it until it is over, telling `observers` its progress (`options`: a local
        run's ``concurrency``, ``started_by``, ``executor``, ``scheduler``, ``dask_local``)."""
        ...

    def compare_arms(
        self, ref: int | str, a: str | None = None, b: str | None = None, **settings: Any
    ) -> Comparison:
        """Arm `b` against arm `a` (`settings`: `abbench.compare.CompareOptions`' fields)."""
        ...

    def compare_experiments(
        self,
        ref_a: int | str,
        ref_b: int | str,
        arm_a: str | None = None,
        arm_b: str | None = None,
        **settings: Any,
    ) -> Comparison:
        """An arm of `ref_b` against an arm of `ref_a` (the same dataset)."""
        ...

    def compare_all(self, ref: int | str, **settings: Any) -> MultiComparison:
        """Every arm: Cochran's Q, then each against the first."""
        ...

    def evaluate_gate(
        self,
        ref: int | str,
        rules: str | os.PathLike[str] | None = None,
        *,
        arms: Sequence[str] | None = None,
        vs: int | str | None = None,
        cluster: str | None = None,
    ) -> GateResult:
        """The gate's outcome (`rules`: a gate file here; default the experiment's own, else the three
        dimensions)."""
        ...

    def export(
        self,
        ref: int | str,
        what: str = "runs",
        format: str | None = None,
        out: str | os.PathLike[str] | None = None,
        *,
        arms: tuple[str, str] | None = None,
        vs: int | str | None = None,
    ) -> ExportResult:
        """Write its runs, grades, reviews or comparison to a file here."""
        ...

    def render_report(
        self,
        ref: int | str,
        out: str | os.PathLike[str] | None = None,
        *,
        gate: str | os.PathLike[str] | None = None,
        arms: Sequence[str] | None = None,
        vs: int | str | None = None,
        grader: str | None = None,
        title: str | None = None,
        progress: bool = False,
    ) -> ReportResult:
        """Render its HTML report into `out` here (default ``reports/<experiment>.html``)."""
        ...


class LocalBackend:
    """`Backend` over the local store, through the public Python API."""

    def __init__(self, store: Store):
        self.store = store

    def import_dataset(
        self, path: str | os.PathLike[str], mapping: str | None = None, **options: Any
    ) -> DatasetInfo:
        profile = self.store.profiles.resolve(mapping) if mapping else None
        return self.store.datasets.import_file(path, profile, **options)

    def create_experiment(self, definition: str | os.PathLike[str], *, reuse: bool = False) -> Experiment:
        return abbench.runner.create_experiment(Path(definition), store=self.store, reuse=reuse)

    def load_experiment(self, ref: int | str) -> Experiment:
        # the store's own lookup (`abbench.load_experiment`'s): the runner's definition models (pydantic)
        # stay unloaded for a command that runs a stored experiment
        return self.store.experiments.get(ref)

    def command_handle(self, exp: Experiment) -> str:
        return self.store.experiments.handle(exp)

    def experiment_status(self, ref: int | str) -> Progress:
        return abbench.runner.experiment_status(ref, store=self.store)

    def failures(self, ref: int | str, *, limit: int = 10) -> Failures:
        return self.store.runs.failures(self.store.experiments.get(ref).id, limit=limit)

    def pause_experiment(self, ref: int | str) -> bool:
        return abbench.runner.pause_experiment(ref, store=self.store)

    def resume_experiment(self, ref: int | str, *, budget: float | None = None) -> bool:
        return bool(abbench.runner.resume_experiment(ref, store=self.store, budget=budget))

    def cancel_experiment(self, ref: int | str) -> int | None:
        return abbench.runner.cancel_experiment(ref, store=self.store)

    def snapshot_skill(self, folder: str | os.PathLike[str], **options: Any) -> TakenSnapshot:
        return self.store.snapshots.taken(self.store.snapshots.freeze(folder, **options))

    def snapshot_git(
        self, url: str, ref: str = "HEAD", path: str | None = None, **limits: Any
    ) -> TakenSnapshot:
        # every scheme git knows but ext::/fd:: (this machine's own user asks); cloned in $TMPDIR
        prepared = abbench.snapshot.prepare_from_url(
            url, ref, path, schemes=abbench.snapshot.KNOWN_SCHEMES, **limits
        )
        return self.store.snapshots.taken(self.store.snapshots.add_prepared(prepared))

    def run_experiment(self, ref: int | str, *, observers: Sequence[Any] = (), **options: Any) -> RunSummary:
        return abbench.runner.run_experiment(ref, store=self.store, observers=list(observers), **options)

    def compare_arms(
        self, ref: int | str, a: str | None = None, b: str | None = None, **settings: Any
    ) -> Comparison:
        compared: Comparison = _analysis()[0].compare_arms(ref, a, b, store=self.store, **settings)
        return compared

    def compare_experiments(
        self,
        ref_a: int | str,
        ref_b: int | str,
        arm_a: str | None = None,
        arm_b: str | None = None,
        **settings: Any,
    ) -> Comparison:
        compared: Comparison = _analysis()[0].compare_experiments(
            ref_a, ref_b, arm_a=arm_a, arm_b=arm_b, store=self.store, **settings
        )
        return compared

    def compare_all(self, ref: int | str, **settings: Any) -> MultiComparison:
        compared: MultiComparison = _analysis()[0].compare_all(ref, store=self.store, **settings)
        return compared

    def evaluate_gate(
        self,
        ref: int | str,
        rules: str | os.PathLike[str] | None = None,
        *,
        arms: Sequence[str] | None = None,
        vs: int | str | None = None,
        cluster: str | None = None,
    ) -> GateResult:
        pair = list(arms) if arms else None
        gated: GateResult = _analysis()[1].evaluate_gate(
            ref, rules, store=self.store, arms=pair, vs=vs, cluster=cluster
        )
        return gated

    def export(
        self,
        ref: int | str,
        what: str = "runs",
        format: str | None = None,
        out: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> ExportResult:
        from abbench.export import export  # pandas and the writers: loaded by the commands that export

        given = {k: v for k, v in options.items() if v not in (None, ())}  # `arms`, `vs`: a comparison's
        return export(ref, what, format, out, store=self.store, **given)

    def render_report(
        self, ref: int | str, out: str | os.PathLike[str] | None = None, **options: Any
    ) -> ReportResult:
        from abbench.report import render_report  # its package: loaded by the commands that render

        return render_report(ref, out=out, store=self.store, **options)


def _analysis() -> tuple[Any, Any]:
    """`abbench.compare` and `abbench.gate`: numpy and the statistics, loaded by the commands that compare
    or gate only (`status` stays light)."""
    from abbench import compare, gate

    return compare, gate


def remote_client(server: str) -> Client:
    """An `abbench.client.Client` of `server`: the key from $ABBENCH_KEY, the actor (recorded on the
    runs it starts) from $ABBENCH_ACTOR, else the CI's job when one is named ($GITHUB_JOB, $CI_JOB_NAME)."""
    from abbench.client import Client

    actor = os.environ.get("ABBENCH_ACTOR") or os.environ.get("GITHUB_JOB") or os.environ.get("CI_JOB_NAME")
    return Client(server, os.environ.get("ABBENCH_KEY"), actor=actor)
