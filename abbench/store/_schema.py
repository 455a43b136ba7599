"""The tables of a new store (migration 1): the schema every later migration changes."""

CORE_TABLES = """
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT
);

CREATE TABLE mapping_profiles (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    spec TEXT NOT NULL,                 -- JSON: the MappingProfile
    shape TEXT,                         -- JSON: columns / keys of the file it was made for
    created_at TEXT NOT NULL,
    created_by TEXT,
    UNIQUE (name, version)
);

CREATE TABLE datasets (
    id INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,   -- name@<12 hex>
    name TEXT NOT NULL,
    content_hash TEXT NOT NULL,         -- full sha256 over the canonical cases
    n_cases INTEGER NOT NULL,
    label_set TEXT,                     -- JSON list, or NULL when undeclared
    label_map TEXT,                     -- JSON object: source value -> label
    profile_id INTEGER REFERENCES mapping_profiles(id),
    source_file TEXT,                   -- the name the file had when imported
    source_sha256 TEXT,
    upload_path TEXT,                   -- relative to the store folder
    read_options TEXT,                  -- JSON: sheet, header row, encoding, delimiter, recipe
    validation TEXT,                    -- JSON: the validation report
    created_at TEXT NOT NULL,
    created_by TEXT
);
CREATE INDEX datasets_hash ON datasets(content_hash);

CREATE TABLE cases (
    dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,               -- position in the dataset, 0-based
    case_id TEXT NOT NULL,
    input TEXT NOT NULL,
    expected TEXT,
    history TEXT,                       -- JSON
    context TEXT,                       -- JSON
    domain TEXT,
    request_id TEXT,
    metadata TEXT,                      -- JSON
    source_row TEXT,                    -- JSON: the raw row (a table row: its cells, named by datasets.read_options.columns)
    source_line TEXT,
    PRIMARY KEY (dataset_id, idx),
    UNIQUE (dataset_id, case_id)
) WITHOUT ROWID;

CREATE TABLE snapshots (
    hash TEXT PRIMARY KEY,              -- sha256 over sorted relative paths and bytes
    skill_name TEXT NOT NULL,
    description TEXT,
    front_matter TEXT,                  -- JSON
    path TEXT NOT NULL,                 -- relative to the store folder
    n_files INTEGER NOT NULL,
    size_bytes INTEGER NOT NULL,
    files TEXT NOT NULL,                -- JSON list: path, sha256, size, binary
    draft INTEGER NOT NULL,             -- 1 when not from a clean git commit
    repo TEXT,
    commit_sha TEXT,
    tag TEXT,
    git_ref TEXT,
    subdir TEXT,
    source_path TEXT,
    created_at TEXT NOT NULL,
    created_by TEXT,
    remote TEXT,                        -- the repository's remote URL, credentials removed
    draft_reason TEXT,                  -- why the content is a draft, in words
    warnings TEXT                       -- JSON list: no SKILL.md, bad front matter, ...
);
CREATE INDEX snapshots_name ON snapshots(skill_name);

-- Every taking of a snapshot's content (the same bytes may come from a draft folder, then a
-- commit, then a tag). The snapshots row shows the best one: a clean commit beats a draft.
CREATE TABLE snapshot_sources (
    id INTEGER PRIMARY KEY,
    snapshot TEXT NOT NULL REFERENCES snapshots(hash) ON DELETE CASCADE,
    draft INTEGER NOT NULL,
    draft_reason TEXT,
    repo TEXT,
    remote TEXT,
    commit_sha TEXT,
    tag TEXT,
    git_ref TEXT,
    subdir TEXT,
    source_path TEXT,
    taken_at TEXT NOT NULL,
    taken_by TEXT
);
CREATE INDEX snapshot_sources_snapshot ON snapshot_sources(snapshot, id);

CREATE TABLE snapshot_refs (
    snapshot TEXT NOT NULL REFERENCES snapshots(hash) ON DELETE CASCADE,
    ref TEXT NOT NULL,                  -- path#anchor
    path TEXT NOT NULL,
    heading TEXT NOT NULL,
    level INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    PRIMARY KEY (snapshot, ref)
) WITHOUT ROWID;

CREATE TABLE experiments (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    owner TEXT NOT NULL,
    skill TEXT NOT NULL DEFAULT '',     -- skill name the experiment is about ('' for none)
    skill_version TEXT NOT NULL DEFAULT '',
    dataset_id INTEGER NOT NULL REFERENCES datasets(id),
    profile_id INTEGER REFERENCES mapping_profiles(id),
    spec TEXT NOT NULL,                 -- JSON: the resolved experiment definition
    rounds INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'created',
    control TEXT NOT NULL DEFAULT 'run',  -- run | pause | cancel: asked for by any process
    batch_id TEXT,                      -- the one grade batch, set by the first grade written
    priority INTEGER NOT NULL DEFAULT 0,
    tags TEXT,                          -- JSON list
    gate TEXT,                          -- JSON list of rules
    parent_id INTEGER REFERENCES experiments(id),
    runner_pid INTEGER,
    runner_host TEXT,
    heartbeat_at REAL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    created_by TEXT,
    UNIQUE (owner, skill, skill_version, name)
);
CREATE INDEX experiments_created ON experiments(created_at);

CREATE TABLE arms (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    agent TEXT NOT NULL,
    model TEXT,
    snapshot TEXT REFERENCES snapshots(hash),
    params TEXT,                        -- JSON
    UNIQUE (experiment_id, name)
);

CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    arm_id INTEGER NOT NULL REFERENCES arms(id) ON DELETE CASCADE,
    case_idx INTEGER NOT NULL,
    case_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending','running','executed','evaluating','pass','fail','cancelled')),
    failure_type TEXT,                  -- set for execution failures only
    error TEXT,
    traceback TEXT,
    retryable INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    grade_attempts INTEGER NOT NULL DEFAULT 0,
    prediction TEXT,
    reason TEXT,
    confidence REAL,
    evidence_refs TEXT,                 -- JSON list
    raw_output TEXT,
    files_read TEXT,                    -- JSON list
    sections_read TEXT,                 -- JSON list
    input_tokens INTEGER,
    output_tokens INTEGER,
    cost REAL,
    latency_ms REAL,
    session_id TEXT,
    model TEXT,
    transcript_path TEXT,               -- relative to the store folder
    transcript_summary TEXT,            -- JSON
    passed INTEGER,                     -- the latest verdict, kept beside its grades for fast reads
    score REAL,
    started_by TEXT,
    started_at TEXT,
    executed_at TEXT,
    finished_at TEXT,
    updated_at REAL,
    UNIQUE (experiment_id, arm_id, case_idx, round)
);
CREATE INDEX runs_experiment_state ON runs(experiment_id, state);
CREATE INDEX runs_experiment_case ON runs(experiment_id, case_idx, round);
-- Covers what a comparison sums for every finished run (abbench.store._results), so a million
-- runs are summed without reading the wide rows (whose raw outputs fill pages). Partial: a run
-- enters it once, when it finishes, so the runner's earlier transitions do not pay for it.
CREATE INDEX runs_results ON runs(
    experiment_id, arm_id, case_idx, state, failure_type, passed, score, cost, latency_ms,
    input_tokens, output_tokens
) WHERE state IN ('pass', 'fail', 'cancelled');

CREATE TABLE grades (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    batch_id TEXT NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    other_run_id INTEGER REFERENCES runs(id) ON DELETE CASCADE,  -- the second run, for pairwise
    run_attempt INTEGER,                -- the run's `attempts` when graded: which execution was judged
    other_run_attempt INTEGER,          -- the same for the second run of a pair
    grader TEXT NOT NULL,
    kind TEXT NOT NULL,                 -- rule | judge | pairwise
    status TEXT NOT NULL CHECK (status IN ('ok','error')),
    passed INTEGER,
    score REAL,
    verdict TEXT,                       -- pairwise: a | b | tie
    dimensions TEXT,                    -- JSON: dimension -> score
    comment TEXT,
    raw_output TEXT,
    error TEXT,
    retryable INTEGER,
    judge_model TEXT,
    judge_cost REAL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    details TEXT,                       -- JSON: seed, order, both-order verdicts, ...
    created_at TEXT NOT NULL
);
CREATE INDEX grades_run_grader ON grades(run_id, grader, id);
CREATE INDEX grades_batch ON grades(batch_id);
CREATE INDEX grades_experiment ON grades(experiment_id, grader);

CREATE TABLE reviews (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    case_id TEXT NOT NULL,
    arm TEXT,
    run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    verdict TEXT NOT NULL CHECK (verdict IN
        ('gold_correct','model_correct','ambiguous_standard','missing_capability_info','unsure')),
    note TEXT,
    reviewer TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX reviews_case ON reviews(experiment_id, case_id, id)
"""
"""Migration 1's statements, separated by semicolons (run one by one: `executescript` would commit)."""
