-- 0005: daily rollups of the ledger, kept by AppendLedger in the
-- transaction of the rows, so a day's report reads O(tenants × operations)
-- rows instead of the day's rows (postgres/rollup.go describes the tables
-- and ledger.RollupCounts the columns of ledger_rollup).
--
-- Each table is list-partitioned by UTC day number (days since 1970-01-01,
-- floored): partition <table>_pYYYYMMDD is created and dropped with the
-- ledger's partition ledger_pYYYYMMDD. Money and token sums are numeric:
-- exact, and never an overflow error on the write path.
--
-- The backfill of the existing ledger days runs right after this file, in
-- its transaction (postgres.migrateRollups: the same statement that
-- AppendLedger runs, over each day's rows).

CREATE TABLE ledger_rollup_hash (
    day          bigint NOT NULL,
    tenant       text   NOT NULL,
    request_hash text   NOT NULL,
    operation    text   NOT NULL,
    first_time   bigint NOT NULL,
    first_id     text COLLATE "C" NOT NULL,
    full_cost    bigint NOT NULL, -- the first row's known full_cost (0 if unknown)
    shadow       bigint NOT NULL, -- the same if it is shadow-eligible, else 0
    PRIMARY KEY (day, tenant, request_hash, operation)
) PARTITION BY LIST (day);

CREATE TABLE ledger_rollup (
    day                          bigint  NOT NULL,
    tenant                       text    NOT NULL,
    operation                    text    NOT NULL,
    calls                        bigint  NOT NULL,
    distinct_hashes              bigint  NOT NULL,
    firsts                       bigint  NOT NULL,
    full_cost                    numeric NOT NULL,
    first_full_cost              numeric NOT NULL,
    shadow                       numeric NOT NULL,
    first_shadow                 numeric NOT NULL,
    in_flight                    bigint  NOT NULL,
    cache_hits                   bigint  NOT NULL,
    coalesced                    bigint  NOT NULL,
    replayed                     bigint  NOT NULL,
    upstream                     bigint  NOT NULL,
    spend                        numeric NOT NULL,
    saved                        numeric NOT NULL,
    unknown_cost_calls           bigint  NOT NULL,
    retries                      bigint  NOT NULL,
    retry_cost                   numeric NOT NULL,
    cached_read_tokens           numeric NOT NULL,
    cache_write_tokens           numeric NOT NULL,
    cache_write_1h_tokens        numeric NOT NULL,
    uncached_input_tokens        numeric NOT NULL,
    input_tokens                 numeric NOT NULL,
    pc_known_calls               bigint  NOT NULL,
    pc_unknown_calls             bigint  NOT NULL,
    pc_saved                     numeric NOT NULL,
    fan_out_held                 bigint  NOT NULL,
    fan_out_write_tokens_avoided numeric NOT NULL,
    PRIMARY KEY (day, tenant, operation)
) PARTITION BY LIST (day);

CREATE TABLE ledger_rollup_break (
    day                bigint  NOT NULL,
    tenant             text    NOT NULL,
    operation          text    NOT NULL,
    cause              text    NOT NULL,
    calls              bigint  NOT NULL,
    uncached_tokens    numeric NOT NULL,
    first_time         bigint  NOT NULL,
    first_id           text COLLATE "C" NOT NULL,
    first_request_hash text    NOT NULL,
    PRIMARY KEY (day, tenant, operation, cause)
) PARTITION BY LIST (day);
