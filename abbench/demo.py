"""The embedded demo: from nothing to a finished, offline HTML report, with the builtin agent and no keys.

This module is a view like the CLI (it composes the public API end to end); the library never
imports it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abbench import formatting as fm
from abbench.compare import Comparison, compare_arms
from abbench.dataset import DatasetInfo
from abbench.errors import UsageError
from abbench.formatting import DASH, Bounds, pct, pct_span
from abbench.gate import GateResult, RuleStatus, evaluate_gate
from abbench.metrics import experiment_activation, experiment_metrics
from abbench.report import render_report  # papermill and nbconvert load only when reports are made
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
    _following(result, say)
    _gate(result, folder, say)
    if not latency_ms and rounds is None:
        _stopping(result, folder, say)
        _activation(result, folder, say)
    if report:
        _render_reports(result, folder, Path(out_dir), say)
    return result


def _import_datasets(
    store: Store, folder: Path, say: Callable[[str], None]
) -> tuple[DatasetInfo, DatasetInfo]:
    """The demo cases from the CSV and from the XLSX (other column names, labels 快/慢): one fingerprint."""
    csv = store.datasets.import_file(folder / "cases.csv", folder / "mapping-csv.yaml", name="demo")
    say(
        f"dataset   {csv.fingerprint}: {csv.n_cases} cases from cases.csv"
        + (" (already stored)" if csv.reused else "")
    )
    xlsx = store.datasets.import_file(folder / "cases.xlsx", folder / "mapping-xlsx.yaml", name="demo")
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
        snap = store.snapshots.freeze(folder / "skills" / f"fast-slow-routing-{version}")
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
    counts = store.runs.counts(exp.id)
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


def _following(result: DemoResult, say: Callable[[str], None]) -> None:
    """How closely v2's runs followed its skill, section by section, as the offline stand-in judge saw them."""
    f = experiment_metrics(result.experiment.id, store=result.store).arm(CANDIDATE).skill_following
    if f is None:
        return
    skipped = f.most_skipped[0] if f.most_skipped else None
    diff = result.comparisons["version"].skill_following
    say(
        f"following {CANDIDATE} followed {_pct(f.following.value)} [{_interval(f.following.interval)}] of the applicable"
        f" SKILL.md sections (offline stand-in judge)"
        + (
            f"; skipped most: {skipped.ref} in {skipped.skipped:,} of {skipped.applicable:,} runs"
            if skipped
            else ""
        )
        + (
            f"; {CANDIDATE} − {BASELINE} {_points(diff.difference)}"
            if diff is not None and diff.difference is not None
            else ""
        )
    )


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
    result.stopped = store.experiments.get(exp.id)
    stop = summary.stop_reason
    if stop is None:
        say(f"stopping  {exp.name}: {summary.status_text}")
        return
    runs = sum(sum(c.values()) for c in store.runs.counts(exp.id).values())
    say(f"stopping  {exp.name}: {stop.text}; {sum(stop.skipped.values()):,} of {runs:,} runs not needed")


def _activation(result: DemoResult, folder: Path, say: Callable[[str], None]) -> None:
    """v2 injected against v2 offered beside a decoy skill (data/demo/activation.yaml): is it picked up,
    and how much of the difference is "not loaded" rather than "did not help"."""
    store = result.store
    exp = create_experiment(folder / "activation.yaml", store=store, reuse=True)
    run_experiment(exp.id, store=store)
    result.activation = store.experiments.get(exp.id)
    offered = next(a for a in experiment_activation(exp.id, store=store).arms if a.mode == "offered")
    loads = ", ".join(f"{name} {n:,}" for name, n in sorted(offered.loads.items(), key=lambda kv: -kv[1]))
    say(
        f"activation {offered.arm}: loaded a skill in {_pct(offered.activation.value)} of {offered.counted:,} runs"
        f" ({loads}); recall {_pct(offered.recall.value)} [{_interval(offered.recall.interval)}],"
        f" wrong skill first {_pct(offered.wrong_skill.value)}"
    )
    split = compare_arms(exp.id, store=store).trigger_help
    if split is not None and split.total is not None:
        say(
            f"           {offered.arm} − v2 = {_points(split.total)}: {_points(split.loaded_more_often)} because it was"
            f" loaded less often, {_points(split.helped_more_when_loaded)} from how it helped when loaded,"
            f" {_points(split.when_not_loaded)} when not loaded"
        )


_points = partial(fm.difference, word="points", missing=DASH, zero_sign=False)


def _render_reports(result: DemoResult, folder: Path, out: Path, say: Callable[[str], None]) -> None:
    """The offline pages: does the skill help, should v2 replace v1, and (with the demo's extra experiments)
    where the stopping rule stopped and whether the offered skill was picked up.

    Each page runs its own kernel, so two are rendered at a time, each in a process of its own.
    """
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    exp = result.experiment
    out.mkdir(parents=True, exist_ok=True)
    stem = "demo" if exp.name == DEMO_EXPERIMENT else exp.name
    jobs: dict[str, dict[str, Any]] = {
        "skill": {
            "arms": (NO_SKILL, CANDIDATE),
            "out": f"{stem}.html",
            "title": "Does the fast-slow-routing skill help? (demo)",
        },
        "version": {
            "arms": (BASELINE, CANDIDATE),
            "gate": folder / "gate.yaml",
            "out": f"{stem}-v1-vs-v2.html",
            "title": "Should skill v2 replace v1? (demo)",
        },
    }
    ids = dict.fromkeys(jobs, exp.id)
    if result.stopped is not None:
        ids["stopping"] = result.stopped.id
        jobs["stopping"] = {
            "out": f"{stem}-stopped.html",
            "title": "Stopped when decided: does v2 beat no skill? (demo)",
        }
    if result.activation is not None:
        ids["activation"] = result.activation.id
        jobs["activation"] = {
            "out": f"{stem}-activation.html",
            "title": "Is the skill picked up when offered beside another? (demo)",
        }
    where = str(result.store.path)
    # Processes, not threads: papermill changes the working directory of the process it runs in.
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        futures = {
            key: pool.submit(_render_page, where, ids[key], {**job, "out": str(out.resolve() / job["out"])})
            for key, job in jobs.items()
        }
        pages = {key: future.result() for key, future in futures.items()}
    for page in pages.values():
        say(_report_line(page))
    result.reports.update(pages)


def _render_page(store: str, exp_id: int, job: dict[str, Any]) -> ReportResult:
    """One page, in a worker process (it opens the store itself)."""
    return render_report(exp_id, store=store, **job)


def _report_line(page: ReportResult) -> str:
    return (
        f"report    {page.html_path}  ({page.size_bytes / 1e6:.1f} MB, {page.seconds:.1f} s): {page.decision}"
    )


def _pct(value: float | None) -> str:
    return pct(value, missing=DASH)


def _interval(interval: Bounds | None) -> str:
    return pct_span(interval)
