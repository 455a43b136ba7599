"""Small experiments recorded with `abbench.record_runs` on a dataset written here (not the demo), for
tests whose figures are checked against an independent computation."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from abbench.dataset import DatasetInfo
from abbench.runner import create_experiment, record_runs
from abbench.store import Experiment, Store


def write_dataset(
    store: Store, folder: Path, n: int, domains: Iterable[str] = ("ops",), name: str = "t"
) -> DatasetInfo:
    """`n` cases ``q000``… answering ``yes``/``no``, imported as `name`: `domains` is each case's domain
    (`n` of them), or a few names the cases are spread over in equal blocks."""
    domains = list(domains)
    if len(domains) != n:
        domains = [domains[i * len(domains) // n] for i in range(n)]
    path = folder / f"{name}.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "question", "gold", "area"])
        for i in range(n):
            w.writerow([f"q{i:03d}", f"question number {i}", "yes" if i % 2 else "no", domains[i]])
    profile = {"fields": {"case_id": "id", "input": "question", "expected": "gold", "domain": "area"}}
    return store.datasets.import_file(path, profile, name=name)


def recorded_experiment(
    store: Store,
    info: DatasetInfo,
    name: str,
    outcome: Callable[[int, str, int], dict[str, Any] | None],
    *,
    n: int,
    rounds: int = 1,
    arms: tuple[str, ...] = ("a", "b"),
    graders: list[Any] | None = None,
    **definition: Any,
) -> Experiment:
    """An experiment of external arms, each (case number, arm, 1-based round) recorded as `outcome`
    says (None: not recorded)."""
    exp = create_experiment(
        {
            "name": name,
            "dataset": info.fingerprint,
            "rounds": rounds,
            "arms": {arm: {"agent": "external", "model": f"m-{arm}"} for arm in arms},
            "graders": graders or [{"type": "recorded", "name": "judge"}],
            **definition,
        },
        store=store,
    )
    outcomes = []
    for i in range(n):
        for arm in arms:
            for r in range(1, rounds + 1):
                o = outcome(i, arm, r)
                if o is not None:
                    outcomes.append({"case_id": f"q{i:03d}", "arm": arm, "round": r, **o})
    record_runs(store, exp, outcomes)
    return store.experiments.get(exp.id)
