"""Service benchmark: an experiment run by `abbench serve` under 50 polling clients vs `abbench run`.

Prints, measured in one run (the same machine, the same load):
  1. the runs/s of a ~10,000-run builtin experiment (401 demo cases × 13 rounds × 2 arms) run by
     ``abbench run`` in a child process — the floor;
  2. the runs/s of the same experiment started over HTTP in an ``abbench serve`` child process while
     50 clients poll it: 40 poll ``GET /api/experiments/{id}`` and a page of results every 0.5 s, 10
     follow its server-sent events (target: ≥ 90 % of 1.);
  3. the p50 / p95 latency of those ``GET /api/experiments/{id}`` (target p95 < 100 ms), and the
     machine's load (``uptime``).

    python bench/bench_service.py [--rounds 13] [--clients 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from abbench.client import Client  # noqa: E402
from abbench.store import open_store  # noqa: E402
from tests.server.live import LiveServer  # noqa: E402

DEMO = REPO / "data" / "demo"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _definition(name: str, dataset: str, rounds: int, skill: str) -> dict:
    return {
        "name": name,
        "dataset": dataset,
        "rounds": rounds,
        "graders": ["label_match"],
        "concurrency": 16,
        "arms": {"none": {"agent": "builtin"}, "v2": {"agent": "builtin", "skill": skill}},
    }


def span(store: Path, name: str) -> float:
    """Seconds from the first run's start to the last run's end, from the store (the same clock for both)."""
    from datetime import datetime

    with open_store(store) as s:
        runs = s.runs.records(s.experiments.get(name).id)
    first = min(datetime.fromisoformat(r.started_at) for r in runs if r.started_at)
    last = max(datetime.fromisoformat(r.finished_at) for r in runs if r.finished_at)
    return max((last - first).total_seconds(), 1.0)


def floor(root: Path, rounds: int) -> tuple[int, float]:
    """`abbench run` of the experiment in a child process: (runs, seconds of the run command)."""
    store = root / "cli-store"
    cmd = [sys.executable, "-m", "abbench", "--store", str(store)]
    subprocess.run(
        [
            *cmd,
            "import",
            str(DEMO / "cases.csv"),
            "--mapping",
            str(DEMO / "mapping-csv.yaml"),
            "--name",
            "demo",
        ],
        env=ENV,
        check=True,
        capture_output=True,
    )
    snap = subprocess.run(
        [*cmd, "snapshot", str(DEMO / "skills" / "fast-slow-routing-v2"), "--json"],
        env=ENV,
        check=True,
        capture_output=True,
        text=True,
    )
    import json

    skill = json.loads(snap.stdout)["hash"]
    with open_store(store) as s:
        dataset = s.datasets.all()[0].fingerprint
    definition = root / "floor.json"
    definition.write_text(json.dumps(_definition("floor", dataset, rounds, skill)))
    subprocess.run([*cmd, "create", str(definition)], env=ENV, check=True, capture_output=True)
    t0 = time.perf_counter()
    subprocess.run([*cmd, "run", "floor", "-q"], env=ENV, check=True, capture_output=True)
    seconds = time.perf_counter() - t0
    with open_store(store) as s:
        runs = len(s.runs.records(s.experiments.get("floor").id))
    return runs, seconds


def _client(fn):
    """A client thread's body: its first error is kept for the report (a client that died polls no more,
    and a bench that lost its clients measures an idle server)."""

    def run(*args: object, errors: list[str]) -> None:
        try:
            fn(*args)
        except Exception as exc:  # any failure: reported at the end
            errors.append(f"{type(exc).__name__}: {exc}")

    return run


@_client
def _poller(url: str, key: str, exp_id: int, stop: threading.Event, latencies: list[float]) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as c:
        while not stop.is_set():
            t0 = time.perf_counter()
            r = c.get(f"/api/experiments/{exp_id}")
            latencies.append(time.perf_counter() - t0)
            r.raise_for_status()
            c.get(f"/api/experiments/{exp_id}/results", params={"limit": 50}).raise_for_status()
            stop.wait(0.5)


@_client
def _follower(url: str, key: str, exp_id: int, stop: threading.Event) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.stream("GET", f"{url}/api/experiments/{exp_id}/events", headers=headers, timeout=None) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if stop.is_set() or line.startswith("event: end"):
                return


def served(root: Path, rounds: int, clients: int, nice: int) -> tuple[int, float, list[float], list[str]]:
    """The experiment run by a server under `clients` clients: (runs, seconds, GET latencies, the
    clients' errors). Each client has its own key of the same owner, as people watching one experiment
    would: the server bounds the requests one key has in flight (--max-inflight)."""
    store = root / "server-store"
    with open_store(store) as s:
        key = s.keys.create("bench")[1]
        keys = [s.keys.create("bench", scopes="read")[1] for _ in range(clients)]
    server = LiveServer(
        store, "--rate", "1000000", "--workers", "1", "--runner-nice", str(nice), log=root / "server.log"
    ).start()
    latencies: list[float] = []
    try:
        with Client(server.url, key, actor="bench") as c:
            mapping = (DEMO / "mapping-csv.yaml").read_text(encoding="utf-8")
            ds = c.import_dataset(DEMO / "cases.csv", mapping, name="demo")
            skill = c.snapshot_skill(DEMO / "skills" / "fast-slow-routing-v2")["hash"]
            exp = c.create_experiment(_definition("served", ds["fingerprint"], rounds, skill))
            stop = threading.Event()
            followers = min(10, clients // 5)
            errors: list[str] = []
            # daemon threads: a failed run must not leave an event stream holding the process open
            threads = [
                threading.Thread(
                    target=_poller,
                    args=(server.url, keys[i], exp.id, stop, latencies),
                    kwargs={"errors": errors},
                    daemon=True,
                )
                for i in range(clients - followers)
            ] + [
                threading.Thread(
                    target=_follower,
                    args=(server.url, keys[clients - followers + i], exp.id, stop),
                    kwargs={"errors": errors},
                    daemon=True,
                )
                for i in range(followers)
            ]
            for t in threads:
                t.start()
            t0 = time.perf_counter()
            c.start(exp.id)
            final = c.wait(exp.id, poll=0.2)
            seconds = time.perf_counter() - t0
            stop.set()
            for t in threads:
                t.join(timeout=60)
            return final.done, seconds, latencies, errors
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=13)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--runner-nice", type=int, default=5, help="abbench serve --runner-nice")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        n_floor, s_floor = floor(root, args.rounds)
        n_served, s_served, lat, errors = served(root, args.rounds, args.clients, args.runner_nice)
        span_floor, span_served = span(root / "cli-store", "floor"), span(root / "server-store", "served")
    q = statistics.quantiles([x * 1000 for x in lat], n=100) if len(lat) > 1 else [float("nan")] * 99
    floor_rate, served_rate = n_floor / span_floor, n_served / span_served
    print(
        f"abbench run:    {n_floor:,} runs in {span_floor:.0f} s first start to last end = {floor_rate:,.0f} runs/s "
        f"(the command took {s_floor:.1f} s with its start-up)"
    )
    print(
        f"abbench serve (--runner-nice {args.runner_nice}):  {n_served:,} runs in {span_served:.0f} s = {served_rate:,.0f} runs/s with {args.clients} "
        f"clients polling (start to end over HTTP {s_served:.1f} s) — {served_rate / floor_rate:.0%} of abbench run "
        "(target ≥ 90 %)"
    )
    print(
        f"GET /api/experiments/{{id}}: {len(lat):,} requests, p50 {q[49]:.1f} ms, p95 {q[94]:.1f} ms (target p95 < 100)"
    )
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if errors:
        raise SystemExit(f"{len(errors)} of {args.clients} clients failed; the first: {errors[0]}")


if __name__ == "__main__":
    main()
