"""Dask benchmark: the same experiments on the local executor and on a LocalCluster of 2 processes, in one run.

Prints, measured in one run (the machine's load from `uptime` before and after, since it is shared):
  1. a CPU-bound *python* agent (a pure-Python loop of ~50 ms holding the GIL), 400 runs: local is bound
     to one core (its threads share the GIL), Dask's two worker processes use two — target speed-up ≥ 1.7;
  2. a CPU-bound *command* agent (a script burning ~200 ms of CPU), 200 runs: local already uses both
     cores through its processes, so Dask must cost little — target ratio ≥ 0.9 of local's throughput;
  3. an instant python agent, 400 runs: runs/s on both, and the overhead per task in ms.

The Dask passes connect to one LocalCluster made first (``--dask-local 2``'s shape and Dask settings:
two single-threaded worker processes), so the ratios compare the executors, not the cluster's start-up,
which is printed on its own; pass 0 runs the python agent on ``--dask-local 2`` itself. Every pass is
timed by the runner's own clock (`RunSummary.elapsed_s`: no connecting, no cluster start-up or
shutdown in it). Each pass is one experiment, concurrency 8, graded by label match.

Wall ratios on a shared machine follow its load, so each pass also prints the CPU it cost (load-robust):
the coordinator's process (for Dask: the coordinator's loop, plus the LocalCluster's scheduler and
nannies, which ``--dask-local`` keeps in the coordinator's process too) and the worker processes (the
agents' own CPU included, subprocesses too), in ms per run. On 2 cores that are otherwise idle the
CPU-bound python pass cannot beat 2 × (local CPU a run) / (Dask CPU a run): the figure printed as the
"CPU bound" speed-up.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from abbench.runner import create_experiment, run_experiment
from abbench.runner._dask import LOCAL_CLUSTER_CONFIG
from abbench.store import open_store
from abbench.types import Case

HERE = Path(__file__).resolve()
BURN = "import sys\nn=int(sys.argv[1])\nx=0\nfor i in range(n): x+=i*i\nprint('fast')\n"


def burn(task):
    """The CPU-bound python agent: a pure-Python loop of ``iterations`` steps (the GIL held throughout)."""
    x = 0
    for i in range(task.params["iterations"]):
        x += i * i
    return "fast"


async def instant(task):
    """The instant agent: answers at once."""
    return "fast"


def calibrate(seconds: float) -> int:
    """Loop steps that take `seconds` of CPU here (best of three: the machine is shared)."""
    n, best = 200_000, float("inf")
    for _ in range(3):
        began = time.process_time()
        x = 0
        for i in range(n):
            x += i * i
        best = min(best, time.process_time() - began)
    return int(n * seconds / best)


def worker_cpu() -> float:
    """CPU seconds of this worker process and of the subprocesses it waited for (run on each worker)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def own_cpu() -> float:
    """CPU seconds of this process (threads included) and of the subprocesses it waited for."""
    return worker_cpu()


@dataclass
class Pass:
    """One pass: runs/s, and the CPU a run cost here (the coordinator's process) and on the workers."""

    runs_s: float
    here_ms: float
    workers_ms: float

    @property
    def cpu_ms(self) -> float:
        return self.here_ms + self.workers_ms

    def cpu(self) -> str:
        if not self.workers_ms:
            return f"CPU {self.here_ms:.1f} ms/run"
        return f"CPU {self.cpu_ms:.1f} ms/run: coordinator {self.here_ms:.1f} + workers {self.workers_ms:.1f}"


