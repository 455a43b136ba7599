"""The public surface of abbench.dataset and the top-level names it adds."""

from __future__ import annotations

import inspect

import abbench
import abbench.dataset as dataset


def test_all_is_resolvable():
    # Its order is ruff's (RUF022: constants, classes, then functions, each sorted).
    assert len(set(dataset.__all__)) == len(dataset.__all__)
    for name in dataset.__all__:
        assert hasattr(dataset, name), name


def test_public_names_have_docstrings():
    for name in dataset.__all__:
        value = getattr(dataset, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), name


def test_top_level_api():
    for name in (
        "import_dataset",
        "preview_import",
        "suggest_mapping",
        "read_table",
        "MappingProfile",
        "load_dataset",
        "load_cases",
        "DatasetInfo",
        "ValidationReport",
    ):
        assert name in abbench.__all__ and getattr(abbench, name) is not None


def test_dataset_layer_does_not_import_the_store():
    import subprocess
    import sys

    code = "import abbench.dataset, sys; print(any(m.startswith('abbench.store') or m.startswith('abbench.cli') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
