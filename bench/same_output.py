"""Whether two checkouts of abbench give the same bytes: the demo's output and every export of its store.

    python bench/same_output.py --against /path/to/other/checkout   # exit 1 on a difference

Each checkout runs, in a child process with its own ``PYTHONPATH`` and a fresh store folder,
``abbench demo --no-report -q`` (its standard output kept, the lines that time the run dropped),
then exports every stored experiment's runs, grades and comparison as CSV, JSONL and XLSX.
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


def digests(checkout: Path, work: Path) -> dict[str, str]:
    """The SHA-256 of the demo's output and of each export, made by `checkout` in the folder `work`."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "ABBENCH_STORE": str(work / "store")}
    env.pop("VIRTUAL_ENV", None)

    def abbench(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "abbench", *args], cwd=work, env=env, capture_output=True, text=True
        )
        if done.returncode:
            raise SystemExit(f"{checkout}: abbench {' '.join(args)} failed:\n{done.stderr[-2000:]}")
        return done.stdout

    out = {"demo output": _hash(_VOLATILE.sub("<t>", abbench("demo", "--no-report", "-q")).encode())}
    listing = json.loads(abbench("experiments", "--json"))
    for exp in listing:
        for what in WHAT:
            for fmt in FORMATS:
                path = work / f"{exp['id']}-{what}.{fmt}"
                abbench("export", str(exp["id"]), "--what", what, "--format", fmt, "--out", str(path))
                out[f"experiment {exp['id']} {what}.{fmt}"] = _hash(path.read_bytes())
    return out


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout (its root folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        here, there = digests(HERE, Path(a)), digests(args.against.resolve(), Path(b))
    differ = sorted(k for k in here.keys() | there.keys() if here.get(k) != there.get(k))
    print(f"{len(here)} outputs compared ({HERE} vs {args.against}): {len(differ)} differ")
    for key in differ:
        print(f"  differs: {key}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
