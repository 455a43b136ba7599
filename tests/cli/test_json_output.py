"""--json output is strict JSON: no bare NaN or Infinity, numpy numbers as numbers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from abbench.cli._app import emit


def _strict(text: str):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"p": math.nan, "ci": [0.1, math.inf]}, {"p": None, "ci": [0.1, None]}),
        ({"n": np.int64(401), "rate": np.float64(0.904)}, {"n": 401, "rate": 0.904}),
        ({"nested": ({"x": np.float32("nan")},)}, {"nested": [{"x": None}]}),
        ({"text": "NaN", "label": "快"}, {"text": "NaN", "label": "快"}),
    ],
)
def test_emit_writes_strict_json(capsys, data, expected):
    emit(True, data)
    assert _strict(capsys.readouterr().out) == expected
