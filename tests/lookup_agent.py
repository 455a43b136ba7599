"""Python agents that look each case's text up in a real data file (tests/realdata) and err by a hash.

The agent's source is a module text that reads the file named by a ``CSV`` global; `agent_store` writes
it beside a new store, so the runner imports it as a file like any user's agent.
"""

from __future__ import annotations

from pathlib import Path

from abbench.graders import normalise_label
from abbench.metrics import NO_PREDICTION
from abbench.store import FAILED, PASSED, open_store


def agent_store(tmp_path_factory, name: str, csv_path: Path, source: str):
    """A folder holding ``agent.py`` (`source` reading `csv_path`) and a new store ``store``.

    Returns the folder, the open store and the agent's ``function`` reference (``…/agent.py:route``)."""
    root = tmp_path_factory.mktemp(name)
    (root / "agent.py").write_text(f"CSV = {str(csv_path)!r}\n" + source, encoding="utf-8")
    return root, open_store(root / "store"), f"{root / 'agent.py'}:route"


def graded_labels(table):
    """The normalised gold and predicted labels of a run table's graded runs (no answer: NO_PREDICTION)."""
    graded = (table.outcome == PASSED) | (table.outcome == FAILED)
    gold = [normalise_label(g) for g in table.expected[graded]]
    pred = [NO_PREDICTION if p is None else normalise_label(p) for p in table.prediction[graded]]
    return gold, pred


def sometimes_wrong(text_column: str, label_column: str, wrong_percent: int) -> str:
    """The source of an agent that never sees the gold: it looks the case's text up in the file (column
    `text_column`) and answers its `label_column`, but, by a hash of the text and the round, another label
    of the file `wrong_percent` % of the time."""
    return f"""
import csv, hashlib
GOLD = {{}}
with open(CSV, encoding="utf-8", newline="") as f:
    for row in csv.DictReader(f):
        GOLD.setdefault(row[{text_column!r}], row[{label_column!r}])
LABELS = sorted(set(GOLD.values()))

def route(task):
    text = task.case.input
    h = int(hashlib.sha1(f"{{text}}|{{task.round}}".encode()).hexdigest(), 16)
    return LABELS[h % len(LABELS)] if h % 100 < {wrong_percent} else GOLD[text]
"""
