"""TEMPORARY shim until the snapshot branch lands (replaced at merge)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from abbench.snapshot import Snapshot, SnapshotFile
from abbench.store._base import now_iso


class SnapshotsMixin:
    def snapshot_skill(self, folder, git_ref=None):
        folder = Path(folder)
        files = []
        h = hashlib.sha256()
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                data = p.read_bytes()
                rel = p.relative_to(folder).as_posix()
                h.update(rel.encode() + b"\0" + data)
                files.append(SnapshotFile(rel, hashlib.sha256(data).hexdigest(), len(data)))
        digest = h.hexdigest()
        if not self.query_one("SELECT 1 FROM snapshots WHERE hash=?", (digest,)):
            with self.transaction() as conn:
                conn.execute(
                    "INSERT INTO snapshots (hash, skill_name, path, n_files, size_bytes, files, draft, source_path, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        digest,
                        folder.name,
                        str(folder.resolve()),
                        len(files),
                        0,
                        "[]",
                        1,
                        str(folder),
                        now_iso(),
                    ),
                )
        self._shim = getattr(self, "_shim", {})
        self._shim[digest] = Snapshot(digest, folder.name, folder.resolve(), tuple(files))
        return self._shim[digest]

    def get_snapshot(self, ref):
        r = self.query_one("SELECT hash, path FROM snapshots WHERE hash=? OR hash LIKE ?", (ref, f"{ref}%"))
        return self.snapshot_skill(r[1])
