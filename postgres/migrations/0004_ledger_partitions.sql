-- 0004: the ledger partitioned by UTC day (declarative range partitioning
-- on time, BIGINT unix nanoseconds), so a day's report reads one partition
-- and retention drops whole partitions instead of deleting rows.
--
-- A partitioned table's primary key must contain the partition key: the key
-- is (time, id) instead of (id). AppendLedger skips rows whose (time, id) is
-- stored; a journal replays a row with its own time, so a replay is still
-- stored once (an ID is 128 random bits: two rows never share one).
--
-- Partitions are named ledger_pYYYYMMDD and cover [day, day + 1) in
-- nanoseconds; the store creates them ahead (at open and for each appended
-- day) and drops them after the retention. There is no default partition:
-- one would have to be scanned (and locked) whenever a day is created.
--
-- Existing rows are moved: one partition per day present, then one
-- INSERT … SELECT, all in this migration's transaction.

ALTER TABLE ledger RENAME TO ledger_unpartitioned;
ALTER INDEX ledger_pkey RENAME TO ledger_unpartitioned_pkey;
ALTER INDEX ledger_tenant_time RENAME TO ledger_unpartitioned_tenant_time;
ALTER INDEX ledger_time RENAME TO ledger_unpartitioned_time;

CREATE TABLE ledger (
    id                       text COLLATE "C" NOT NULL,
    time                     bigint  NOT NULL,
    tenant                   text    NOT NULL,
    operation                text    NOT NULL,
    request_hash             text    NOT NULL,
    shape                    text    NOT NULL,
    model                    text    NOT NULL,
    provider                 text    NOT NULL,
    outcome                  text    NOT NULL,
    status                   integer NOT NULL,
    input_tokens             bigint  NOT NULL,
    cached_input_tokens      bigint  NOT NULL,
    cache_write_tokens       bigint  NOT NULL,
    output_tokens            bigint  NOT NULL,
    cost                     bigint  NOT NULL,
    saved                    bigint  NOT NULL,
    full_cost                bigint  NOT NULL,
    latency                  bigint  NOT NULL,
    attempt                  integer NOT NULL,
    in_flight                boolean NOT NULL,
    cache_on                 boolean NOT NULL,
    idempotent               boolean NOT NULL,
    stream                   boolean NOT NULL,
    cache_write_1h_tokens    bigint  NOT NULL DEFAULT 0,
    prompt_cache_saved       bigint  NOT NULL DEFAULT 0,
    prompt_cache_break       text    NOT NULL DEFAULT '',
    prompt_cache_lost_tokens bigint  NOT NULL DEFAULT 0,
    fan_out_held             boolean NOT NULL DEFAULT false,
    -- ScanLedger orders by (time, id): the key doubles as the time index.
    PRIMARY KEY (time, id)
) PARTITION BY RANGE (time);
CREATE INDEX ledger_tenant_time ON ledger (tenant, time, id);

-- One partition per UTC day holding rows. numeric arithmetic: the first and
-- last days representable in BIGINT reach past its range, so their outer
-- bounds are MINVALUE and MAXVALUE (as the store's own partitions.go does).
DO $$
DECLARE
    d  numeric;
    lo numeric;
    hi numeric;
BEGIN
    FOR d IN SELECT DISTINCT floor(time::numeric / 86400000000000) FROM ledger_unpartitioned LOOP
        lo := d * 86400000000000;
        hi := lo + 86400000000000;
        EXECUTE format('CREATE TABLE %I PARTITION OF ledger FOR VALUES FROM (%s) TO (%s)',
            'ledger_p' || to_char(to_timestamp((d * 86400)::double precision) AT TIME ZONE 'UTC', 'YYYYMMDD'),
            CASE WHEN lo < -9223372036854775808 THEN 'MINVALUE' ELSE lo::text END,
            CASE WHEN hi > 9223372036854775807 THEN 'MAXVALUE' ELSE hi::text END);
    END LOOP;
END
$$;

INSERT INTO ledger (id, time, tenant, operation, request_hash, shape, model, provider, outcome, status,
        input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, cost, saved, full_cost,
        latency, attempt, in_flight, cache_on, idempotent, stream,
        cache_write_1h_tokens, prompt_cache_saved, prompt_cache_break, prompt_cache_lost_tokens, fan_out_held)
    SELECT id, time, tenant, operation, request_hash, shape, model, provider, outcome, status,
        input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, cost, saved, full_cost,
        latency, attempt, in_flight, cache_on, idempotent, stream,
        cache_write_1h_tokens, prompt_cache_saved, prompt_cache_break, prompt_cache_lost_tokens, fan_out_held
    FROM ledger_unpartitioned;

DROP TABLE ledger_unpartitioned;
