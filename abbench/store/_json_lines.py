"""The runs JSONL's lines built inside SQLite (`JsonLinesMixin.export_run_jsonl_lines`), as the CSV's are.

A JSONL line has ~45 values, the latest grades in full and the raw source row: building each as Python
objects and encoding them cost most of a JSONL export. Here SQLite writes each line whole with the
values it can write exactly as Python's ``json`` module does: text through ``json_quote`` (its escapes
are the encoder's with ``ensure_ascii=False``: the export tests compare every character), integers,
verdicts as ``true``/``false``, NULL as ``null``, the common ``[]``, ``0.0`` and ``1.0``. Every other
value — floats (Python's repr), JSON text (decoded and encoded again, as the Python path does), the
source row (unpacked under its column names), values of an unexpected type — goes through the
`JsonCell` function the export passes, which is the Python writer's own rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from abbench.store._analysis import latest_grade_joins
from abbench.store._base import StoreBase
from abbench.store._lines import _csv_values, _in_order, export_slices

JsonCell = Callable[[str, Any], str]
"""``(rule, value) -> the value as the JSONL writer encodes it``, the general path of a value; the rules
are ``plain``, ``bool``, ``json``, ``summary``, ``source`` (top-level values: non-finite floats as null)
and ``nested``, ``nested_bool``, ``nested_json`` (inside a grade)."""

_CELL = "abbench_json_cell"
GRADE_FIELDS = (
    ("id", "int"),
    ("batch_id", "text"),
    ("kind", "text"),
    ("status", "text"),
    ("passed", "bool"),
    ("score", "float"),
    ("verdict", "text"),
    ("dimensions", "json"),
    ("comment", "text"),
    ("error", "text"),
    ("judge_model", "text"),
    ("judge_cost", "float"),
    ("other_run_id", "int"),
    ("created_at", "text"),
)
"""The fields of a grade in the runs JSONL's ``grades`` (`abbench.export`'s ``_plain_grade``), in order."""


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _value(v: str, kind: str, nested: bool = False) -> str:
    """SQL: the JSON text of value `v` of `kind` (a top-level value, or one inside a grade): the common
    values written in SQL, any other through the export's own function."""
    rules = {"bool": "bool", "json": "json"}
    rule = rules.get(kind, "plain") if kind in ("int", "text", "float", "bool", "json") else kind
    if nested:
        rule = "nested" if rule == "plain" else "nested_" + rule
    slow = f"{_CELL}('{rule}',{v})"
    if kind == "int":
        return f"(CASE WHEN typeof({v})='integer' THEN {v} WHEN {v} IS NULL THEN 'null' ELSE {slow} END)"
    if kind == "text":
        return f"(CASE WHEN typeof({v})='text' THEN json_quote({v}) WHEN {v} IS NULL THEN 'null' ELSE {slow} END)"
    if kind == "float":  # SQLite's own float text is not repr's: Python writes all but 0.0 and 1.0
        return (
            f"(CASE WHEN {v} IS NULL THEN 'null' WHEN typeof({v})='real' AND {v}=0.0 THEN '0.0' "
            f"WHEN typeof({v})='real' AND {v}=1.0 THEN '1.0' ELSE {slow} END)"
        )
    if kind == "bool":
        return (
            f"(CASE WHEN {v} IS NULL THEN 'null' WHEN typeof({v})='integer' THEN "
            f"(CASE WHEN {v} THEN 'true' ELSE 'false' END) ELSE {slow} END)"
        )
    if kind == "json":
        return f"(CASE WHEN {v} IS NULL THEN 'null' WHEN {v}='[]' THEN '[]' ELSE {slow} END)"
    return f"(CASE WHEN {v} IS NULL THEN 'null' ELSE {slow} END)"  # summary, source: always Python's


def _concat(args: list[str]) -> str:
    """SQL: the args (each never NULL) joined, one ``printf`` per 100 (SQLite's limit is 127 arguments)."""
    parts = [args[i : i + 100] for i in range(0, len(args), 100)]
    return " || ".join(f"printf('{'%s' * len(p)}', {', '.join(p)})" for p in parts)


def _members(keys: Sequence[str], values: Sequence[str], first: bool) -> list[str]:
    """The printf arguments of JSON object members: `values` (SQL, each giving JSON text) under `keys`
    (JSON text), the first opening the object when `first`."""
    out: list[str] = []
    for i, (key, value) in enumerate(zip(keys, values, strict=True)):
        out += [_sql_text(("{" if first and i == 0 else ",") + key + ":"), value]
    return out


