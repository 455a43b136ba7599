"""`GatePicker`: which rules a decision uses — the experiment's own, abbench's defaults, or a gate file."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import ipywidgets as w

from abbench._yaml import load_yaml
from abbench.errors import UsageError
from abbench.gate import DEFAULT_RULES, GATE_KEYS
from abbench.store import Experiment
from abbench.widgets._base import Choice

OWN = "own"
"""The picker's value for the experiment's own ``gate:`` (abbench's defaults when it has none)."""
DEFAULTS = "defaults"
"""The picker's value for abbench's default rules."""
GIVEN = "given"
"""The picker's value for rules given in code (``ResultsWidget(gate=[...])``)."""

GATE_SUFFIXES = (".yaml", ".yml", ".json")
SKIPPED = {"node_modules", "site-packages", "__pycache__", "venv", "env", "snapshots", "transcripts"}
MAX_DEPTH = 3
MAX_FILES = 400
"""Candidate files read at most per folder searched (a home folder must not stall the notebook)."""
MAX_FOLDERS = 400
"""Sub-folders listed at most per folder searched."""
MAX_BYTES = 64_000


_SEEN: dict[tuple[str, int, int], bool] = {}
"""`is_gate_file`'s answers by (path, modification time, size): a picker scans its folders at every reload."""


def is_gate_file(path: Path) -> bool:
    """Whether a YAML/JSON file reads as a gate: a list of rules, or a mapping whose ``rules`` is one and
    whose other keys are gate keys. Unreadable files are not gates (choosing one by path says why)."""
    try:
        stat = path.stat()
    except OSError:
        return False
    if stat.st_size > MAX_BYTES:
        return False
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _SEEN:
        if len(_SEEN) > 10 * MAX_FILES:
            _SEEN.clear()
        _SEEN[key] = _reads_as_gate(path)
    return _SEEN[key]


def _reads_as_gate(path: Path) -> bool:
    import json

    import yaml

    try:
        text = path.read_text(encoding="utf-8-sig")
        data = json.loads(text) if path.suffix.lower() == ".json" else load_yaml(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
        return False
    if isinstance(data, dict):
        return isinstance(data.get("rules"), list) and set(map(str, data)) <= set(GATE_KEYS)
    return isinstance(data, list) and bool(data) and all(_reads_as_rule(r) for r in data)


def _reads_as_rule(item: Any) -> bool:
    if isinstance(item, dict):
        return "metric" in item and "op" in item
    return isinstance(item, str) and any(op in item for op in (">=", "<=", "==", "!=", ">", "<"))


def find_gate_files(folders: Iterable[str | os.PathLike[str]], *, depth: int = MAX_DEPTH) -> list[Path]:
    """Gate files (see `is_gate_file`) in `folders` and their sub-folders up to `depth` levels down,
    skipping hidden folders, virtual environments and stores; each path once, resolved, sorted."""
    found: set[Path] = set()
    for folder in folders:
        root = Path(folder).expanduser()
        if not root.is_dir():
            continue
        read = listed = 0
        for here, dirs, files in os.walk(root):
            listed += 1
            if listed > MAX_FOLDERS:
                break
            level = len(Path(here).relative_to(root).parts)
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED and level < depth)
            for name in sorted(files):
                if not name.lower().endswith(GATE_SUFFIXES) or read >= MAX_FILES:
                    continue
                read += 1
                path = Path(here, name)
                if is_gate_file(path):
                    found.add(path.resolve())
    return sorted(found)


def shown_path(path: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]]) -> str:
    """`path` as people recognise it: relative to the first of `roots` it lies under, else absolute."""
    p = Path(path).resolve()
    for root in roots:
        try:
            return p.relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            continue
    return str(p)


