"""Response-cache benchmark: a resumed 5,000-run experiment answered from the cache vs the builtin agent.

Prints, measured in one run:
  1. the fill: 5,000 runs of the ``openai`` adapter (temperature 0, the demo's v2 skill) against the
     scripted OpenAI-compatible server on 127.0.0.1 — every reply goes into the store's cache;
  2. the resumed experiment: the same 5,000 runs set back to pending and run again with the server
     stopped (so a call that missed the cache would fail the run) — every call is answered from the cache;
  3. the same experiment with the ``builtin`` agent (offline, no model), re-run the same way;
  and the ratio (2) / (3) (target < 1.2).

Both timed passes run the same scheduler, writer, grader (label_match) and store; (2) adds what the
cache costs per run — the prompt, the canonical request body and its SHA-256, the SQLite lookup, the
reply parsed back and the answer read — on top of what the openai adapter always does.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from abbench.runner import create_experiment, retry_runs, run_experiment  # noqa: E402
from abbench.store import open_store  # noqa: E402
from abbench.testing import Reply, ScriptedOpenAIServer  # noqa: E402
from abbench.types import Case  # noqa: E402

SKILL = ROOT / "data" / "demo" / "skills" / "fast-slow-routing-v2"


def answer(request):
    """The scripted model answers at once (one call per run), with a label that depends on the case."""
    user = next(m["content"] for m in request.messages if m["role"] == "user")
    label = "fast" if len(user) % 2 else "slow"
    reply = {"prediction": label, "reason": "the rules say so", "evidence_refs": ["SKILL.md#Rules"]}
    return Reply.text(json.dumps(reply), usage=(900, 40))


def definition(name: str, fingerprint: str, arm: dict, concurrency: int) -> dict:
    return {
        "name": name,
        "dataset": fingerprint,
        "concurrency": concurrency,
        "retries": 0,
        "graders": ["label_match"],
        "arms": {"v2": {**arm, "skill": str(SKILL)}},
    }


def main() -> None:
    """Print the figures."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5000)
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()
    n, c = args.runs, args.concurrency
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "store")
        cases = [
            Case(f"c{i:05d}", f"route request number {i}: play the news", "fast" if i % 2 else "slow")
            for i in range(n)
        ]
        ds = store.datasets.save("bench", cases, label_set=["fast", "slow"])
        with ScriptedOpenAIServer(answer) as server:
            arm = {
                "agent": "openai",
                "model": "scripted",
                "base_url": server.base_url,
                "temperature": 0,
                "prices": {"input": 0.15, "output": 0.6},
                "max_retries": 0,
            }
            exp = create_experiment(definition("cached", ds.fingerprint, arm, c), store=store)
            t0 = time.perf_counter()
            filled = run_experiment(exp.id, store=store)
            fill = time.perf_counter() - t0
            calls = len(server.chat_requests)
        assert filled.executed == n and calls == n, (filled, calls)
        print(f"1. fill: {n:,} openai runs against the scripted server, {calls:,} calls: {fill:.2f} s")

        # the server is gone: every run below is answered from the cache, or it fails
        retry_runs(exp.id, store=store, cases=[c.case_id for c in cases], run=False)  # all pending again
        t0 = time.perf_counter()
        resumed = run_experiment(exp.id, store=store)
        cached = time.perf_counter() - t0
        assert resumed.executed == n and resumed.execution_failed == 0, resumed
        hits = store.cache.stats().hits
        assert hits == n, hits
        saved = sum(r.cost_saved or 0 for r in store.runs.records(exp.id))
        print(
            f"2. resumed: {n:,} runs, {hits:,} cache hits, no request sent, cost saved {saved:.4f}: "
            f"{cached:.2f} s ({n / cached:,.0f} runs/s)"
        )

        builtin = create_experiment(
            definition("builtin", ds.fingerprint, {"agent": "builtin", "temperature": 0}, c), store=store
        )
        run_experiment(builtin.id, store=store)  # its first pass, then the same re-run as (2)
        retry_runs(builtin.id, store=store, cases=[c.case_id for c in cases], run=False)
        t0 = time.perf_counter()
        again = run_experiment(builtin.id, store=store)
        base = time.perf_counter() - t0
        assert again.executed == n, again
        print(f"3. builtin: {n:,} runs of the same experiment: {base:.2f} s ({n / base:,.0f} runs/s)")
        print(f"ratio cached / builtin: {cached / base:.2f} (target < 1.2)")
        store.close()


if __name__ == "__main__":
    main()
