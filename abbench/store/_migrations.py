"""Numbered schema migrations: each runs once, in order, inside its own transaction."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from abbench.errors import SchemaVersionError
from abbench.store._schema import CORE_TABLES

log = logging.getLogger(__name__)


_Apply = Callable[[sqlite3.Connection], None]


@dataclass(frozen=True)
class Migration:
    """One schema step: `version` is its number, `apply` runs its statements on a connection."""

    version: int
    name: str
    apply: _Apply


MIGRATIONS: list[Migration] = []


def migration(version: int, name: str) -> Callable[[_Apply], _Apply]:
    """Register the decorated function as schema migration number `version`."""

    def register(fn: _Apply) -> _Apply:
        if any(m.version == version for m in MIGRATIONS):
            raise RuntimeError(f"two schema migrations are numbered {version}")
        MIGRATIONS.append(Migration(version, name, fn))
        MIGRATIONS.sort(key=lambda m: m.version)
        return fn

    return register


def _script(conn: sqlite3.Connection, sql: str) -> None:
    # executescript() would COMMIT the surrounding transaction; run statement by statement instead.
    for statement in sql.split(";"):
        if statement.strip():
            conn.execute(statement)


@migration(1, "core tables")
def _core(conn: sqlite3.Connection) -> None:
    _script(conn, CORE_TABLES)


@migration(2, "run events")
def _run_events(conn: sqlite3.Connection) -> None:
    # Every state transition is kept, so a crash can be reconstructed and "executed twice" detected.
    _script(
        conn,
        """
        CREATE TABLE run_events (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            at REAL NOT NULL,
            from_state TEXT,
            to_state TEXT NOT NULL,
            detail TEXT
        );
        CREATE INDEX run_events_run ON run_events(run_id, id)
        """,
    )


@migration(3, "run attempts")
def _run_attempts(conn: sqlite3.Connection) -> None:
    # One row per execution attempt, failed ones included: a run keeps only its current execution, so
    # what a failed or superseded attempt spent (tokens, cost, its transcript) lives here.
    _script(
        conn,
        """
        CREATE TABLE run_attempts (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            attempt INTEGER NOT NULL,
            outcome TEXT NOT NULL,               -- executed, failed or cancelled
            failure_type TEXT,
            error TEXT,
            started_at TEXT,
            ended_at TEXT,
            model TEXT,
            input_tokens INTEGER,                -- NULL: not reported (unknown, not zero)
            output_tokens INTEGER,
            cost REAL,
            latency_ms REAL,
            model_calls INTEGER,
            files_read TEXT,
            sections_read TEXT,
            transcript_path TEXT,                -- relative to the store folder
            transcript_summary TEXT
        );
        CREATE INDEX run_attempts_run ON run_attempts(run_id, attempt)
        """,
    )


@migration(4, "response cache")
def _response_cache(conn: sqlite3.Connection) -> None:
    # Model replies kept by (endpoint, model, request body, round): a resumed, retried or re-graded
    # experiment reuses what it already paid for. No request header is kept, so never an API key.
    # A run or attempt (and a grade) answered from the cache records how many calls were, and the
    # cost saved; `cost` on an attempt stays what was spent.
    _script(
        conn,
        """
        CREATE TABLE response_cache (
            key TEXT PRIMARY KEY,                -- sha256 over endpoint, model, canonical body, round
            endpoint TEXT NOT NULL,              -- the API root, without credentials
            model TEXT NOT NULL,
            round INTEGER NOT NULL,
            response TEXT NOT NULL,              -- the completion as JSON (a stream's assembled result)
            streamed INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER,
            output_tokens INTEGER,
            cost REAL,                           -- what the call cost when it was made
            bytes INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            hits INTEGER NOT NULL DEFAULT 0,
            cost_saved REAL NOT NULL DEFAULT 0,  -- over every hit
            last_hit_at TEXT
        );
        CREATE INDEX response_cache_created ON response_cache(created_at);
        ALTER TABLE runs ADD COLUMN cached_calls INTEGER;
        ALTER TABLE runs ADD COLUMN cost_saved REAL;
        ALTER TABLE run_attempts ADD COLUMN cached_calls INTEGER;
        ALTER TABLE run_attempts ADD COLUMN cost_saved REAL;
        ALTER TABLE grades ADD COLUMN cached INTEGER;
        ALTER TABLE grades ADD COLUMN cost_saved REAL
        """,
    )


@migration(5, "experiment pause reason")
def _pause_reason(conn: sqlite3.Connection) -> None:
    # Why an experiment is paused when no person asked (a budget reached), with the figures, so every
    # view can say it after the runner has gone: JSON, NULL when it is not paused for a reason.
    conn.execute("ALTER TABLE experiments ADD COLUMN pause_reason TEXT")


@migration(6, "dataset expected kind")
def _expected_kind(conn: sqlite3.Connection) -> None:
    # Whether the gold values are labels or answers, decided once per dataset (declared by its mapping,
    # else from all its values) so that import, metrics, reports and widgets never disagree.
    from abbench.dataset import gold_kind

    conn.execute("ALTER TABLE datasets ADD COLUMN expected_kind TEXT")  # JSON: ExpectedKind.as_dict()
    for ds_id, label_set in conn.execute("SELECT id, label_set FROM datasets").fetchall():
        counts = dict(
            conn.execute(
                "SELECT expected, COUNT(*) FROM cases WHERE dataset_id = ? GROUP BY expected", (ds_id,)
            ).fetchall()
        )
        labels = json.loads(label_set) if label_set else None
        kind = gold_kind(counts, label_set=labels)
        conn.execute("UPDATE datasets SET expected_kind = ? WHERE id = ?", (kind.to_json(), ds_id))


@migration(7, "latest grades view")
def _latest_grades(conn: sqlite3.Connection) -> None:
    # The latest grade per (run, other run, grader), the one rule every view of current grades reads
    # (abbench.store._grades): a grade is current when no later grade of the same grader judged the same
    # run (and the same second run). NOT EXISTS makes SQLite look each grade's successors up in the
    # grades_run_grader index (run, grader, id) instead of grouping the whole table, so a filter on one
    # experiment stays a search of that experiment's grades.
    conn.execute(
        """
        CREATE VIEW latest_grades AS
        SELECT * FROM grades AS g WHERE NOT EXISTS (
            SELECT 1 FROM grades AS later
            WHERE later.run_id = g.run_id AND later.grader = g.grader
              AND later.other_run_id IS g.other_run_id AND later.id > g.id
        )
        """
    )


@migration(8, "skill activation")
def _skill_activation(conn: sqlite3.Connection) -> None:
    # Offered skills (an arm's catalogue): which skill a case should activate (a name, or 'none' for a
    # must-not-trigger case; NULL: not assessed), and per run what was offered and loaded. A run's
    # skills_offered is the JSON array of the catalogue's skill names (NULL: injected or no skill),
    # skills_loaded the names loaded in order ([]: offered, nothing loaded; NULL: nothing offered) and
    # first_load_turn the model turn of the first load (NULL: none).
    conn.execute("ALTER TABLE cases ADD COLUMN expected_skill TEXT")
    conn.execute("ALTER TABLE runs ADD COLUMN skills_offered TEXT")
    conn.execute("ALTER TABLE runs ADD COLUMN skills_loaded TEXT")
    conn.execute("ALTER TABLE runs ADD COLUMN first_load_turn INTEGER")


@migration(9, "stop reason and review samples")
def _stop_reason_and_samples(conn: sqlite3.Connection) -> None:
    # Why an experiment stopped by its stopping rule (the decision, the cases it rests on, the
    # anytime-valid interval and p-value, the order's seed) as JSON, NULL when it was not stopped by one;
    # and the random samples of judged runs drawn for people to review (prediction-powered inference
    # needs to know a sample was random: its seed, its runs and the population it was drawn from).
    _script(
        conn,
        """
        ALTER TABLE experiments ADD COLUMN stop_reason TEXT;
        CREATE TABLE review_samples (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
            arm TEXT,
            seed INTEGER NOT NULL,
            size INTEGER NOT NULL,
            population INTEGER NOT NULL,
            run_ids TEXT NOT NULL,
            grader TEXT,
            created_by TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX review_samples_experiment ON review_samples (experiment_id, id);
        """,
    )


@migration(10, "runs by case id")
def _runs_case_id(conn: sqlite3.Connection) -> None:
    # `case_detail` (the case view of the review and results widgets, `abbench case`) finds a case's runs by
    # its id; without this index that lookup read every run of the experiment (0.25 s at 600,000 runs,
    # growing with them). Numbered 10: 8 and 9 are taken by work merged alongside.
    conn.execute("CREATE INDEX IF NOT EXISTS runs_experiment_case_id ON runs(experiment_id, case_id)")


@migration(11, "owners and keys")
def _owners(conn: sqlite3.Connection) -> None:
    # Every dataset, snapshot and experiment belongs to an owner (runs, reviews and exports follow their
    # experiment). Datasets and snapshots are content-addressed, so two owners importing the same bytes
    # share one row: `owner` is who brought it first, `holdings` everyone who may see it. A row nobody
    # was granted (written by the CLI on a local store) belongs to its `created_by`, the local user.
    _script(
        conn,
        """
        ALTER TABLE datasets ADD COLUMN owner TEXT;
        ALTER TABLE snapshots ADD COLUMN owner TEXT;
        UPDATE datasets SET owner = created_by;
        UPDATE snapshots SET owner = created_by;
        CREATE TABLE holdings (
            kind TEXT NOT NULL,                 -- dataset | snapshot
            ref TEXT NOT NULL,                  -- the dataset's fingerprint, the snapshot's hash
            owner TEXT NOT NULL,
            granted_at TEXT NOT NULL,
            PRIMARY KEY (kind, ref, owner)
        ) WITHOUT ROWID;
        CREATE INDEX holdings_owner ON holdings (owner, kind);
        CREATE INDEX experiments_owner ON experiments (owner, id);
        CREATE TABLE api_keys (
            key_id TEXT PRIMARY KEY,            -- the public part of a key (abk_<key_id>_<secret>)
            owner TEXT NOT NULL,
            secret_hash TEXT NOT NULL,          -- HMAC-SHA256 of the secret under the pepper, never the key
            scopes TEXT NOT NULL,               -- comma-separated: read, run, review, admin
            created_at TEXT NOT NULL,
            created_by TEXT,
            expires_at TEXT,
            revoked_at TEXT,
            last_used_at TEXT
        );
        CREATE INDEX api_keys_owner ON api_keys (owner)
        """,
    )


@migration(12, "recorded attempts")
def _recorded_attempts(conn: sqlite3.Connection) -> None:
    # Outcomes recorded from elsewhere (`abbench.runner.record_runs`, `abbench import-results`): the
    # external runner's own attempt number and a digest of what it submitted, so that submitting the
    # same outcome again is a no-op and a different one for a recorded (arm, case, round, attempt) is
    # refused. NULL for attempts this abbench executed itself. Numbered 12: 11 is taken by work merged
    # alongside.
    conn.execute("ALTER TABLE run_attempts ADD COLUMN recorded_attempt INTEGER")
    conn.execute("ALTER TABLE run_attempts ADD COLUMN recorded_digest TEXT")


@migration(13, "where an experiment executes")
def _experiment_executor(conn: sqlite3.Connection) -> None:
    # Where the experiment's agents run (`abbench status`, the run widget): NULL for this machine's own
    # event loop (the local executor), else JSON such as {"executor": "dask", "scheduler":
    # "tcp://10.0.0.5:8786", "dashboard": "http://10.0.0.5:8787/status", "workers": 4}. Numbered 13:
    # 11 and 12 are taken by work done alongside.
    conn.execute("ALTER TABLE experiments ADD COLUMN executor TEXT")


@migration(14, "an index for the results figures")
def _figure_indexes(conn: sqlite3.Connection) -> None:
    # A read of `abbench.metrics.experiment_metrics` (the results widget) at 600,000 runs: each arm's
    # spend sums every attempt's numbers; run_attempts_spend holds them beside (run, attempt, id), so the
    # sum reads no attempt rows and adds them in the same order. It replaces run_attempts_run (run,
    # attempt, then the row id, as every index ends): one index per attempt to write, as before.
    _script(
        conn,
        """
        CREATE INDEX run_attempts_spend ON run_attempts(
            run_id, attempt, id, outcome, cost, input_tokens, output_tokens, latency_ms, cached_calls, cost_saved
        );
        DROP INDEX run_attempts_run
        """,
    )


@migration(15, "who runs an experiment and why it stopped")
def _runner_origin_and_halt(conn: sqlite3.Connection) -> None:
    # runner_origin: what kind of process holds (or last held) the experiment, written with its claim:
    # `cli` (abbench run and the other commands), `server` (a child of abbench serve's runner pool) or
    # `python` (a notebook, a script). A server resumes at start only what its own pool was running.
    # halt: why the last runner stopped before the work was done, as JSON ({"why": "stopped", "signal":
    # "SIGTERM", "origin": "cli", "pid": 4242, "host": ..., "at": ...}); NULL while one runs, after it
    # finished, and when it died without a word (killed: what a dead runner with no halt means).
    conn.execute("ALTER TABLE experiments ADD COLUMN runner_origin TEXT")
    conn.execute("ALTER TABLE experiments ADD COLUMN halt TEXT")


@migration(16, "work a server accepted and has not started")
def _queued(conn: sqlite3.Connection) -> None:
    # queued: the work a server's runner pool accepted for the experiment (a start, resume, retry or
    # re-grade asked over HTTP) that no process has started yet, as JSON ({"by": "server", "at": ...,
    # "owner": ..., "actor": ..., "regrade": false, ...}, see `abbench.runner.QueuedWork`). Written
    # when the pool accepts it, cleared by the claim of the pass that does it: a server killed before
    # its pool got to it starts it at its next start. "not_started" says why a server did not.
    conn.execute("ALTER TABLE experiments ADD COLUMN queued TEXT")


@migration(17, "cases assigned to a second reviewer")
def _review_assignments(conn: sqlite3.Connection) -> None:
    # A case (of one arm, or as a whole: arm '') given to a reviewer for a blind second review: the
    # review widget hides the other reviewers' verdicts from them, and inter-reviewer agreement is
    # measured on the cases two people reviewed (`abbench.review.reviewer_agreement`).
    conn.execute(
        """
        CREATE TABLE review_assignments (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
            case_id TEXT NOT NULL,
            arm TEXT NOT NULL DEFAULT '',
            reviewer TEXT NOT NULL,
            assigned_by TEXT,
            created_at TEXT NOT NULL,
            UNIQUE (experiment_id, case_id, arm, reviewer)
        )
        """
    )


SCHEMA_VERSION = max(m.version for m in MIGRATIONS)
"""The newest schema this abbench writes."""


def current_version(conn: sqlite3.Connection) -> int:
    """The highest migration recorded in the database; 0 for an empty database."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
    ).fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def migrate(conn: sqlite3.Connection, path: str = "", upto: int | None = None) -> list[int]:
    """Apply every migration the database lacks; return the versions applied.

    Raises:
        SchemaVersionError: the database was written by a newer abbench.
    """
    target = SCHEMA_VERSION if upto is None else upto
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        have = current_version(conn)
        if have > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the store {path or '(in memory)'} has schema version {have}, but this abbench only knows "
                f"versions up to {SCHEMA_VERSION}; upgrade abbench (pip install -U abbench) to open it"
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    applied = []
    for step in MIGRATIONS:
        if step.version <= have or step.version > target:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while we waited for the write lock.
            if current_version(conn) >= step.version:
                conn.execute("COMMIT")
                continue
            step.apply(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (step.version, step.name, datetime.now(UTC).isoformat(timespec="seconds")),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        log.info("applied schema migration %d (%s) to %s", step.version, step.name, path)
        applied.append(step.version)
    return applied
