"""A banking77 experiment as the issue met it: 77 intents, no label set in the mapping, arms given the labels.

The builtin agent (the offline stand-in) answers a seeded sample of the real test file; the mapping
declares neither ``label_set`` nor ``expected_kind``, so the values alone must make the gold labels.
"""

from __future__ import annotations

import json
from pathlib import Path

from abbench.runner import create_experiment, record_runs, run_experiment
from abbench.store import open_store
from tests.conftest import REPO

BANKING = REPO / "tests" / "realdata" / "banking77"
NAME = "banking-confusion"


def build_banking_store(root: Path, *, cases: int = 300, seed: int = 7) -> Path:
    """A store at `root` holding banking77 and a finished two-arm experiment `NAME` over `cases` cases."""
    categories = json.loads((BANKING / "categories.json").read_text(encoding="utf-8"))
    with open_store(root) as store:
        store.datasets.import_file(
            BANKING / "test.csv", {"fields": {"input": "text", "expected": "category"}}, name="banking77"
        )
        spec = {
            "name": NAME,
            "dataset": "banking77",
            "rounds": 1,
            "graders": ["label_match"],
            "cases": {"sample": cases, "seed": seed},
            "arms": {
                "plain": {"agent": "builtin", "labels": categories},
                "noisy": {"agent": "builtin", "labels": categories, "temperature": 2.0, "seed": 3},
            },
        }
        exp = create_experiment(spec, store=store)
        run_experiment(exp, store=store)
    return root


def record_on_subset(store, realdata: Path, name: str, subset: list[str], outcome, graders: list):
    """banking77 imported with its 77 categories as the label set, and experiment `name` over the cases
    whose gold label is in `subset`: arms a, b, c (external, models m-a, m-b, m-c), 3 rounds, each run
    recorded as `outcome(case, arm, round)` gives it (None: not recorded, the run stays unfinished).

    Returns the dataset, those cases and the experiment."""
    categories = json.loads((realdata / "banking77" / "categories.json").read_text())
    profile = {"fields": {"input": "text", "expected": "category"}, "label_set": categories}
    info = store.datasets.import_file(realdata / "banking77" / "test.csv", profile, name="banking77")
    cases = [c for c in store.datasets.load_cases(info) if c.expected in subset]
    arms = {name: {"agent": "external", "model": f"m-{name}"} for name in ("a", "b", "c")}
    spec = {
        "name": name,
        "dataset": info.fingerprint,
        "rounds": 3,
        "cases": {"labels": subset},
        "arms": arms,
        "graders": graders,
    }
    exp = create_experiment(spec, store=store)
    record_runs(
        store, exp, [o for c in cases for a in arms for r in (1, 2, 3) if (o := outcome(c, a, r)) is not None]
    )
    return info, cases, exp


def one_arm_on(store, info, name: str, cases: list, arm: str, graders: list):
    """Experiment `name` of dataset `info`: one external arm `arm` over `cases` (named by id), 2 rounds."""
    spec = {
        "name": name,
        "dataset": info.fingerprint,
        "rounds": 2,
        "cases": {"ids": [c.case_id for c in cases]},
        "arms": {arm: {"agent": "external"}},
        "graders": graders,
    }
    return create_experiment(spec, store=store)
