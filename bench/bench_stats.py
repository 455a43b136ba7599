"""Benchmark of abbench.stats: the paired bootstrap and a two-arm comparison's statistics at scale.

Run ``python bench/bench_stats.py`` (``make bench`` runs every bench). It prints each timing, its
target, and the ratio time / target (below 1.0 meets the target). Timings are the best and the median
of a few repeats, because a shared machine adds noise that only ever slows a run down.

The first half times the pure statistics on arrays already in memory. The second half builds a store
with 100,000 cases × 5 rounds × 2 arms (rows written straight into the tables, grades included) and
times issue 5's targets end to end: ``compare_arms`` including loading from the store (under 2 s) and a
10,000-iteration paired bootstrap over the 100,000 cases' latencies read from it (under 3 s).
``--skip-store`` leaves the second half out; ``--store DIR`` reuses a store built before.

Sequential stopping (issue 16): the anytime-valid confidence sequence updated over 100,000 cases in
batches of 20, as the runner looks (under 1 s), and 1,000 simulated A/A experiments of 2,000 cases under
``stopping: {rule: decided, alpha: 0.05, margin: 0.02, min_cases: 50, check_every: 20}`` (under 10 s),
with their rate of false better/worse verdicts; and, beside them, what stopping saves on a real 5-point
effect against the fixed-n design of the same power.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from abbench.compare import compare_arms
from abbench.stats import (
    FewClustersWarning,
    SequentialTest,
    StoppingRule,
    estimate_power_inputs,
    mcnemar_exact,
    paired_bootstrap,
    paired_difference,
    paired_outcomes,
    repeated_se,
    sample_size_paired,
    simulate_stopping,
)

CASES = 100_000
ROUNDS = 5
ITERATIONS = 10_000
BOOTSTRAP_TARGET_S = 3.0
COMPARISON_TARGET_S = 2.0  # issue 5's target includes loading from the store; this is the statistics share
DOMAINS = 60
FINGERPRINT = "bench@000000000000"
SEQUENTIAL_TARGET_S = 1.0
AA_TARGET_S = 10.0


def _time(fn, repeats: int) -> tuple[float, float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), result


def _report(label: str, best: float, median: float, target: float) -> None:
    print(
        f"{label:<58} best {best:6.2f} s  median {median:6.2f} s  target {target:.1f} s  ratio {best / target:.2f}"
    )


def _latencies(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Skewed, case-correlated latencies (ms): every difference distinct, the bootstrap's hard case."""
    base = rng.lognormal(7.0, 0.6, CASES)
    return base, base * 0.97 + rng.normal(0, 150, CASES)