class GatePicker:
    """A gate chooser: the experiment's own, abbench's defaults, the gate files found near the notebook
    and the store, or a file typed in the box (Enter adds and chooses it).

    Its `rules` are what `abbench.gate.evaluate_gate` and `abbench.report.render_report` take, so the
    notebook, ``abbench gate --rules FILE`` and ``abbench report --gate FILE`` decide alike.

    Args:
        on_change: Called with no argument when the choice changes (the owner guards it).
        gate: The initial choice: a gate file, rules given in code, or None for the experiment's own.
        folders: Where to look for gate files (default: the current folder).

    Attributes:
        choice: The dropdown (`Choice`); its value is `OWN`, `DEFAULTS`, `GIVEN` or a file's path.
        path_box: The text box for a gate file's path.
        widget: The row holding both.
    """

    def __init__(
        self,
        on_change: Callable[[], Any],
        *,
        gate: Any = None,
        folders: Iterable[str | os.PathLike[str]] = (),
    ):
        self._on_change = on_change
        self.folders = [Path(f) for f in folders] or [Path.cwd()]
        self._given: Any = None
        self._typed: list[str] = []
        self.choice = Choice(
            "Gate",
            on_select=lambda _v: self._on_change(),
            style={"description_width": "initial"},
            layout=w.Layout(width="420px", max_width="100%"),
        )
        self.path_box = w.Text(
            placeholder="or a gate file's path (YAML/JSON), then Enter",
            continuous_update=False,
            layout=w.Layout(width="360px", max_width="100%"),
        )
        self.path_box.observe(lambda change: self._path_typed(change["new"]), names="value")
        self.widget = w.HBox([self.choice.widget, self.path_box], layout=w.Layout(flex_flow="row wrap"))
        if gate is None:
            self.choice.intended = OWN
        elif isinstance(gate, str | os.PathLike):
            path = str(Path(gate).expanduser().resolve())
            self._typed.append(path)
            self.choice.intended = path
        else:
            self._given = gate
            self.choice.intended = GIVEN
        self.scan(None)

    @property
    def roots(self) -> list[Path]:
        """The folders paths are shown relative to (and searched), nearest first."""
        return self.folders

    def scan(self, experiment: Experiment | None) -> None:
        """List the choices again: the gate files on disk now (the chosen one is kept)."""
        own = "the experiment's own gate"
        if experiment is not None and not experiment.gate:
            own = "the experiment's own (it has none: abbench's defaults)"
        options: list[tuple[str, Any]] = [(own, OWN), ("abbench's default rules", DEFAULTS)]
        if self._given is not None:
            options.append(("the rules given in code", GIVEN))
        files = [str(p) for p in find_gate_files(self.folders)]
        for path in self._typed:
            if path not in files:
                files.append(path)
        options += [(f"file: {shown_path(p, self.roots)}", p) for p in files]
        self.choice.set_options(options)

    def _path_typed(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        path = Path(text).expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
        resolved = str(path.resolve())
        if resolved not in self._typed:
            self._typed.append(resolved)
        self.path_box.value = ""
        self.scan(None)
        self.choice.select(resolved)  # a missing file is chosen too: evaluating it says what is wrong

    def select(self, value: Any) -> None:
        """Choose `OWN`, `DEFAULTS`, or a gate file by path (added to the list when it is not there)."""
        if value in (OWN, DEFAULTS, GIVEN):
            self.choice.select(value)
        else:
            self._path_typed(str(value))

    def rules(self, experiment: Experiment) -> Any:
        """What to pass as ``rules`` / ``gate``: None (the experiment's own, or the defaults when it has
        none), the default rules, the rules given, or a file's path.

        Raises:
            UsageError: nothing chosen.
        """
        value = self.choice.value
        if value is None:
            raise UsageError("choose a gate: the experiment's own, abbench's default rules or a gate file")
        if value == OWN:
            return None
        if value == DEFAULTS:
            # None falls back to the defaults only when the experiment has no gate of its own.
            return None if not experiment.gate else [dict(r) for r in DEFAULT_RULES]
        if value == GIVEN:
            return self._given
        return value

    def says(self, experiment: Experiment, *, why: bool = False) -> str:
        """Which rules decide, in words: ``rules: data/demo/gate.yaml``, ``rules: the experiment's own``
        or ``rules: abbench's defaults`` (with `why`: and why the defaults, when the experiment has none)."""
        value = self.choice.value
        if value == OWN:
            if not experiment.gate:
                return "rules: abbench's defaults" + (
                    " (the experiment names no gate of its own)" if why else ""
                )
            own = f" ({experiment.gate})" if isinstance(experiment.gate, str) else ""
            return f"rules: the experiment's own{own}"
        if value == DEFAULTS:
            return "rules: abbench's defaults"
        if value == GIVEN:
            return "rules: the rules given in code"
        if value is None:
            return "rules: none chosen"
        return f"rules: {shown_path(value, self.roots)}"
