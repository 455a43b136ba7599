"""abbench against a plain asyncio client, on the same requests to a real (tiny) local model.

The local server (`abbench.testing.LocalModelServer`: SmolLM2-135M behind node-llama-cpp, installed by
`make local-model`) answers one request at a time. Both sides send the same chat-completion bodies —
the prompt abbench builds for each case, temperature 0, the same max_tokens — at the same concurrency:

  abbench: `run_experiment` on a fresh store (an openai arm, response cache off, no retries), which
           stores every transition, attempt, transcript and grade;
  floor:   httpx.AsyncClient posting the bodies with asyncio.gather behind a semaphore, nothing stored.

Each is timed 3 times (--reps), alternating, and the median wall times compared: target abbench ≤ 1.05 ×
the floor. The server's own time per request (its log) is printed beside, so the model's share shows.

    python bench/bench_realmodel.py [--cases 12] [--max-tokens 8] [--reps 3] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from abbench.agents import Task, build_prompt  # noqa: E402
from abbench.runner import create_experiment, run_experiment  # noqa: E402
from abbench.store import open_store  # noqa: E402
from abbench.testing import LocalModelServer  # noqa: E402
from abbench.types import Case  # noqa: E402

QUERIES = [
    "Turn on the air conditioning.",
    "Plan a route to the airport that avoids tolls.",
    "Close the window.",
    "Will my battery last until I reach Berlin?",
    "Play some jazz.",
    "Find a charging station on the way to Munich.",
]
LABELS = ("fast", "slow")


def cases(n: int) -> list[Case]:
    return [
        Case(case_id=f"c{i:03d}", input=f"{QUERIES[i % len(QUERIES)]} ({i})", expected="fast")
        for i in range(n)
    ]


def bodies(cs: list[Case], max_tokens: int) -> list[dict]:
    """The bodies abbench sends for these cases (its own prompt, no skill, no tools)."""
    out = []
    for c in cs:
        messages = [dict(m) for m in build_prompt(Task(case=c, arm="a", label_set=LABELS)).messages]
        out.append({"model": "smollm2", "messages": messages, "temperature": 0, "max_tokens": max_tokens})
    return out


async def floor(base_url: str, payloads: list[dict], concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=600) as http:

        async def one(body: dict) -> None:
            async with gate:
                r = await http.post(f"{base_url}/chat/completions", json=body)
                r.raise_for_status()
                r.json()

        await asyncio.gather(*(one(b) for b in payloads))
    return time.perf_counter() - started


def abbench_run(base_url: str, cs: list[Case], max_tokens: int, concurrency: int) -> float:
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "store") as store:
        ds = store.datasets.save("bench", cs, label_set=list(LABELS))
        arm = {"agent": "openai", "model": "smollm2", "base_url": base_url, "temperature": 0,
               "max_tokens": max_tokens, "timeout_s": 600, "cache": "off",
               "prices": {"smollm2": {"input": 0.0, "output": 0.0}}}  # fmt: skip
        exp = create_experiment(
            {"name": "bench", "dataset": ds.fingerprint, "rounds": 1, "retries": 0, "concurrency": concurrency,
             "arms": {"a": arm}},
            store=store,
        )  # fmt: skip
        started = time.perf_counter()
        run_experiment(exp.id, store=store)
        return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=12)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()
    print(f"load before: {os.getloadavg()}")
    cs = cases(args.cases)
    payloads = bodies(cs, args.max_tokens)
    with LocalModelServer.from_tools(REPO / ".tools") as server:
        asyncio.run(floor(server.base_url, payloads[:1], 1))  # warm the model and the connection
        walls: dict[str, list[float]] = {"floor": [], "abbench": []}
        served: dict[str, list[float]] = {"floor": [], "abbench": []}
        for rep in range(args.reps):
            order = ("floor", "abbench") if rep % 2 == 0 else ("abbench", "floor")
            for side in order:
                mark = server.requests
                if side == "floor":
                    wall = asyncio.run(floor(server.base_url, payloads, args.concurrency))
                else:
                    wall = abbench_run(server.base_url, cs, args.max_tokens, args.concurrency)
                log = server.log()[mark:]
                assert len(log) == args.cases and all(e.status == 200 for e in log), log
                walls[side].append(wall)
                served[side].append(sum(e.ms or 0 for e in log) / 1000)
                print(f"rep {rep + 1} {side:<8} wall {wall:7.2f} s  server busy {served[side][-1]:7.2f} s")
    f, a = statistics.median(walls["floor"]), statistics.median(walls["abbench"])
    print(f"median wall: floor {f:.2f} s, abbench {a:.2f} s: abbench / floor = {a / f:.3f} (target <= 1.05)")
    print(f"median server time: floor {statistics.median(served['floor']):.2f} s, "
          f"abbench {statistics.median(served['abbench']):.2f} s")  # fmt: skip
    # what each client adds to the model's own time: on a loaded machine the model's speed moves more
    # between repetitions than either client's overhead
    over = {k: statistics.median(w - s for w, s in zip(walls[k], served[k], strict=True)) for k in walls}
    print(f"median client overhead (wall - server busy): floor {over['floor'] * 1000:.0f} ms, "
          f"abbench {over['abbench'] * 1000:.0f} ms for {args.cases} requests")  # fmt: skip
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
