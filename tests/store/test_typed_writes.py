"""The runner's writes are typed records whose fields are their tables' columns (issue 39, item 2)."""

from __future__ import annotations

import pytest

from abbench.store import AttemptWrite, GradeWrite
from abbench.store._writes import ATTEMPT_FIELDS, GRADE_FIELDS, RUN_CHANGE_FIELDS
from tests.conftest import REPO

_FILLED_BY_THE_STORE = {
    "run_attempts": {"id"},
    "grades": {"id", "batch_id", "created_at"},
    "runs": {"id", "experiment_id", "arm_id", "case_idx", "case_id", "round"},  # a run's identity
}


@pytest.mark.parametrize(
    ("table", "record_fields"),
    [("run_attempts", ATTEMPT_FIELDS), ("grades", GRADE_FIELDS), ("runs", RUN_CHANGE_FIELDS)],
)
def test_each_field_of_a_write_is_a_column_of_its_table(store, table, record_fields):
    columns = [r["name"] for r in store.query(f"PRAGMA table_info({table})")]
    assert len(set(record_fields)) == len(record_fields)
    assert {*record_fields, *_FILLED_BY_THE_STORE[table]} == set(columns)


@pytest.mark.parametrize(
    ("make", "misspelt"),
    [
        (lambda **kw: AttemptWrite(1, 1, "executed", **kw), "latency"),
        (lambda **kw: GradeWrite(1, 1, "label_match", "rule", "ok", **kw), "scroe"),
    ],
)
def test_a_misspelt_field_fails_where_the_record_is_made(make, misspelt):
    with pytest.raises(TypeError, match=misspelt):
        make(**{misspelt: 1.0})


def test_a_write_is_immutable_and_has_no_instance_dict():
    attempt = AttemptWrite(1, 1, "executed", cost=0.5)
    with pytest.raises(AttributeError):
        attempt.cost = 1.0  # type: ignore[misc]
    assert not hasattr(attempt, "__dict__")
    assert attempt.cost == 0.5 and attempt.model is None


@pytest.mark.slow
def test_mypy_names_a_misspelt_field(tmp_path):
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path / "writes.py"
    snippet.write_text(
        "from abbench.store import AttemptWrite, GradeWrite, RunChange\n"
        'AttemptWrite(1, 1, "executed", latency=3.0)\n'
        'GradeWrite(1, 1, "label_match", "rule", "ok", scroe=1.0)\n'
        'AttemptWrite(1, 1, "executed", latency_ms=3.0)\n'
        'change: RunChange = {"attempts": 1, "finshed_at": None}\n'
    )
    # The typed names' own modules, given by path, with every other import skipped: the check reads the
    # same class and TypedDict definitions as a full run does, in ~2 s instead of ~20 s of a cold cache.
    store = REPO / "abbench" / "store"
    out, _, status = api.run(
        [
            str(snippet),
            str(store / "__init__.py"),
            str(store / "_writes.py"),
            "--follow-imports=skip",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-error-summary",
        ]
    )
    errors = [line for line in out.splitlines() if line.startswith(str(snippet))]
    assert status == 1
    assert len(errors) == 3
    assert 'Unexpected keyword argument "latency" for "AttemptWrite"' in errors[0]
    assert 'Unexpected keyword argument "scroe" for "GradeWrite"' in errors[1]
    assert '"finshed_at"' in errors[2] and "RunChange" in errors[2]
