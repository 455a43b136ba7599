"""A stored experiment's definition reads back as the validated spec model, and the writer's batch is atomic."""

from __future__ import annotations

import json
import sqlite3

import pytest

from abbench.runner import ExperimentSpec, create_experiment
from abbench.store import (
    DEFAULT_CONCURRENCY,
    DEFAULT_GRADERS,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    StoredExperimentSpec,
    WriteBatch,
)


def test_the_stored_definition_is_the_spec_model_with_its_defaults(store, definition):
    given = definition()
    for key in ("graders", "concurrency", "timeout_s", "retries"):
        given.pop(key, None)
    exp = create_experiment(given, store=store)
    spec = exp.spec
    assert isinstance(spec, ExperimentSpec) and isinstance(spec, StoredExperimentSpec)
    assert spec.graders == list(DEFAULT_GRADERS) and spec.concurrency == DEFAULT_CONCURRENCY
    assert (spec.timeout_s, spec.retries) == (DEFAULT_TIMEOUT_S, DEFAULT_RETRIES)
    assert spec.arms["treatment"].snapshot == exp.arm("treatment").snapshot
    assert spec.arms["control"].snapshot is None and "snapshot" not in spec.arms["control"].params
    # what the store keeps is what the model gives back at the JSON boundary (nulls left out)
    raw = json.loads(store.query_one("SELECT spec FROM experiments WHERE id=?", (exp.id,))[0])
    assert spec.as_json() == {k: v for k, v in raw.items() if v is not None}


def test_a_changed_definition_is_stored_validated(store, definition):
    exp = create_experiment(definition(), store=store)
    store.experiments.set_spec(exp.id, exp.spec.model_copy(update={"retries": 5}))
    assert store.experiments.get(exp.id).spec.retries == 5
    with pytest.raises(Exception, match="retries"):
        store.experiments.set_spec(exp.id, {**exp.spec.as_json(), "retries": -1})
    assert store.experiments.get(exp.id).spec.retries == 5


def test_a_write_batch_is_committed_whole_or_not_at_all(store, definition):
    exp = create_experiment(definition(), store=store)
    run_id = store.runs.records(exp.id)[0].id
    batch = WriteBatch()
    batch.runs[run_id] = {"state": "running", "updated_at": 1.0}
    batch.events.append((run_id, 1.0, "pending", "running", None))
    batch.experiments[exp.id]["no_such_column"] = 1  # the last statement of the batch fails
    with pytest.raises(sqlite3.OperationalError):
        store.runs.write_batch(batch)
    assert store.runs.records(exp.id)[0].state == "pending"
    assert store.query_one("SELECT COUNT(*) FROM run_events WHERE run_id=?", (run_id,))[0] == 0
