"""The embedded demo: from nothing to a finished, offline HTML report, with the builtin agent and no keys.

This module is a view like the CLI (it composes the public API end to end); the library never
imports it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from abbench.compare import Comparison, compare_arms
from abbench.dataset import DatasetInfo
from abbench.errors import UsageError
from abbench.formatting import DASH, Bounds, pct, pct_span
from abbench.gate import GateResult, RuleStatus, evaluate_gate
from abbench.metrics import experiment_metrics
from abbench.runner import Observer, RunSummary, create_experiment, load_spec, run_experiment
from abbench.snapshot import Snapshot
from abbench.store import Experiment, Store, open_store

if TYPE_CHECKING:  # the report's papermill and nbconvert load only when reports are made
    from abbench.report import ReportResult

log = logging.getLogger(__name__)

DEMO_EXPERIMENT = "demo-routing"
BASELINE, CANDIDATE, NO_SKILL = "v1", "v2", "no-skill"


def demo_dir() -> Path:
    """The folder of the demo data (``data/demo`` of the abbench checkout).

    Raises:
        UsageError: abbench is installed without its checkout (the demo data is not packaged).
    """
    for candidate in (Path(__file__).resolve().parent.parent / "data" / "demo", Path.cwd() / "data" / "demo"):
        if (candidate / "experiment.yaml").is_file():
            return candidate
    raise UsageError(
        "the demo data (data/demo) was not found next to abbench; run the demo from an abbench checkout "
        "(git clone ... && make demo)"
    )


@dataclass
class DemoResult:
    """What the demo made and found."""

    store: Store
    dataset: DatasetInfo
    xlsx_dataset: DatasetInfo
    snapshots: dict[str, Snapshot]
    experiment: Experiment
    run: RunSummary
    comparisons: dict[str, Comparison] = field(default_factory=dict)
    gate: GateResult | None = None
    reports: dict[str, ReportResult] = field(default_factory=dict)
    stopped: Experiment | None = None
    activation: Experiment | None = None


def run_demo(
    store: str | Path | Store | None = None,
    *,
    out_dir: str | Path = "reports",
    latency_ms: int = 0,
    rounds: int | None = None,
    report: bool = True,
    observers: Sequence[Observer] = (),
    note: Callable[[str], None] | None = None,
) -> DemoResult:
    """Run the whole demo: import, snapshot, run three arms, grade, compare, gate, report.

    Running it again reuses what exists (the dataset, the snapshots, the experiment and its runs)
    and only re-renders the reports.

    Args:
        store: The store (default ./.abbench or $ABBENCH_STORE).
        out_dir: Where the reports go.
        latency_ms: Simulated latency of the builtin agent per run (a separate experiment, named with
            its latency, so run control can be watched).
        rounds: Rounds per case (default: the definition's 3).
        report: Render the HTML reports.
        observers: Told about the run's progress.
        note: Told one line at a time what the demo is doing (the CLI prints them).
    """
    say = note or (lambda line: log.info("%s", line))
    folder = demo_dir()
    store = open_store(store)
    csv, xlsx = _import_datasets(store, folder, say)
    snapshots = _snapshot_skills(store, folder, say)
    exp = _create_experiment(store, folder, csv, snapshots, latency_ms=latency_ms, rounds=rounds, say=say)
    summary = _run(store, exp, observers, say)
    result = DemoResult(store, csv, xlsx, snapshots, exp, summary)
    _compare(result, say)
    _gate(result, folder, say)
    if not latency_ms and rounds is None:
        _stopping(result, folder, say)
    if report:
        _render_reports(result, folder, Path(out_dir), say)
    return result


def _import_datasets(
    store: Store, folder: Path, say: Callable[[str], None]
) -> tuple[DatasetInfo, DatasetInfo]:
    """The demo cases from the CSV and from the XLSX (other column names, labels 快/慢): one fingerprint."""
    csv = store.import_dataset(folder / "cases.csv", folder / "mapping-csv.yaml", name="demo")
    say(
        f"dataset   {csv.fingerprint}: {csv.n_cases} cases from cases.csv"
        + (" (already stored)" if csv.reused else "")
    )
    xlsx = store.import_dataset(folder / "cases.xlsx", folder / "mapping-xlsx.yaml", name="demo")
    same = (
        "the same fingerprint"
        if xlsx.fingerprint == csv.fingerprint
        else f"another fingerprint ({xlsx.fingerprint})"
    )
    say(f"          cases.xlsx (other column names, labels 快/慢) maps to {same}")
    return csv, xlsx


def _snapshot_skills(store: Store, folder: Path, say: Callable[[str], None]) -> dict[str, Snapshot]:
    """Both versions of the demo skill, frozen."""
    snapshots = {}
    for version in (BASELINE, CANDIDATE):
        snap = store.snapshot_skill(folder / "skills" / f"fast-slow-routing-{version}")
        snapshots[version] = snap
        say(f"skill     {snap.label}  {snap.source}  {len(snap.files)} files, {len(snap.refs)} references")
    return snapshots


def _create_experiment(
    store: Store,
    folder: Path,
    dataset: DatasetInfo,
    snapshots: dict[str, Snapshot],
    *,
    latency_ms: int,
    rounds: int | None,
    say: Callable[[str], None],
) -> Experiment:
    """The demo's experiment (reused when it exists), on the stored dataset and snapshots.

    A simulated latency or another number of rounds makes an experiment of its own name.
    """
    spec, _ = load_spec(folder / "experiment.yaml")
    definition = spec.model_dump(mode="json", exclude_none=True)
    definition["dataset"] = dataset.fingerprint
    if rounds is not None:
        definition["rounds"] = rounds
    for name, snap in snapshots.items():
        definition["arms"][name]["skill"] = snap.hash
    if latency_ms:
        definition["name"] = f"{DEMO_EXPERIMENT}-latency{latency_ms}"
        for arm in definition["arms"].values():
            arm.setdefault("params", {})["latency_ms"] = latency_ms
    if rounds is not None and rounds != spec.rounds:
        definition["name"] = f"{definition['name']}-r{rounds}"
    exp = create_experiment(definition, store=store, reuse=True)
    counts = store.run_counts(exp.id)
    total = sum(sum(c.values()) for c in counts.values())
    say(
        f"experiment {exp.ref}: {len(exp.arms)} arms × {exp.rounds} rounds × {total // len(exp.arms) // exp.rounds}"
        f" cases = {total} runs"
    )
    return exp


def _run(
    store: Store, exp: Experiment, observers: Sequence[Observer], say: Callable[[str], None]
) -> RunSummary:
    """Run (or finish) the experiment, then say each arm's accuracy."""
    summary = run_experiment(exp.id, store=store, observers=observers)
    say(
        f"run       {summary.status}: executed {summary.executed} now, {summary.progress.done}/{summary.progress.total}"
        f" done in {summary.elapsed_s:.1f} s"
    )
    metrics = experiment_metrics(exp.id, store=store)
    say(
        "accuracy  "
        + "   ".join(
            f"{arm.arm} {_pct(arm.accuracy.value)} [{_interval(arm.accuracy.interval)}]"
            for arm in metrics.arms
        )
    )
    return summary


def _compare(result: DemoResult, say: Callable[[str], None]) -> None:
    """Does the skill help (no skill vs v2), and may v2 replace v1."""
    exp, store = result.experiment, result.store
    result.comparisons["skill"] = compare_arms(exp.id, NO_SKILL, CANDIDATE, store=store)
    result.comparisons["version"] = compare_arms(exp.id, BASELINE, CANDIDATE, store=store)
    say(f"skill     {result.comparisons['skill'].verdict.text}")
    say(f"version   {result.comparisons['version'].verdict.text}")


def _gate(result: DemoResult, folder: Path, say: Callable[[str], None]) -> None:
    """The demo gate on v1 → v2."""
    gate = evaluate_gate(
        result.experiment.id, folder / "gate.yaml", arms=(BASELINE, CANDIDATE), store=result.store
    )
    result.gate = gate
    say(
        f"gate      {gate.pair_text}: {gate.outcome.upper()} (data/demo/gate.yaml, {gate.coverage.text}): "
        f"{sum(r.status == RuleStatus.PASS for r in gate.rules)}/{len(gate.rules)} rules pass"
        + (
            f", warnings: {'; '.join(r.rule.name or r.rule.metric for r in gate.warnings)}"
            if gate.warnings
            else ""
        )
    )


def _stopping(result: DemoResult, folder: Path, say: Callable[[str], None]) -> None:
    """no-skill vs v2 again, stopped by its anytime-valid rule as soon as it is decided (data/demo/stopping.yaml)."""
    store = result.store
    exp = create_experiment(folder / "stopping.yaml", store=store, reuse=True)
    summary = run_experiment(exp.id, store=store)
    result.stopped = store.get_experiment(exp.id)
    stop = summary.stop_reason
    if stop is None:
        say(f"stopping  {exp.name}: {summary.status_text}")
        return
    runs = sum(sum(c.values()) for c in store.run_counts(exp.id).values())
    say(f"stopping  {exp.name}: {stop.text}; {sum(stop.skipped.values()):,} of {runs:,} runs not needed")


def _render_reports(result: DemoResult, folder: Path, out: Path, say: Callable[[str], None]) -> None:
    """The two offline pages: does the skill help, and should v2 replace v1."""
    from abbench.report import render_report  # papermill and nbconvert load only when reports are made

    exp = result.experiment
    out.mkdir(parents=True, exist_ok=True)
    stem = "demo" if exp.name == DEMO_EXPERIMENT else exp.name
    pages = {
        "skill": render_report(
            exp.id,
            store=result.store,
            arms=(NO_SKILL, CANDIDATE),
            out=out / f"{stem}.html",
            title="Does the fast-slow-routing skill help? (demo)",
        )
    }
    say(_report_line(pages["skill"]))
    pages["version"] = render_report(
        exp.id,
        store=result.store,
        arms=(BASELINE, CANDIDATE),
        gate=folder / "gate.yaml",
        out=out / f"{stem}-v1-vs-v2.html",
        title="Should skill v2 replace v1? (demo)",
    )
    say(_report_line(pages["version"]))
    if result.stopped is not None:
        pages["stopping"] = render_report(
            result.stopped.id,
            store=result.store,
            out=out / f"{stem}-stopped.html",
            title="Stopped when decided: does v2 beat no skill? (demo)",
        )
        say(_report_line(pages["stopping"]))
    result.reports.update(pages)


def _report_line(page: ReportResult) -> str:
    return (
        f"report    {page.html_path}  ({page.size_bytes / 1e6:.1f} MB, {page.seconds:.1f} s): {page.decision}"
    )


def _pct(value: float | None) -> str:
    return pct(value, missing=DASH)


def _interval(interval: Bounds | None) -> str:
    return pct_span(interval)
