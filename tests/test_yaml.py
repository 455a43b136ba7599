"""Every YAML abbench reads is bounded before anything walks it: alias bombs, self-containing aliases and
deep nesting are refused with a line and column; and no module calls PyYAML's loaders but abbench/_yaml.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from abbench._yaml import MAX_DEPTH, YamlRefused, compose_yaml, error_at, error_problem, load_yaml

from .conftest import REPO, assert_none_in_package, plant_module


def alias_bomb(levels: int = 9, key: str = "description") -> str:
    """The classic "billion laughs" in YAML: each level a list of nine aliases of the level below."""
    lines = ["l0: &l0 lol"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join([*lines, f"{key}: *l{levels - 1}", ""])


def test_an_alias_bomb_is_refused_before_it_is_built_naming_the_alias_and_its_line():
    text = alias_bomb()
    assert len(text) < 700
    with pytest.raises(YamlRefused) as caught:
        load_yaml(text)
    err = caught.value
    assert err.problem_mark.line + 1 == 10 and err.problem_mark.column + 1 == 14
    assert "*l8" in err.problem and "an alias bomb" in err.problem and "48,427,561 values" in err.problem
    with pytest.raises(YamlRefused):
        compose_yaml(text)


def test_a_bomb_just_past_the_limit_is_refused_and_one_inside_it_loads():
    # five levels repeat ~15,000 values: inside the 100,000 aliases may add; six repeat ~141,000: past it
    assert len(load_yaml(alias_bomb(5))["description"]) == 9
    with pytest.raises(YamlRefused, match="141,171 values"):
        load_yaml(alias_bomb(6))


def test_aliases_of_long_text_count_their_characters():
    text = "big: &big " + "x" * 100_000 + "\nmany: [" + ", ".join(["*big"] * 60) + "]\n"
    with pytest.raises(YamlRefused, match="characters"):
        load_yaml(text)


def test_anchors_and_merge_keys_for_shared_settings_still_load():
    text = (
        "defaults: &arm {agent: openai, model: gpt-4o-mini, temperature: 0}\n"
        "arms:\n"
        "  a: {<<: *arm}\n"
        "  b: {<<: *arm, model: gpt-4o}\n"
        "labels: &labels [fast, slow]\n"
        "again: *labels\n"
    )
    data = load_yaml(text)
    assert data["arms"]["b"] == {"agent": "openai", "model": "gpt-4o", "temperature": 0}
    assert data["again"] == ["fast", "slow"]


def test_an_alias_inside_the_value_it_names_is_refused():
    with pytest.raises(YamlRefused, match=r"\*a is used inside the value it names") as caught:
        load_yaml("x: 1\na: &a [1, *a]\n")
    assert caught.value.problem_mark.line == 1


def test_nesting_past_the_limit_is_refused_and_within_it_loads():
    assert load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(YamlRefused, match="more than 100 levels deep"):
        load_yaml("[" * 5000 + "]" * 5000)  # a RecursionError in PyYAML's own loader


def test_plain_yaml_and_json_read_as_pyyaml_reads_them():
    text = 'name: 路由\nn: 3\nf: 0.5\nok: true\nnothing: null\nlist: [a, "b"]\n'
    assert load_yaml(text) == yaml.safe_load(text)
    assert load_yaml('{"a": [1, 2]}') == {"a": [1, 2]}
    assert load_yaml("") is None and compose_yaml("") is None


# -- the guard: one loader everywhere -------------------------------------------------------------

_LOADERS = {
    "load",
    "safe_load",
    "full_load",
    "unsafe_load",
    "load_all",
    "safe_load_all",
    "full_load_all",
    "unsafe_load_all",
    "compose",
    "compose_all",
}


def _yaml_loads(path: Path) -> list[tuple[int, str]]:
    """Calls of PyYAML's loaders (``yaml.safe_load(...)``, ``from yaml import load``) in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "yaml"
            and node.func.attr in _LOADERS
        ):
            found.append((node.lineno, f"yaml.{node.func.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "yaml":
            found += [(node.lineno, f"from yaml import {a.name}") for a in node.names if a.name in _LOADERS]
    return found


@pytest.mark.parametrize(
    ("form", "shift", "said"),
    [
        ((), 0, " at line 3, column 1"),
        ((", line {line}, column {column}",), 0, ", line 3, column 1"),
        ((), 1, " at line 4, column 1"),  # a SKILL.md's front matter starts on its line 2
    ],
)
def test_a_yaml_error_says_its_line_and_column_counted_from_one(form, shift, said):
    with pytest.raises(yaml.YAMLError) as caught:
        load_yaml("a: 1\nb: [1, 2\n")  # the list is still open where the text ends: line 3, column 1
    assert error_at(caught.value, *form, line_shift=shift) == said
    assert error_problem(caught.value) == caught.value.problem


def test_a_yaml_error_without_a_place_or_problem_says_what_it_can():
    err = yaml.YAMLError("the stream broke")
    assert error_at(err) == ""
    assert error_problem(err) == "the stream broke"


def test_no_module_but_the_bounded_loader_calls_pyyaml_loaders():
    bounded_loader = REPO / "abbench" / "_yaml.py"
    assert_none_in_package(
        lambda path: [] if path == bounded_loader else _yaml_loads(path),
        "read YAML with abbench._yaml.load_yaml / compose_yaml",
    )


def test_the_yaml_guard_catches_each_way_of_loading(tmp_path):
    planted = plant_module(
        tmp_path / "planted.py",
        "import yaml\nfrom yaml import safe_load\n"
        "def f(t):\n    yaml.load(t, Loader=yaml.CSafeLoader)\n    return yaml.compose(t)\n"
        "def g(t):\n    return yaml.safe_dump(t)\n",
    )
    assert [c for _, c in _yaml_loads(planted)] == ["from yaml import safe_load", "yaml.load", "yaml.compose"]
