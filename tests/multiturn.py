"""A store of multi-turn cases, for the views that must show a case's earlier turns.

``routing``: the demo's cases FS-0015, FS-0017, FS-0057 (each after two earlier turns, in Chinese) and
FS-0002 (one turn), arm ``a`` right on all but FS-0017 (an id ending in 7), arm ``b`` wrong also on FS-0015
and FS-0057: those two regressed. ``long``: the first case of OpenAI's emotional-intelligence eval (real,
a 1,000-character system message before the question) and a 12-turn conversation written here, one of its
turns holding a terminal escape sequence.
"""

from __future__ import annotations

import json
from pathlib import Path

from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from tests.conftest import DEMO, REALDATA

ARM = {"agent": "python", "function": "tests.widgets.agents:answer", "sees_gold": True}
"""An agent that answers the gold, wrong where its ``wrong`` list says (tests/widgets/agents.py)."""
ROUTING_CASES = ["FS-0002", "FS-0015", "FS-0017", "FS-0057"]
EVAL = REALDATA / "eval_formats" / "openai_evals" / "emotional-intelligence.samples.jsonl"
ESCAPE = "\x1b[2J\x1b[31m"
"""Clears a terminal and turns it red, if printed as it is."""


def conversation() -> list[dict[str, str]]:
    """Twelve turns (turn 1 first), then the question: ``user``/``assistant`` alternating."""
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i + 1}: " + ("说明 " * (i + 1))}
        for i in range(12)
    ]
    turns[9]["content"] += f"{ESCAPE}still turn 10"
    return [*turns, {"role": "user", "content": "so, fast or slow?"}]


def build_multiturn_store(path: Path) -> Path:
    """The store described above, its experiments run; `path` is returned."""
    data = path.parent / "long.jsonl"
    first = EVAL.read_text(encoding="utf-8").splitlines()[0]
    data.write_text(
        first + "\n" + json.dumps({"input": conversation(), "ideal": "fast"}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    with open_store(path) as store:
        store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
        store.datasets.import_file(data, name="long")
        for name, dataset, cases, arms in (
            (
                "routing",
                "demo",
                {"ids": ROUTING_CASES},
                {"a": ARM, "b": {**ARM, "wrong": ["FS-0015", "FS-0057"]}},
            ),
            ("long", "long", None, {"a": ARM}),
        ):
            spec = {"name": name, "dataset": dataset, "arms": arms}
            if cases:
                spec["cases"] = cases
            run_experiment(create_experiment(spec, store=store).id, store=store)
    return path
