"""The run store's SQL schema (tables, columns, inserts); ``store.py`` reads and writes through it."""

SCHEMA = """
CREATE TABLE meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE trials (
    id                INTEGER PRIMARY KEY,
    arm               TEXT NOT NULL,
    domain            TEXT NOT NULL,
    task_id           TEXT NOT NULL,
    trial             INTEGER NOT NULL,
    attempt           INTEGER NOT NULL,
    valid             INTEGER NOT NULL,
    reward            REAL NOT NULL,
    termination       TEXT NOT NULL,
    invalid_cause     TEXT,
    run_id            TEXT NOT NULL,
    seed              INTEGER NOT NULL,
    started_at        TEXT NOT NULL,
    duration_s        REAL NOT NULL,
    n_messages        INTEGER NOT NULL,
    n_calls           INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    reasoning_tokens  INTEGER NOT NULL,
    cached_tokens     INTEGER NOT NULL,
    retries           INTEGER NOT NULL,
    record            BLOB NOT NULL
);
CREATE UNIQUE INDEX trials_one_valid ON trials (arm, domain, task_id, trial) WHERE valid = 1;
CREATE INDEX trials_key ON trials (arm, domain, task_id, trial);
CREATE TABLE model_calls (
    trial_row         INTEGER NOT NULL REFERENCES trials (id),
    idx               INTEGER NOT NULL,
    role              TEXT NOT NULL,
    purpose           TEXT NOT NULL,
    turn              INTEGER NOT NULL,
    model             TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    reasoning_tokens  INTEGER,
    cached_tokens     INTEGER,
    usage_reported    INTEGER NOT NULL,
    latency_s         REAL NOT NULL,
    attempts          INTEGER NOT NULL,
    retries           INTEGER NOT NULL,
    retry_causes      TEXT NOT NULL,
    finish_reason     TEXT,
    error             TEXT,
    PRIMARY KEY (trial_row, idx)
) WITHOUT ROWID;
"""

TRIAL_COLUMNS = (
    "arm", "domain", "task_id", "trial", "attempt", "valid", "reward", "termination",
    "invalid_cause", "run_id", "seed", "started_at", "duration_s", "n_messages", "n_calls",
    "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "retries", "record",
)
INSERT_TRIAL = (f"INSERT INTO trials ({', '.join(TRIAL_COLUMNS)}) "
                 f"VALUES ({', '.join('?' for _ in TRIAL_COLUMNS)})")
INSERT_CALL = "INSERT INTO model_calls VALUES (" + ", ".join("?" * 17) + ")"
