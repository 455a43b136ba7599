"""Writes the Parquet copies in this folder from the realdata files they convert (see SOURCES.md).

Run from the repository root with pyarrow installed: ``python tests/realdata/parquet/make_parquet.py``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).parent
REALDATA = HERE.parent

with (REALDATA / "banking77" / "test.csv").open(encoding="utf-8", newline="") as fh:
    rows = list(csv.DictReader(fh))
banking = pa.table({"text": [r["text"] for r in rows], "category": [r["category"] for r in rows]})
pq.write_table(banking, HERE / "banking77_test.parquet", row_group_size=1000)

# Nested columns as the JSON has them: entities is a list of objects, answer an object; rows lacking a key hold null
sentences = json.loads((REALDATA / "nlu_corpora" / "AskUbuntuCorpus.json").read_text(encoding="utf-8"))[
    "sentences"
]
pq.write_table(pa.Table.from_pylist(sentences), HERE / "askubuntu.parquet")
