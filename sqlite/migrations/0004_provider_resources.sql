-- 0004: provider-side resources a tenant created through the gateway
-- (Gemini explicit caches, docs/gemini.md). The provider account is shared
-- by every tenant: a resource is reachable only by the tenant recorded here.
CREATE TABLE provider_resources (
    tenant     TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, kind, name)
);
