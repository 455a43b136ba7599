"""Calibration of the default gate and the comparison's interval, by simulation through the public API.

Run ``python bench/bench_calibration.py`` (or ``make bench-calibration``) for the full table, about an
hour on 2 cores; ``--quick`` for a smaller run (what ``make bench`` runs), ``--experiments N`` for N
per design. Each simulated experiment is a real one: a stored dataset, an experiment with two
``external`` arms, its runs recorded with `abbench.record_runs` (graded by ``label_match``), then
`abbench.compare.compare_arms` and `abbench.gate.evaluate_gate` with the default rules, exactly as a
CI job would call them: every figure but ``interval cover`` (below) is what abbench says.

The population of cases: each case has a pass rate drawn from Beta(0.6, 0.4) (most cases nearly
always right or nearly always wrong, as on real evaluation sets; mean 0.6), a domain (12, in turn),
and a cost and latency per run (log-normal around the case's own level, the same in both arms). A wrong
answer is one of three wrong labels, so an arm can change its answer between rounds while staying
wrong. Designs vary the cases (40, 300), the rounds (1, 3), how correlated an arm's rounds are
(``copy``: the chance a round repeats the arm's first answer to the case — 0 is independent rounds, 1 is
rounds that always agree), and the effect:

- A/A: both arms have the same per-case rates; every block is a false alarm, and the share of blocks
  should be at most alpha (5 %) + 1 point.
- known effects: B's per-case rate is ``clip(p + δ, 0, 1)``, so the true difference is the mean of the
  clipped shift over the population (computed once from 2 million draws); the power to say *better*
  (δ > 0) or to block (δ < 0) is reported beside the coverage of the 95 % interval of the true difference.
- domain interaction: B is ±15 points in each of the 12 domains, the sign drawn per experiment and domain
  (mean 0 over domains; rates uniform on [0.2, 0.8] so nothing is clipped). The effect on *these* cases is
  the realised mean of the signs, and the unclustered interval's coverage is of that; the effect on a *new*
  domain is 0, and the clustered (``cluster="domain"``) interval's coverage is of that. The table shows how
  often each says better or worse, and how often the heterogeneity test finds the interaction.
- flips: B repeats its first answer less often than A (same rates): the stability rule's power.

Columns: ``block`` the share of gates that block (A/A: false blocks), with the dimensions that blocked;
``pass`` the share that pass (with warnings or not; the others are inconclusive — too few cases to show B
is not worse); ``better``/``worse`` the comparison's verdict; ``cover`` the share of the simulated
experiments' 95 % intervals holding the true difference, with its Monte Carlo error (± 1.5 points at 200
experiments: too coarse to show "within a point"); so ``interval cover`` adds the same interval's coverage
computed exactly over every 2×2 table (one outcome per case and arm) or from 4,000 draws of per-case
outcomes made the same way (``--draws``), with the same statistics functions but without the store;
``hetero`` the share with a significant arm × domain interaction. ``--markdown`` prints the table as it
appears in docs/analysis.md. Pass/fail designs only: a score experiment's exact ties (issue 37 item 1) are
a separate matter. ``--experiments 0`` computes only the interval's coverage.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from abbench.compare import compare_arms
from abbench.gate import evaluate_gate
from abbench.runner import create_experiment, record_runs
from abbench.stats import paired_difference, paired_proportion_interval, paired_score_interval
from abbench.store import Store, open_store

DOMAINS = 12
GOLD = "right"
WRONG = ("wrong-1", "wrong-2", "wrong-3")
BETA = (0.6, 0.4)
ALPHA = 0.05
EXPERIMENTS = 200
QUICK_EXPERIMENTS = 40
DRAWS = 4000
QUICK_DRAWS = 1000


@dataclass(frozen=True)
class Design:
    """One simulated design.

    Attributes:
        name: How the table names it.
        cases: Cases per experiment.
        rounds: Rounds per case.
        copy: The chance a round repeats the arm's first answer to the case (A's; and B's unless
            `copy_b` is given).
        effect: B − A on every case's pass rate (clipped to [0, 1]).
        domain_effect: ± this in each domain, the sign drawn per experiment and domain (an arm × domain
            interaction with mean 0 over domains).
        copy_b: B's own `copy` (B flips more when it is lower).
        kind: ``aa`` (identical arms: every block is false), ``effect``, ``interaction`` or ``flips``.
        rates: ``beta`` (Beta(0.6, 0.4): most cases nearly always right or wrong) or ``middle`` (uniform
            on [0.2, 0.8], so ±15 points never leaves [0, 1]).
    """

    name: str
    cases: int
    rounds: int
    copy: float = 0.0
    effect: float = 0.0
    domain_effect: float = 0.0
    copy_b: float | None = None
    kind: str = "aa"
    rates: str = "beta"


DESIGNS = (
    Design("A/A 40 × 1", 40, 1),
    Design("A/A 40 × 3", 40, 3),
    Design("A/A 300 × 1", 300, 1),
    Design("A/A 300 × 3", 300, 3),
    Design("A/A 300 × 3 correlated", 300, 3, copy=0.7),
    Design("A/A 300 × 3 always agree", 300, 3, copy=1.0),
    Design("+10 pts 40 × 3", 40, 3, effect=0.10, kind="effect"),
    Design("+5 pts 300 × 1", 300, 1, effect=0.05, kind="effect"),
    Design("+5 pts 300 × 3", 300, 3, effect=0.05, kind="effect"),
    Design("−5 pts 300 × 3", 300, 3, effect=-0.05, kind="effect"),
    Design("±15 pts by domain 300 × 3", 300, 3, domain_effect=0.15, kind="interaction", rates="middle"),
    Design("B flips more 300 × 3", 300, 3, copy=0.9, copy_b=0.6, kind="flips"),
)


def _rates(rng: np.random.Generator, design: Design, size: int) -> np.ndarray:
    if design.rates == "middle":
        return rng.uniform(0.2, 0.8, size)
    return rng.beta(*BETA, size)


def true_difference(design: Design, draws: int = 2_000_000) -> float:
    """The population's B − A: the mean of the clipped shift over the case population (0 for an
    interaction, whose domain effects average 0 over domains)."""
    rng = np.random.default_rng(12345)
    p = _rates(rng, design, draws)
    return float(np.mean(np.clip(p + design.effect, 0, 1) - p))


def _dataset(store: Store, folder: Path, cases: int) -> str:
    path = folder / f"cases-{cases}.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "question", "gold", "domain"])
        for i in range(cases):
            w.writerow([f"c{i:04d}", f"question {i}", GOLD, f"domain-{i % DOMAINS:02d}"])
    profile = {"fields": {"case_id": "id", "input": "question", "expected": "gold", "domain": "domain"}}
    return store.datasets.import_file(path, profile, name=f"calibration-{cases}").fingerprint


def _answers(rng: np.random.Generator, p: np.ndarray, rounds: int, copy: float) -> np.ndarray:
    """Right (True) or wrong per case and round: each round repeats the first with chance `copy`."""
    first = rng.random(p.size) < p
    out = np.empty((p.size, rounds), dtype=bool)
    out[:, 0] = first
    for r in range(1, rounds):
        fresh = rng.random(p.size) < p
        out[:, r] = np.where(rng.random(p.size) < copy, first, fresh)
    return out


def _outcomes(rng: np.random.Generator, design: Design) -> tuple[list[dict[str, Any]], float]:
    """Every run of both arms as `record_runs` takes it, and the effect on these cases (B − A of their
    expected pass rates)."""
    n = design.cases
    p = _rates(rng, design, n)
    shift = np.full(n, design.effect)
    if design.domain_effect:
        signs = rng.choice([-1.0, 1.0], DOMAINS)
        shift += design.domain_effect * signs[np.arange(n) % DOMAINS]
    rates = {"a": p, "b": np.clip(p + shift, 0, 1)}
    copies = {"a": design.copy, "b": design.copy if design.copy_b is None else design.copy_b}
    level = rng.lognormal(-6.0, 0.5, n)  # each case's own cost level, the same in both arms
    out = []
    for arm in ("a", "b"):
        right = _answers(rng, rates[arm], design.rounds, copies[arm])
        wrong = rng.integers(0, len(WRONG), right.shape)
        wrong = np.where(rng.random(right.shape) < copies[arm], wrong[:, :1], wrong)
        cost = level[:, None] * rng.lognormal(0.0, 0.3, right.shape)
        latency = 1000 * rng.lognormal(0.0, 0.4, right.shape)
        for i in range(n):
            for r in range(design.rounds):
                out.append(
                    {
                        "case_id": f"c{i:04d}",
                        "arm": arm,
                        "round": r + 1,
                        "prediction": GOLD if right[i, r] else WRONG[wrong[i, r]],
                        "cost": float(cost[i, r]),
                        "latency_ms": float(latency[i, r]),
                    }
                )
    return out, float(np.mean(rates["b"] - rates["a"]))


def _share(k: int, n: int) -> str:
    return f"{k / n:.1%}" if n else "—"


def _covered(k: int, n: int) -> str:
    """A coverage with its Monte Carlo standard error (± 1.5 points at 200 experiments)."""
    if not n:
        return "—"
    p = k / n
    return f"{p:.1%} ± {math.sqrt(p * (1 - p) / n):.1%}"


@dataclass
class Tally:
    """What one design's experiments said."""

    design: Design
    truth: float
    n: int = 0
    blocks: int = 0
    passes: int = 0
    by_dimension: Counter[str] = field(default_factory=Counter)
    better: int = 0
    worse: int = 0
    covered: int = 0
    intervals: int = 0
    heterogeneous: int = 0
    clustered_said: int = 0
    clustered_covered: int = 0
    clustered_intervals: int = 0
    seconds: float = 0.0

    def add(self, gate: Any, clustered: Any, these_cases: float) -> None:
        """Count one experiment's gate (default rules) and, for interactions, its clustered comparison.

        An interaction's unclustered interval is about these cases (`these_cases`); the clustered one
        about a new domain (the population's 0)."""
        self.n += 1
        self.blocks += gate.outcome == "block"
        self.passes += gate.passed
        if gate.outcome == "block":
            for d in gate.decision.dimensions:
                if d.conclusion == "block":
                    self.by_dimension[d.name] += 1
        c = gate.comparison
        self.better += c.verdict.code == "b_better"
        self.worse += c.verdict.code == "b_worse"
        truth = these_cases if self.design.kind == "interaction" else self.truth
        if c.interval is not None:
            self.intervals += 1
            self.covered += c.interval.low <= truth <= c.interval.high
        self.heterogeneous += bool(c.heterogeneity is not None and c.heterogeneity.significant)
        if clustered is not None:
            self.clustered_said += clustered.verdict.code in ("b_better", "b_worse")
            if clustered.interval is not None:
                self.clustered_intervals += 1
                self.clustered_covered += clustered.interval.low <= self.truth <= clustered.interval.high

    def row(self) -> dict[str, str]:
        """The design's line of the table."""
        dims = ", ".join(f"{k} {v}" for k, v in sorted(self.by_dimension.items()))
        interaction = self.design.kind == "interaction"
        return {
            "design": self.design.name,
            "experiments": str(self.n),
            "block": _share(self.blocks, self.n) + (f" ({dims})" if dims else ""),
            "pass": _share(self.passes, self.n),
            "better": _share(self.better, self.n),
            "worse": _share(self.worse, self.n),
            "cover": _covered(self.covered, self.intervals),
            "hetero": _share(self.heterogeneous, self.n),
            "clustered b/w": _share(self.clustered_said, self.n) if interaction else "",
            "clustered cover": _covered(self.clustered_covered, self.clustered_intervals)
            if interaction
            else "",
            "s/exp": f"{self.seconds / max(self.n, 1):.2f}",
        }


