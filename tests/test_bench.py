"""The benchmarks' own fixtures build what abbench reads: a bench whose store abbench refuses measures nothing.

`make bench` runs bench/ only on request; these tests keep its store builders in step with the store.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import numpy as np
import pytest

from .conftest import REPO


def _bench(name: str) -> ModuleType:
    """A script of bench/ imported as a module (its ``main`` is not run)."""
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def bench_stats(monkeypatch) -> ModuleType:
    module = _bench("bench_stats")
    monkeypatch.setattr(module, "CASES", 240)  # the builder's shape, at a test's size
    yield module
    sys.modules.pop(module.__name__, None)


def test_the_stats_bench_store_is_compared_as_its_rows_say(bench_stats, tmp_path):
    from abbench.compare import compare_arms
    from abbench.store import open_store

    exp = bench_stats.build_store(tmp_path / "store", np.random.default_rng(5))
    assert bench_stats.build_store(tmp_path / "store", np.random.default_rng(6)) == exp  # reused, not rebuilt
    store = open_store(tmp_path / "store")
    try:
        experiment = store.experiments.get(exp)
        assert experiment.spec.rounds == bench_stats.ROUNDS
        assert [a.name for a in experiment.arms] == ["control", "treatment"]
        result = compare_arms(exp, "control", "treatment", store=store)
        # Written out from the rows: each case's pass rate over its rounds, per arm, then the paired mean.
        rows = store.query(
            "SELECT a.name, r.case_idx, avg(r.passed), count(*) FROM runs r JOIN arms a ON a.id = r.arm_id "
            "WHERE r.experiment_id = ? GROUP BY a.name, r.case_idx ORDER BY a.name, r.case_idx",
            (exp,),
        )
    finally:
        store.close()
    rates = {
        name: np.array([rate for n, _, rate, _ in rows if n == name]) for name in ("control", "treatment")
    }
    assert {count for *_, count in rows} == {bench_stats.ROUNDS}
    assert result.n_cases == bench_stats.CASES
    assert result.difference is not None
    assert result.difference.difference == pytest.approx(
        float(np.mean(rates["treatment"] - rates["control"]))
    )
    assert result.value_a.value == pytest.approx(float(np.mean(rates["control"])))
