"""The documented API is each package's ``__all__``: every such name is documented, every documented name exists.

The docs are README.md, docs/*.md and the notebooks; docs/api.md is written from the docstrings of the
``__all__`` names by tests/api_page.py and must be up to date. A package's sibling tier (abbench/_lazy.py)
is importable but documented nowhere, and a page that names it must name a documented name instead.
"""

from __future__ import annotations

import importlib
import json
import re

import pytest

import abbench

from . import api_page
from .conftest import REPO

ONE_TIER = api_page.ONE_TIER
FILE_NAMES = {"abbench.db"}  # the store's database file, not a name


def _hand_docs() -> dict[str, str]:
    """Page -> its text: README.md, docs/*.md but the generated page, and each notebook's cells."""
    pages = {"README.md": (REPO / "README.md").read_text(encoding="utf-8")}
    for path in sorted((REPO / "docs").glob("*.md")):
        if path != api_page.PAGE:
            pages[f"docs/{path.name}"] = path.read_text(encoding="utf-8")
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        pages[f"notebooks/{path.name}"] = "\n".join("".join(c["source"]) for c in cells)
    return pages


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def test_the_api_page_is_up_to_date():
    assert api_page.PAGE.read_text(encoding="utf-8") == api_page.render(), "run: python -m tests.api_page"


@pytest.mark.parametrize("package", api_page.faces())
def test_every_name_of_a_face_is_documented(package):
    """Each ``__all__`` name appears in the guides or in docs/api.md (with its docstring there)."""
    documented = _words("\n".join(_hand_docs().values()))
    page = api_page.PAGE.read_text(encoding="utf-8")
    section = page.split(f"## `{package}`\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- \*\*`([A-Za-z_][A-Za-z0-9_]*)`\*\*", section, re.M))
    mod = importlib.import_module(package)
    missing = [n for n in mod.__all__ if not n.startswith("__") and n not in documented and n not in listed]
    assert missing == [], f"{package}: in __all__ but documented nowhere"
    assert listed <= set(mod.__all__), f"{package}: docs/api.md lists names outside __all__"


def _resolve(dotted: str) -> tuple[bool, str | None]:
    """Whether ``abbench.x.y`` exists, and the package whose ``__all__`` must hold its name (None: no check)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        break
    for attr in parts[i:]:
        if not hasattr(obj, attr):
            return False, None
        obj = getattr(obj, attr)
    face = ".".join(parts[:i])
    if i < len(parts) and face != "abbench" and face not in ONE_TIER and not parts[i - 1].startswith("_"):
        return True, face
    return True, None


def _references() -> list[tuple[str, str, str]]:
    """(page, dotted name, the name a face must document) for every ``abbench.x.Y`` the guides write, and
    every name their code imports ``from abbench.x``."""
    found = []
    for page, text in _hand_docs().items():
        for m in re.finditer(r"(?<![\w/.])abbench(?:\.[A-Za-z_][A-Za-z0-9_]*)+", text):
            found.append((page, m.group(0), m.group(0)))
        for m in re.finditer(r"^\s*from (abbench(?:\.\w+)*) import (?:\(([^)]*)\)|([^\n#]*))", text, re.M):
            names = (m.group(2) or m.group(3)).replace("\n", " ").split(",")
            for name in filter(None, (n.strip().split(" as ")[0].strip() for n in names)):
                found.append((page, f"{m.group(1)}.{name}", f"{m.group(1)}.{name}"))
    return found


def _face(module: str) -> set[str]:
    """The documented names of a module: its ``__all__``, or its public names when it declares none."""
    mod = importlib.import_module(module)
    return set(getattr(mod, "__all__", [n for n in vars(mod) if not n.startswith("_")]))


def test_every_name_the_docs_write_exists_and_is_documented():
    """A page's ``abbench.compare.Verdict`` or ``from abbench.compare import Verdict`` names a thing that is
    there, and, in a package of two tiers, a name of its ``__all__`` (never of its sibling tier)."""
    missing, sibling = [], []
    for page, dotted, _ in _references():
        if dotted in FILE_NAMES:
            continue
        exists, face = _resolve(dotted)
        if not exists:
            missing.append(f"{page}: {dotted}")
        elif face is not None and dotted.split(".")[face.count(".") + 1] not in _face(face):
            sibling.append(f"{page}: {dotted}")
    assert missing == [], "the docs name what does not exist"
    assert sibling == [], "the docs name a sibling-tier name: put it in __all__ or name the public one"


def test_the_reference_check_catches_a_missing_and_a_sibling_name():
    assert _resolve("abbench.compare.Verdict") == (True, "abbench.compare")
    assert _resolve("abbench.compare.Nope")[0] is False
    exists, face = _resolve("abbench.dataset.gold_kind")  # the sibling tier: importable, not documented
    assert exists and "gold_kind" not in importlib.import_module(face).__all__
    assert _resolve("abbench.store._migrations") == (True, None)  # a private module a page may point at


def _glossary_nouns() -> set[str]:
    """The classes the glossary names as ``abbench.x.Name`` (docs/ARCHITECTURE.md, "Words"), and the store's
    values it lists among the interfaces."""
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    words = text.split("## Words", 1)[1].split("\n## ", 1)[0]
    found = set(re.findall(r"`abbench\.\w+\.([A-Z][a-z]\w*)", words))
    return found | {
        "Experiment",
        "Arm",
        "RunRecord",
        "Grade",
        "Review",
        "RunOutcome",
        "Verdict",
        "Case",
        "Dataset",
    }


@pytest.mark.parametrize("noun", sorted(_glossary_nouns()))
def test_the_glossary_nouns_are_reachable_from_abbench(noun):
    assert noun in abbench.__all__ and noun in dir(abbench)
    origin = importlib.import_module(api_page._origins("abbench")[noun])
    assert getattr(abbench, noun) is getattr(origin, noun)


def test_import_abbench_loads_none_of_the_nouns_modules():
    """The nouns are lazy: ``import abbench`` loads no package of abbench (checked in a fresh process)."""
    import subprocess
    import sys

    from .conftest import subprocess_env

    code = "import sys, abbench; print(sorted(m for m in sys.modules if m.startswith('abbench')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=subprocess_env(), capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "['abbench']"
