"""Whether two checkouts of abbench give the same bytes: the demo's output and every export of its store.

    python bench/same_output.py --against /path/to/other/checkout   # exit 1 on a difference

Each checkout runs, in a child process with its own ``PYTHONPATH`` and a fresh store folder,
``abbench demo --no-report -q`` (its standard output kept, times and paths masked); then each exports
every experiment of the same store (the other checkout's) — runs, grades, reviews and comparison as
CSV, JSONL and XLSX — so that only the code can make the bytes differ, not when the runs were made.
The SHA-256 of each file and of the demo's output are compared; a difference names the file.
Written for issue 39 (the store's interior rebuilt): the exports and the demo must not change.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
WHAT = ("runs", "grades", "reviews", "comparison")
FORMATS = ("csv", "jsonl", "xlsx")
# Lines or parts of lines that differ from run to run whatever the code: times, durations, paths.
_VOLATILE = re.compile(r"\d+(\.\d+)?\s*(ms|s|seconds|min)\b|\d{4}-\d\d-\d\dT[\d:.+Z-]+|/tmp/\S+")


def _abbench(checkout: Path, work: Path, store: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(checkout), "ABBENCH_STORE": str(store)}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(
        [sys.executable, "-m", "abbench", *args], cwd=work, env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"{checkout}: abbench {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def demo_output(checkout: Path, work: Path) -> str:
    """The SHA-256 of what ``abbench demo --no-report -q`` prints with `checkout`, times and paths masked."""
    out = _abbench(checkout, work, work / "store", "demo", "--no-report", "-q")
    out = re.sub(re.escape(str(checkout)) + r"(@[0-9a-f]+)?", "<checkout>", out)  # where the skills came from
    return _hash(_VOLATILE.sub("<t>", out).encode())


def exports(checkout: Path, store: Path, work: Path) -> dict[str, str]:
    """The SHA-256 of every export `checkout` writes of each experiment in `store` (the same store for both
    checkouts, so that only the code differs, not the times the runs were made at)."""
    out = {}
    for exp in json.loads(_abbench(checkout, work, store, "experiments", "--json")):
        for what in WHAT:
            for fmt in FORMATS:
                path = work / f"{exp['id']}-{what}.{fmt}"
                _abbench(
                    checkout,
                    work,
                    store,
                    "export",
                    str(exp["id"]),
                    "--what",
                    what,
                    "--format",
                    fmt,
                    "--out",
                    str(path),
                )
                out[f"experiment {exp['id']} {what}.{fmt}"] = _hash(path.read_bytes())
    return out


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout (its root folder)")
    args = parser.parse_args()
    other = args.against.resolve()
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        here = {"demo output": demo_output(HERE, Path(a))}
        there = {"demo output": demo_output(other, Path(b))}
        store = Path(b) / "store"  # made by the other checkout: exported by both
        here |= exports(HERE, store, Path(a))
        there |= exports(other, store, Path(b))
    differ = sorted(k for k in here.keys() | there.keys() if here.get(k) != there.get(k))
    print(f"{len(here)} outputs compared ({HERE} vs {args.against}): {len(differ)} differ")
    for key in differ:
        print(f"  differs: {key}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
