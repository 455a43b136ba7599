"""The tables an experiment exports: runs, grades, reviews and the comparison lists, as typed columns."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from abbench.errors import UsageError
from abbench.types import Case, GradeStatus, outcome_word, run_outcome

if TYPE_CHECKING:
    import pandas as pd

    from abbench.store import Experiment, Grade, RunRecord, Store

KINDS = ("text", "int", "float", "bool", "datetime", "json")
"""What a column holds; writers use it to keep numbers numbers and dates dates."""


class JsonText(str):
    """A JSON value already encoded, as the store keeps it (compact, non-ASCII as is): what the CSV and
    XLSX writers put in a cell, without decoding and encoding it again."""

    __slots__ = ()


@dataclass(frozen=True)
class Column:
    """One column of an exported table.

    Attributes:
        name: The header.
        kind: One of `KINDS`: ``text``, ``int``, ``float``, ``bool``, ``datetime`` (ISO-8601 text in
            the store, a real date in XLSX) or ``json`` (a list or object: JSON text in CSV/XLSX,
            the value itself in JSONL).
        description: What the column means, for the documentation and ``--json`` listings.
        jsonl_only: Kept only in JSONL (raw rows and other bulky, nested values).
    """

    name: str
    kind: str = "text"
    description: str = ""
    jsonl_only: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:  # a programming error, caught by the tests
            raise ValueError(f"column {self.name}: unknown kind {self.kind!r}")


@dataclass(frozen=True)
class Table:
    """Rows to export, with their columns; `rows()` yields one tuple per row in column order.

    Attributes:
        what: ``runs``, ``grades``, ``reviews`` or ``comparison``.
        experiment: The experiment's name.
        columns: The columns, in order.
        rows: A function returning a fresh iterator over the rows (so a table can be written twice).
        notes: Things a reader of the file should know (e.g. why a table is empty).
        cells: Optionally, a function returning the same rows for spreadsheets, cheaper to make: JSON
            values as the `JsonText` the store keeps, the JSONL-only columns None.
        csv_lines: Optionally, a function returning the CSV's data lines ready made (UTF-8, each ended
            by CRLF), ``(lines, how many)`` at a time: byte for byte what `write_csv` makes of
            `spreadsheet_rows`. Given the binary file they go to, it may write them into it itself, as
            `json_lines` may.
        xlsx_rows: Optionally, a function returning the sheet's data rows ready made (``<row>``
            elements numbered from 2, UTF-8), a list at a time: byte for byte what `write_xlsx` makes
            of `spreadsheet_rows`.
        json_lines: Optionally, a function returning the JSONL's lines ready made (UTF-8, each ended by
            a newline), ``(lines, how many)`` at a time: byte for byte what `write_jsonl` makes of
            `rows`. Given the binary file they go to, it may write them into it itself (from worker
            processes) and hand back empty bytes with their counts, leaving the file after them.
    """

    what: str
    experiment: str
    columns: tuple[Column, ...]
    rows: Callable[[], Iterator[tuple[Any, ...]]] = field(repr=False)
    notes: tuple[str, ...] = ()
    cells: Callable[[], Iterator[tuple[Any, ...]]] | None = field(default=None, repr=False)
    csv_lines: Callable[..., Iterator[tuple[bytes, int]]] | None = field(default=None, repr=False)
    xlsx_rows: Callable[[], Iterator[list[bytes]]] | None = field(default=None, repr=False)
    json_lines: Callable[..., Iterator[tuple[bytes, int]]] | None = field(default=None, repr=False)

    def spreadsheet_rows(self) -> Iterator[tuple[Any, ...]]:
        """The rows as CSV and XLSX write them: `cells` when the table has that cheaper form (JSON
        columns as `JsonText`, the JSONL-only columns left None), else `rows`."""
        return self.cells() if self.cells is not None else self.rows()

    @property
    def names(self) -> list[str]:
        """The column headers."""
        return [c.name for c in self.columns]

    def records(self, *, jsonl: bool = True) -> Iterator[dict[str, Any]]:
        """The rows as dicts (without the JSONL-only columns unless `jsonl`)."""
        keep = [i for i, c in enumerate(self.columns) if jsonl or not c.jsonl_only]
        names = [self.columns[i].name for i in keep]
        for row in self.rows():
            yield {n: row[i] for n, i in zip(names, keep, strict=True)}

    def to_pandas(self) -> pd.DataFrame:
        """The table as a pandas DataFrame (JSON columns keep their Python values)."""
        import pandas as pd

        return pd.DataFrame.from_records(list(self.rows()), columns=self.names)


def _case_columns() -> list[Column]:
    return [
        Column("case_id", "text", "The case's id in the dataset."),
        Column("input", "text", "The query the agent answered."),
        Column("expected", "text", "The gold label or reference answer (empty when the dataset has none)."),
        Column("domain", "text", "The case's domain (垂域)."),
        Column("request_id", "text", "The production request the case came from."),
        Column("history", "json", "Earlier conversation turns."),
        Column("context", "json", "Extra context the agent was given."),
        Column("metadata", "json", "The case's free-form metadata."),
    ]


def _case_values(case: Case | None) -> tuple[Any, ...]:
    if case is None:
        return (None,) * 8
    return (
        case.case_id,
        case.input,
        case.expected,
        case.domain,
        case.request_id,
        case.history,
        case.context,
        case.metadata,
    )


def runs_table_records(store: Store, exp: Experiment) -> Table:
    """The runs table built from run records (`abbench.export._runs.runs_table` for experiments with a
    pairwise judge): one row per run with the case, the output, the state and the latest grades.

    The rows stream from the store a chunk at a time (runs, then those runs' latest grades), so writing
    a table of any size holds one chunk of runs in memory, not the experiment.
    """
    cases = dict(enumerate(store.datasets.load_cases(exp.dataset_id)))
    summary = store.grades.summary(exp.id)
    graders = _grader_columns(exp, summary)
    pairwise = [grader for grader, kind, _, _ in summary if kind == "pairwise"]

    def rows() -> Iterator[tuple[Any, ...]]:
        # Arm, round, case order: the first arm's first round lists the cases in dataset order, so a
        # re-import that keeps the first row of each case id gets the dataset back (RUNS_PROFILE).
        for chunk in store.runs.iter_records(exp.id):
            latest = store.grades.latest_of_runs(exp.id, [r.id for r in chunk], pairwise=pairwise)
            per_run = _grades_per_run(latest)
            for r in chunk:
                yield _run_row(exp, r, cases.get(r.case_idx), per_run.get(r.id, {}), graders)

    return Table("runs", exp.name, tuple(_run_columns(graders)), rows)


def _grades_per_run(latest: list[Grade]) -> dict[int, dict[str, Grade]]:
    """Run id -> grader -> its latest grade; a pairwise verdict belongs to both runs of the pair."""
    per_run: dict[int, dict[str, Grade]] = {}
    for g in latest:
        per_run.setdefault(g.run_id, {})[g.grader] = g
        if g.other_run_id is not None:
            per_run.setdefault(g.other_run_id, {})[g.grader] = g
    return per_run


def _run_columns(graders: list[tuple[str, list[Column]]]) -> list[Column]:
    """The columns of `runs_table`, the graders' own between the verdict and the answer."""
    return [
        Column("run_id", "int", "The run's id in the store."),
        Column("experiment", "text", "The experiment's name."),
        Column("arm", "text", "The arm (control first)."),
        Column("round", "int", "The round, from 1 (as record_runs and every view count them)."),
        Column("case_idx", "int", "The case's position in the dataset, from 0."),
        *_case_columns(),
        Column(
            "state",
            "text",
            "The store's state: pending, running, executed, evaluating, pass, fail or cancelled "
            "(fail holds wrong answers and runs without a verdict alike: see outcome).",
        ),
        Column(
            "outcome",
            "text",
            "What became of the run, in words: right, wrong, execution failed, grading failed, cancelled, "
            "or its open state (pending, running, waiting for grading, grading).",
        ),
        Column(
            "failure_type", "text", "Why the execution failed (agent_error, timeout, ...); empty otherwise."
        ),
        Column("error", "text", "The execution or grading error, in words."),
        Column("passed", "bool", "The run's verdict over all its graders."),
        Column("score", "float", "The run's combined score."),
        *[c for _, cols in graders for c in cols],
        Column("prediction", "text", "The agent's label or answer."),
        Column("reason", "text", "The agent's stated reason."),
        Column("confidence", "float", "The agent's confidence, 0..1."),
        Column("evidence_refs", "json", "Skill references (path#heading) the agent cited."),
        Column("files_read", "json", "Skill files the agent opened."),
        Column("sections_read", "json", "Skill sections the agent opened."),
        Column("model", "text", "The model that answered, as the endpoint reported it."),
        Column("input_tokens", "int", "Prompt tokens."),
        Column("output_tokens", "int", "Completion tokens."),
        Column("total_tokens", "int", "Input plus output tokens."),
        Column(
            "cost",
            "float",
            "What the run's answer cost (USD unless the price table says otherwise), calls answered "
            "from the response cache included.",
        ),
        Column("cached_calls", "int", "Model calls of the execution answered from the response cache."),
        Column("cost_saved", "float", "What those calls would have cost: saved, not spent."),
        Column("latency_ms", "float", "Wall time of the execution, in milliseconds."),
        Column("attempts", "int", "Execution attempts."),
        Column("session_id", "text", "The isolated session the run used."),
        Column("started_by", "text", "Who ran it."),
        Column("started_at", "datetime", "When the execution started (UTC)."),
        Column("executed_at", "datetime", "When the execution finished (UTC)."),
        Column("finished_at", "datetime", "When grading finished (UTC)."),
        Column("raw_output", "text", "The agent's final raw text."),
        Column("grades", "json", "The latest grade of every grader, in full.", jsonl_only=True),
        Column("source_line", "text", "Where the case sat in its file.", jsonl_only=True),
        Column("source_row", "json", "The case's raw row as read from the file.", jsonl_only=True),
        Column(
            "transcript_summary", "json", "Counts of the session's messages and tool calls.", jsonl_only=True
        ),
        Column(
            "skills_offered",
            "json",
            "The skills an offered arm's catalogue showed (null when the skill was injected or none).",
            jsonl_only=True,
        ),
        Column(
            "skills_loaded",
            "json",
            "The offered skills the agent loaded, in load order ([]: none; null when nothing was offered).",
            jsonl_only=True,
        ),
        Column(
            "first_load_turn",
            "int",
            "The model turn at which the first skill was loaded, from 1.",
            jsonl_only=True,
        ),
    ]


def _run_row(
    exp: Experiment,
    r: RunRecord,
    case: Case | None,
    grades: dict[str, Grade],
    graders: list[tuple[str, list[Column]]],
) -> tuple[Any, ...]:
    """One row of `runs_table`, in the order of `_run_columns`."""
    out = r.output
    grade_cells = [cell for name, cols in graders for cell in _grade_cells(grades.get(name), cols, r)]
    usage = out.usage if out else None
    return (
        r.id,
        exp.name,
        r.arm,
        r.round + 1,  # rounds from 1, as every view shows them (the store counts from 0)
        r.case_idx,
        *_case_values(case),
        r.state,
        outcome_word(run_outcome(r.state, r.failure_type, r.passed)),
        r.failure_type,
        r.error,
        r.passed,
        r.score,
        *grade_cells,
        out.prediction if out else None,
        out.reason if out else None,
        out.confidence if out else None,
        list(out.evidence_refs) if out else None,
        list(out.files_read) if out else None,
        list(out.sections_read) if out else None,
        out.model if out else None,
        usage.input_tokens if usage else None,
        usage.output_tokens if usage else None,
        usage.total_tokens if usage else None,
        out.cost if out else None,
        r.cached_calls,
        r.cost_saved,
        out.latency_ms if out else None,
        r.attempts,
        out.session_id if out else None,
        r.started_by,
        r.started_at,
        r.executed_at,
        r.finished_at,
        out.raw_output if out else None,
        {name: _plain_grade(g) for name, g in sorted(grades.items())} or None,
        case.source_line if case is not None else None,
        case.source_row if case is not None else None,
        r.transcript_summary or None,
        None if r.skills_offered is None else list(r.skills_offered),
        None if r.skills_loaded is None else list(r.skills_loaded),
        r.first_load_turn,
    )


def _grader_columns(
    exp: Experiment, summary: list[tuple[str, str, int, int]]
) -> list[tuple[str, list[Column]]]:
    """One column per grader (its pass/fail, else its score, else its pairwise verdict); judges that
    both pass and score get a second ``.score`` column. `summary` is `store.grades.summary`'s."""
    order: list[str] = []
    for spec in exp.settings.graders:  # (the definition as stored: no pydantic model to load)
        name = spec if isinstance(spec, str) else (spec.get("name") or spec.get("type"))
        if isinstance(name, str) and ":" not in name and name not in order:
            order.append(name)
    seen = {grader: (kind, ok, with_verdict) for grader, kind, ok, with_verdict in summary}
    order += [grader for grader, *_ in summary if grader not in order]
    out = []
    for name in order:
        kind, ok, with_verdict = seen.get(name, ("rule", 0, 0))
        col = f"grade.{name}"
        if kind == "pairwise":
            cols = [Column(col, "text", f"Pairwise verdict of {name}: a, b or tie (in arm order).")]
        elif with_verdict or not ok:
            cols = [Column(col, "bool", f"Whether {name} graded the run right (latest grade).")]
            if kind == "judge":
                cols.append(Column(col + ".score", "float", f"The score {name} gave (latest grade)."))
        else:
            cols = [Column(col, "float", f"The score {name} gave (latest grade).")]
        out.append((name, cols))
    return out


def _grade_cells(grade: Grade | None, cols: list[Column], run: RunRecord) -> list[Any]:
    if grade is None or grade.status != GradeStatus.OK:
        return [None] * len(cols)
    first = cols[0]
    if first.kind == "text":
        return [grade.verdict]
    if first.kind == "float":
        return [grade.score]
    return [grade.passed, grade.score][: len(cols)]


PLAIN_GRADE_FIELDS = (
    "id",
    "batch_id",
    "kind",
    "status",
    "passed",
    "score",
    "verdict",
    "dimensions",
    "comment",
    "error",
    "judge_model",
    "judge_cost",
    "other_run_id",
    "created_at",
)
"""The fields of a grade in a runs JSONL's ``grades``, in order."""


def _plain_grade(g: Grade) -> dict[str, Any]:
    return {k: getattr(g, k) for k in PLAIN_GRADE_FIELDS}


def grades_table(store: Store, exp: Experiment) -> Table:
    """Every grade of the experiment, old ones included, with its batch and whether it is the latest.

    The grades stream from the store a chunk at a time; of the runs, only what names them is held.
    """
    runs = store.runs.keys(exp.id)
    columns = (
        Column("grade_id", "int", "The grade's id (grades are appended, never overwritten)."),
        Column("batch_id", "text", "The experiment's grade batch."),
        Column(
            "latest", "bool", "Whether this is the latest grade of its grader on its run (the one shown)."
        ),
        Column("experiment", "text", "The experiment's name."),
        Column("run_id", "int", "The graded run (for pairwise graders: the first arm's run)."),
        Column("other_run_id", "int", "For pairwise graders: the second arm's run."),
        Column("arm", "text", "The graded run's arm."),
        Column("other_arm", "text", "For pairwise graders: the second run's arm."),
        Column("case_id", "text", "The case."),
        Column("round", "int", "The round, from 1 (as record_runs and every view count them)."),
        Column("grader", "text", "The grader's name."),
        Column("kind", "text", "rule, judge or pairwise."),
        Column("status", "text", "ok, or error when the grader could not reach a verdict."),
        Column("passed", "bool", "The verdict."),
        Column("score", "float", "The score."),
        Column("verdict", "text", "Pairwise: a, b or tie (in arm order)."),
        Column("dimensions", "json", "Scores per rubric dimension."),
        Column("comment", "text", "The grader's explanation."),
        Column("error", "text", "Why grading failed."),
        Column("retryable", "bool", "Whether grading again may help."),
        Column("judge_model", "text", "The judge's model."),
        Column(
            "judge_cost",
            "float",
            "What this judge call cost: the judge's, not an arm's (a pairwise grade compares arm and other_arm).",
        ),
        Column("input_tokens", "int", "Judge prompt tokens."),
        Column("output_tokens", "int", "Judge completion tokens."),
        Column("created_at", "datetime", "When the grade was written (UTC)."),
        Column("raw_output", "text", "The judge's raw text."),
        Column("details", "json", "Seed, slot order, both-order verdicts and the like."),
    )

    def rows() -> Iterator[tuple[Any, ...]]:
        latest_ids = store.grades.latest_ids(exp.id)
        for g in (g for chunk in store.grades.iter_records(exp.id) for g in chunk):
            arm, case_id, round_ = runs.get(g.run_id, (None, None, None))
            other = runs.get(g.other_run_id) if g.other_run_id is not None else None
            yield (
                g.id,
                g.batch_id,
                g.id in latest_ids,
                exp.name,
                g.run_id,
                g.other_run_id,
                arm,
                other[0] if other else None,
                case_id,
                None if round_ is None else round_ + 1,
                g.grader,
                g.kind,
                g.status,
                g.passed,
                g.score,
                g.verdict,
                g.dimensions,
                g.comment,
                g.error,
                g.retryable,
                g.judge_model,
                g.judge_cost,
                g.input_tokens,
                g.output_tokens,
                g.created_at,
                g.raw_output,
                g.details,
            )

    return Table("grades", exp.name, columns, rows)


def reviews_table(store: Store, exp: Experiment) -> Table:
    """Every review of the experiment, oldest first (history included, the latest per case and arm
    flagged), with the case and the answer reviewed."""
    cases = {c.case_id: c for c in store.datasets.load_cases(exp.dataset_id)}
    runs = {r.id: r for r in store.runs.records(exp.id)}
    columns = (
        Column("review_id", "int", "The review's id (reviews are appended, never overwritten)."),
        Column("latest", "bool", "Whether this is the latest verdict on its case and arm (the one shown)."),
        Column("experiment", "text", "The experiment's name."),
        Column("case_id", "text", "The reviewed case."),
        Column("arm", "text", "The arm whose answer was reviewed."),
        Column("run_id", "int", "The reviewed run."),
        Column(
            "verdict",
            "text",
            "gold_correct, model_correct, ambiguous_standard, missing_capability_info or unsure.",
        ),
        Column("note", "text", "The reviewer's note."),
        Column("reviewer", "text", "Who reviewed."),
        Column("created_at", "datetime", "When (UTC)."),
        Column("input", "text", "The case's query."),
        Column("expected", "text", "The gold label."),
        Column("prediction", "text", "The reviewed run's prediction."),
        Column("reason", "text", "The reviewed run's reason."),
    )

    def rows() -> Iterator[tuple[Any, ...]]:
        latest = {r.id for r in store.reviews.all(exp.id, latest=True)}
        for rv in store.reviews.all(exp.id, latest=False):
            case = cases.get(rv.case_id)
            run = runs.get(rv.run_id) if rv.run_id is not None else None
            out = run.output if run else None
            yield (
                rv.id,
                rv.id in latest,
                exp.name,
                rv.case_id,
                rv.arm,
                rv.run_id,
                rv.verdict,
                rv.note,
                rv.reviewer,
                rv.created_at,
                case.input if case else None,
                case.expected if case else None,
                out.prediction if out else None,
                out.reason if out else None,
            )

    return Table("reviews", exp.name, columns, rows)


def comparison_table(
    store: Store,
    exp: Experiment,
    *,
    arms: Sequence[str] | None = None,
    vs: int | str | Experiment | None = None,
) -> Table:
    """How every paired case moved between two arms: fixed and regressed first, then the unchanged,
    then the cases left out of the comparison (with why).

    The pair is the one a report shows: `arms` ``(A, B)`` of this experiment, or this experiment's
    last arm against `vs`'s last arm (`arms` then names the baseline's arm first), or else the first
    arm against the last.
    """
    from abbench.compare import CATEGORIES, compare_arms, compare_experiments  # scipy: only this table

    if vs is not None:
        a_arm, b_arm = tuple(arms) if arms else (None, None)
        comparison = compare_experiments(vs, exp, arm_a=a_arm, arm_b=b_arm, store=store, details=False)
    else:
        if len(exp.arms) < 2:
            raise UsageError(
                f"experiment {exp.name!r} has one arm: export its comparison against another experiment "
                "(vs=..., CLI --vs EXP_B)"
            )
        # Without arms, the experiment's decision: pair (or its two arms); three or more arms are refused.
        a_arm, b_arm = tuple(arms) if arms else (None, None)
        comparison = compare_arms(exp, a_arm, b_arm, store=store, details=False)
    by_id = {c.case_id: c for c in store.datasets.load_cases(exp.dataset_id)}
    a_name, b_name = comparison.a.arm, comparison.b.arm
    order = {name: i for i, name in enumerate(CATEGORIES)}
    columns = (
        Column("case_id", "text", "The case."),
        Column(
            "category", "text", "fixed, regressed, unchanged_right, unchanged_wrong, unchanged, or excluded."
        ),
        Column("domain", "text", "The case's domain."),
        Column("arm_a", "text", "The baseline arm (A)."),
        Column("arm_b", "text", "The arm compared with it (B)."),
        Column("a_passed", "int", "A's rounds graded right."),
        Column("a_graded", "int", "A's graded rounds."),
        Column("b_passed", "int", "B's rounds graded right."),
        Column("b_graded", "int", "B's graded rounds."),
        Column("a_value", "float", "A's share of rounds right (or mean score) on the case."),
        Column("b_value", "float", "B's."),
        Column("delta", "float", "B − A."),
        Column("input", "text", "The case's query."),
        Column("expected", "text", "The gold label."),
        Column("note", "text", "Why an excluded case is left out."),
    )
    changes = sorted(comparison.cases, key=lambda c: order.get(c.category, len(order)))
    excluded = [(cid, why) for why, ids in comparison.excluded.items() for cid in ids]

    def rows() -> Iterator[tuple[Any, ...]]:
        for c in changes:
            case = by_id.get(c.case_id)
            yield (
                c.case_id,
                c.category,
                c.domain,
                a_name,
                b_name,
                c.a_passed,
                c.a_graded,
                c.b_passed,
                c.b_graded,
                c.a_value,
                c.b_value,
                c.delta,
                case.input if case else None,
                case.expected if case else None,
                None,
            )
        for cid, why in excluded:
            case = by_id.get(cid)
            yield (cid, "excluded", case.domain if case else None, a_name, b_name, *([None] * 7),
                   case.input if case else None, case.expected if case else None, why)  # fmt: skip

    notes = (comparison.verdict.text,)
    return Table("comparison", exp.name, columns, rows, notes)
