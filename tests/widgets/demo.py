"""A demo store built with library calls, as `abbench demo` makes it: the demo dataset, both skills, three arms."""

from __future__ import annotations

from pathlib import Path

from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from tests.conftest import DEMO

SKILLS = DEMO / "skills"
ARMS = {
    "no-skill": {"agent": "builtin", "temperature": 0.3},
    "v1": {"agent": "builtin", "skill": str(SKILLS / "fast-slow-routing-v1"), "temperature": 0.3},
    "v2": {"agent": "builtin", "skill": str(SKILLS / "fast-slow-routing-v2"), "temperature": 0.3},
}


def build_demo_store(path: Path, *, rounds: int = 3, run: bool = True) -> Path:
    """The demo dataset imported as ``demo``; with `run`, the experiment ``demo`` (no skill, v1, v2) run and graded.

    A second experiment ``demo-v2-only`` (v1 and v2, one round) gives the compare notebook two experiments
    on the same dataset.
    """
    with open_store(path) as store:
        store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
        if run:
            exp = create_experiment(
                {
                    "name": "demo",
                    "dataset": "demo",
                    "rounds": rounds,
                    "concurrency": 16,
                    "arms": ARMS,
                    "graders": ["label_match", "read_skill", "cited_evidence"],
                },
                store=store,
            )
            run_experiment(exp.id, store=store)
            other = create_experiment(
                {
                    "name": "demo-v2-only",
                    "dataset": "demo",
                    "rounds": 1,
                    "concurrency": 16,
                    "arms": {"v1": ARMS["v1"], "v2": ARMS["v2"]},
                },
                store=store,
            )
            run_experiment(other.id, store=store)
    return path


def build_priced_demo(path: Path, *, rounds: int = 2, cases: int | None = None) -> Path:
    """The experiment ``demo-routing`` as data/demo/experiment.yaml defines it (priced builtin arms no-skill,
    v1, v2 and its ``decision:`` v1 → v2), over the demo dataset (its first `cases`, default all) with
    `rounds` rounds, run and graded."""
    from abbench.runner import load_spec

    with open_store(path) as store:
        ds = store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
        spec, _ = load_spec(DEMO / "experiment.yaml")
        definition = spec.model_dump(mode="json", exclude_none=True)
        definition.update(dataset=ds.fingerprint, rounds=rounds)
        if cases is not None:
            definition["cases"] = {"limit": cases}
        for name in ("v1", "v2"):
            definition["arms"][name]["skill"] = str(SKILLS / f"fast-slow-routing-{name}")
        exp = create_experiment(definition, store=store)
        run_experiment(exp.id, store=store)
    return path
