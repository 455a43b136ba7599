"""The base of every named result (statistics, metrics, comparisons, gates): ``as_dict()`` for JSON."""

from __future__ import annotations

import math
import sys
from dataclasses import fields
from typing import Any


def plain(value: Any) -> Any:
    """A JSON-ready copy of a value: results become dicts, numpy scalars Python ones, NaN and inf None."""
    if hasattr(value, "as_dict") and callable(value.as_dict):
        return value.as_dict()
    # numpy is looked up, not imported: a value cannot be a numpy scalar before numpy is loaded, and
    # importing it here would cost every command (`abbench --help` included) half a second.
    np = sys.modules.get("numpy")
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return bool(value)
    if isinstance(value, int) or (np is not None and isinstance(value, np.integer)):
        return int(value)
    if isinstance(value, float) or (np is not None and isinstance(value, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or (np is not None and isinstance(value, np.ndarray)):
        return [plain(v) for v in value]
    return value


class Result:
    """Mixin for frozen result dataclasses: ``as_dict()`` gives their fields as plain Python values.

    Nested results become dicts, tuples lists, and a figure that could not be computed is None — never
    NaN (JSON has none), so a missing figure reads as missing rather than as a number. Fields whose
    metadata says ``export=False`` (bulky ones, such as bootstrap replicates) are left out.
    """

    __slots__ = ()

    def as_dict(self) -> dict[str, Any]:
        """The result's fields as plain Python values, ready for ``json.dumps``."""
        return {
            f.name: plain(getattr(self, f.name))
            for f in fields(self)  # type: ignore[arg-type]
            if f.metadata.get("export", True)
        }
