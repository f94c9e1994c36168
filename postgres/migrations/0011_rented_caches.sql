-- Provider explicit caches created through the gateway (Gemini
-- cachedContents, docs/gemini.md), kept to book their storage rent per
-- cache and UTC day. Times are Unix nanoseconds; 0 is unset.
CREATE TABLE rented_caches (
    tenant       text    NOT NULL,
    name         text    NOT NULL,
    operation    text    NOT NULL,
    model        text    NOT NULL,
    tokens       bigint  NOT NULL,
    created_at   bigint  NOT NULL,
    expire_at    bigint  NOT NULL,
    end_at       bigint  NOT NULL DEFAULT 0,
    booked_until bigint  NOT NULL,
    done         boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tenant, name)
);
CREATE INDEX rented_caches_unbooked ON rented_caches (created_at) WHERE NOT done;
-- The report's storage rent of explicit caches: the known cost of the
-- rows of outcome cache_rent, and those rows of unknown cost. Those rows
-- are no calls: the rollups leave them out of calls and of every per-call
-- column. No existing row has that outcome, so the existing rollups hold
-- 0 rightly. (A store migrated from before 0008 has the columns already:
-- the rollups' backfill after 0008 adds them.)
ALTER TABLE ledger_rollup ADD COLUMN IF NOT EXISTS cache_rent numeric NOT NULL DEFAULT 0;
ALTER TABLE ledger_rollup ADD COLUMN IF NOT EXISTS unknown_rent bigint NOT NULL DEFAULT 0;
