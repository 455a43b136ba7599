"""Reading the YAML abbench is given: one loader, bounded before anything walks what it read.

YAML's aliases (``*name``) repeat an anchored value without repeating its text, so 600 bytes can stand
for billions of values (an alias bomb): the parser shares them, but whatever walks the result (a JSON
round-trip, validation, storing it) expands them. Every YAML abbench reads — definitions, mapping
profiles, gate files, grader and price files, a skill's front matter, what arrives over HTTP — goes
through `load_yaml` or `compose_yaml`, which refuse, before anything is built from the document:

- aliases that would repeat more than `MAX_ALIAS_VALUES` values or `MAX_ALIAS_TEXT` characters of
  text beyond what the document itself holds (anchors reused for shared settings stay well inside);
- an alias that contains itself (a value that would be infinite);
- nesting deeper than `MAX_DEPTH` levels (the parser is recursive: deeper would be a RecursionError).

tests/test_guards.py checks that no other module calls PyYAML's loaders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import yaml

_T = TypeVar("_T")

MAX_ALIAS_VALUES = 100_000
"""How many values aliases may add to a document (a value: a scalar, a list or a mapping)."""
MAX_ALIAS_TEXT = 4 << 20
"""How many characters of scalar text aliases may add to a document."""
MAX_DEPTH = 100
"""How deep lists and mappings may nest in a YAML document."""


class YamlRefused(yaml.MarkedYAMLError):
    """Raised when a YAML document is refused before it is built: an alias bomb, a value containing
    itself, or nesting too deep. A `yaml.YAMLError`, so every reader reports it with its line and column."""

    def __init__(self, problem: str, mark: Any):
        super().__init__(problem=problem, problem_mark=mark)


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that records where aliases are and how deep the document nests."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self.aliases: list[tuple[yaml.Node, yaml.AliasEvent]] = []

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call, unused-ignore]  # PyYAML is untyped
            node = super().compose_node(parent, index)
            if node is not None:
                self.aliases.append((node, event))
            return node
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlRefused(
                    f"the document nests lists and mappings more than {MAX_DEPTH} levels deep; "
                    "a definition or profile is a few levels deep — check how the file was made",
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call, unused-ignore]  # PyYAML is untyped
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None and self.aliases:
            _check_expansion(node, self.aliases)
        return node


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node, aliases: list[tuple[yaml.Node, yaml.AliasEvent]]) -> None:
    """Refuse a document whose aliases expand it past the limits, or whose alias contains itself.

    Counts each node's expanded size (values, characters of text) once, bottom up over the node graph
    the composer shares, so the check costs what the document's text costs, never what it expands to.
    """
    sizes: dict[int, tuple[int, int]] = {}
    own_text = 0
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            values, text = 1, len(node.value) if isinstance(node, yaml.ScalarNode) else 0
            own_text += text
            for child in _children(node):
                v, t = sizes[id(child)]
                values, text = values + v, text + t
            # capped, so a bomb's sizes stay small integers while they are added up
            sizes[key] = (min(values, 1 << 62), min(text, 1 << 62))
            continue
        if key in sizes:
            continue
        if key in on_path:
            event = next((e for n, e in aliases if n is node), None)
            name = f"*{event.anchor}" if event is not None else "an alias"
            raise YamlRefused(
                f"{name} is used inside the value it names, which would make it endless; "
                "write the value out instead",
                event.start_mark if event is not None else node.start_mark,
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    values, text = sizes[id(root)]
    if values - len(sizes) <= MAX_ALIAS_VALUES and text - own_text <= MAX_ALIAS_TEXT:
        return
    node, event = max(aliases, key=lambda a: sizes.get(id(a[0]), (0, 0)))
    each_values = sizes[id(node)][0]
    raise YamlRefused(
        f"the aliases expand the document to {values:,} values and {text:,} characters of text, past the "
        f"{MAX_ALIAS_VALUES:,} values and {MAX_ALIAS_TEXT:,} characters aliases may add (an alias bomb?); "
        f"*{event.anchor} here alone stands for {each_values:,} values — write the repeated parts out, "
        "or repeat less",
        event.start_mark,
    )


def load_yaml(text: str) -> Any:
    """The value of a YAML (or JSON) document, refused before it is built when it is an alias bomb,
    contains itself or nests too deep (`YamlRefused`, a `yaml.YAMLError` with a line and column).

    Raises:
        yaml.YAMLError: the text is not YAML, or is refused.
    """
    return _bounded(text, _BoundedLoader.get_single_data)


def compose_yaml(text: str) -> yaml.Node | None:
    """The node tree of a YAML document (lines and columns for messages), with `load_yaml`'s bounds.

    Raises:
        yaml.YAMLError: the text is not YAML, or is refused.
    """
    return _bounded(text, _BoundedLoader.get_single_node)


def error_at(
    exc: yaml.YAMLError, form: str = " at line {line}, column {column}", *, line_shift: int = 0
) -> str:
    """Where a YAML error is, written in `form` with its 1-based ``{line}`` and ``{column}``, or ``""``
    when PyYAML gave no place. `line_shift` counts the lines before the text that was parsed (a SKILL.md's
    front matter starts on line 2)."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return ""
    return form.format(line=mark.line + 1 + line_shift, column=mark.column + 1)


def error_problem(exc: yaml.YAMLError) -> str:
    """What is wrong, as PyYAML words it: its ``problem``, else the error's whole text."""
    return getattr(exc, "problem", None) or str(exc)


def _bounded(text: str, read: Callable[[_BoundedLoader], _T]) -> _T:
    """`read` applied to a bounded loader of `text`, the loader disposed of after."""
    loader = _BoundedLoader(text)
    try:
        return read(loader)
    finally:
        loader.dispose()
