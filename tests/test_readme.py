"""The README's and docs/' examples work as written: every YAML block parses, and the experiment definitions validate."""

from __future__ import annotations

import re

import pytest
import yaml

from abbench.runner import load_spec
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _yaml_blocks(path) -> list[tuple[str, int, str]]:
    text = path.read_text(encoding="utf-8")
    name = str(path.relative_to(REPO))
    return [
        (name, text[: m.start()].count("\n") + 2, m.group(1))
        for m in re.finditer(r"```yaml\n(.*?)```", text, re.S)
    ]


BLOCKS = [block for page in PAGES for block in _yaml_blocks(page)]


def test_the_readme_and_the_docs_have_yaml_examples():
    assert len(_yaml_blocks(REPO / "README.md")) >= 4
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize(("page", "line", "text"), BLOCKS, ids=[f"{page}:{line}" for page, line, _ in BLOCKS])
def test_every_yaml_example_parses(page, line, text):
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        pytest.fail(f"{page} line {line}: the YAML example does not parse: {exc}")
    if isinstance(data, dict) and {"name", "dataset", "arms"} <= set(data):
        load_spec(data)  # an experiment definition a reader copies must validate


def test_every_python_docstring_yaml_example_parses():
    # the same examples appear in docstrings, which `help()` shows
    from abbench.graders import llm_judge

    block = llm_judge.__doc__.split("Example (experiment YAML)::", 1)[1].split("\n\n    Args:", 1)[0]
    yaml.safe_load(block)


def _workflow_table_functions() -> list[str]:
    table = README.split("| step | Python | CLI |", 1)[1].split("\n\n", 1)[0]
    names = []
    for row in table.splitlines()[2:]:
        python_cell = row.split("|")[2]
        names += re.findall(r"`(?:abbench\.)?([a-z_]+)(?:\(|`)", python_cell)
    return names


def test_the_workflow_tables_python_column_is_the_top_level_api():
    import abbench

    names = _workflow_table_functions()
    assert len(names) >= 20
    missing = [n for n in names if not hasattr(abbench, n)]
    assert not missing, f"README's workflow table names abbench.{missing}, which `import abbench` lacks"
