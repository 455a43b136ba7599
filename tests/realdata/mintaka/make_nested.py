"""Writes ``routing_nested.jsonl`` from ``mintaka_dev_every40.jsonl``: the same questions in the shape of a
routing log that keeps each request's fields in an object, ``{rid, data: {query, label, vertical, ...}}``.

Run from the repository root: ``python tests/realdata/mintaka/make_nested.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent

with (HERE / "mintaka_dev_every40.jsonl").open(encoding="utf-8") as src:
    records = [json.loads(line) for line in src]
with (HERE / "routing_nested.jsonl").open("w", encoding="utf-8") as out:
    for r in records:
        data = {
            "query": r["question"],
            "label": r["complexityType"],
            "vertical": r["category"],
            "translations": r["translations"],
            "answer": r["answer"],
        }
        out.write(json.dumps({"rid": r["id"], "data": data}, ensure_ascii=False) + "\n")
