"""Start-up benchmark: `abbench --help`, and `abbench run` of a stored experiment to its first agent call.

Whole processes, each figure the median of --repeats, beside the interpreter's own start-up
(`python -c pass`, the floor) measured in the same loop, and beside a baseline checkout's code
(--baseline DIR, e.g. a clone of main) when given: runs of the two alternate, so the machine's load
weighs on both alike. Then `python -X importtime`'s slowest imports of both commands. Each checkout's
bytecode is written first (``compileall``), as an install does: start-up from source is slower.

    python bench/bench_startup.py                          # this checkout
    python bench/bench_startup.py --baseline /work/main    # and before/after, side by side

Targets (issue 17): `--help` < 0.25 s; first agent call < 0.4 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent
SCALE = HERE.parent / "bench_scale.py"  # its `instant` agent writes when it is first called


def _env(code: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(code), "TQDM_DISABLE": "1", **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed abbench starts from its bytecode
    return env


def compiled(code: Path) -> None:
    """Write the bytecode of `code`'s abbench, as installing it does: start-up is measured from .pyc."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(code / "abbench")], env=_env(code), check=True
    )


def wall(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(Wall seconds, CPU seconds) one whole process takes."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed")
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def stored_experiment(root: Path, n: int = 200) -> Path:
    """A store holding one experiment (2 arms of the instant python agent, n cases), not run yet."""
    data, store = root / "cases.csv", root / "template"
    data.write_text(
        "case_id,input,expected\n"
        + "".join(f"c{i:05d},query {i},{('fast', 'slow')[i % 2]}\n" for i in range(n)),
        encoding="utf-8",
    )
    arm = f"{{agent: python, function: '{SCALE}:instant', sees_gold: true}}"
    (root / "exp.yaml").write_text(
        f"name: startup\ndataset: startup\nconcurrency: 8\narms:\n  A: {arm}\n  B: {arm}\n", encoding="utf-8"
    )
    ab = [sys.executable, "-m", "abbench", "--store", str(store)]
    env = _env(REPO)
    subprocess.run([*ab, "import", str(data), "--name", "startup"], env=env, check=True, capture_output=True)
    subprocess.run([*ab, "create", str(root / "exp.yaml")], env=env, check=True, capture_output=True)
    return store


def first_call(code: Path, template: Path, root: Path) -> tuple[float, float]:
    """(Wall seconds, CPU seconds) from starting `abbench run` (on a fresh copy of the stored experiment)
    to its first agent call."""
    store, mark = root / "run-store", root / "first-call"
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(template, store)
    mark.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "abbench", "--store", str(store), "run", "startup", "-q"]
    started = time.time()
    subprocess.run(argv, env=_env(code, BENCH_FIRST_CALL=str(mark)), check=True, capture_output=True)
    at, cpu = map(float, mark.read_text(encoding="utf-8").split())
    return at - started, cpu


def importtime(code: Path, argv: list[str], top: int = 10, env: dict[str, str] | None = None) -> None:
    """`python -X importtime`'s slowest imports (cumulative) of one command."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "abbench", *argv],
                          env=env or _env(code), capture_output=True, text=True)  # fmt: skip
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print(f"\n`abbench {' '.join(argv[-3:])}` ({code}): slowest imports, cumulative")
    for us, name in sorted(rows, reverse=True)[:top]:
        print(f"  {us / 1e6:6.3f} s {name}")


Figures = dict[tuple[str, str], list[tuple[float, float]]]
"""(who, what) -> (wall seconds, CPU seconds) of each repeat."""


def measure(codes: dict[str, Path], template: Path, root: Path, repeats: int) -> Figures:
    """Each figure `repeats` times, the floor and every checkout alternating."""
    figures: Figures = {}
    for _ in range(repeats):
        figures.setdefault(("floor", "python -c pass"), []).append(
            wall([sys.executable, "-c", "pass"], _env(REPO))
        )
        for label, code in codes.items():
            figures.setdefault((label, "--help"), []).append(
                wall([sys.executable, "-m", "abbench", "--help"], _env(code))
            )
            figures.setdefault((label, "run: first agent call"), []).append(first_call(code, template, root))
    return figures


def report(figures: Figures, repeats: int) -> None:
    """Medians beside the targets, the floor and the baseline (wall seconds; CPU seconds, which the
    machine's load changes far less)."""
    with open("/proc/loadavg", encoding="utf-8") as f:
        load = " ".join(f.read().split()[:3])

    def median(key: tuple[str, str], i: int) -> float:
        return statistics.median(v[i] for v in figures[key])

    floor = (median(("floor", "python -c pass"), 0), median(("floor", "python -c pass"), 1))
    print(f"start-up, whole processes, median of {repeats} (load average {load}): wall s / CPU s")
    print(f"  {'floor':<14} {'python -c pass':<22} {floor[0]:6.3f} / {floor[1]:6.3f}")
    for label, what in figures:
        if label == "floor":
            continue
        w, c = median((label, what), 0), median((label, what), 1)
        line = (
            f"  {label:<14} {what:<22} {w:6.3f} / {c:6.3f} (target < {0.25 if what == '--help' else 0.4} s)"
        )
        line += f" · above the floor {w - floor[0]:6.3f} / {c - floor[1]:6.3f}"
        if label == "this checkout" and ("baseline", what) in figures:
            line += f" · {w / median(('baseline', what), 0):.2f}× / {c / median(('baseline', what), 1):.2f}× the baseline"
        print(line)


def startup(baseline: Path | None = None, repeats: int = 7) -> None:
    """Measure and print the start-up figures (and the baseline's, when given) and the slowest imports."""
    codes = {"this checkout": REPO} | ({"baseline": baseline.resolve()} if baseline else {})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for code in codes.values():
            compiled(code)
        template = stored_experiment(root)
        report(measure(codes, template, root, repeats), repeats)
        for code in codes.values():
            importtime(code, ["--help"])
            store = root / "run-store"
            shutil.rmtree(store, ignore_errors=True)
            shutil.copytree(template, store)
            env = _env(code, BENCH_FIRST_CALL=str(root / "first-call"))
            importtime(code, ["--store", str(store), "run", "startup", "-q"], env=env)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", type=Path, help="another checkout's code to measure beside this one")
    parser.add_argument("--repeats", type=int, default=7, help="runs of each figure (the median is shown)")
    args = parser.parse_args()
    startup(args.baseline, args.repeats)


if __name__ == "__main__":
    main()
