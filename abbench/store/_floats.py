"""Floats written by SQLite exactly as Python's ``repr`` writes them, where SQLite can prove it.

Export lines built inside SQLite (`abbench.store._lines`, `abbench.store._sheet_rows`) would otherwise
hand every float back to Python for its ``repr``. SQLite's ``printf('%!.15g')`` is Python's ``repr`` for
a float whose shortest round-trip form has at most 15 significant digits and whose magnitude Python
writes without an exponent (1e-4 up to 1e15): any decimal of 15 digits or fewer round-trips through a
double, and no two such decimals round to the same double, so the 15-digit text that reads back as the
same double is the shortest one, trailing zeros dropped. `float_text` asks SQLite for that text and
checks it reads back as the same value; every other float (16 or 17 digits, tiny, huge or infinite)
goes the slow way, a Python function the caller names. `printf_matches_repr` checks the rule on this
SQLite before a caller relies on it (a SQLite whose printf writes otherwise gets the slow way always).
"""

from __future__ import annotations

import functools
import sqlite3

_PROBES = (
    0.0, 1.0, -1.0, 0.5, 0.1, 0.3, 2.5, 12.0, 100.0, 123.456, -0.75, 1e-4, 0.00012, 0.000999,
    1234567.0, 3.14159, 99999.5, 1e14, 999999999999999.0, 123456789012345.0, 0.1 + 0.2, 1 / 3,
    2 / 3, 0.19256499999187326, 1e15, 1e-5, 5e-324, 1.7976931348623157e308,
)  # fmt: skip


def float_text(value: str, slow: str) -> str:
    """SQL: the text of `value` (an SQL expression) as Python's ``repr`` writes a float — NULL for
    NULL, an integer's own text for an integer — else `slow` (an SQL expression, e.g. a call of a
    Python function) for what SQLite cannot prove it writes the same way."""
    v = value
    return (
        f"(CASE typeof({v}) WHEN 'null' THEN NULL WHEN 'integer' THEN {v} "
        f"WHEN 'real' THEN (CASE WHEN {v} = 0 THEN '0.0' "
        f"WHEN abs({v}) >= 1e-4 AND abs({v}) < 1e15 AND CAST(printf('%!.15g',{v}) AS REAL) = {v} "
        f"THEN printf('%!.15g',{v}) ELSE {slow} END) ELSE {slow} END)"
    )


@functools.cache
def printf_matches_repr() -> bool:
    """Whether this SQLite writes `_PROBES` by `float_text` as ``repr`` does (falling back where it
    should): checked once a process, on a connection of its own."""
    conn = sqlite3.connect(":memory:")
    sql = f"SELECT {float_text(':v', 'slow_repr(:v)')}"
    try:
        conn.create_function("slow_repr", 1, repr, deterministic=True)
        for x in _PROBES:
            for v in {x, -x}:  # (a REAL column holds no -0.0: SQLite stores it as 0)
                (got,) = conn.execute(sql, {"v": v}).fetchone()
                if got != repr(v):
                    return False
    finally:
        conn.close()
    return True
