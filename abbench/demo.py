"""The embedded demo: from nothing to a finished, offline HTML report, with the builtin agent and no keys.

This module is a view like the CLI (it composes the public API end to end); the library never
imports it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abbench.compare import compare_arms
from abbench.errors import UsageError
from abbench.formatting import DASH, Bounds, pct, pct_span
from abbench.gate import evaluate_gate
from abbench.metrics import experiment_metrics
from abbench.runner import Observer, create_experiment, load_spec, run_experiment
from abbench.store import Store, open_store

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
    dataset: Any
    xlsx_dataset: Any
    snapshots: dict[str, Any]
    experiment: Any
    run: Any
    comparisons: dict[str, Any] = field(default_factory=dict)
    gate: Any = None
    reports: dict[str, Any] = field(default_factory=dict)


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
    for info in (csv, xlsx):
        report_ = info.validation
        if report_ is not None and getattr(report_, "n_problems", 0):
            say(f"          validation of {info.source_file}: {report_.summary()}")

    snapshots = {}
    for version in ("v1", "v2"):
        snap = store.snapshot_skill(folder / "skills" / f"fast-slow-routing-{version}")
        snapshots[version] = snap
        say(f"skill     {snap.label}  {snap.source}  {len(snap.files)} files, {len(snap.refs)} references")

    spec, _ = load_spec(folder / "experiment.yaml")
    definition = spec.model_dump(mode="json", exclude_none=True)
    definition["dataset"] = csv.fingerprint
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
    summary = run_experiment(exp.id, store=store, observers=observers)
    say(
        f"run       {summary.status}: executed {summary.executed} now, {summary.progress.done}/{summary.progress.total}"
        f" done in {summary.elapsed_s:.1f} s"
    )
    result = DemoResult(store, csv, xlsx, snapshots, exp, summary)

    metrics = experiment_metrics(exp.id, store=store)
    say(
        "accuracy  "
        + "   ".join(
            f"{arm.arm} {_pct(arm.accuracy.value)} [{_interval(arm.accuracy.interval)}]"
            for arm in metrics.arms
        )
    )
    result.comparisons["skill"] = compare_arms(exp.id, NO_SKILL, CANDIDATE, store=store)
    result.comparisons["version"] = compare_arms(exp.id, BASELINE, CANDIDATE, store=store)
    say(f"skill     {result.comparisons['skill'].verdict.text}")
    say(f"version   {result.comparisons['version'].verdict.text}")
    result.gate = evaluate_gate(exp.id, folder / "gate.yaml", arms=(BASELINE, CANDIDATE), store=store)
    gate = result.gate
    say(
        f"gate      {gate.pair_text}: {gate.outcome.upper()} (data/demo/gate.yaml, {gate.coverage.text}): "
        f"{sum(r.status == 'pass' for r in gate.rules)}/{len(gate.rules)} rules pass"
        + (
            f", warnings: {'; '.join(r.rule.name or r.rule.metric for r in gate.warnings)}"
            if gate.warnings
            else ""
        )
    )
    if not report:
        return result

    from abbench.report import render_report  # papermill and nbconvert load only when reports are made

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = "demo" if exp.name == DEMO_EXPERIMENT else exp.name
    pages = {
        "skill": dict(
            arms=(NO_SKILL, CANDIDATE),
            out=out / f"{stem}.html",
            title="Does the fast-slow-routing skill help? (demo)",
        ),
        "version": dict(
            arms=(BASELINE, CANDIDATE),
            gate=folder / "gate.yaml",
            out=out / f"{stem}-v1-vs-v2.html",
            title="Should skill v2 replace v1? (demo)",
        ),
    }
    for key, options in pages.items():
        page = render_report(exp.id, store=store, **options)
        result.reports[key] = page
        say(
            f"report    {page.html_path}  ({page.size_bytes / 1e6:.1f} MB, {page.seconds:.1f} s): {page.decision}"
        )
    return result


def _pct(value: float | None) -> str:
    return pct(value, missing=DASH)


def _interval(interval: Bounds | None) -> str:
    return pct_span(interval)
