-- 0001: the four stores of groundhog.
--
-- Conventions (see package doc): times are BIGINT unix nanoseconds UTC, NULL
-- where the Go value is the zero time.Time (exact to the nanosecond, which
-- timestamptz is not); money is BIGINT picodollars; durations BIGINT
-- nanoseconds. A stored Response is a set of columns plus the body (bytea)
-- and its SSE events as two parallel arrays: event_names text[] and
-- event_data bytea[] (NULL when not streamed). Identifiers that order rows
-- use COLLATE "C" so the order is bytewise, as in the SQLite store.

CREATE TABLE cache (
    tenant              text    NOT NULL,
    request_hash        text    NOT NULL,
    shape               text    NOT NULL,
    status              integer NOT NULL,
    content_type        text    NOT NULL,
    streamed            boolean NOT NULL,
    model               text    NOT NULL,
    input_tokens        bigint  NOT NULL,
    cached_input_tokens bigint  NOT NULL,
    cache_write_tokens  bigint  NOT NULL,
    output_tokens       bigint  NOT NULL,
    cost                bigint  NOT NULL,
    body                bytea,
    event_names         text[],
    event_data          bytea[],
    created_at          bigint,
    expires_at          bigint, -- NULL: never expires
    PRIMARY KEY (tenant, request_hash)
);
CREATE INDEX cache_expires_at ON cache (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE ledger (
    id                  text COLLATE "C" NOT NULL PRIMARY KEY,
    time                bigint  NOT NULL,
    tenant              text    NOT NULL,
    operation           text    NOT NULL,
    request_hash        text    NOT NULL,
    shape               text    NOT NULL,
    model               text    NOT NULL,
    provider            text    NOT NULL,
    outcome             text    NOT NULL,
    status              integer NOT NULL,
    input_tokens        bigint  NOT NULL,
    cached_input_tokens bigint  NOT NULL,
    cache_write_tokens  bigint  NOT NULL,
    output_tokens       bigint  NOT NULL,
    cost                bigint  NOT NULL,
    saved               bigint  NOT NULL,
    full_cost           bigint  NOT NULL,
    latency             bigint  NOT NULL,
    attempt             integer NOT NULL,
    in_flight           boolean NOT NULL,
    cache_on            boolean NOT NULL,
    idempotent          boolean NOT NULL,
    stream              boolean NOT NULL
);
-- ScanLedger orders by (time, id): both indexes end in id so no sort is needed.
CREATE INDEX ledger_tenant_time ON ledger (tenant, time, id);
CREATE INDEX ledger_time ON ledger (time, id);

CREATE TABLE operations (
    id                         text    NOT NULL PRIMARY KEY,
    tenant                     text    NOT NULL,
    idem_key                   text    NOT NULL,
    request_hash               text    NOT NULL,
    status                     text    NOT NULL
        CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    -- The stored result: all NULL until Complete or Fail.
    result_status              integer,
    result_content_type        text,
    result_streamed            boolean,
    result_model               text,
    result_input_tokens        bigint,
    result_cached_input_tokens bigint,
    result_cache_write_tokens  bigint,
    result_output_tokens       bigint,
    result_cost                bigint,
    result_body                bytea,
    result_event_names         text[],
    result_event_data          bytea[],
    lease_owner                text    NOT NULL DEFAULT '',
    lease_expires_at           bigint,
    fencing_token              bigint  NOT NULL,
    attempts                   integer NOT NULL,
    created_at                 bigint,
    updated_at                 bigint,
    expires_at                 bigint,
    UNIQUE (tenant, idem_key)
);
CREATE INDEX operations_expires_at ON operations (expires_at);

CREATE TABLE api_keys (
    hash       text   NOT NULL PRIMARY KEY,
    id         text   NOT NULL,
    tenant     text   NOT NULL,
    created_at bigint
);
