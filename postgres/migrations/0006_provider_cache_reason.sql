-- Providers' own prompt-cache verdicts (docs/prompt-caching.md): the reason
-- the provider gave for a call that asked it ('' when none did), and its
-- daily rollup beside groundhog's cause: per (day, tenant, operation,
-- groundhog's cause or '' for no break, the provider's reason), the calls
-- and the tokens groundhog says were lost. Rows stored before carry no
-- verdict. The partitions of the existing days and their rollups are
-- (re)built right after this file (postgres.go, migrationAfter).
ALTER TABLE ledger ADD COLUMN provider_cache_reason text NOT NULL DEFAULT '';

CREATE TABLE ledger_rollup_agreement (
    day             bigint  NOT NULL,
    tenant          text    NOT NULL,
    operation       text    NOT NULL,
    cause           text    NOT NULL,
    provider_reason text    NOT NULL,
    calls           bigint  NOT NULL,
    lost_tokens     numeric NOT NULL,
    PRIMARY KEY (day, tenant, operation, cause, provider_reason)
) PARTITION BY LIST (day);
