"""Results made by other tools, imported as experiments: Inspect AI logs, promptfoo output, skill-creator benchmarks.

Each reader turns a tool's files into an `ImportedLog` (cases, arms, one outcome per run); then
`import_results` stores them as an experiment of ``external`` arms through
`abbench.runner.record_runs`, so paired statistics, gates and reports apply to runs made elsewhere.
"""

from __future__ import annotations

from abbench import _lazy
from abbench.interop._import import FORMATS, ImportedResults, import_results, read_results
from abbench.interop._model import ImportedCase, ImportedLog, ImportedRun

__all__ = [
    "FORMATS",
    "ImportedCase",
    "ImportedLog",
    "ImportedResults",
    "ImportedRun",
    "import_results",
    "read_results",
]

__dir__ = _lazy.listing(__all__)