def run_design(design: Design, experiments: int, folder: Path, seed: int) -> Tally:
    """Simulate `experiments` experiments of one design through the public API."""
    store = open_store(folder / "store")
    fingerprint = _dataset(store, folder, design.cases)
    rng = np.random.default_rng(seed)
    tally = Tally(design, true_difference(design))
    start = time.perf_counter()
    for e in range(experiments):
        exp = create_experiment(
            {
                "name": f"sim-{e}",
                "dataset": fingerprint,
                "rounds": design.rounds,
                "arms": {"a": {"agent": "external"}, "b": {"agent": "external"}},
                "graders": ["label_match"],
            },
            store=store,
        )
        outcomes, these_cases = _outcomes(rng, design)
        record_runs(store, exp, outcomes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gate = evaluate_gate(exp, store=store)
            clustered = (
                compare_arms(exp, "a", "b", store=store, cluster="domain")
                if design.kind == "interaction"
                else None
            )
        tally.add(gate, clustered, these_cases)
    tally.seconds = time.perf_counter() - start
    store.close()
    return tally


def _cells(design: Design) -> tuple[float, float]:
    """The chance a case is right only in B, and only in A, with one outcome per case and arm."""
    from scipy import integrate, stats

    def mean(g: Any) -> float:
        if design.rates == "middle":
            return float(integrate.quad(lambda p: g(p) / 0.6, 0.2, 0.8, limit=200)[0])
        return float(integrate.quad(lambda p: g(p) * stats.beta.pdf(p, *BETA), 0, 1, limit=200)[0])

    def pb(p: float) -> float:
        return min(1.0, max(0.0, p + design.effect))

    return mean(lambda p: (1 - p) * pb(p)), mean(lambda p: p * (1 - pb(p)))


def exact_coverage(design: Design, truth: float) -> float:
    """The coverage of the score interval `compare` reports on a 2×2 table, exactly: every (fixed,
    regressed) count weighed by its trinomial probability (the interval depends on nothing else)."""
    only_b, only_a = _cells(design)
    n, total = design.cases, 0.0
    for fixed in range(n + 1):
        regressed = np.arange(n - fixed + 1)
        logp = (
            math.lgamma(n + 1) - math.lgamma(fixed + 1) - np.vectorize(math.lgamma)(regressed + 1)
            - np.vectorize(math.lgamma)(n - fixed - regressed + 1) + fixed * math.log(only_b)
            + regressed * math.log(only_a) + (n - fixed - regressed) * math.log(1 - only_b - only_a)
        )  # fmt: skip
        weights = np.exp(logp)
        for r, w in zip(regressed[weights > 1e-13].tolist(), weights[weights > 1e-13].tolist(), strict=True):
            iv = paired_score_interval(fixed, r, n)
            total += w * (iv.low <= truth <= iv.high)
    return total


def drawn_coverage(design: Design, truth: float, draws: int, seed: int) -> tuple[float, int]:
    """The coverage of the interval `compare` reports, from `draws` sets of per-case outcomes made as the
    simulation makes them — with the same statistics functions, without the store: the score interval on
    a 2×2 table, else the t interval of the per-case differences (clipped to ±1)."""
    rng = np.random.default_rng(seed)
    hits = used = 0
    copy_b = design.copy if design.copy_b is None else design.copy_b
    for _ in range(draws):
        p = _rates(rng, design, design.cases)
        a = _answers(rng, p, design.rounds, design.copy).mean(axis=1)
        b = _answers(rng, np.clip(p + design.effect, 0, 1), design.rounds, copy_b).mean(axis=1)
        if np.all((a == 0) | (a == 1)) and np.all((b == 0) | (b == 1)):
            right_a, right_b = a == 1, b == 1
            iv = paired_proportion_interval(
                int(np.sum(right_a & right_b)), int(np.sum(~right_a & right_b)), int(np.sum(right_a & ~right_b)),
                int(np.sum(~right_a & ~right_b)), method="score",
            )  # fmt: skip
        else:
            d = paired_difference(a, b, method="t")
            if not d.se > 0:
                continue
            iv = d.interval
        used += 1
        hits += max(-1.0, iv.low) <= truth <= min(1.0, iv.high)
    return hits / max(used, 1), used


def coverage_column(design: Design, draws: int, seed: int) -> str:
    """The interval's coverage beside the simulation's: exact for one outcome per case and arm, else from
    `draws` draws (± its Monte Carlo error); empty for an interaction (its estimand varies by experiment)."""
    if design.kind == "interaction":
        return ""
    truth = true_difference(design)
    if design.rounds == 1 or (design.copy == 1.0 and design.copy_b is None):
        return f"{exact_coverage(design, truth):.1%} exact"
    share, used = drawn_coverage(design, truth, draws, seed)
    return f"{share:.1%} ± {math.sqrt(share * (1 - share) / max(used, 1)):.1%} ({used:,} draws)"


COLUMNS = (
    "design",
    "experiments",
    "block",
    "pass",
    "better",
    "worse",
    "cover",
    "interval cover",
    "hetero",
    "clustered b/w",
    "clustered cover",
    "s/exp",
)


def _print(rows: list[dict[str, str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(COLUMNS[:-1]) + " |")
        print("|" + "---|" * (len(COLUMNS) - 1))
        for r in rows:
            print("| " + " | ".join(r[c] for c in COLUMNS[:-1]) + " |")
        return
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in COLUMNS}
    print("  ".join(c.ljust(widths[c]) for c in COLUMNS))
    for r in rows:
        print("  ".join(r[c].ljust(widths[c]) for c in COLUMNS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_EXPERIMENTS} experiments per design")
    parser.add_argument("--experiments", type=int, help=f"experiments per design (default {EXPERIMENTS})")
    parser.add_argument("--only", help="run only the designs whose name contains this")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--draws", type=int, help=f"draws for the interval's coverage (default {DRAWS})")
    args = parser.parse_args(argv)
    experiments = (
        args.experiments
        if args.experiments is not None
        else (QUICK_EXPERIMENTS if args.quick else EXPERIMENTS)
    )
    draws = args.draws if args.draws is not None else (QUICK_DRAWS if args.quick else DRAWS)
    designs = [d for d in DESIGNS if args.only is None or args.only in d.name]
    rows, failed = [], []
    with tempfile.TemporaryDirectory(prefix="abbench-calibration-") as tmp:
        for design in designs:
            i = DESIGNS.index(design)
            folder = Path(tmp) / f"design-{i}"
            folder.mkdir()
            tally = (
                run_design(design, experiments, folder, args.seed + i) if experiments else Tally(design, 0.0)
            )
            row = tally.row() | {"interval cover": coverage_column(design, draws, args.seed + 100 + i)}
            rows.append(row)
            print(f"{design.name}: {row}", file=sys.stderr, flush=True)
            # The target: identical arms block at most alpha + 1 point (sampling error aside, on few runs).
            if design.kind == "aa" and tally.n and tally.blocks / tally.n > ALPHA + 0.01:
                failed.append(design.name)
    _print(rows, args.markdown)
    if failed:
        print(f"A/A block rate above {ALPHA + 0.01:.0%}: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed and not args.quick else 0


if __name__ == "__main__":
    sys.exit(main())
