-- Provider-side resources a tenant created through the gateway (Gemini
-- explicit caches, docs/gemini.md). The provider account is shared by
-- every tenant: a resource is reachable only by the tenant recorded here.
CREATE TABLE provider_resources (
    tenant     text   NOT NULL,
    kind       text   NOT NULL,
    name       text   NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (tenant, kind, name)
);
