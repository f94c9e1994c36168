-- 0005: provider explicit caches created through the gateway (Gemini
-- cachedContents, docs/gemini.md), kept to book their storage rent per
-- cache and UTC day. Times are Unix nanoseconds; 0 is unset.
CREATE TABLE rented_caches (
    tenant       TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    operation    TEXT    NOT NULL,
    model        TEXT    NOT NULL,
    tokens       INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    expire_at    INTEGER NOT NULL,
    end_at       INTEGER NOT NULL DEFAULT 0,
    booked_until INTEGER NOT NULL,
    done         INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, name)
);
CREATE INDEX rented_caches_unbooked ON rented_caches (created_at) WHERE done = 0;
