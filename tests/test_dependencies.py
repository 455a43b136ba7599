"""Every runtime dependency declared in pyproject.toml is imported by abbench itself.

A dependency nobody imports still costs every user an install (sqlite-utils was declared and
imported nowhere); one used only by the tests belongs to the ``test`` extra.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Distributions whose import name is not their name with "-" as "_", lowercased.
IMPORT_NAMES = {
    "pyyaml": "yaml",
    "python-calamine": "python_calamine",
    "scikit-learn": "sklearn",
    "beautifulsoup4": "bs4",
    "pillow": "PIL",
    "python-dateutil": "dateutil",
    "pysqlite3-binary": "pysqlite3",
    "google-re2": "re2",
}


# Runtime dependencies another dependency imports for abbench, never abbench itself: FastAPI parses the
# server's upload forms with python-multipart (and refuses form routes without it).
USED_THROUGH = {"python_multipart": "fastapi"}


def import_name(requirement: str) -> str:
    """The top-level module a requirement such as ``pyyaml>=6.0`` provides."""
    dist = re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0].lower()
    return IMPORT_NAMES.get(dist, dist.replace("-", "_").replace(".", "_"))


def imported_modules(package: Path) -> set[str]:
    """Top-level names of every module imported anywhere under `package` (lazy imports included)."""
    names: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def runtime_dependencies() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return list(tomllib.load(fh)["project"]["dependencies"])


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        ("pandas>=2.2", "pandas"),
        ("pyyaml>=6.0", "yaml"),
        ("python-calamine>=0.2", "python_calamine"),
        ("scikit-learn >= 1.4", "sklearn"),
        ("sqlite-utils>=3.37", "sqlite_utils"),
        ("httpx[http2]>=0.27", "httpx"),
        ("tomli; python_version < '3.11'", "tomli"),
    ],
)
def test_import_name_maps_distribution_names(requirement, expected):
    assert import_name(requirement) == expected


def test_imported_modules_finds_lazy_and_dotted_imports(tmp_path):
    (tmp_path / "a.py").write_text("import numpy.linalg\n\ndef f():\n    from scipy import stats\n")
    (tmp_path / "b.py").write_text("from . import a\nfrom .a import f\n")
    assert imported_modules(tmp_path) == {"numpy", "scipy"}


def test_every_declared_runtime_dependency_is_imported():
    used = imported_modules(ROOT / "abbench")
    unused = [
        r
        for r in runtime_dependencies()
        if import_name(r) not in used and USED_THROUGH.get(import_name(r)) not in used
    ]
    assert not unused, (
        f"pyproject.toml declares {', '.join(unused)} in [project].dependencies, but nothing under "
        "abbench/ imports it: drop it, or move it to the extra that uses it (test, notebook)"
    )