def one_pass(root: Path, name: str, runs: int, arm: dict, client=None, **where) -> Pass:
    """One experiment of `runs` cases with `arm`, on the executor `where` names (`client`: to its workers)."""
    store = open_store(root / name)
    cases = [Case(f"c{i:05d}", f"query {i}", "fast") for i in range(runs)]
    ds = store.datasets.save(name, cases, label_set=["fast", "slow"])
    exp = create_experiment(
        {"name": name, "dataset": ds.fingerprint, "concurrency": 8, "arms": {"a": arm}}, store=store
    )
    workers = (lambda: sum(client.run(worker_cpu).values())) if client is not None and where else None
    began_workers = workers() if workers else 0.0
    began_cpu = own_cpu()
    summary = run_experiment(exp.id, store=store, **where)
    cpu = own_cpu() - began_cpu
    on_workers = workers() - began_workers if workers else 0.0
    assert summary.graded == runs and summary.failed == 0, summary.as_dict()
    # the runner's own clock: from its claim of the experiment to its last write, so neither connecting
    # to the cluster nor (for dask_local) starting and stopping one is in it
    return Pass(runs / summary.elapsed_s, cpu / runs * 1000, on_workers / runs * 1000)


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    """``python bench/bench_dask.py [SCALE]``: SCALE (default 1) multiplies the run counts."""
    import dask
    import distributed

    os.environ.setdefault("TQDM_DISABLE", "1")
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    n400, n200 = max(8, int(400 * scale)), max(8, int(200 * scale))
    print("load before:", load())
    python_steps, command_steps = calibrate(0.050), calibrate(0.200)
    script = Path(tempfile.mkdtemp()) / "burn.py"
    script.write_text(BURN, encoding="utf-8")
    cpu_python = {"agent": "python", "function": f"{HERE}:burn", "iterations": python_steps}
    cpu_command = {"agent": "command", "argv": [sys.executable, str(script), str(command_steps)]}
    fast = {"agent": "python", "function": f"{HERE}:instant"}
    own = one_pass(Path(tempfile.mkdtemp()), "py-dask-local", n400, cpu_python, dask_local=2)
    print(
        f"0. the same CPU-bound python agent on `--dask-local 2` itself (the scheduler and nannies on the "
        f"coordinator's loop; cluster start-up and shutdown not timed): {own.runs_s:.1f} runs/s — {load()}"
    )
    began = time.perf_counter()
    with dask.config.set(LOCAL_CLUSTER_CONFIG):  # as --dask-local makes it
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0"
        )
    print(
        f"LocalCluster of 2 worker processes started in {time.perf_counter() - began:.1f} s (not timed below)"
    )
    dask_at = {"scheduler": cluster.scheduler_address}
    with cluster, distributed.Client(cluster) as client, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        local1 = one_pass(root, "py-local", n400, cpu_python)
        farmed1 = one_pass(root, "py-dask", n400, cpu_python, client, **dask_at)
        print(
            f"1. CPU-bound python agent (~50 ms, GIL held), {n400} runs: local {local1.runs_s:.1f} runs/s, "
            f"dask-local 2 {farmed1.runs_s:.1f} runs/s: speed-up {farmed1.runs_s / local1.runs_s:.2f} "
            f"(target ≥ 1.7); {local1.cpu()} vs {farmed1.cpu()}: CPU bound on 2 idle cores "
            f"{2 * local1.cpu_ms / farmed1.cpu_ms:.2f}; `--dask-local 2` itself: speed-up "
            f"{own.runs_s / local1.runs_s:.2f} — {load()}"
        )
        local2 = one_pass(root, "cmd-local", n200, cpu_command)
        farmed2 = one_pass(root, "cmd-dask", n200, cpu_command, client, **dask_at)
        print(
            f"2. CPU-bound command agent (~200 ms CPU), {n200} runs: local {local2.runs_s:.2f} runs/s, "
            f"dask-local 2 {farmed2.runs_s:.2f} runs/s: ratio {farmed2.runs_s / local2.runs_s:.2f} "
            f"(target ≥ 0.9); {local2.cpu()} vs {farmed2.cpu()} — {load()}"
        )
        local3 = one_pass(root, "fast-local", n400, fast)
        farmed3 = one_pass(root, "fast-dask", n400, fast, client, **dask_at)
        overhead_ms = (1 / farmed3.runs_s - 1 / local3.runs_s) * 1000
        print(
            f"3. instant agent, {n400} runs: local {local3.runs_s:.0f} runs/s, dask-local 2 "
            f"{farmed3.runs_s:.0f} runs/s: {overhead_ms:.1f} ms more per run through Dask; "
            f"{local3.cpu()} vs {farmed3.cpu()} — {load()}"
        )
    print("load after: ", load())


if __name__ == "__main__":
    main()