def _grades(encoded: Sequence[str], n: int) -> str:
    """SQL: the ``grades`` value: ``{grader: grade, ...}`` of the graders (sorted by name) with a latest
    grade, as ``gj<i>``; null when none has one."""
    entries = []
    field_keys = [f'"{name}"' for name, _ in GRADE_FIELDS]
    for i in range(n):
        values = [_value(f"gj{i}.{field}", kind, nested=True) for field, kind in GRADE_FIELDS]
        body = _concat([*_members(field_keys, values, True), "'}'"])
        entries.append(
            f"(CASE WHEN gj{i}.id IS NOT NULL THEN ',' || {_sql_text(encoded[i])} || ':' || {body} END)"
        )
    if not entries:
        return "'null'"
    joined = _concat([f"ifnull({e},'')" for e in entries])
    return f"ifnull('{{' || substr(nullif({joined}, ''), 2) || '}}', 'null')"


def _json_key(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


def _latest_in_full(n: int) -> str:
    """SQL joining the latest grade of each of `n` graders as ``gj<i>`` as `latest_grades_of_runs` finds
    it (the latest of its run, grader and second run, of this experiment; parameters: each grader's
    name, then the experiment)."""
    return "".join(
        f" LEFT JOIN grades gj{i} ON gj{i}.id = (SELECT MAX(g.id) FROM grades g WHERE g.run_id = r.id "
        f"AND g.grader = ? AND +g.experiment_id = ? AND NOT EXISTS (SELECT 1 FROM grades l WHERE "
        "l.run_id = g.run_id AND l.grader = g.grader AND l.other_run_id IS g.other_run_id AND l.id > g.id))"
        for i in range(n)
    )


class JsonLinesMixin(StoreBase):
    """The runs JSONL's lines built inside SQLite (see the module docstring)."""

    def export_run_jsonl_lines(
        self,
        exp_id: int,
        dataset_id: int,
        graders: Sequence[tuple[str, str, int]],
        *,
        keys: Sequence[str],
        head: Callable[[str], str],
        cell: JsonCell,
        outcome_words: Mapping[str, str],
        chunk: int = 4096,
    ) -> Iterator[list[str]]:
        """An experiment's runs as JSONL lines (no line ends) in export order, `chunk` cases a list.

        Args:
            exp_id: The experiment.
            dataset_id: Its dataset.
            graders: ``(name, kind, cells)`` of each non-pairwise grader, in column order (as for
                `export_run_csv_lines`).
            keys: Each column's name as JSON text, in column order: the run id, experiment, arm, the
                columns of the CSV line, then grades, source line, source row and transcript summary.
            head: The experiment and arm members' text (``,"experiment":…,"arm":…``) from an arm's name.
            cell: The general path of a value (see `JsonCell`).
            outcome_words: The word of each outcome key or open state (`abbench.types.OUTCOME_WORDS`).
            chunk: Cases per list (a JSONL line is long: ~1 kB for a short case, so lists stay small).
        """
        values = _csv_values(outcome_words, [(k, n) for _, k, n in graders])
        by_name = sorted(range(len(graders)), key=lambda i: graders[i][0])
        tail = [
            _grades([_json_key(graders[i][0]) for i in by_name], len(graders)),
            _value("(CASE WHEN c.case_id IS NOT NULL THEN c.source_line END)", "text"),
            _value("c.source_row", "source"),
            _value("r.transcript_summary", "summary"),
        ]
        cells = [_value(v, k) for v, k in values] + tail
        args = [*_members(keys[:1], ["r.id"], True), "?", *_members(keys[3:], cells, False), "'}'"]
        body = _concat(args)
        sql = (
            f"SELECT {body} FROM runs r LEFT JOIN cases c ON c.dataset_id = ? AND c.idx = r.case_idx"
            f"{latest_grade_joins(len(graders))}{_latest_in_full(len(graders))} "
            "WHERE r.experiment_id = ? AND r.arm_id = ? AND r.round = ? AND r.case_idx >= ? AND r.case_idx < ? "
            "ORDER BY r.case_idx"
        )
        names = [name for name, _, _ in graders]
        full = [p for i in by_name for p in (graders[i][0], exp_id)]
        slices = [
            (head(arm), dataset_id, *names, *full, exp_id, arm_id, rnd, start, end)
            for arm_id, arm, rnd, start, end in export_slices(self.conn, exp_id, chunk)
        ]

        def read(params: tuple[Any, ...]) -> list[str]:
            conn = self.conn  # this thread's own connection
            conn.create_function(_CELL, 2, cell, deterministic=True)
            cursor = conn.cursor()
            cursor.row_factory = None
            return [row[0] for row in cursor.execute(sql, params).fetchall()]

        yield from _in_order(read, slices, self.close_thread_connection)
