-- 0001: the four stores of groundhog.
--
-- Conventions (see package doc): times are INTEGER unix nanoseconds UTC, NULL
-- where the Go value is the zero time.Time; money is INTEGER picodollars;
-- durations are INTEGER nanoseconds; booleans are INTEGER 0/1. A stored
-- Response is a fixed set of columns plus the body BLOB and the events BLOB
-- (the compact binary encoding of encodeEvents).

-- Exact response cache, one row per (tenant, request_hash).
CREATE TABLE cache (
    tenant              TEXT    NOT NULL,
    request_hash        TEXT    NOT NULL,
    shape               TEXT    NOT NULL,
    status              INTEGER NOT NULL,
    content_type        TEXT    NOT NULL,
    streamed            INTEGER NOT NULL,
    model               TEXT    NOT NULL,
    input_tokens        INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    cache_write_tokens  INTEGER NOT NULL,
    output_tokens       INTEGER NOT NULL,
    cost                INTEGER NOT NULL,
    body                BLOB,
    events              BLOB,
    created_at          INTEGER,
    expires_at          INTEGER, -- NULL: never expires
    PRIMARY KEY (tenant, request_hash)
);
-- PurgeCache walks only the rows that can expire.
CREATE INDEX cache_expires_at ON cache (expires_at) WHERE expires_at IS NOT NULL;

-- Duplicate-work ledger. Rows are append-only; INSERT OR IGNORE on id makes
-- replaying a journal harmless.
CREATE TABLE ledger (
    id        TEXT    NOT NULL PRIMARY KEY,
    time      INTEGER NOT NULL,
    tenant    TEXT    NOT NULL,
    operation TEXT    NOT NULL,
    -- The whole row (these four columns included) packed as tagged values in
    -- the order of ledgerColumns (sqlite/ledgerpack.go): one bind on insert
    -- and one column read on scan instead of 23 of each.
    row       BLOB    NOT NULL
);
-- ScanLedger orders by (time, id); both indexes end in id so the ORDER BY is
-- read straight off the index, without a sort.
CREATE INDEX ledger_tenant_time ON ledger (tenant, time, id);
CREATE INDEX ledger_time ON ledger (time, id);

-- Idempotency records.
CREATE TABLE operations (
    id                         TEXT    NOT NULL PRIMARY KEY,
    tenant                     TEXT    NOT NULL,
    idem_key                   TEXT    NOT NULL,
    request_hash               TEXT    NOT NULL,
    status                     TEXT    NOT NULL
        CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    -- The stored result: all NULL until Complete or Fail.
    result_status              INTEGER,
    result_content_type        TEXT,
    result_streamed            INTEGER,
    result_model               TEXT,
    result_input_tokens        INTEGER,
    result_cached_input_tokens INTEGER,
    result_cache_write_tokens  INTEGER,
    result_output_tokens       INTEGER,
    result_cost                INTEGER,
    result_body                BLOB,
    result_events              BLOB,
    lease_owner                TEXT    NOT NULL DEFAULT '',
    lease_expires_at           INTEGER,
    fencing_token              INTEGER NOT NULL,
    attempts                   INTEGER NOT NULL,
    created_at                 INTEGER,
    updated_at                 INTEGER,
    expires_at                 INTEGER,
    UNIQUE (tenant, idem_key)
);
CREATE INDEX operations_expires_at ON operations (expires_at);

-- Gateway keys, stored hashed.
CREATE TABLE api_keys (
    hash       TEXT    NOT NULL PRIMARY KEY,
    id         TEXT    NOT NULL,
    tenant     TEXT    NOT NULL,
    created_at INTEGER
);
