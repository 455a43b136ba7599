"""The builtin agent on the demo: accuracy per arm, v1→v2 changes, McNemar, flips across rounds, runs/s.

Run ``python bench/bench_builtin.py`` (``--detail`` lists every changed case and every v2 error).
Offline; a few seconds. The figures are quoted in data/demo/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from abbench.agents import Task, make_agent  # noqa: E402
from abbench.dataset import convert_file  # noqa: E402
from abbench.snapshot import Snapshot, build_snapshot  # noqa: E402
from abbench.stats import mcnemar_exact  # noqa: E402
from abbench.types import Case  # noqa: E402

DEMO = ROOT / "data" / "demo"
LABELS = ("fast", "slow")


def load_cases() -> list[Case]:
    """The demo cases, read by the importer with the demo's CSV mapping (as `abbench demo` reads them)."""
    return list(convert_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml").cases)


async def run_arm(cases: list[Case], skill: Snapshot | None, temperature: float = 0.0, rounds: int = 1):
    """Every (case, round) through one builtin agent; returns {(case_id, round): AgentOutput}."""
    agent = make_agent("builtin", temperature=temperature)
    tasks = [
        Task(case=c, skill=skill, round=r, label_set=LABELS, session_id=f"{c.case_id}-{r}")
        for r in range(rounds)
        for c in cases
    ]
    outs = await asyncio.gather(*(agent.run(t) for t in tasks))
    return {(t.case.case_id, t.round): o for t, o in zip(tasks, outs, strict=True)}


def main() -> None:
    """Print the figures."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--detail", action="store_true", help="list every changed case and every v2 error")
    args = ap.parse_args()
    cases = load_cases()
    by_id = {c.case_id: c for c in cases}
    arms: dict[str, Snapshot | None] = {"no skill": None}
    for v in ("v1", "v2"):
        arms[v] = build_snapshot(DEMO / "skills" / f"fast-slow-routing-{v}")
    print(f"{len(cases)} cases, labels {LABELS}, temperature 0")
    results, ok = {}, {}
    for name, skill in arms.items():
        t0 = time.perf_counter()
        out = asyncio.run(run_arm(cases, skill))
        rate = len(cases) / (time.perf_counter() - t0)
        results[name] = {cid: o for (cid, _), o in out.items()}
        ok[name] = {c.case_id: results[name][c.case_id].prediction == c.expected for c in cases}
        acc = sum(ok[name].values()) / len(cases)
        print(f"  {name:9s} accuracy {acc:.3f}   ({rate:,.0f} runs/s in one process)")
    for a, b in (("no skill", "v1"), ("v1", "v2")):
        fixed = [c for c in by_id if not ok[a][c] and ok[b][c]]
        broke = [c for c in by_id if ok[a][c] and not ok[b][c]]
        p = mcnemar_exact(len(broke), len(fixed)).p_value
        print(f"  {a} → {b}: fixed {len(fixed)}, regressed {len(broke)}, exact McNemar p = {p:.2g}")
    print("per domain (n): " + " / ".join(results))
    per: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for c in cases:
        for name in results:
            per[c.domain][name].append(ok[name][c.case_id])
    for domain, arm_ok in sorted(per.items(), key=lambda kv: -len(next(iter(kv[1].values())))):
        n = len(next(iter(arm_ok.values())))
        cells = " / ".join(f"{sum(v) / n:.2f}" for v in arm_ok.values())
        print(f"  {domain} ({n}): {cells}")
    print("temperature 0.3, 3 rounds:")
    for name, skill in arms.items():
        out = asyncio.run(run_arm(cases, skill, temperature=0.3, rounds=3))
        flips = [c for c in by_id if len({out[(c, r)].prediction for r in range(3)}) > 1]
        acc = sum(o.prediction == by_id[cid].expected for (cid, _), o in out.items()) / len(out)
        print(f"  {name:9s} accuracy {acc:.3f}, cases whose prediction changes between rounds: {len(flips)}")
    t0 = time.perf_counter()
    asyncio.run(run_arm(cases, arms["v2"], rounds=10))
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"throughput: {10 * len(cases)} v2 runs gathered at once in {elapsed:.2f} s "
        f"({10 * len(cases) / elapsed:,.0f} runs/s); peak RSS of this process {peak:.0f} MB"
    )
    if args.detail:
        for a, b in (("no skill", "v1"), ("v1", "v2")):
            for cid in by_id:
                kind = (
                    "FIXED"
                    if not ok[a][cid] and ok[b][cid]
                    else "BROKE"
                    if ok[a][cid] and not ok[b][cid]
                    else ""
                )
                if kind:
                    c = by_id[cid]
                    print(
                        f"{a}→{b} {kind} {cid} [{c.expected}] {c.domain} {c.input} | {results[b][cid].reason}"
                    )
        for cid, good in ok["v2"].items():
            if not good:
                c = by_id[cid]
                print(f"V2 WRONG {cid} [{c.expected}] {c.domain} {c.input} | {results['v2'][cid].reason}")


if __name__ == "__main__":
    main()
