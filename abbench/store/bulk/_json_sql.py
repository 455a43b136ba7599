"""The SQL that writes a JSONL line of a run: its columns, quoting and the object built of them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from abbench.store._run_columns import outcome_word_sql

PLACE = b"1e999999"
"""A place in a line: a JSON number (so ``json_object`` takes it as JSON) that Python never writes."""
BAD = b"1e999998"
"""A value SQLite cannot judge, in a slice built carefully: its row is made by the Python path."""

PLACE_KINDS = ("text", "top", "nested", "json", "list", "latency", "summary", "dimensions", "source_row")
"""What `JsonValues` makes of a stored value, by its column:

- ``text``: the value of a TEXT column (text, NULL or a blob: none is changed);
- ``top``: the value, a column of the row (a float that is not finite is null there);
- ``nested``: the value inside a grade (a float that is not finite is NaN or ±Infinity, as the encoder
  writes it);
- ``json``: the stored JSON decoded, a column of the row;
- ``list``: the same of ``value or "[]"`` (a run's evidence, files and sections);
- ``latency``: ``value or 0.0`` (null stays null: never reported), a column of the row;
- ``summary``: the stored JSON decoded, or null when that is empty;
- ``dimensions``: the stored JSON decoded, inside a grade;
- ``source_row``: the stored raw row decoded and unpacked under its columns, a column of the row.
"""

CASE_FIELDS = (
    ("case_id", "text"),
    ("input", "text"),
    ("expected", "text"),
    ("domain", "text"),
    ("request_id", "text"),
    ("history", "json"),
    ("context", "json"),
    ("metadata", "json"),
)
"""The case's columns of a line after the case index, with the kind of each."""
CASE_TAIL = (("source_line", "text"), ("source_row", "source_row"))
"""The case's columns of a line after its grades, with the kind of each."""
ACTIVATION = ("skills_offered", "skills_loaded", "first_load_turn")
"""The last columns of a line, after the transcript summary: what an offered arm showed and loaded."""

_FLOAT_KINDS = frozenset({"top", "nested", "latency"})
_CASE, _CASE_TAIL = "case", "case_tail"
_REMEMBER = 100_000
"""Cases (and stored JSON values) a worker keeps what it made of: some 50 MB at most."""
_MAX_PAIRS = 60
"""Key-value pairs per ``json_object`` call (SQLite takes at most 127 arguments)."""

_EXECUTED = "r.executed_at IS NOT NULL"
_J_TRUE, _J_FALSE, _J_EMPTY = "json('true')", "json('false')", "json('[]')"
_J_ZERO, _J_ONE = "json('0.0')", "json('1.0')"
_PLACE = f"json('{PLACE.decode()}')"


@dataclass(frozen=True)
class _Col:
    """A column of a line: its SQL in an executed run and in one that is not, and the kind and SQL of
    the value of its place (none when it never has one)."""

    name: str
    sql: str
    unexecuted: str
    kind: str | None = None
    placed: str | None = None


class _Sql:
    """The SQL of a line's values, fast (a value of an unexpected type stops the query) or careful
    (it writes `BAD`)."""

    def __init__(self, careful: bool) -> None:
        self.careful = careful
        self.bad = f"json('{BAD.decode()}')" if careful else "json('stop')"  # (malformed: raises)

    def as_text(self, v: str) -> str:
        """A TEXT column (text, NULL, or a blob, which ``json_object`` refuses)."""
        return f"iif(typeof({v}) = 'blob', {self.bad}, {v})" if self.careful else v

    def as_int(self, v: str) -> str:
        """An INTEGER column: integers, text and NULL as they are; a real is SQLite's text, not repr."""
        return f"(CASE typeof({v}) WHEN 'real' THEN {self.bad} WHEN 'blob' THEN {self.bad} ELSE {v} END)"

    def as_bool(self, v: str) -> str:
        """A verdict: ``bool(value)`` of an integer; anything else is for Python."""
        return (
            f"(CASE {v} WHEN 1 THEN {_J_TRUE} WHEN 0 THEN {_J_FALSE} ELSE (CASE typeof({v}) "
            f"WHEN 'integer' THEN {_J_TRUE} WHEN 'null' THEN NULL ELSE {self.bad} END) END)"
        )

    def as_float(self, name: str, v: str, kind: str = "top", gated: bool = False) -> _Col:
        """A REAL column: any value is a place (Python writes floats; ``value or 0.0`` for a latency,
        NULL — never reported — as null)."""
        sql = f"iif({v} IS NULL, NULL, {_PLACE})"
        if gated:
            return _Col(name, sql, "NULL", kind, f"iif({_EXECUTED}, {v}, NULL)")
        return _Col(name, sql, sql, kind, v)

    def as_score(self, name: str, v: str, kind: str = "top") -> _Col:
        """A score: 0.0 and 1.0 (a verdict's) written here, any other value a place."""
        sql = f"(CASE {v} WHEN 1.0 THEN {_J_ONE} WHEN 0.0 THEN {_J_ZERO} ELSE iif({v} IS NULL, NULL, {_PLACE}) END)"
        return _Col(name, sql, sql, kind, f"(CASE WHEN {v} IN (1.0, 0.0) THEN NULL ELSE {v} END)")

    def middle(
        self, outcome_words: dict[str, str], graders: Sequence[tuple[str, int]], names: Sequence[str]
    ) -> list[_Col]:
        """The columns after the case's and before the grades, named `names`. `graders` are each
        grader's sheet cells: ``float`` for a score alone, else a verdict and, with 2 cells, its score."""
        outcome = outcome_word_sql(outcome_words, self.as_text("r.state"))
        cols: list[_Col] = []
        named = iter(names)

        def plain(sql: str, gated: bool = False) -> None:
            cols.append(_Col(next(named), sql, "NULL" if gated else sql))

        plain(self.as_text("r.state"))
        plain(outcome)
        plain(self.as_text("r.failure_type"))
        plain(self.as_text("r.error"))
        plain(self.as_bool("r.passed"))
        cols.append(self.as_score(next(named), "r.score"))
        for i, (kind, n) in enumerate(graders):
            ok = f"g{i}.status = 'ok'"
            if kind != "float":
                plain(f"iif({ok}, {self.as_bool(f'g{i}.passed')}, NULL)")
            if kind == "float" or n > 1:
                cols.append(self.as_score(next(named), f"iif({ok}, g{i}.score, NULL)"))
        plain(self.as_text("r.prediction"), gated=True)
        plain(self.as_text("r.reason"), gated=True)
        cols.append(self.as_float(next(named), "r.confidence", gated=True))
        for c in ("evidence_refs", "files_read", "sections_read"):
            v = f"r.{c}"
            sql = f"(CASE WHEN {v} IS NULL OR {v} = '' OR {v} = '[]' THEN {_J_EMPTY} ELSE {_PLACE} END)"
            placed = f"iif({_EXECUTED} AND {v} <> '' AND {v} <> '[]', {v}, NULL)"
            cols.append(_Col(next(named), sql, "NULL", "list", placed))
        plain(self.as_text("r.model"), gated=True)
        tokens = "r.input_tokens IS NULL AND r.output_tokens IS NULL"
        whole = (
            "typeof(r.input_tokens) IN ('integer','null') AND typeof(r.output_tokens) IN ('integer','null') "
            "AND typeof(ifnull(r.input_tokens, 0) + ifnull(r.output_tokens, 0)) = 'integer'"
        )
        for v in (
            "ifnull(r.input_tokens, 0)",
            "ifnull(r.output_tokens, 0)",
            "ifnull(r.input_tokens, 0) + ifnull(r.output_tokens, 0)",
        ):
            plain(f"(CASE WHEN {tokens} THEN NULL WHEN {whole} THEN {v} ELSE {self.bad} END)", gated=True)
        cols.append(self.as_float(next(named), "r.cost", gated=True))
        plain(self.as_int("r.cached_calls"))
        cols.append(self.as_float(next(named), "r.cost_saved"))
        cols.append(self.as_float(next(named), "r.latency_ms", "latency", gated=True))
        plain(self.as_int("r.attempts"))
        plain(self.as_text("r.session_id"), gated=True)
        for c in ("started_by", "started_at", "executed_at", "finished_at"):
            plain(self.as_text(f"r.{c}"))
        plain(self.as_text("r.raw_output"), gated=True)
        if next(named, None) is not None or len(cols) != len(names):
            raise ValueError(f"{len(names)} column names for the {len(cols)} columns of a runs JSONL line")
        return cols

    def grade(self, i: int, fields: Sequence[str]) -> list[_Col]:
        """The fields of grader ``g<i>``'s latest grade, as the runs JSONL's ``grades`` writes them."""
        g = f"g{i}"
        out = []
        for f in fields:
            v = f"{g}.{f}"
            if f == "score":
                out.append(self.as_score(f, v, "nested"))
            elif f == "judge_cost":
                out.append(self.as_float(f, v, "nested"))
            elif f == "dimensions":
                out.append(_Col(f, f"iif({v} IS NULL, NULL, {_PLACE})", "", "dimensions", v))
            elif f == "passed":
                out.append(_Col(f, self.as_bool(v), ""))
            elif f == "other_run_id":  # (a verdict on a pair belongs to both runs: the Python path's)
                out.append(_Col(f, f"iif({v} IS NULL, NULL, {self.bad})", ""))
            elif f == "id":
                out.append(_Col(f, v, ""))
            else:
                out.append(_Col(f, self.as_text(v), ""))  # the others are TEXT columns
        return out

    def grades(self, graders: Sequence[str], fields: Sequence[str]) -> tuple[str, list[_Col]]:
        """SQL: the ``grades`` object (text); and the columns of its places, in order."""
        order = sorted(range(len(graders)), key=lambda i: graders[i])  # by name, as Python sorts them
        if not order:
            return "'null'", []
        cols = {i: self.grade(i, fields) for i in order}
        entries = [
            f"(CASE WHEN g{i}.id IS NULL THEN NULL WHEN g{i}.experiment_id IS NOT :exp THEN {self.bad} "
            f"ELSE {_quote(_key(graders[i]))} || {_object(cols[i], executed=True)} END)"
            for i in order
        ]
        places = [c for i in order for c in cols[i]]
        if len(entries) == 1:
            return f"ifnull('{{' || {entries[0]} || '}}', 'null')", places
        joined = " || ".join(f"ifnull(',' || {e}, '')" for e in entries)
        none = " AND ".join(f"g{i}.id IS NULL" for i in order)
        return f"(CASE WHEN {none} THEN 'null' ELSE '{{' || substr({joined}, 2) || '}}' END)", places


def _key(name: str) -> str:
    """A key as Python's encoder writes it, with its colon."""
    return json.dumps(name, ensure_ascii=False) + ":"


def _quote(text: str) -> str:
    """An SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _object(cols: Sequence[_Col], *, executed: bool) -> str:
    """SQL: a JSON object of `cols` (one ``json_object`` per `_MAX_PAIRS` pairs, spliced), as in an
    executed run or one that is not."""
    parts = [cols[i : i + _MAX_PAIRS] for i in range(0, len(cols), _MAX_PAIRS)]
    made = [
        f"json_object({', '.join(f'{_quote(c.name)}, {c.sql if executed else c.unexecuted}' for c in part)})"
        for part in parts
    ]
    if len(made) == 1:
        return made[0]
    # No part ends with an object of its own, so the brace cut off is the part's.
    return (
        " || ',' || ".join(f"substr(rtrim({m}, '}}'), {1 if k == 0 else 2})" for k, m in enumerate(made))
        + " || '}'"
    )


def _inner(sql: str) -> str:
    """SQL: an object's members, without its braces."""
    return f"substr(rtrim({sql}, '}}'), 2)"


def _line(
    sql: _Sql,
    names: Sequence[str],
    outcome_words: dict[str, str],
    graders: Sequence[tuple[str, str, int]],
    grade_fields: Sequence[str],
) -> tuple[str, list[tuple[str, str]]]:
    """SQL: a runs JSONL line, as a blob, and the (kind, SQL value) of each of its places, in order.

    `names` are the runs table's columns: the run's five, the case's (`CASE_FIELDS`), the rest before
    ``grades``, ``grades``, the case's tail (`CASE_TAIL`), the transcript summary, the skills offered and
    loaded (`ACTIVATION`).
    """
    n_case, n_tail, n_act = len(CASE_FIELDS), len(CASE_TAIL), len(ACTIVATION)
    if (
        [n for n, _ in CASE_FIELDS] != list(names[5 : 5 + n_case])
        or [n for n, _ in CASE_TAIL] != list(names[-1 - n_act - n_tail : -1 - n_act])
        or tuple(names[-n_act:]) != ACTIVATION
    ):
        raise ValueError(f"not the columns of a runs JSONL line: {list(names)}")
    middle = sql.middle(
        outcome_words, [(k, n) for _, k, n in graders], names[5 + n_case : -2 - n_act - n_tail]
    )
    grades, grade_cols = sql.grades([g for g, _, _ in graders], grade_fields)
    mid = f"(CASE WHEN {_EXECUTED} THEN {_object(middle, executed=True)} ELSE {_object(middle, executed=False)} END)"

    def key(name: str) -> str:
        return _key(name).replace("%", "%%")

    # One printf joins the parts (each || copied the line so far). The experiment and the arm, the same
    # in every line of a slice, come written by Python; so do the case's columns, in their places. (A
    # slice's runs have an integer round, the one asked for; a case index may be a real in a foreign store.)
    place = PLACE.decode()
    case_idx = f"(CASE typeof(r.case_idx) WHEN 'integer' THEN r.case_idx ELSE {sql.bad} END)"
    fmt = (
        f"{{{key(names[0])}%d,{key(names[1])}%s,{key(names[2])}%s,{key(names[3])}%d,{key(names[4])}%s,"
        f"{place},%s,{key(names[-2 - n_act - n_tail])}%s,{place},{key(names[-1 - n_act])}%s,"
        + ",".join(f"{key(n)}%s" for n in ACTIVATION)
        + "}"
    )
    stored = [f"iif(r.{c} IS NULL, 'null', {_quote(place)})" for c in ("transcript_summary", *ACTIVATION[:2])]
    turn = f"(CASE typeof(r.first_load_turn) WHEN 'integer' THEN r.first_load_turn WHEN 'null' THEN 'null' ELSE {sql.bad} END)"
    line = (
        f"CAST(printf({_quote(fmt)}, r.id, :experiment_json, :arm_json, r.round + 1, {case_idx}, "
        f"{_inner(mid)}, {grades}, {', '.join(stored)}, {turn}) AS BLOB)"
    )
    places = [(_CASE, "r.case_idx")]
    places += [(str(c.kind), str(c.placed)) for c in (*middle, *grade_cols) if c.placed is not None]
    places += [(_CASE_TAIL, "r.case_idx"), ("summary", "r.transcript_summary")]
    places += [("json", f"r.{c}") for c in ACTIVATION[:2]]
    return line, places
