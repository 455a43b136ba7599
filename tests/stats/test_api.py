"""The shape of abbench.stats: sorted exports, docstrings, JSON-ready results, and a light import."""

from __future__ import annotations

import dataclasses
import inspect
import json

import numpy as np
import pytest

import abbench
import abbench.stats as stats
from tests.conftest import run_python


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_lists_every_public_name():
    assert stats.__all__ == sorted(stats.__all__, key=_isort_key)
    # dir(), not vars(): the package loads its names lazily (PEP 562), so vars() holds only those used yet
    public = {n for n in dir(stats) if not n.startswith("_") and not inspect.ismodule(getattr(stats, n))}
    public -= {"annotations"}
    assert set(stats.__all__) == public


@pytest.mark.parametrize("name", stats.__all__)
def test_every_public_name_is_documented(name):
    value = getattr(stats, name)
    if callable(value):
        assert inspect.getdoc(value), f"{name} has no docstring"
    if inspect.isfunction(value):
        assert "Raises:" in value.__doc__ or name in {"percentile", "summary", "power_paired"}


def test_every_module_opens_with_a_docstring():
    import pkgutil

    for module in pkgutil.iter_modules(stats.__path__):
        loaded = __import__(f"abbench.stats.{module.name}", fromlist=["_"])
        assert loaded.__doc__ and "\n" not in loaded.__doc__.strip(), module.name


def test_top_level_exports_resolve_to_the_stats_functions():
    assert abbench.paired_difference is stats.paired_difference
    assert abbench.wilson_interval is stats.wilson_interval


def _every_result():
    a, b = [1, 0, 1, 1, 0, 1, 1, 0], [1, 1, 1, 0, 1, 1, 1, 1]
    return [
        stats.wilson_interval(3, 8),
        stats.proportion(3, 8),
        stats.mcnemar_exact(1, 3),
        stats.paired_outcomes(a, b),
        stats.cochrans_q(np.array([a, b, a]).T),
        stats.mean_se([0.5]),
        stats.clustered_se(a, [i % 2 for i in range(8)]),
        stats.repeated_se([[1, 0], [1]]),
        stats.paired_difference(a, b),
        stats.paired_bootstrap(a, b, iterations=100),
        stats.sample_size_paired(0.1, 0.2),
        stats.min_detectable_effect(100, 0.2),
        stats.estimate_power_inputs(a, b),
        stats.sample_size_two_proportions(0.5, 0.6),
        stats.min_detectable_effect_two_proportions(5, 0.97),
        stats.cohen_kappa(["x"] * 3, ["x"] * 3),
        stats.two_proportion_test(3, 8, 5, 8),
        stats.holm_correction({"a": 0.01, "b": None}),
        stats.summary([]),
    ]


@pytest.mark.filterwarnings("ignore::abbench.stats.FewClustersWarning")
def test_every_result_is_frozen_and_strict_json_ready():
    for result in _every_result():
        assert dataclasses.is_dataclass(result)
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.__setattr__(dataclasses.fields(result)[0].name, 0)
        json.dumps(result.as_dict(), allow_nan=False, ensure_ascii=False)


def test_importing_stats_loads_no_pandas_statsmodels_store_or_views():
    code = (
        "import sys, abbench.stats; "
        "bad = [m for m in ('pandas', 'statsmodels', 'sklearn', 'abbench.store', 'abbench.cli', 'ipywidgets') "
        "if m in sys.modules]; print(bad)"
    )
    out = run_python(code)
    assert out.stdout.strip() == "[]"
