"""TEMPORARY shim until the dataset branch lands (replaced at merge)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from abbench.store._base import dumps, loads, now_iso
from abbench.types import Case


@dataclass(frozen=True)
class DatasetInfo:
    id: int
    fingerprint: str
    name: str
    n_cases: int
    label_set: Any
    label_map: Any
    profile_id: int | None = None


class DatasetsMixin:
    def save_dataset(self, name, cases, *, label_set=None, label_map=None):
        cases = list(cases)
        h = hashlib.sha256(
            json.dumps([c.canonical() for c in cases], sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
        fp = f"{name}@{h[:12]}"
        row = self.query_one("SELECT id FROM datasets WHERE fingerprint=?", (fp,))
        if row:
            return self.get_dataset(row[0])
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO datasets (fingerprint, name, content_hash, n_cases, label_set, label_map, created_at) VALUES (?,?,?,?,?,?,?)",
                (fp, name, h, len(cases), dumps(label_set), dumps(label_map), now_iso()),
            )
            conn.executemany(
                "INSERT INTO cases (dataset_id, idx, case_id, input, expected, domain, metadata) VALUES (?,?,?,?,?,?,?)",
                [
                    (cur.lastrowid, i, c.case_id, c.input, c.expected, c.domain, dumps(c.metadata))
                    for i, c in enumerate(cases)
                ],
            )
        return self.get_dataset(cur.lastrowid)

    def get_dataset(self, ref):
        r = self.query_one(
            "SELECT id, fingerprint, name, n_cases, label_set, label_map, profile_id FROM datasets WHERE id=? OR fingerprint=?",
            (ref, ref),
        )
        return DatasetInfo(r[0], r[1], r[2], r[3], loads(r[4]), loads(r[5]), r[6])

    def load_cases(self, ref):
        ds = self.get_dataset(ref)
        return [
            Case(r[0], r[1], r[2], domain=r[3], metadata=loads(r[4]))
            for r in self.query(
                "SELECT case_id, input, expected, domain, metadata FROM cases WHERE dataset_id=? ORDER BY idx",
                (ds.id,),
            )
        ]
