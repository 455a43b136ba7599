"""A banking77 experiment as the issue met it: 77 intents, no label set in the mapping, arms given the labels.

The builtin agent (the offline stand-in) answers a seeded sample of the real test file; the mapping
declares neither ``label_set`` nor ``expected_kind``, so the values alone must make the gold labels.
"""

from __future__ import annotations

import json
from pathlib import Path

from abbench.runner import create_experiment, run_experiment
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