def _rounds(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pass/fail over 5 rounds for 100,000 cases, arm B a little better, cases grouped in 60 domains."""
    difficulty = rng.beta(2, 1.2, CASES)
    a = rng.random((CASES, ROUNDS)) < difficulty[:, None]
    b = rng.random((CASES, ROUNDS)) < np.clip(difficulty + 0.01, 0, 1)[:, None]
    domains = rng.integers(0, 60, CASES)
    return a.astype(float), b.astype(float), domains


def compare_two_arms(a: np.ndarray, b: np.ndarray, domains) -> dict:
    """Every statistic a two-arm comparison reports, from per-case round scores."""
    per_arm = {"a": repeated_se(a), "b": repeated_se(b)}
    difference = paired_difference(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewClustersWarning)
        by_domain = paired_difference(a, b, clusters=domains)
    # A case passes when it passes in most rounds; McNemar runs on those per-case outcomes.
    outcomes = paired_outcomes(_majority(a), _majority(b))
    mcnemar = mcnemar_exact(outcomes.b, outcomes.c)
    inputs = estimate_power_inputs(a, b)
    mde = inputs.min_detectable_effect()
    return {
        "per_arm": per_arm,
        "difference": difference,
        "clustered": by_domain,
        "mcnemar": mcnemar,
        "mde": mde,
    }


def _majority(rounds) -> np.ndarray:
    if isinstance(rounds, np.ndarray):
        return rounds.mean(axis=1) > 0.5
    return np.array([sum(r) / len(r) > 0.5 for r in rounds])


def build_store(path: Path, rng: np.random.Generator) -> int:
    """A store holding one experiment of CASES × ROUNDS × 2 arms, written straight into the tables."""
    from abbench.store import dumps, now_iso, open_store

    store = open_store(path)
    found = store.query_one("SELECT id FROM experiments WHERE name='bench'")
    if found is not None:
        store.close()
        return found[0]
    now = now_iso()
    store.conn.execute("PRAGMA synchronous=OFF")  # a benchmark fixture: durability is not the point
    difficulty = rng.beta(2, 1.2, CASES)
    gold = np.where(np.arange(CASES) % 3 == 0, "slow", "fast")
    with store.transaction() as conn:
        ds = conn.execute(
            "INSERT INTO datasets (fingerprint, name, content_hash, n_cases, label_set, created_at) VALUES (?,?,?,?,?,?)",
            (FINGERPRINT, "bench", "0" * 64, CASES, dumps(["fast", "slow"]), now),
        ).lastrowid
        conn.executemany(
            "INSERT INTO cases (dataset_id, idx, case_id, input, expected, domain) VALUES (?,?,?,?,?,?)",
            ((ds, i, f"c{i:06d}", f"query {i}", gold[i], f"域{i % DOMAINS}") for i in range(CASES)),
        )
        # The experiment goes through the store's own writer, so its definition is one the store reads back.
        arms = {"control": {"agent": "builtin"}, "treatment": {"agent": "builtin"}}
        exp = store.experiments.insert(
            name="bench",
            owner="bench",
            skill="",
            skill_version="",
            dataset_id=ds,
            profile_id=None,
            spec={
                "name": "bench",
                "dataset": FINGERPRINT,
                "rounds": ROUNDS,
                "arms": arms,
                "graders": ["label_match"],
            },
            rounds=ROUNDS,
            priority=0,
            tags=[],
            gate=None,
            arms=[{"name": name, **arm} for name, arm in arms.items()],
        )
        batch = store.experiments.ensure_batch(exp, conn)
        arm_ids = dict(conn.execute("SELECT name, id FROM arms WHERE experiment_id=?", (exp,)).fetchall())
        for position, (arm, lift) in enumerate((("control", 0.0), ("treatment", 0.01))):
            arm_id = arm_ids[arm]
            passed = rng.random((CASES, ROUNDS)) < np.clip(difficulty + lift, 0, 1)[:, None]
            cost = rng.lognormal(-6.0, 0.3, (CASES, ROUNDS)).tolist()
            latency = rng.lognormal(7.0, 0.6, (CASES, ROUNDS)).tolist()
            tokens = rng.integers(200, 2000, (CASES, ROUNDS)).tolist()
            evidence = '["SKILL.md#Rules"]' if position else "[]"
            flags = passed.tolist()
            conn.executemany(
                "INSERT INTO runs (experiment_id, arm_id, case_idx, case_id, round, state, prediction, reason, "
                "confidence, evidence_refs, files_read, sections_read, input_tokens, output_tokens, cost, latency_ms, "
                "passed, score, executed_at, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    (exp, arm_id, i, f"c{i:06d}", r, "pass" if flags[i][r] else "fail",
                     gold[i] if flags[i][r] else "other", "matches the rules", 0.8, evidence, "[]", "[]",
                     tokens[i][r], 40, cost[i][r], latency[i][r], int(flags[i][r]), float(flags[i][r]), now, now)
                    for i in range(CASES)
                    for r in range(ROUNDS)
                ),
            )  # fmt: skip
        conn.execute(
            "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, passed, score, created_at) "
            "SELECT experiment_id, ?, id, 'label_match', 'rule', 'ok', passed, score, ? FROM runs WHERE experiment_id=?",
            (batch, now, exp),
        )
    store.close()
    return exp


def store_half(path: Path | None, repeats: int, rng: np.random.Generator) -> None:
    """Issue 5's end-to-end targets on a store of CASES × ROUNDS × 2 arms."""
    import tempfile

    from abbench.store import open_store

    folder = path or Path(tempfile.mkdtemp(prefix="abbench-bench-"))
    start = time.perf_counter()
    exp = build_store(folder, rng)
    print(
        f"store with {CASES:,} cases × {ROUNDS} rounds × 2 arms ready in {time.perf_counter() - start:.1f} s ({folder})"
    )
    store = open_store(folder)
    best, median, result = _time(lambda: compare_arms(exp, "control", "treatment", store=store), repeats)
    _report(f"compare_arms incl. loading, {CASES:,} × {ROUNDS} × 2 runs", best, median, COMPARISON_TARGET_S)
    print(f"    {result.verdict.text}")
    best, median, sums = _time(lambda: store.runs.case_outcomes(exp, scores=False), repeats)
    print(
        f"    of which reading the per-case sums of 1,000,000 runs: best {best:.2f} s, median {median:.2f} s"
    )
    best, median, _ = _time(
        lambda: compare_arms(exp, "control", "treatment", store=store, cluster="domain"), repeats
    )
    _report("compare_arms, clustered by domain", best, median, COMPARISON_TARGET_S)
    # The bootstrap's input, read once above: each case's mean latency over its rounds, per arm.
    mean_latency = sums.latency_ms / sums.executed
    a = mean_latency[sums.arm_id == sums.arm_id.min()]
    b = mean_latency[sums.arm_id == sums.arm_id.max()]
    best, median, boot = _time(lambda: paired_bootstrap(a, b, iterations=ITERATIONS, seed=0), repeats)
    _report(
        f"paired bootstrap of stored latencies, {ITERATIONS:,} iter.",
        best,
        median,
        BOOTSTRAP_TARGET_S,
    )
    print(f"    mean Δ latency {boot.estimate:+.2f} ms, 95% {boot.interval}")
    store.close()


def sequential_half(repeats: int, rng: np.random.Generator) -> None:
    """Issue 16's targets: the sequential update, 1,000 A/A simulations, and the saving on a real effect."""
    a, b = (rng.random(CASES) < 0.8).astype(float), (rng.random(CASES) < 0.82).astype(float)

    def update() -> object:
        test = SequentialTest(alpha=0.05)
        for i in range(0, CASES, 20):
            cs = test.update(a[i : i + 20], b[i : i + 20])
        return cs

    best, median, cs = _time(update, repeats)
    _report(f"sequential update, {CASES:,} cases in looks of 20", best, median, SEQUENTIAL_TARGET_S)
    print(f"    {cs.method}: Δ {cs.difference:+.4f}, {cs.interval}, anytime p = {cs.p_value:.3g}")
    rule = StoppingRule(alpha=0.05, margin=0.02, min_cases=50, check_every=20)
    sims = np.random.default_rng(16)
    xa, xb = (sims.random((1000, 2000)) < 0.8).astype(float), (sims.random((1000, 2000)) < 0.8).astype(float)
    best, median, aa = _time(lambda: simulate_stopping(xa, xb, rule), repeats)
    _report("1,000 A/A simulations of 2,000 cases, stopping rule", best, median, AA_TARGET_S)
    print(f"    false better/worse: {aa.rate('better', 'worse'):.1%} (alpha 5%)")
    u = sims.random((1000, 2000))
    ab = simulate_stopping(
        (u < 0.80).astype(float), ((u < 0.75) | ((u >= 0.80) & (u < 0.90))).astype(float), rule
    )
    power = ab.rate("better")
    fixed = sample_size_paired(0.05, 0.15 - 0.05**2, alpha=0.05, power=power).n
    mean = float(ab.stopped_at.mean())
    print(
        f"    5-point effect (B right 85%, A 80%): 'better' in {power:.1%} of 1,000 experiments, stopping after "
        f"{mean:,.0f} cases on average (median {np.median(ab.stopped_at):,.0f}) against {fixed:,} for the "
        f"fixed-n design of the same power — {1 - mean / fixed:.0%} fewer cases"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per timing (best and median are shown)")
    parser.add_argument("--skip-store", action="store_true", help="time only the statistics on arrays")
    parser.add_argument("--store", type=Path, help="build (or reuse) the benchmark store in this folder")
    parser.add_argument("--only-sequential", action="store_true", help="time only sequential stopping")
    args = parser.parse_args()
    rng = np.random.default_rng(20241101)
    load = f"; load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(f"abbench.stats benchmark — {CASES:,} cases; numpy {np.__version__}; {os.cpu_count()} CPUs{load}")
    sequential_half(args.repeats, rng)
    if args.only_sequential:
        return

    a, b = _latencies(rng)
    best, median, boot = _time(lambda: paired_bootstrap(a, b, iterations=ITERATIONS, seed=0), args.repeats)
    _report(f"paired bootstrap, {ITERATIONS:,} iterations, continuous", best, median, BOOTSTRAP_TARGET_S)
    print(f"    mean Δ latency {boot.estimate:+.2f} ms, 95% {boot.interval}, BCa {boot.bca_interval}")
    passes = (a > np.median(a)).astype(float)
    best, median, _ = _time(lambda: paired_bootstrap(passes, 1 - passes, iterations=ITERATIONS), args.repeats)
    _report(
        f"paired bootstrap, {ITERATIONS:,} iterations, pass/fail (ties)", best, median, BOOTSTRAP_TARGET_S
    )

    ra, rb, domains = _rounds(rng)
    best, median, result = _time(lambda: compare_two_arms(ra, rb, domains), args.repeats)
    _report(f"two-arm statistics, {CASES:,} × {ROUNDS} rounds, arrays", best, median, COMPARISON_TARGET_S)
    d, m = result["difference"], result["mcnemar"]
    print(
        f"    Δ {d.difference:+.4f} ± {d.se:.4f} (clustered ± {result['clustered'].se:.4f}), "
        f"McNemar b={m.b} c={m.c} p={m.p_value:.3g}, MDE {result['mde'].delta:.4f}"
    )
    la, lb = ra.tolist(), rb.tolist()
    labels = [f"域{x}" for x in domains]
    best, median, _ = _time(lambda: compare_two_arms(la, lb, labels), args.repeats)
    _report(
        f"two-arm statistics, {CASES:,} × {ROUNDS} rounds, Python lists", best, median, COMPARISON_TARGET_S
    )
    if not args.skip_store:
        store_half(args.store, args.repeats, rng)


if __name__ == "__main__":
    main()
