"""Guards for the analysis packages: sorted public names, docstrings, and no view imported by the core."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

from tests.conftest import subprocess_env

PACKAGES = ("abbench.metrics", "abbench.compare", "abbench.gate", "abbench.review", "abbench.assign")


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize("name", PACKAGES[:-1])
def test_all_is_sorted_and_every_public_name_is_documented(name):
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__, key=_isort_key)
    # dir(), not vars(): the sibling tier is importable but not part of the face (abbench/_lazy.py)
    public = {n for n in dir(module) if not n.startswith("_") and not inspect.ismodule(getattr(module, n))}
    assert set(module.__all__) == public - {"annotations"}
    assert module.__doc__
    for public in module.__all__:
        value = getattr(module, public)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert value.__doc__, f"{name}.{public} has no docstring"


def test_analysis_imports_no_view():
    code = (
        "import sys, abbench.metrics, abbench.compare, abbench.gate, abbench.review, abbench.assign; "
        "bad = [m for m in sys.modules if m.startswith(('abbench.cli', 'abbench.widgets', 'abbench.report', "
        "'ipywidgets', 'papermill', 'nbconvert', 'plotly', 'click'))]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=subprocess_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
